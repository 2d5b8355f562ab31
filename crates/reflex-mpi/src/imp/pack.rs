//! `MPI_Pack`/`MPI_Unpack`/`MPI_Pack_size` (MPI-3.1 §4.2) and their "external32" forms (§4.3).
//!
//! The native packed form is the packed stream the engine moves messages as (the data bytes in
//! typemap order, `count × size` bytes), so `MPI_PACKED` data and typed data interoperate; the
//! position advances by exactly that many bytes and a buffer too small is `MPI_ERR_TRUNCATE`.
//! external32 packs natively first, then converts each run of one predefined type in typemap
//! order ([`leaves`] walks the constructor records, which know which predefined handle every
//! element has: the engine's layout knows only sizes, and `long` is 8 bytes natively but 4 in
//! external32) through [`crate::external32`].

use super::type_query::f90_basis;
use super::util::{c_string, recv_buf, send_buf, write};
use crate::external32;
use crate::ffi::*;
use crate::kinds::TypeArg;
use crate::state::Mpi;
use crate::typetable::{Combiner, TypeRef};
use reflex_engine::datatype::typed;
use reflex_engine::{CommId, Datatype, ErrorClass, MpiError, Result};
use std::ffi::{c_char, c_void};

/// The position argument, checked non-negative.
/// A position argument: `int` (`MPI_Pack`), `MPI_Aint` (`MPI_Pack_external`) or `MPI_Count`
/// (the `_c` forms), read and written back as it is.
pub trait Position: Copy + TryInto<usize> + TryFrom<usize> + std::fmt::Display {}
impl<P: Copy + TryInto<usize> + TryFrom<usize> + std::fmt::Display> Position for P {}

fn position_of<P: Position>(p: *mut P) -> Result<usize> {
    // SAFETY: the kinds check made sure the pointer is non-NULL; MPI requires it readable.
    let pos = unsafe { *p };
    pos.try_into().map_err(|_| {
        MpiError::new(
            ErrorClass::Arg,
            format!("position is {pos}, must be non-negative"),
        )
    })
}

/// Stores the advanced position.
fn advance<P: Position>(p: *mut P, pos: usize) -> Result<()> {
    let v = P::try_from(pos).map_err(|_| {
        MpiError::new(
            ErrorClass::Count,
            format!("position {pos} does not fit the position argument's type"),
        )
    })?;
    write(p, v);
    Ok(())
}

/// Bytes `[pos, pos + len)` of the caller's buffer of `size` bytes at `p`.
fn window<'a>(
    p: *const c_void,
    size: usize,
    pos: usize,
    len: usize,
    what: &str,
) -> Result<&'a mut [u8]> {
    let end = pos.checked_add(len).filter(|&e| e <= size).ok_or_else(|| {
        MpiError::new(
            ErrorClass::Truncate,
            format!("{len} bytes at position {pos} do not fit the {size}-byte {what}"),
        )
    })?;
    if len == 0 {
        return Ok(&mut []);
    }
    // SAFETY: MPI requires the buffer to hold `size` bytes; `pos + len <= size` was checked and
    // a NULL buffer with a non-zero size was rejected by the kinds check.
    Ok(unsafe { std::slice::from_raw_parts_mut(p.cast::<u8>().cast_mut().add(pos), end - pos) })
}

/// Packs `count` elements of `dt` at `p` natively into `out` (`packed_len` bytes).
pub(super) fn pack_native(
    p: *const c_void,
    count: usize,
    dt: &Datatype,
    out: &mut [u8],
) -> Result<()> {
    let src = send_buf(p, count, dt)?;
    typed::pack(dt, count, &src, 0, out);
    Ok(())
}

/// The bytes of `count` elements of `dt` at `p` when that memory is their own packed stream
/// ([`Datatype::is_dense`]): the file accesses then move them without a staging copy.
pub(super) fn dense_in<'a>(
    p: *const c_void,
    count: usize,
    dt: &Datatype,
) -> Result<Option<&'a [u8]>> {
    let len = dt.packed_len(count)?;
    if !dt.is_dense() || len == 0 {
        return Ok(None);
    }
    // SAFETY: MPI requires the caller's buffer to hold `count` elements of `dt`, which for a
    // dense type are the `len` bytes at `p`; the kinds check rejected NULL with data.
    Ok(Some(unsafe {
        std::slice::from_raw_parts(p.cast::<u8>(), len)
    }))
}

/// [`dense_in`] for a buffer that receives data.
pub(super) fn dense_out<'a>(
    p: *mut c_void,
    count: usize,
    dt: &Datatype,
) -> Result<Option<&'a mut [u8]>> {
    let len = dt.packed_len(count)?;
    if !dt.is_dense() || len == 0 {
        return Ok(None);
    }
    // SAFETY: as in `dense_in`; the caller's receive buffer is writable and not otherwise
    // referenced while the call runs.
    Ok(Some(unsafe {
        std::slice::from_raw_parts_mut(p.cast::<u8>(), len)
    }))
}

/// Unpacks native packed bytes `src` into `count` elements of `dt` at `p`.
pub(super) fn unpack_native(p: *mut c_void, count: usize, dt: &Datatype, src: &[u8]) -> Result<()> {
    let mut dst = recv_buf(p, count, dt)?;
    typed::unpack(dt, count, &mut dst, 0, src);
    Ok(())
}

/// `MPI_Pack`.
pub fn pack<P: Position>(
    _w: &mut Mpi,
    inbuf: *const c_void,
    incount: usize,
    datatype: Datatype,
    outbuf: *mut c_void,
    outsize: usize,
    position: *mut P,
    _comm: CommId,
) -> Result<()> {
    let pos = position_of(position)?;
    let len = datatype.packed_len(incount)?;
    let out = window(outbuf, outsize, pos, len, "output buffer")?;
    pack_native(inbuf, incount, &datatype, out)?;
    advance(position, pos + len)
}

/// `MPI_Unpack`.
pub fn unpack<P: Position>(
    _w: &mut Mpi,
    inbuf: *const c_void,
    insize: usize,
    position: *mut P,
    outbuf: *mut c_void,
    outcount: usize,
    datatype: Datatype,
    _comm: CommId,
) -> Result<()> {
    let pos = position_of(position)?;
    let len = datatype.packed_len(outcount)?;
    let src = window(inbuf, insize, pos, len, "input buffer")?;
    unpack_native(outbuf, outcount, &datatype, src)?;
    advance(position, pos + len)
}

/// `MPI_Pack_size`: exactly the packed size (the native form has no header).
pub fn pack_size<S: TryFrom<usize>>(
    _w: &mut Mpi,
    incount: usize,
    datatype: Datatype,
    _comm: CommId,
    size: *mut S,
) -> Result<()> {
    let bytes = datatype.packed_len(incount)?;
    let bytes = S::try_from(bytes).map_err(|_| {
        MpiError::new(
            ErrorClass::Count,
            format!("packed size {bytes} does not fit the size argument's type"),
        )
    })?;
    write(size, bytes);
    Ok(())
}

/// Calls `f(handle, n)` for the runs of predefined elements of `n` elements of `t`, in typemap
/// order (markers and empty types produce nothing).
pub fn leaves(
    t: &TypeRef,
    n: usize,
    f: &mut impl FnMut(MPI_Datatype, usize) -> Result<()>,
) -> Result<()> {
    let dt = t.datatype();
    if n == 0 || dt.size() == 0 {
        return Ok(());
    }
    let r = match t {
        TypeRef::Named(h) => return f(*h, n),
        TypeRef::Derived(r) => r,
    };
    match r.combiner {
        Combiner::Struct | Combiner::StructInteger => {
            for _ in 0..n {
                for (i, child) in r.types.iter().enumerate() {
                    leaves(child, r.ints[i + 1].max(0) as usize, f)?;
                }
            }
            Ok(())
        }
        Combiner::F90Real | Combiner::F90Complex | Combiner::F90Integer => f(f90_basis(r), n),
        // Every other constructor repeats its one argument type.
        _ => {
            let child = &r.types[0];
            let per = dt.size() / child.datatype().size();
            leaves(child, n.saturating_mul(per), f)
        }
    }
}

/// The external32 size of `count` elements of `t`.
pub(super) fn external_len(t: &TypeRef, count: usize) -> Result<usize> {
    let mut total = 0usize;
    leaves(t, count, &mut |h, n| {
        total = external32::ext_size(h)?
            .checked_mul(n)
            .and_then(|b| b.checked_add(total))
            .ok_or_else(|| MpiError::new(ErrorClass::Count, "external32 size overflows"))?;
        Ok(())
    })?;
    Ok(total)
}

/// Checks the data representation name.
fn external32_rep(datarep: *const c_char) -> Result<()> {
    let rep = c_string(datarep, "datarep")?;
    if rep != "external32" {
        return Err(MpiError::new(
            ErrorClass::UnsupportedDatarep,
            format!("data representation \"{rep}\" is not supported (only \"external32\")"),
        ));
    }
    Ok(())
}

/// The committed type and its constructor record (external32 needs the predefined leaves).
fn external_type(w: &Mpi, t: &TypeArg) -> Result<(Datatype, TypeRef)> {
    let dt = crate::kinds::datatype(w, t.handle)?;
    Ok((dt, w.objects.types.type_ref(t.handle)?))
}

/// Converts between `count` elements of packed native data and external32, leaf by leaf.
pub(super) fn convert(
    t: &TypeRef,
    count: usize,
    native: &mut [u8],
    ext: &mut [u8],
    to_ext: bool,
) -> Result<()> {
    let (mut at_native, mut at_ext) = (0, 0);
    leaves(t, count, &mut |h, n| {
        let size = crate::datatypes::builtin(h).map_or(0, |b| b.size as usize) * n;
        let ext_size = external32::ext_size(h)? * n;
        let (a, b) = (
            &mut native[at_native..at_native + size],
            &mut ext[at_ext..at_ext + ext_size],
        );
        if to_ext {
            external32::encode(h, n, a, b)?;
        } else {
            external32::decode(h, n, b, a)?;
        }
        at_native += size;
        at_ext += ext_size;
        Ok(())
    })
}

/// `MPI_Pack_external`.
pub fn pack_external<P: Position>(
    w: &mut Mpi,
    datarep: *const c_char,
    inbuf: *const c_void,
    incount: usize,
    datatype: TypeArg,
    outbuf: *mut c_void,
    outsize: usize,
    position: *mut P,
) -> Result<()> {
    external32_rep(datarep)?;
    let (dt, t) = external_type(w, &datatype)?;
    let pos = position_of(position)?;
    let len = external_len(&t, incount)?;
    let out = window(outbuf, outsize, pos, len, "output buffer")?;
    let mut native = vec![0u8; dt.packed_len(incount)?];
    pack_native(inbuf, incount, &dt, &mut native)?;
    convert(&t, incount, &mut native, out, true)?;
    advance(position, pos + len)
}

/// `MPI_Unpack_external`.
pub fn unpack_external<P: Position>(
    w: &mut Mpi,
    datarep: *const c_char,
    inbuf: *const c_void,
    insize: usize,
    position: *mut P,
    outbuf: *mut c_void,
    outcount: usize,
    datatype: TypeArg,
) -> Result<()> {
    external32_rep(datarep)?;
    let (dt, t) = external_type(w, &datatype)?;
    let pos = position_of(position)?;
    let len = external_len(&t, outcount)?;
    let src = window(inbuf, insize, pos, len, "input buffer")?;
    let mut native = vec![0u8; dt.packed_len(outcount)?];
    convert(&t, outcount, &mut native, src, false)?;
    unpack_native(outbuf, outcount, &dt, &native)?;
    advance(position, pos + len)
}

/// `MPI_Pack_external_size`.
pub fn pack_external_size<S: Position>(
    w: &mut Mpi,
    datarep: *const c_char,
    incount: usize,
    datatype: TypeArg,
    size: *mut S,
) -> Result<()> {
    external32_rep(datarep)?;
    let (_, t) = external_type(w, &datatype)?;
    advance(size, external_len(&t, incount)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::typetable::Record;
    use reflex_engine::datatype::{Block, Layout};
    use std::rc::Rc;

    const INT: MPI_Datatype = 0x4c000405;
    const LONG: MPI_Datatype = 0x4c000807;
    const DOUBLE: MPI_Datatype = 0x4c00080b;

    fn named(h: MPI_Datatype) -> TypeRef {
        TypeRef::Named(h)
    }

    /// struct { long; 2 × int; double } at 0, 8, 16 bytes, then a contiguous of 2 of them.
    fn nested() -> TypeRef {
        let blocks = vec![
            Block {
                count: 1,
                disp: 0,
                dt: named(LONG).datatype(),
            },
            Block {
                count: 2,
                disp: 8,
                dt: named(INT).datatype(),
            },
            Block {
                count: 1,
                disp: 16,
                dt: named(DOUBLE).datatype(),
            },
        ];
        let s = Rc::new(Record::new(
            Datatype::derived(Layout::blocks(blocks, true).unwrap()),
            Combiner::Struct,
            vec![3, 1, 2, 1],
            vec![0, 8, 16],
            vec![named(LONG), named(INT), named(DOUBLE)],
        ));
        let child = TypeRef::Derived(s);
        let cdt = child.datatype();
        let c = Record::new(
            Datatype::derived(Layout::vector(2, 1, cdt.extent(), cdt).unwrap()),
            Combiner::Contiguous,
            vec![2],
            vec![],
            vec![child],
        );
        TypeRef::Derived(Rc::new(c))
    }

    #[test]
    fn leaves_come_in_typemap_order() {
        let mut seen = Vec::new();
        leaves(&nested(), 2, &mut |h, n| {
            seen.push((h, n));
            Ok(())
        })
        .unwrap();
        let one = [(LONG, 1), (INT, 2), (DOUBLE, 1)];
        assert_eq!(seen, [one, one, one, one].concat());
        assert_eq!(external_len(&nested(), 1).unwrap(), 2 * (4 + 8 + 8));
    }

    #[test]
    fn external32_of_a_struct_is_big_endian_without_padding() {
        let t = TypeRef::Derived(match nested() {
            TypeRef::Derived(r) => match &r.types[0] {
                TypeRef::Derived(s) => s.clone(),
                TypeRef::Named(_) => unreachable!(),
            },
            TypeRef::Named(_) => unreachable!(),
        });
        let mut native = Vec::new();
        native.extend_from_slice(&(-2i64).to_ne_bytes());
        native.extend_from_slice(&1i32.to_ne_bytes());
        native.extend_from_slice(&0x0102_0304i32.to_ne_bytes());
        native.extend_from_slice(&1.0f64.to_ne_bytes());
        let mut ext = vec![0u8; 20];
        convert(&t, 1, &mut native.clone(), &mut ext, true).unwrap();
        assert_eq!(
            ext,
            [0xff, 0xff, 0xff, 0xfe, 0, 0, 0, 1, 1, 2, 3, 4, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0]
        );
        let mut back = vec![0u8; native.len()];
        convert(&t, 1, &mut back, &mut ext, false).unwrap();
        assert_eq!(back, native);
    }
}
