//! The newer communicator constructors: `MPI_Comm_create_group`, `MPI_Comm_split_type`,
//! `MPI_Comm_dup_with_info`, and `MPI_Comm_idup` (+ `_with_info`, MPI-4.0), whose context-id
//! agreement runs in the background (`reflex_engine`'s `comm_idup` module).

use super::comm::{dup_blocking, dup_start, wait_made, Hints};
use super::info;
use super::util::write;
use crate::ffi::*;
use crate::handles;
use crate::info::InfoId;
use crate::state::Mpi;
use reflex_engine::{CommId, ErrorClass, GroupId, MpiError, Result};
use std::ffi::c_int;

/// `MPI_COMM_TYPE_SHARED`.
const COMM_TYPE_SHARED: c_int = 1;
/// `MPI_COMM_TYPE_HW_GUIDED` (MPI-4.0).
const COMM_TYPE_HW_GUIDED: c_int = 2;
/// `MPI_COMM_TYPE_HW_UNGUIDED` (MPI-4.0).
const COMM_TYPE_HW_UNGUIDED: c_int = 3;

fn write_comm(newcomm: *mut MPI_Comm, id: Option<CommId>) -> Result<()> {
    write(newcomm, id.map_or(handles::COMM_NULL, handles::comm_handle));
    Ok(())
}

/// `MPI_Comm_create_group`: collective over `group` only; `tag` tells concurrent calls apart.
pub fn comm_create_group(
    w: &mut Mpi,
    comm: CommId,
    group: GroupId,
    tag: c_int,
    newcomm: *mut MPI_Comm,
) -> Result<()> {
    let start = move |w: &mut Mpi| w.world.engine.comm_icreate_group(comm, group, tag);
    wait_made(w, start, |_, _| Ok(()), newcomm)
}

/// The label that groups processes for `split_type`, or `None` for `MPI_COMM_NULL`.
fn split_label(w: &Mpi, split_type: c_int, info: Option<InfoId>) -> Result<Option<String>> {
    let host = || w.world.engine.shared_domain();
    match split_type {
        UNDEFINED | COMM_TYPE_HW_UNGUIDED => Ok(None),
        COMM_TYPE_SHARED => Ok(Some(host())),
        COMM_TYPE_HW_GUIDED => {
            // The one resource level Reflex knows is the shared-memory domain (the node).
            let resource = info.and_then(|i| {
                w.objects
                    .infos
                    .get(i)
                    .get("mpi_hw_resource_type")
                    .map(str::to_string)
            });
            Ok((resource.as_deref() == Some("mpi_shared_memory")).then(host))
        }
        other => Err(MpiError::new(
            ErrorClass::Arg,
            format!(
                "split_type {other} is not MPI_COMM_TYPE_SHARED, a hardware type or MPI_UNDEFINED"
            ),
        )),
    }
}

/// `MPI_Comm_split_type`: `MPI_COMM_TYPE_SHARED` groups the processes of one node (those that
/// share its segment; the host name where ranks use no segment); the MPI-4.0
/// hardware types find no finer level than that (`MPI_COMM_NULL` when none applies).
pub fn comm_split_type(
    w: &mut Mpi,
    comm: CommId,
    split_type: c_int,
    key: c_int,
    info: Option<InfoId>,
    newcomm: *mut MPI_Comm,
) -> Result<()> {
    let label = split_label(w, split_type, info)?;
    let start = move |w: &mut Mpi| {
        let label = label.as_ref().map(String::as_bytes);
        w.world.engine.comm_isplit_label(comm, label, key).map(Some)
    };
    let adopt = move |w: &mut Mpi, id| {
        info::set_hints(w, id, info);
        Ok(())
    };
    wait_made(w, start, adopt, newcomm)
}

/// `MPI_Comm_dup_with_info`: attributes are copied, the hints are `info`'s.
pub fn comm_dup_with_info(
    w: &mut Mpi,
    comm: CommId,
    info: Option<InfoId>,
    newcomm: *mut MPI_Comm,
) -> Result<()> {
    dup_blocking(w, comm, Hints::Info(info), newcomm)
}

/// `MPI_Comm_idup`: the new handle at once, usable when the request completes.
pub fn comm_idup(
    w: &mut Mpi,
    comm: CommId,
    newcomm: *mut MPI_Comm,
    request: *mut MPI_Request,
) -> Result<()> {
    idup(w, comm, Hints::Parent, newcomm, request)
}

/// `MPI_Comm_idup_with_info` (MPI-4.0).
pub fn comm_idup_with_info(
    w: &mut Mpi,
    comm: CommId,
    info: Option<InfoId>,
    newcomm: *mut MPI_Comm,
    request: *mut MPI_Request,
) -> Result<()> {
    idup(w, comm, Hints::Info(info), newcomm, request)
}

fn idup(
    w: &mut Mpi,
    comm: CommId,
    hints: Hints,
    newcomm: *mut MPI_Comm,
    request: *mut MPI_Request,
) -> Result<()> {
    let (id, req) = dup_start(w, comm, hints)?;
    write(request, handles::request_handle(req));
    write_comm(newcomm, Some(id))
}
