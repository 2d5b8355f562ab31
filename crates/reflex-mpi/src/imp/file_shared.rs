//! Shared file pointers (MPI-3.1 §13.4.4): independent (`_shared`) and ordered collective
//! (`_ordered`, in rank order) accesses, `seek_shared`, `get_position_shared`.
//!
//! The pointer lives in a sidecar file (`reflex_engine::file::SharedPointer`), advanced under an
//! exclusive lock by the amount of data of each access, so concurrent `_shared` accesses get
//! disjoint ranges in some serial order. An ordered access exchanges every rank's length, rank 0
//! advances the pointer by the total once, and each rank accesses its prefix of it.

use super::file_io::{access, end, request_of, split_begin, status_of, At, Dir};
use crate::ffi::*;
use crate::files::FileId;
use crate::state::Mpi;
use reflex_engine::{Datatype, ErrorClass, MpiError, Result};
use std::ffi::{c_int, c_void};

/// An independent access at the shared file pointer, which it advances by its length.
fn shared(w: &mut Mpi, fh: FileId, dir: Dir, count: usize, dt: &Datatype) -> Result<usize> {
    let len = dt.packed_len(count)? as u64;
    let at = w.objects.files.get(fh)?.shared.fetch_add(len)?;
    access(w, fh, At::Data(at), dir, count, dt)
}

fn word(b: &[u8]) -> u64 {
    b.get(..8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

/// A collective access in rank order from the shared file pointer.
fn ordered(w: &mut Mpi, fh: FileId, dir: Dir, count: usize, dt: &Datatype) -> Result<usize> {
    let f = w.objects.files.get(fh)?;
    let (comm, sp) = (f.comm, f.shared.clone());
    let len = dt.packed_len(count)? as u64;
    let rank = super::file::rank_in(w, comm)? as usize;
    let engine = &mut w.world.engine;
    let lens: Vec<u64> = engine
        .file_allgather(comm, &len.to_le_bytes())?
        .iter()
        .map(|b| word(b))
        .collect();
    let before: u64 = lens[..rank].iter().sum();
    let start = match rank {
        0 => sp.fetch_add(lens.iter().sum()),
        _ => Ok(0),
    };
    let start = engine.file_agree(comm, start)?.to_le_bytes();
    let base = word(&engine.file_allgather(comm, &start)?[0]);
    let moved = access(w, fh, At::Data(base + before), dir, count, dt);
    w.world.engine.file_agree(comm, moved)
}

/// `MPI_File_read_shared`.
pub fn file_read_shared(
    w: &mut Mpi,
    fh: FileId,
    buf: *mut c_void,
    count: usize,
    datatype: Datatype,
    status: *mut MPI_Status,
) -> Result<()> {
    status_of(status, shared(w, fh, Dir::Read(buf), count, &datatype)?);
    Ok(())
}

/// `MPI_File_write_shared`.
pub fn file_write_shared(
    w: &mut Mpi,
    fh: FileId,
    buf: *const c_void,
    count: usize,
    datatype: Datatype,
    status: *mut MPI_Status,
) -> Result<()> {
    status_of(status, shared(w, fh, Dir::Write(buf), count, &datatype)?);
    Ok(())
}

/// `MPI_File_iread_shared`.
pub fn file_iread_shared(
    w: &mut Mpi,
    fh: FileId,
    buf: *mut c_void,
    count: usize,
    datatype: Datatype,
    request: *mut MPI_Request,
) -> Result<()> {
    let n = shared(w, fh, Dir::Read(buf), count, &datatype)?;
    request_of(w, request, n);
    Ok(())
}

/// `MPI_File_iwrite_shared`.
pub fn file_iwrite_shared(
    w: &mut Mpi,
    fh: FileId,
    buf: *const c_void,
    count: usize,
    datatype: Datatype,
    request: *mut MPI_Request,
) -> Result<()> {
    let n = shared(w, fh, Dir::Write(buf), count, &datatype)?;
    request_of(w, request, n);
    Ok(())
}

/// `MPI_File_read_ordered`.
pub fn file_read_ordered(
    w: &mut Mpi,
    fh: FileId,
    buf: *mut c_void,
    count: usize,
    datatype: Datatype,
    status: *mut MPI_Status,
) -> Result<()> {
    status_of(status, ordered(w, fh, Dir::Read(buf), count, &datatype)?);
    Ok(())
}

/// `MPI_File_write_ordered`.
pub fn file_write_ordered(
    w: &mut Mpi,
    fh: FileId,
    buf: *const c_void,
    count: usize,
    datatype: Datatype,
    status: *mut MPI_Status,
) -> Result<()> {
    status_of(status, ordered(w, fh, Dir::Write(buf), count, &datatype)?);
    Ok(())
}

/// `MPI_File_read_ordered_begin`.
pub fn file_read_ordered_begin(
    w: &mut Mpi,
    fh: FileId,
    buf: *mut c_void,
    count: usize,
    datatype: Datatype,
) -> Result<()> {
    split_begin(w, fh, |w| ordered(w, fh, Dir::Read(buf), count, &datatype))
}

/// `MPI_File_write_ordered_begin`.
pub fn file_write_ordered_begin(
    w: &mut Mpi,
    fh: FileId,
    buf: *const c_void,
    count: usize,
    datatype: Datatype,
) -> Result<()> {
    split_begin(w, fh, |w| ordered(w, fh, Dir::Write(buf), count, &datatype))
}

/// `MPI_File_read_ordered_end`.
pub fn file_read_ordered_end(
    w: &mut Mpi,
    fh: FileId,
    _buf: *mut c_void,
    status: *mut MPI_Status,
) -> Result<()> {
    end(w, fh, status)
}

/// `MPI_File_write_ordered_end`.
pub fn file_write_ordered_end(
    w: &mut Mpi,
    fh: FileId,
    _buf: *const c_void,
    status: *mut MPI_Status,
) -> Result<()> {
    end(w, fh, status)
}

/// `MPI_File_seek_shared` (collective; the same arguments everywhere).
pub fn file_seek_shared(w: &mut Mpi, fh: FileId, offset: MPI_Offset, whence: c_int) -> Result<()> {
    let f = w.objects.files.get(fh)?;
    let (comm, sp, esize) = (f.comm, f.shared.clone(), f.view.etype_size());
    let mut args = offset.to_le_bytes().to_vec();
    args.extend_from_slice(&whence.to_le_bytes());
    w.world
        .engine
        .file_same(comm, &args, "the offset and whence of MPI_File_seek_shared")?;
    let moved = match super::file::rank_in(w, comm)? {
        0 => seek_target(w, fh, offset, whence).and_then(|to| sp.set(to * esize)),
        _ => Ok(()),
    };
    w.world.engine.file_agree(comm, moved)
}

/// The etype a seek of the shared pointer goes to.
fn seek_target(w: &Mpi, fh: FileId, offset: MPI_Offset, whence: c_int) -> Result<u64> {
    let f = w.objects.files.get(fh)?;
    let esize = f.view.etype_size();
    let base = match whence {
        super::file_view::SEEK_CUR => f.shared.get()? / esize,
        super::file_view::SEEK_END => f.view.data_before(super::file::size_of(f)?) / esize,
        _ => 0,
    };
    super::file_view::seek_from(base, offset, whence)
}

/// `MPI_File_get_position_shared`, in etypes.
pub fn file_get_position_shared(w: &mut Mpi, fh: FileId, offset: *mut MPI_Offset) -> Result<()> {
    let f = w.objects.files.get(fh)?;
    let at = f.shared.get()? / f.view.etype_size();
    let at = MPI_Offset::try_from(at)
        .map_err(|_| MpiError::new(ErrorClass::Io, "the shared file pointer is corrupt"))?;
    super::util::write(offset, at);
    Ok(())
}
