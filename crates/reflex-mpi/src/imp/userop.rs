//! User-defined reduction operations (MPI-3.1 §5.9.5): `MPI_Op_create` (and MPI-4's
//! `MPI_Op_create_c`, whose function takes an `MPI_Count`)/`_free`/`_commutative`,
//! `MPI_Reduce_local`, and reductions with a user operation.
//!
//! The engine's collectives run user operations through [`UserReducer`], which implements the
//! engine's `UserReduce` on packed operands: the engine keeps the order of operands (lower ranks
//! first), this module calls the C function on memory laid out as the application's datatype
//! describes, so the function may walk that layout itself.

use super::pack::{pack_native, unpack_native};
use super::util::write;
use crate::ffi::*;
use crate::kinds::TypeArg;
use crate::ops::{OpArg, UserOp};
use crate::state::Mpi;
use reflex_engine::coll::{Reducer, UserReduce};
use reflex_engine::{Datatype, ErrorClass, MpiError, Result};
use std::ffi::{c_int, c_void};
use std::sync::Arc;

/// `MPI_User_function`.
type UserFn = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_int, *mut MPI_Datatype);

/// `MPI_User_function_c` (`MPI_Op_create_c`).
type UserFnC = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut MPI_Count, *mut MPI_Datatype);

/// `MPI_Op_create`.
pub fn op_create(
    w: &mut Mpi,
    user_fn: *const c_void,
    commute: c_int,
    op: *mut MPI_Op,
) -> Result<()> {
    create(w, user_fn, commute, op, false)
}

/// `MPI_Op_create_c`: the function takes its count as an `MPI_Count`.
pub fn op_create_c(
    w: &mut Mpi,
    user_fn: *const c_void,
    commute: c_int,
    op: *mut MPI_Op,
) -> Result<()> {
    create(w, user_fn, commute, op, true)
}

fn create(
    w: &mut Mpi,
    user_fn: *const c_void,
    commute: c_int,
    op: *mut MPI_Op,
    large_count: bool,
) -> Result<()> {
    if user_fn.is_null() {
        return Err(MpiError::new(ErrorClass::Arg, "user_fn is NULL"));
    }
    let h = w.objects.ops.create(UserOp {
        function: user_fn,
        commute: commute != 0,
        large_count,
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
    let mut handle = dt.handle;
    if op.large_count {
        let mut n = count as MPI_Count;
        // SAFETY: the pointer was given to MPI_Op_create_c as an MPI_User_function_c.
        let f: UserFnC = unsafe { std::mem::transmute(op.function) };
        // SAFETY: as for the int form below.
        unsafe { f(input, inout, &mut n, &mut handle) };
        return Ok(());
    }
    let mut n = c_int::try_from(count).map_err(|_| {
        MpiError::new(
            ErrorClass::Count,
            format!("count {count} does not fit an int"),
        )
    })?;
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
    // No MPI_IN_PLACE here, and the two buffers must differ (MPI-3.1 section 5.9.7).
    let in_place = [inbuf, inoutbuf.cast_const()]
        .iter()
        .any(|p| crate::kinds::is_in_place(*p));
    if count > 0 && (in_place || std::ptr::eq(inbuf, inoutbuf)) {
        return Err(MpiError::new(
            ErrorClass::Buffer,
            "MPI_Reduce_local takes neither MPI_IN_PLACE nor one buffer as both inbuf and inoutbuf",
        ));
    }
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

/// A user operation as the engine's collectives apply it: on packed operands, which are
/// unpacked into scratch memory laid out like the application's (the function is handed the
/// datatype and walks that layout itself), combined, and packed back. Dense datatypes skip the
/// scratch copies when the operands are aligned for them.
pub struct UserReducer {
    op: UserOp,
    dt: TypeArg,
}

// SAFETY: the only pointer inside is the application's function (code, never data); the MPI
// thread level governs which threads may call into the library and so into the function.
unsafe impl Send for UserReducer {}
// SAFETY: as above; the reducer is never mutated after creation.
unsafe impl Sync for UserReducer {}

impl UserReducer {
    /// The engine reducer of user operation `op` on elements of `dt`.
    pub fn reducer(op: UserOp, dt: &TypeArg) -> Reducer {
        Reducer::User(Arc::new(UserReducer { op, dt: dt.clone() }))
    }

    /// Calls the function straight on the packed bytes when they are the elements' own layout.
    fn in_place(&self, input: &[u8], inout: &mut [u8], count: usize) -> Option<Result<()>> {
        let dt = &self.dt.dt;
        let align = dt.align().max(1);
        let aligned = |p: *const u8| (p as usize).is_multiple_of(align);
        if !dt.is_dense() || !aligned(input.as_ptr()) || !aligned(inout.as_ptr()) {
            return None;
        }
        let (lo, _) = dt.span(count).ok()?;
        // The elements' origin lies `-lo` bytes into the buffer that wraps their span.
        let origin = |p: *mut u8| p.wrapping_offset(-lo).cast::<c_void>();
        let input = origin(input.as_ptr().cast_mut());
        Some(call(
            self.op,
            input,
            origin(inout.as_mut_ptr()),
            count,
            &self.dt,
        ))
    }
}

impl UserReduce for UserReducer {
    fn commutative(&self) -> bool {
        self.op.commute
    }

    fn reduce(&self, input: &[u8], inout: &mut [u8], count: usize) -> Result<()> {
        if let Some(done) = self.in_place(input, inout, count) {
            return done;
        }
        let dt = &self.dt.dt;
        let (mut a, mut b) = (Scratch::new(dt, count)?, Scratch::new(dt, count)?);
        unpack_native(a.addr(), count, dt, input)?;
        unpack_native(b.addr(), count, dt, inout)?;
        call(self.op, a.addr(), b.addr(), count, &self.dt)?;
        pack_native(b.addr(), count, dt, inout)
    }
}
