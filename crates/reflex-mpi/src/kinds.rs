//! Argument checks and handle conversions, one function per parameter kind of `functions.txt`.
//!
//! The generated shims call these in MPICH's order (communicator first, then parameter order), so
//! every MPI function checks its arguments the same way and returns the same error class for the
//! same mistake: `MPI_ERR_COMM`, `MPI_ERR_COUNT`, `MPI_ERR_TYPE`, `MPI_ERR_RANK`, `MPI_ERR_TAG`,
//! `MPI_ERR_ROOT`, `MPI_ERR_BUFFER`, `MPI_ERR_ARG`, with a message naming the bad value.

use crate::ffi::*;
use crate::handles;
use crate::state::Mpi;
pub use crate::typetable::TypeArg;
use reflex_engine::{CommId, Datatype, ErrorClass, GroupId, MpiError, Result};
use std::ffi::{c_int, c_void};

/// Largest tag (`MPI_TAG_UB`): MPICH's value, so programs tuned for it behave the same.
pub const TAG_UB: c_int = (1 << 30) - 1;

/// A communicator handle that names a live communicator.
pub fn comm(w: &Mpi, h: MPI_Comm) -> Result<CommId> {
    if h == handles::COMM_NULL {
        return Err(MpiError::new(
            ErrorClass::Comm,
            "MPI_COMM_NULL is not a valid communicator here",
        ));
    }
    let id = handles::comm_id(h).ok_or_else(|| {
        MpiError::new(
            ErrorClass::Comm,
            format!("{h:#x} is not a communicator handle"),
        )
    })?;
    if id.0 < reflex_engine::FIRST_USER_COMM
        && crate::state::world_model() != crate::state::WorldModel::Active
    {
        return Err(world_model_comm(id));
    }
    w.world.engine.comm(id)?;
    Ok(id)
}

/// `MPI_COMM_WORLD` and `MPI_COMM_SELF` are valid only in the World Model (MPI-4.0 §11.2):
/// not in a process that uses sessions alone, nor after `MPI_Finalize` while sessions are open.
#[cold]
fn world_model_comm(id: CommId) -> MpiError {
    let name = match id {
        reflex_engine::COMM_WORLD => "MPI_COMM_WORLD",
        _ => "MPI_COMM_SELF",
    };
    let why = match crate::state::world_model() {
        crate::state::WorldModel::Ended => " after MPI_Finalize",
        _ => ": MPI_Init was not called (sessions only)",
    };
    MpiError::new(ErrorClass::Comm, format!("{name} is not valid{why}"))
}

/// A session handle that names an open session.
pub fn session(w: &Mpi, h: MPI_Session) -> Result<u32> {
    if h == handles::SESSION_NULL {
        return Err(MpiError::new(
            ErrorClass::Session,
            "MPI_SESSION_NULL is not a valid session here",
        ));
    }
    handles::session_index(h)
        .filter(|&i| w.objects.sessions.get(i).is_ok())
        .ok_or_else(|| {
            MpiError::new(
                ErrorClass::Session,
                format!("{h:#x} is not a session handle (or the session was finalized)"),
            )
        })
}

/// A datatype communication may use: predefined, or a committed user type (`MPI_ERR_TYPE`
/// otherwise, naming the handle). Predefined types are found without touching the table.
#[inline]
pub fn datatype(w: &Mpi, h: MPI_Datatype) -> Result<Datatype> {
    match crate::datatypes::builtin(h) {
        Some(b) => Ok(Datatype::Basic(b)),
        None => w.objects.types.committed(h),
    }
}

/// A datatype argument that is not significant on every rank (root-only, or beside
/// `MPI_IN_PLACE`): `MPI_DATATYPE_NULL` is accepted as a type of no data (a rank where it does
/// matter then sees its blocks as empty); any other handle must be valid and committed.
pub fn datatype_opt(w: &Mpi, h: MPI_Datatype) -> Result<Datatype> {
    if h == handles::DATATYPE_NULL {
        return Ok(Datatype::Basic(reflex_engine::Basic::plain(
            reflex_engine::ValueKind::Byte,
            0,
        )));
    }
    datatype(w, h)
}

/// A datatype that only some ranks use: [`datatype_opt`] where `significant`, else not looked
/// at (whatever the handle) and taken as a type of no data.
pub fn datatype_if(significant: bool, w: &Mpi, h: MPI_Datatype) -> Result<Datatype> {
    datatype_opt(
        w,
        if significant {
            h
        } else {
            handles::DATATYPE_NULL
        },
    )
}

/// Any valid datatype, committed or not (constructors, queries, names, attributes).
pub fn datatype_any(w: &Mpi, h: MPI_Datatype) -> Result<TypeArg> {
    w.objects.types.any(h)
}

/// A window handle.
pub fn win(w: &Mpi, h: MPI_Win) -> Result<reflex_engine::WinId> {
    match handles::win_id(h) {
        Some(id) if w.world.engine.win_exists(id) => Ok(id),
        _ if h == handles::WIN_NULL => Err(MpiError::new(
            ErrorClass::Win,
            "MPI_WIN_NULL is not a valid window here",
        )),
        _ => Err(MpiError::new(
            ErrorClass::Win,
            format!("{h:#x} is not a window handle (or the window was freed)"),
        )),
    }
}

/// A file handle (`MPI_FILE_NULL` refused).
pub fn file(w: &Mpi, h: MPI_File) -> Result<crate::files::FileId> {
    match file_opt(w, h)? {
        Some(id) => Ok(id),
        None => Err(MpiError::new(
            ErrorClass::File,
            "MPI_FILE_NULL is not a valid file here",
        )),
    }
}

/// A file handle or `MPI_FILE_NULL` (`None`): the file error-handler calls.
pub fn file_opt(w: &Mpi, h: MPI_File) -> Result<Option<crate::files::FileId>> {
    if h.is_null() {
        return Ok(None);
    }
    match handles::file_index(h) {
        Some(i) if w.objects.files.get(i).is_ok() => Ok(Some(i)),
        _ => Err(MpiError::new(
            ErrorClass::File,
            format!("{h:p} is not a file handle (or the file was closed)"),
        )),
    }
}

/// A group handle.
pub fn group(h: MPI_Group) -> Result<GroupId> {
    if h == handles::GROUP_NULL {
        return Err(MpiError::new(
            ErrorClass::Group,
            "MPI_GROUP_NULL is not a valid group here",
        ));
    }
    handles::group_id(h)
        .ok_or_else(|| MpiError::new(ErrorClass::Group, format!("{h:#x} is not a group handle")))
}

/// A reduction operation: predefined, or one created by `MPI_Op_create`.
pub fn op(w: &Mpi, h: MPI_Op) -> Result<crate::ops::OpArg> {
    w.objects.ops.lookup(h)
}

/// A datatype communication may use, with its handle (for the calls that hand the handle on:
/// MPI-IO passes it to the conversion functions of a data representation).
pub fn datatype_arg(w: &Mpi, h: MPI_Datatype) -> Result<TypeArg> {
    Ok(TypeArg {
        handle: h,
        dt: datatype(w, h)?,
    })
}

/// Checks that a datatype taken as [`TypeArg`] may be used for communication (predefined or
/// committed), for the calls that also need its handle.
pub fn committed(w: &Mpi, t: &TypeArg) -> Result<()> {
    datatype(w, t.handle).map(drop)
}

/// A non-negative count.
pub fn count<N: TryInto<usize> + Copy + std::fmt::Display>(n: N, name: &str) -> Result<usize> {
    n.try_into()
        .map_err(|_| MpiError::new(ErrorClass::Count, format!("{name} is negative ({n})")))
}

/// A count that only some ranks use: checked where `significant`, else taken as 0 whatever it
/// is (a non-root rank's receive count in `MPI_Gather`, the send count beside `MPI_IN_PLACE`).
pub fn count_if<N: TryInto<usize> + Copy + std::fmt::Display>(
    significant: bool,
    n: N,
    name: &str,
) -> Result<usize> {
    if significant {
        count(n, name)
    } else {
        Ok(0)
    }
}

/// `MPI_ERR_BUFFER` when a collective's send and receive buffers are the same memory where
/// both are `used` (the standard's way to say so is `MPI_IN_PLACE`).
pub fn not_aliased(send: *const c_void, recv: *const c_void, used: bool) -> Result<()> {
    if used && !send.is_null() && std::ptr::eq(send, recv) {
        return Err(MpiError::new(
            ErrorClass::Buffer,
            "sendbuf and recvbuf are the same buffer (aliased arguments; use MPI_IN_PLACE)",
        ));
    }
    Ok(())
}

/// True for `MPI_NO_OP` (a get-accumulate's origin buffer is then not used).
pub fn is_no_op(op: MPI_Op) -> bool {
    crate::ops::predefined(op) == Some(reflex_engine::ReduceOp::NoOp)
}

/// True for `MPI_IN_PLACE`.
pub fn is_in_place(p: *const c_void) -> bool {
    p as usize == crate::ffi::IN_PLACE
}

/// Whether this rank is the root of a rooted collective: its rank on an intracommunicator,
/// `MPI_ROOT` on an intercommunicator (a bad root is reported by the root check that follows).
pub fn at_root(w: &Mpi, comm: CommId, root: c_int) -> Result<bool> {
    let c = w.world.engine.comm(comm)?;
    if c.is_inter() {
        return Ok(root == reflex_engine::coll::inter::ROOT);
    }
    Ok(root >= 0 && root as u32 == c.rank)
}

/// A send tag: `0..=MPI_TAG_UB`.
pub fn tag(t: c_int) -> Result<c_int> {
    if (0..=TAG_UB).contains(&t) {
        Ok(t)
    } else {
        Err(MpiError::new(
            ErrorClass::Tag,
            format!("tag {t} is outside 0..={TAG_UB}"),
        ))
    }
}

/// A receive tag: a send tag or `MPI_ANY_TAG`.
pub fn recv_tag(t: c_int) -> Result<c_int> {
    if t == reflex_engine::ANY_TAG {
        Ok(t)
    } else {
        tag(t)
    }
}

/// A destination rank of `comm`, or `MPI_PROC_NULL`.
pub fn rank(w: &Mpi, comm: CommId, r: c_int) -> Result<c_int> {
    w.world.engine.comm(comm)?.check_rank(r, "destination")?;
    Ok(r)
}

/// A rank of `comm` (`MPI_PROC_NULL` is an error here).
pub fn rank_strict(w: &Mpi, comm: CommId, r: c_int) -> Result<c_int> {
    let size = w.world.engine.comm(comm)?.size();
    if r < 0 || r as usize >= size {
        return Err(MpiError::new(
            ErrorClass::Rank,
            format!("rank {r} is out of range for a communicator of size {size}"),
        ));
    }
    Ok(r)
}

/// An info handle: `None` for `MPI_INFO_NULL` (the call decides whether that is allowed).
pub fn info(w: &Mpi, h: MPI_Info) -> Result<Option<crate::info::InfoId>> {
    w.objects.infos.lookup(h)
}

/// A source rank of `comm`, `MPI_ANY_SOURCE` or `MPI_PROC_NULL`.
pub fn source(w: &Mpi, comm: CommId, r: c_int) -> Result<c_int> {
    if r == reflex_engine::ANY_SOURCE {
        return Ok(r);
    }
    w.world.engine.comm(comm)?.check_rank(r, "source")?;
    Ok(r)
}

/// A root rank of `comm`; on an intercommunicator also `MPI_ROOT` or `MPI_PROC_NULL` (in the
/// root's group), the root's rank in the remote group otherwise.
pub fn root(w: &Mpi, comm: CommId, r: c_int) -> Result<c_int> {
    let c = w.world.engine.comm(comm)?;
    let inter = c.is_inter();
    if inter && (r == reflex_engine::coll::inter::ROOT || r == reflex_engine::PROC_NULL) {
        return Ok(r);
    }
    let size = c.peers().size();
    if r < 0 || r as usize >= size {
        let of = match inter {
            true => "the remote group of an intercommunicator",
            false => "a communicator",
        };
        return Err(MpiError::new(
            ErrorClass::Root,
            format!("root {r} is out of range for {of} of size {size}"),
        ));
    }
    Ok(r)
}

/// Whether this process's send buffer (`inout`: the buffer of `MPI_Bcast`) in a rooted
/// collective is significant: always on an intracommunicator; on an intercommunicator not at
/// `MPI_PROC_NULL`, and at `MPI_ROOT` only for a broadcast.
pub fn buffer_significant(w: &Mpi, comm: CommId, root: c_int, inout: bool) -> Result<bool> {
    if !w.world.engine.comm(comm)?.is_inter() {
        return Ok(true);
    }
    Ok(match root {
        reflex_engine::PROC_NULL => false,
        reflex_engine::coll::inter::ROOT => inout,
        _ => true,
    })
}

/// A data buffer: NULL is accepted only with a zero count.
pub fn buffer<T, N>(p: *const T, count: N, name: &str) -> Result<()>
where
    N: Copy + Default + PartialOrd + std::fmt::Display,
{
    if p.is_null() && count > N::default() {
        return Err(MpiError::new(
            ErrorClass::Buffer,
            format!("{name} is NULL but the count is {count}"),
        ));
    }
    Ok(())
}

/// A data buffer of `count` elements of datatype handle `dt`: NULL (`MPI_BOTTOM`) is also
/// accepted with a derived type, whose displacements may be absolute addresses.
pub fn typed_buffer<T, N>(p: *const T, count: N, dt: MPI_Datatype, name: &str) -> Result<()>
where
    N: Copy + Default + PartialOrd + std::fmt::Display,
{
    if crate::datatypes::builtin(dt).is_none() && dt != handles::DATATYPE_NULL {
        return Ok(());
    }
    buffer(p, count, name)
}

/// An output pointer that must not be NULL.
/// Starts a call that makes a communicator with `MPI_COMM_NULL` in its output (checked
/// non-NULL by [`out_ptr`] just before), so that the caller finds no stale handle there when
/// the call fails.
pub(crate) fn comm_out_null(p: *mut MPI_Comm) {
    // SAFETY: checked non-NULL by `out_ptr`; MPI requires output handles writable.
    unsafe { p.write(handles::COMM_NULL) };
}

pub fn out_ptr<T>(p: *mut T, name: &str) -> Result<()> {
    if p.is_null() {
        return Err(MpiError::new(
            ErrorClass::Arg,
            format!("output argument {name} is NULL"),
        ));
    }
    Ok(())
}
