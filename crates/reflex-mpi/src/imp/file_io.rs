//! Data access (MPI-3.1 §13.4): explicit offsets and the individual file pointer, each blocking,
//! nonblocking, collective and split collective.
//!
//! Every access is one [`access`]: the buffer is packed (writes) into a staging buffer of its
//! packed size, which `reflex_engine::file` moves between the view's file runs; reads unpack
//! what was really read (a short read at the end of the file sets the status's count to it).
//! Collective forms are the independent access followed by an agreement over the file's
//! communicator (all ranks learn whether every rank succeeded; no two-phase aggregation).
//! Nonblocking forms complete before returning and hand out a completed request; a split
//! collective does its work in `_begin` and keeps the byte count for `_end`.

use super::pack::{pack_native, unpack_native};
use super::util::{write, write_status};
use crate::ffi::*;
use crate::files::FileId;
use crate::handles;
use crate::state::Mpi;
use reflex_engine::file::{read_view, with_lock, write_view};
use reflex_engine::{Datatype, ErrorClass, MpiError, Result, Status};
use std::ffi::c_void;

/// Where an access starts.
#[derive(Debug, Clone, Copy)]
pub(super) enum At {
    /// An explicit offset, in etypes of the view.
    Offset(MPI_Offset),
    /// The individual file pointer (which the access advances).
    Pointer,
    /// A byte of view data (where the shared file pointer was).
    Data(u64),
}

/// Which way the data goes, with the application's buffer.
#[derive(Debug, Clone, Copy)]
pub(super) enum Dir {
    /// From the file into the buffer.
    Read(*mut c_void),
    /// From the buffer into the file.
    Write(*const c_void),
}

/// One independent access of `count` elements of `dt`; returns the bytes moved.
pub(super) fn access(
    w: &mut Mpi,
    fh: FileId,
    at: At,
    dir: Dir,
    count: usize,
    dt: &Datatype,
) -> Result<usize> {
    let f = w.objects.files.get(fh)?;
    match dir {
        Dir::Read(_) => f.amode.check_read()?,
        Dir::Write(_) => f.amode.check_write()?,
    }
    if f.amode.sequential() && !matches!(at, At::Data(_)) {
        return Err(MpiError::new(
            ErrorClass::UnsupportedOperation,
            "the file was opened with MPI_MODE_SEQUENTIAL: only shared file pointers may be used",
        ));
    }
    let esize = f.view.etype_size();
    let len = dt.packed_len(count)?;
    if !(len as u64).is_multiple_of(esize) {
        return Err(MpiError::new(
            ErrorClass::Type,
            format!("{len} bytes of data are not a whole number of etypes ({esize} bytes each)"),
        ));
    }
    let start = match at {
        At::Offset(o) => u64::try_from(o)
            .map_err(|_| MpiError::new(ErrorClass::Arg, format!("offset is negative ({o})")))?
            .checked_mul(esize)
            .ok_or_else(|| MpiError::new(ErrorClass::Arg, format!("offset {o} overflows")))?,
        At::Pointer => f.pointer,
        At::Data(d) => d,
    };
    let mut staging = vec![0u8; len];
    let mut io = || match dir {
        Dir::Read(buf) => {
            let n = read_view(&f.file, &f.view, start, &mut staging)?;
            unpack_native(buf, count, dt, &staging[..n])?;
            Ok(n)
        }
        Dir::Write(buf) => {
            pack_native(buf, count, dt, &mut staging)?;
            write_view(&f.file, &f.view, start, &staging)?;
            Ok(len)
        }
    };
    let moved = match f.atomic {
        true => with_lock(&f.file, matches!(dir, Dir::Write(_)), io)?,
        false => io()?,
    };
    if let At::Pointer = at {
        w.objects.files.get_mut(fh)?.pointer = start + moved as u64;
    }
    Ok(moved)
}

/// An access by every rank of the file's group: the independent access, then the agreement.
pub(super) fn collective(
    w: &mut Mpi,
    fh: FileId,
    at: At,
    dir: Dir,
    count: usize,
    dt: &Datatype,
) -> Result<usize> {
    let comm = w.objects.files.get(fh)?.comm;
    let moved = access(w, fh, at, dir, count, dt);
    w.world.engine.file_agree(comm, moved)
}

/// The status of an access that moved `bytes`.
pub(super) fn status_of(status: *mut MPI_Status, bytes: usize) {
    write_status(
        status,
        &Status {
            bytes,
            ..Status::empty()
        },
    );
}

/// A completed request for an access that moved `bytes`.
pub(super) fn request_of(w: &mut Mpi, request: *mut MPI_Request, bytes: usize) {
    let id = w.world.engine.file_request(bytes);
    write(request, handles::request_handle(id));
}

/// `_begin` of a split collective: the access now, its count kept for `_end`.
fn begin(w: &mut Mpi, fh: FileId, at: At, dir: Dir, count: usize, dt: &Datatype) -> Result<()> {
    split_begin(w, fh, |w| collective(w, fh, at, dir, count, dt))
}

/// `_begin` of a split collective that runs `op`.
pub(super) fn split_begin(
    w: &mut Mpi,
    fh: FileId,
    op: impl FnOnce(&mut Mpi) -> Result<usize>,
) -> Result<()> {
    if w.objects.files.get(fh)?.split.is_some() {
        return Err(MpiError::new(
            ErrorClass::Other,
            "a split collective is already active on this file (call its _end first)",
        ));
    }
    let moved = op(w)?;
    w.objects.files.get_mut(fh)?.split = Some(moved);
    Ok(())
}

/// `_end` of a split collective.
pub(super) fn end(w: &mut Mpi, fh: FileId, status: *mut MPI_Status) -> Result<()> {
    let moved = w.objects.files.get_mut(fh)?.split.take().ok_or_else(|| {
        MpiError::new(
            ErrorClass::Other,
            "no split collective is active on this file (call its _begin first)",
        )
    })?;
    status_of(status, moved);
    Ok(())
}

/// `MPI_File_read_at`.
pub fn file_read_at(
    w: &mut Mpi,
    fh: FileId,
    offset: MPI_Offset,
    buf: *mut c_void,
    count: usize,
    datatype: Datatype,
    status: *mut MPI_Status,
) -> Result<()> {
    let n = access(w, fh, At::Offset(offset), Dir::Read(buf), count, &datatype)?;
    status_of(status, n);
    Ok(())
}

/// `MPI_File_write_at`.
pub fn file_write_at(
    w: &mut Mpi,
    fh: FileId,
    offset: MPI_Offset,
    buf: *const c_void,
    count: usize,
    datatype: Datatype,
    status: *mut MPI_Status,
) -> Result<()> {
    let n = access(w, fh, At::Offset(offset), Dir::Write(buf), count, &datatype)?;
    status_of(status, n);
    Ok(())
}

/// `MPI_File_read_at_all`.
pub fn file_read_at_all(
    w: &mut Mpi,
    fh: FileId,
    offset: MPI_Offset,
    buf: *mut c_void,
    count: usize,
    datatype: Datatype,
    status: *mut MPI_Status,
) -> Result<()> {
    let n = collective(w, fh, At::Offset(offset), Dir::Read(buf), count, &datatype)?;
    status_of(status, n);
    Ok(())
}

/// `MPI_File_write_at_all`.
pub fn file_write_at_all(
    w: &mut Mpi,
    fh: FileId,
    offset: MPI_Offset,
    buf: *const c_void,
    count: usize,
    datatype: Datatype,
    status: *mut MPI_Status,
) -> Result<()> {
    let n = collective(w, fh, At::Offset(offset), Dir::Write(buf), count, &datatype)?;
    status_of(status, n);
    Ok(())
}

/// `MPI_File_read`.
pub fn file_read(
    w: &mut Mpi,
    fh: FileId,
    buf: *mut c_void,
    count: usize,
    datatype: Datatype,
    status: *mut MPI_Status,
) -> Result<()> {
    let n = access(w, fh, At::Pointer, Dir::Read(buf), count, &datatype)?;
    status_of(status, n);
    Ok(())
}

/// `MPI_File_write`.
pub fn file_write(
    w: &mut Mpi,
    fh: FileId,
    buf: *const c_void,
    count: usize,
    datatype: Datatype,
    status: *mut MPI_Status,
) -> Result<()> {
    let n = access(w, fh, At::Pointer, Dir::Write(buf), count, &datatype)?;
    status_of(status, n);
    Ok(())
}

/// `MPI_File_read_all`.
pub fn file_read_all(
    w: &mut Mpi,
    fh: FileId,
    buf: *mut c_void,
    count: usize,
    datatype: Datatype,
    status: *mut MPI_Status,
) -> Result<()> {
    let n = collective(w, fh, At::Pointer, Dir::Read(buf), count, &datatype)?;
    status_of(status, n);
    Ok(())
}

/// `MPI_File_write_all`.
pub fn file_write_all(
    w: &mut Mpi,
    fh: FileId,
    buf: *const c_void,
    count: usize,
    datatype: Datatype,
    status: *mut MPI_Status,
) -> Result<()> {
    let n = collective(w, fh, At::Pointer, Dir::Write(buf), count, &datatype)?;
    status_of(status, n);
    Ok(())
}

/// `MPI_File_iread_at`.
pub fn file_iread_at(
    w: &mut Mpi,
    fh: FileId,
    offset: MPI_Offset,
    buf: *mut c_void,
    count: usize,
    datatype: Datatype,
    request: *mut MPI_Request,
) -> Result<()> {
    let n = access(w, fh, At::Offset(offset), Dir::Read(buf), count, &datatype)?;
    request_of(w, request, n);
    Ok(())
}

/// `MPI_File_iwrite_at`.
pub fn file_iwrite_at(
    w: &mut Mpi,
    fh: FileId,
    offset: MPI_Offset,
    buf: *const c_void,
    count: usize,
    datatype: Datatype,
    request: *mut MPI_Request,
) -> Result<()> {
    let n = access(w, fh, At::Offset(offset), Dir::Write(buf), count, &datatype)?;
    request_of(w, request, n);
    Ok(())
}

/// `MPI_File_iread_at_all`.
pub fn file_iread_at_all(
    w: &mut Mpi,
    fh: FileId,
    offset: MPI_Offset,
    buf: *mut c_void,
    count: usize,
    datatype: Datatype,
    request: *mut MPI_Request,
) -> Result<()> {
    let n = collective(w, fh, At::Offset(offset), Dir::Read(buf), count, &datatype)?;
    request_of(w, request, n);
    Ok(())
}

/// `MPI_File_iwrite_at_all`.
pub fn file_iwrite_at_all(
    w: &mut Mpi,
    fh: FileId,
    offset: MPI_Offset,
    buf: *const c_void,
    count: usize,
    datatype: Datatype,
    request: *mut MPI_Request,
) -> Result<()> {
    let n = collective(w, fh, At::Offset(offset), Dir::Write(buf), count, &datatype)?;
    request_of(w, request, n);
    Ok(())
}

/// `MPI_File_iread`.
pub fn file_iread(
    w: &mut Mpi,
    fh: FileId,
    buf: *mut c_void,
    count: usize,
    datatype: Datatype,
    request: *mut MPI_Request,
) -> Result<()> {
    let n = access(w, fh, At::Pointer, Dir::Read(buf), count, &datatype)?;
    request_of(w, request, n);
    Ok(())
}

/// `MPI_File_iwrite`.
pub fn file_iwrite(
    w: &mut Mpi,
    fh: FileId,
    buf: *const c_void,
    count: usize,
    datatype: Datatype,
    request: *mut MPI_Request,
) -> Result<()> {
    let n = access(w, fh, At::Pointer, Dir::Write(buf), count, &datatype)?;
    request_of(w, request, n);
    Ok(())
}

/// `MPI_File_iread_all`.
pub fn file_iread_all(
    w: &mut Mpi,
    fh: FileId,
    buf: *mut c_void,
    count: usize,
    datatype: Datatype,
    request: *mut MPI_Request,
) -> Result<()> {
    let n = collective(w, fh, At::Pointer, Dir::Read(buf), count, &datatype)?;
    request_of(w, request, n);
    Ok(())
}

/// `MPI_File_iwrite_all`.
pub fn file_iwrite_all(
    w: &mut Mpi,
    fh: FileId,
    buf: *const c_void,
    count: usize,
    datatype: Datatype,
    request: *mut MPI_Request,
) -> Result<()> {
    let n = collective(w, fh, At::Pointer, Dir::Write(buf), count, &datatype)?;
    request_of(w, request, n);
    Ok(())
}

/// `MPI_File_read_all_begin`.
pub fn file_read_all_begin(
    w: &mut Mpi,
    fh: FileId,
    buf: *mut c_void,
    count: usize,
    datatype: Datatype,
) -> Result<()> {
    begin(w, fh, At::Pointer, Dir::Read(buf), count, &datatype)
}

/// `MPI_File_write_all_begin`.
pub fn file_write_all_begin(
    w: &mut Mpi,
    fh: FileId,
    buf: *const c_void,
    count: usize,
    datatype: Datatype,
) -> Result<()> {
    begin(w, fh, At::Pointer, Dir::Write(buf), count, &datatype)
}

/// `MPI_File_read_at_all_begin`.
pub fn file_read_at_all_begin(
    w: &mut Mpi,
    fh: FileId,
    offset: MPI_Offset,
    buf: *mut c_void,
    count: usize,
    datatype: Datatype,
) -> Result<()> {
    begin(w, fh, At::Offset(offset), Dir::Read(buf), count, &datatype)
}

/// `MPI_File_write_at_all_begin`.
pub fn file_write_at_all_begin(
    w: &mut Mpi,
    fh: FileId,
    offset: MPI_Offset,
    buf: *const c_void,
    count: usize,
    datatype: Datatype,
) -> Result<()> {
    begin(w, fh, At::Offset(offset), Dir::Write(buf), count, &datatype)
}

/// `MPI_File_read_all_end`, `MPI_File_read_at_all_end`.
pub fn file_read_all_end(
    w: &mut Mpi,
    fh: FileId,
    _buf: *mut c_void,
    status: *mut MPI_Status,
) -> Result<()> {
    end(w, fh, status)
}

/// `MPI_File_write_all_end`, `MPI_File_write_at_all_end`.
pub fn file_write_all_end(
    w: &mut Mpi,
    fh: FileId,
    _buf: *const c_void,
    status: *mut MPI_Status,
) -> Result<()> {
    end(w, fh, status)
}

pub use file_read_all_end as file_read_at_all_end;
pub use file_write_all_end as file_write_at_all_end;
