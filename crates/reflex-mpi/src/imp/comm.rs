//! Communicator calls of the foundation: rank, size, dup, split, create, free, compare, group
//! (groups: `group.rs`; the newer constructors: `comm_create.rs`).

use super::util::write;
use super::{attr, info};
use crate::attr::Obj;
use crate::ffi::*;
use crate::handles;
use crate::info::InfoId;
use crate::state::Mpi;
use crate::threads;
use reflex_engine::{CommId, GroupId, MpiError, RequestId, Result};
use std::ffi::c_int;

/// `MPI_Comm_rank`.
pub fn comm_rank(w: &mut Mpi, comm: CommId, rank: *mut c_int) -> Result<()> {
    write(rank, w.world.engine.comm(comm)?.rank as c_int);
    Ok(())
}

/// `MPI_Comm_size`.
pub fn comm_size(w: &mut Mpi, comm: CommId, size: *mut c_int) -> Result<()> {
    write(size, w.world.engine.comm(comm)?.size() as c_int);
    Ok(())
}

/// `MPI_Comm_dup`.
pub fn comm_dup(w: &mut Mpi, comm: CommId, newcomm: *mut MPI_Comm) -> Result<()> {
    dup_blocking(w, comm, Hints::Parent, newcomm)
}

/// Where a duplicate's info hints come from.
pub(crate) enum Hints {
    /// Its parent's (`MPI_Comm_dup`).
    Parent,
    /// An info object, or none (`MPI_Comm_dup_with_info`).
    Info(Option<InfoId>),
}

/// Starts duplicating `comm`: the new communicator (usable once the request completes), with
/// the parent's attributes copied through their callbacks and its hints. When a callback fails,
/// the duplicate is abandoned (it still completes, since the other processes take part, and is
/// freed then) and the callback's error returned.
pub(crate) fn dup_start(w: &mut Mpi, comm: CommId, hints: Hints) -> Result<(CommId, RequestId)> {
    let (id, request) = w.world.engine.comm_idup(comm)?;
    let copied = attr::copy_all(
        w,
        Obj::Comm(comm),
        handles::comm_handle(comm),
        Obj::Comm(id),
    );
    if let Err(e) = copied {
        let _ = attr::delete_all(w, Obj::Comm(id), handles::comm_handle(id));
        w.objects.forget_comm(id);
        w.world.engine.comm_idup_abandon(id, request);
        return Err(e);
    }
    match hints {
        Hints::Parent => info::copy_hints(w, comm, id),
        Hints::Info(i) => info::set_hints(w, id, i),
    }
    Ok((id, request))
}

/// Frees duplicate `id` whose agreement failed, and returns the failure.
fn dup_failed(w: &mut Mpi, id: CommId, e: MpiError) -> Result<()> {
    let _ = attr::delete_all(w, Obj::Comm(id), handles::comm_handle(id));
    w.objects.forget_comm(id);
    let _ = w.world.engine.comm_free(id);
    Err(e)
}

/// `MPI_Comm_dup` and `MPI_Comm_dup_with_info`: [`dup_start`], waited for (under
/// `MPI_THREAD_MULTIPLE` without the lock, so that threads may duplicate communicators at once).
pub(crate) fn dup_blocking(
    w: &mut Mpi,
    comm: CommId,
    hints: Hints,
    newcomm: *mut MPI_Comm,
) -> Result<()> {
    let (id, request) = dup_start(w, comm, hints)?;
    threads::block_on(
        w,
        move |_| Ok(request),
        move |w, c| {
            if let Some(e) = c.status.error {
                return dup_failed(w, id, *e);
            }
            write(newcomm, handles::comm_handle(id));
            Ok(())
        },
    )
}

/// `MPI_Comm_split`.
pub fn comm_split(
    w: &mut Mpi,
    comm: CommId,
    color: c_int,
    key: c_int,
    newcomm: *mut MPI_Comm,
) -> Result<()> {
    let start = move |w: &mut Mpi| w.world.engine.comm_isplit(comm, color, key).map(Some);
    wait_made(w, start, |_, _| Ok(()), newcomm)
}

/// `MPI_Comm_create`.
pub fn comm_create(
    w: &mut Mpi,
    comm: CommId,
    group: GroupId,
    newcomm: *mut MPI_Comm,
) -> Result<()> {
    let start = move |w: &mut Mpi| w.world.engine.comm_icreate(comm, group).map(Some);
    wait_made(w, start, |_, _| Ok(()), newcomm)
}

/// Waits for the split, create or merge that `start` begins (under
/// `MPI_THREAD_MULTIPLE` without the lock), runs `adopt` on what it made and hands that out, or
/// `MPI_COMM_NULL`. A `start` that returns no request made nothing (a caller outside the group).
pub(crate) fn wait_made(
    w: &mut Mpi,
    start: impl FnOnce(&mut Mpi) -> Result<Option<RequestId>>,
    adopt: impl FnOnce(&mut Mpi, CommId) -> Result<()> + 'static,
    newcomm: *mut MPI_Comm,
) -> Result<()> {
    let Some(request) = start(w)? else {
        write(newcomm, handles::COMM_NULL);
        return Ok(());
    };
    threads::block_on(
        w,
        move |_| Ok(request),
        move |w, c| {
            let made = w.world.engine.take_made(request);
            if let Some(e) = c.status.error {
                return Err(*e);
            }
            if let Some(id) = made {
                adopt(w, id)?;
            }
            write(
                newcomm,
                made.map_or(handles::COMM_NULL, handles::comm_handle),
            );
            Ok(())
        },
    )
}

/// `MPI_Comm_free`: the delete callbacks of its attributes run first, the last set first.
pub fn comm_free(w: &mut Mpi, comm: *mut MPI_Comm) -> Result<()> {
    // SAFETY: the kinds check made sure the pointer is non-NULL.
    let h = unsafe { *comm };
    let id = crate::kinds::comm(w, h)?;
    if id == reflex_engine::COMM_WORLD || id == reflex_engine::COMM_SELF {
        return w.world.engine.comm_free(id); // the engine refuses, with the right message
    }
    attr::delete_all(w, Obj::Comm(id), h)?;
    w.world.engine.comm_free(id)?;
    if w.world.parent == Some(id) {
        w.world.parent = None; // MPI_Comm_get_parent answers MPI_COMM_NULL from now on
    }
    w.objects.forget_comm(id);
    write(comm, handles::COMM_NULL);
    Ok(())
}

/// `MPI_Comm_compare`.
pub fn comm_compare(w: &mut Mpi, comm1: CommId, comm2: CommId, result: *mut c_int) -> Result<()> {
    write(result, w.world.engine.comm_compare(comm1, comm2)? as c_int);
    Ok(())
}

/// `MPI_Comm_group`.
pub fn comm_group(w: &mut Mpi, comm: CommId, group: *mut MPI_Group) -> Result<()> {
    let id = w.world.engine.comm_group(comm)?;
    write(group, handles::group_handle(id));
    Ok(())
}
