//! User-defined reduction operations (MPI-3.1 §5.9.5): `MPI_Op_create`/`_free`/`_commutative`,
//! `MPI_Reduce_local`, and reductions with a user operation.
//!
//! The engine never calls application code, so a reduction with a user operation is folded here:
//! every rank's contribution is gathered to the root as packed bytes, the root unpacks each into
//! a scratch buffer laid out like the application's (the function is handed the datatype and
//! walks that layout itself) and folds them in rank order, `x0 op (x1 op (... op xn-1))`, which
//! is correct for non-commutative operations too; the result is unpacked into the receive buffer
//! through the datatype, so its gaps are never written. Allreduce is this reduction to rank 0
//! followed by a broadcast. One gather and one fold: fine for the small vectors user operations
//! are used on; a tree would not change the result.

use super::pack::{pack_native, unpack_native};
use super::util::{is_in_place, write};
use crate::ffi::*;
use crate::kinds::TypeArg;
use crate::ops::{OpArg, UserOp};
use crate::state::Mpi;
use reflex_base::buf::{RecvBuf, SendBuf};
use reflex_engine::{Basic, CommId, Datatype, ErrorClass, MpiError, Result, ValueKind};
use std::ffi::{c_int, c_void};

/// `MPI_User_function`.
type UserFn = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_int, *mut MPI_Datatype);

/// `MPI_Op_create`.
pub fn op_create(
    w: &mut Mpi,
    user_fn: *const c_void,
    commute: c_int,
    op: *mut MPI_Op,
) -> Result<()> {
    if user_fn.is_null() {
        return Err(MpiError::new(ErrorClass::Arg, "user_fn is NULL"));
    }
    let h = w.objects.ops.create(UserOp {
        function: user_fn,
        commute: commute != 0,
    })?;
    write(op, h);
    Ok(())
}

/// `MPI_Op_free`.
pub fn op_free(w: &mut Mpi, op: *mut MPI_Op) -> Result<()> {
    // SAFETY: the kinds check made sure the pointer is non-NULL; MPI requires it readable.
    let h = unsafe { *op };
    w.objects.ops.free(h)?;
    write(op, crate::handles::OP_NULL);
    Ok(())
}

/// `MPI_Op_commutative`.
pub fn op_commutative(_w: &mut Mpi, op: OpArg, commute: *mut c_int) -> Result<()> {
    let c = match op {
        OpArg::Predefined(_) => true,
        OpArg::User(_, u) => u.commute,
    };
    write(commute, c_int::from(c));
    Ok(())
}

/// Calls `inout = input op inout` for `count` elements of `dt` laid out as the application's.
fn call(
    op: UserOp,
    input: *mut c_void,
    inout: *mut c_void,
    count: usize,
    dt: &TypeArg,
) -> Result<()> {
    let mut n = c_int::try_from(count).map_err(|_| {
        MpiError::new(
            ErrorClass::Count,
            format!("count {count} does not fit an int"),
        )
    })?;
    let mut handle = dt.handle;
    // SAFETY: the pointer was given to MPI_Op_create as an MPI_User_function.
    let f: UserFn = unsafe { std::mem::transmute(op.function) };
    // SAFETY: a C callback called with buffers holding `count` elements of `dt` and valid
    // pointers to two locals, as the standard defines.
    unsafe { f(input, inout, &mut n, &mut handle) };
    Ok(())
}

/// `MPI_Reduce_local`.
pub fn reduce_local(
    _w: &mut Mpi,
    inbuf: *const c_void,
    inoutbuf: *mut c_void,
    count: usize,
    datatype: TypeArg,
    op: OpArg,
) -> Result<()> {
    let OpArg::Predefined(op) = op else {
        let OpArg::User(_, u) = op else {
            unreachable!()
        };
        return call(u, inbuf.cast_mut(), inoutbuf, count, &datatype);
    };
    let Datatype::Basic(basic) = datatype.dt else {
        return Err(MpiError::new(
            ErrorClass::Op,
            "predefined reduction operations apply to predefined datatypes only",
        ));
    };
    let len = datatype.dt.contiguous_span(count)?;
    if len == 0 {
        return Ok(());
    }
    // SAFETY: MPI requires both buffers to hold `count` elements of the predefined type (`len`
    // bytes); they must not overlap (the standard forbids aliasing here).
    let (input, inout) = unsafe {
        (
            std::slice::from_raw_parts(inbuf.cast::<u8>(), len),
            std::slice::from_raw_parts_mut(inoutbuf.cast::<u8>(), len),
        )
    };
    reflex_engine::op::apply(op, &basic, inout, input)
}

/// Memory laid out like `count` elements of a datatype at some address (16-byte aligned, as
/// `malloc` would give, so the user function may read `long double`s).
struct Scratch {
    words: Vec<u128>,
    lo: isize,
}

impl Scratch {
    fn new(dt: &Datatype, count: usize) -> Result<Self> {
        let (lo, len) = dt.span(count)?;
        Ok(Self {
            words: vec![0; len.div_ceil(16)],
            lo,
        })
    }

    /// The address the elements start at (the buffer starts at the lowest byte they touch).
    fn addr(&mut self) -> *mut c_void {
        self.words
            .as_mut_ptr()
            .cast::<u8>()
            .wrapping_offset(-self.lo)
            .cast()
    }
}

const BYTE: Basic = Basic::plain(ValueKind::Byte, 1);

/// A reduction with a user operation to `root`; `recvbuf` matters at the root only.
#[allow(clippy::too_many_arguments)] // the MPI call's own parameter list
pub fn user_reduce(
    w: &mut Mpi,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: usize,
    dt: &TypeArg,
    op: UserOp,
    root: c_int,
    comm: CommId,
) -> Result<()> {
    let c = w.world.engine.comm(comm)?;
    let (me, size) = (c.rank as c_int, c.size());
    let packed_len = dt.dt.packed_len(count)?;
    let mut mine = vec![0u8; packed_len];
    let src = if is_in_place(sendbuf) && me == root {
        recvbuf.cast_const()
    } else {
        sendbuf
    };
    pack_native(src, count, &dt.dt, &mut mine)?;
    let byte = Datatype::Basic(BYTE);
    let mut all = vec![0u8; if me == root { packed_len * size } else { 0 }];
    // SAFETY: `mine` and `all` live until the end of this function and are not touched while
    // the gather runs (it completes before returning).
    let (send, recv) = unsafe {
        (
            SendBuf::from_raw(mine.as_ptr(), mine.len()),
            RecvBuf::from_raw(all.as_mut_ptr(), all.len()),
        )
    };
    let send = Some((send, packed_len, byte.clone()));
    w.world
        .engine
        .gather(send, recv, packed_len, byte, root, comm)?;
    if me != root {
        return Ok(());
    }
    let (mut acc, mut next) = (Scratch::new(&dt.dt, count)?, Scratch::new(&dt.dt, count)?);
    let chunk = |r: usize| &all[r * packed_len..(r + 1) * packed_len];
    unpack_native(acc.addr(), count, &dt.dt, chunk(size - 1))?;
    for r in (0..size - 1).rev() {
        unpack_native(next.addr(), count, &dt.dt, chunk(r))?;
        call(op, next.addr(), acc.addr(), count, dt)?;
    }
    let mut result = vec![0u8; packed_len];
    pack_native(acc.addr(), count, &dt.dt, &mut result)?;
    unpack_native(recvbuf, count, &dt.dt, &result)
}
