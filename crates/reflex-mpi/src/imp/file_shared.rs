//! Shared file pointers (MPI-3.1 §13.4.4): independent (`_shared`) and ordered collective
//! (`_ordered`, in rank order) accesses, `seek_shared`, `get_position_shared`.
//!
//! The accesses themselves are `file_io`'s (`At::Shared`, `At::Ordered`); this module holds
//! what is particular to the shared pointer. The pointer lives in a sidecar file (`reflex_engine::file::SharedPointer`), advanced under an
//! exclusive lock by the amount of data of each access, so concurrent `_shared` accesses get
//! disjoint ranges in some serial order. An ordered access exchanges every rank's length, rank 0
//! advances the pointer by the total once, and each rank accesses its prefix of it.

use crate::ffi::*;
use crate::files::FileId;
use crate::state::Mpi;
use reflex_engine::{CommId, Datatype, ErrorClass, MpiError, Result};
use std::ffi::c_int;

fn word(b: &[u8]) -> u64 {
    b.get(..8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

/// Where this rank's part of an ordered access starts (bytes of view data): every rank's length
/// is exchanged, rank 0 advances the shared pointer by the total, every rank learns where it was.
pub(super) fn ordered_start(
    w: &mut Mpi,
    fh: FileId,
    comm: CommId,
    count: usize,
    dt: &Datatype,
) -> Result<u64> {
    let sp = w.objects.files.get(fh)?.shared.clone();
    let len = dt.packed_len(count)? as u64;
    let rank = super::file::rank_in(w, comm)? as usize;
    let engine = &mut w.world.engine;
    let lens: Vec<u64> = engine
        .file_allgather(comm, &len.to_le_bytes())?
        .iter()
        .map(|b| word(b))
        .collect();
    let start = match rank {
        0 => sp.fetch_add(lens.iter().sum()),
        _ => Ok(0),
    };
    let start = engine.file_agree(comm, start)?.to_le_bytes();
    let base = word(&engine.file_allgather(comm, &start)?[0]);
    Ok(base + lens[..rank].iter().sum::<u64>())
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
