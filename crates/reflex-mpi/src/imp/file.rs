//! File handles (MPI-3.1 §13.2, §13.6.1, §13.7): open, close, delete, size, hints, group,
//! atomicity, the file error handlers, Fortran handle conversion.
//!
//! `MPI_File_open` is collective and all-or-nothing: rank 0 checks the access mode and opens
//! (creating the file if asked) first, every rank learns its outcome; then the other ranks open
//! the existing file and every rank learns whether all succeeded — a rank that opened closes
//! again when another failed, so nothing leaks and every rank returns the same error class
//! (the failing rank's message, prefixed with its rank). Collective calls run their agreement on a
//! private duplicate of the communicator. The I/O itself is `reflex_engine::file`.

use super::info::{new_info, required};
use super::util::{c_string, write};
use crate::ffi::*;
use crate::files::{FileId, OpenFile};
use crate::handles;
use crate::info::{Dict, InfoId};
use crate::state::Mpi;
use reflex_engine::file::{self as io, Amode, SharedPointer, View};
use reflex_engine::{CommId, ErrorClass, MpiError, Result};
use std::ffi::OsString;
use std::ffi::{c_char, c_int, c_void};
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

fn hints_of(w: &Mpi, info: Option<InfoId>) -> Dict {
    info.map(|i| w.objects.infos.get(i).clone())
        .unwrap_or_default()
}

/// This rank's number in `comm`.
pub(super) fn rank_in(w: &Mpi, comm: CommId) -> Result<u32> {
    Ok(w.world.engine.comm(comm)?.rank)
}

/// Opens on this rank: rank 0 as asked, the others without creating (rank 0 did).
fn open_here(path: &Path, amode: Amode, first: bool) -> Result<std::fs::File> {
    if first {
        return io::open(path, amode);
    }
    let bits = amode.bits() & !(io::amode::CREATE | io::amode::EXCL);
    io::open(path, Amode::new(bits)?)
}

/// `MPI_File_open`.
pub fn file_open(
    w: &mut Mpi,
    comm: CommId,
    filename: *const c_char,
    amode: c_int,
    info: Option<InfoId>,
    fh: *mut MPI_File,
) -> Result<()> {
    let path = PathBuf::from(c_string(filename, "filename")?);
    let engine = &mut w.world.engine;
    if engine.comm(comm)?.is_inter() {
        return Err(MpiError::new(
            ErrorClass::Comm,
            "MPI_File_open needs an intracommunicator",
        ));
    }
    engine.file_same(comm, &amode.to_le_bytes(), "the access mode")?;
    let mode = engine.file_agree(comm, Amode::new(amode))?;
    let first = engine.comm(comm)?.rank == 0;
    let opened = if first {
        Ok(engine.file_agree(comm, open_here(&path, mode, true))?)
    } else {
        engine.file_agree(comm, Ok(()))?;
        open_here(&path, mode, false)
    };
    // Every rank learns whether all opened; those that did drop their file when one failed.
    let file = engine.file_agree(comm, opened)?;
    let shared = shared_pointer(w, comm, &path, first)?;
    let dup = w.world.engine.comm_dup(comm)?;
    let mut f = OpenFile {
        file,
        path,
        amode: mode,
        comm: dup,
        view: View::bytes(),
        rep: Default::default(),
        view_types: (handles::BYTE, handles::BYTE),
        pointer: 0,
        atomic: false,
        errhandler: w.objects.files.null_errhandler,
        hints: hints_of(w, info),
        shared,
        split: None,
        buffers: Default::default(),
    };
    if mode.append() {
        f.pointer = size_of(&f)?;
    }
    let id = w.objects.files.insert(f);
    write(fh, handles::file_handle(id));
    Ok(())
}

/// The shared file pointer's sidecar: every rank says which node it is on (the name base of
/// the node's shared segments, empty when unknown) and rank 0 adds two names, one in `/dev/shm`
/// (empty when its node is unknown) and one next to the file; all ranks take the first when they
/// all named rank 0's node, the second otherwise.
fn shared_pointer(w: &mut Mpi, comm: CommId, path: &Path, first: bool) -> Result<SharedPointer> {
    let node = w.world.engine.node_segment_base().unwrap_or("").to_owned();
    let mut mine = node.clone().into_bytes();
    if first {
        let on_node = match node.is_empty() {
            true => PathBuf::new(),
            false => SharedPointer::name_on_node(&node),
        };
        for name in [on_node, SharedPointer::name_for(path)] {
            mine.push(0);
            mine.extend(name.into_os_string().into_vec());
        }
    }
    let all = w.world.engine.file_allgather(comm, &mine)?;
    let fields = |v: &[u8]| v.split(|&b| b == 0).map(<[u8]>::to_vec).collect::<Vec<_>>();
    let [node0, on_node, beside] = <[Vec<u8>; 3]>::try_from(fields(&all[0])).map_err(|_| {
        MpiError::new(
            ErrorClass::Intern,
            "rank 0 sent no shared file pointer names",
        )
    })?;
    let one_node = !node0.is_empty() && all.iter().all(|v| fields(v)[0] == node0);
    let name = if one_node { on_node } else { beside };
    Ok(SharedPointer::at(PathBuf::from(OsString::from_vec(name))))
}

/// The size of the file in bytes.
pub(super) fn size_of(f: &OpenFile) -> Result<u64> {
    f.file
        .metadata()
        .map(|m| m.len())
        .map_err(|e| io::io_error("cannot stat", &f.path, &e))
}

/// `MPI_File_close`.
pub fn file_close(w: &mut Mpi, fh: *mut MPI_File) -> Result<()> {
    crate::kinds::out_ptr(fh, "fh")?;
    // SAFETY: checked non-NULL just above; MPI requires it to point to a file handle.
    let id = crate::kinds::file(w, unsafe { *fh })?;
    let f = w.objects.files.remove(id)?;
    let (comm, path, amode, view_types, shared) = (f.comm, f.path, f.amode, f.view_types, f.shared);
    drop(f.file);
    write(fh, std::ptr::null_mut());
    super::file_view::free_view_types(w, view_types);
    let engine = &mut w.world.engine;
    engine.file_agree(comm, Ok(()))?;
    let first = engine.comm(comm)?.rank == 0;
    let deleted = match first {
        true if amode.delete_on_close() => shared.remove().and_then(|()| io::delete(&path)),
        true => shared.remove(),
        false => Ok(()),
    };
    let outcome = engine.file_agree(comm, deleted);
    engine.comm_free(comm)?;
    outcome
}

/// `MPI_File_delete`.
pub fn file_delete(_w: &mut Mpi, filename: *const c_char, _info: Option<InfoId>) -> Result<()> {
    io::delete(Path::new(&c_string(filename, "filename")?))
}

/// `MPI_File_get_size`.
pub fn file_get_size(w: &mut Mpi, fh: FileId, size: *mut MPI_Offset) -> Result<()> {
    let n = size_of(w.objects.files.get(fh)?)?;
    write(size, n as MPI_Offset);
    Ok(())
}

fn offset_arg(v: MPI_Offset, what: &str) -> Result<u64> {
    u64::try_from(v)
        .map_err(|_| MpiError::new(ErrorClass::Arg, format!("{what} is negative ({v})")))
}

/// Runs a collective resize: the same size on every rank, rank 0 changes the file (`grow`:
/// only ever enlarges it), every rank learns the outcome.
fn resize(w: &mut Mpi, fh: FileId, size: MPI_Offset, grow: bool) -> Result<()> {
    let f = w.objects.files.get(fh)?;
    let comm = f.comm;
    let local = offset_arg(size, "size").and_then(|s| f.amode.check_write().map(|()| s));
    let rank = rank_in(w, comm)?;
    let engine = &mut w.world.engine;
    engine.file_same(comm, &size.to_le_bytes(), "the size")?;
    let want = engine.file_agree(comm, local)?;
    let f = w.objects.files.get(fh)?;
    let done = if rank == 0 {
        size_of(f).and_then(|now| {
            if grow && now >= want {
                return Ok(());
            }
            f.file
                .set_len(want)
                .map_err(|e| io::io_error("cannot resize", &f.path, &e))
        })
    } else {
        Ok(())
    };
    w.world.engine.file_agree(comm, done)
}

/// `MPI_File_set_size`.
pub fn file_set_size(w: &mut Mpi, fh: FileId, size: MPI_Offset) -> Result<()> {
    resize(w, fh, size, false)
}

/// `MPI_File_preallocate`: the file is at least `size` bytes afterwards.
pub fn file_preallocate(w: &mut Mpi, fh: FileId, size: MPI_Offset) -> Result<()> {
    resize(w, fh, size, true)
}

/// `MPI_File_get_amode`.
pub fn file_get_amode(w: &mut Mpi, fh: FileId, amode: *mut c_int) -> Result<()> {
    write(amode, w.objects.files.get(fh)?.amode.bits());
    Ok(())
}

/// `MPI_File_get_group`: a new group, the open communicator's.
pub fn file_get_group(w: &mut Mpi, fh: FileId, group: *mut MPI_Group) -> Result<()> {
    let comm = w.objects.files.get(fh)?.comm;
    let id = w.world.engine.comm_group(comm)?;
    write(group, handles::group_handle(id));
    Ok(())
}

/// `MPI_File_get_info`: a new info object with the hints in use (those given, and the
/// collective-buffering defaults).
pub fn file_get_info(w: &mut Mpi, fh: FileId, info_used: *mut MPI_Info) -> Result<()> {
    let f = w.objects.files.get(fh)?;
    let nranks = w.world.engine.comm(f.comm)?.group.size();
    let dict = super::file_aggregate::hints_in_use(&f.hints, nranks)?;
    new_info(w, dict, info_used)
}

/// `MPI_File_set_info` (collective): the hints are recorded; the collective-buffering ones
/// steer the collective accesses that follow (`file_aggregate`), the others change nothing.
pub fn file_set_info(w: &mut Mpi, fh: FileId, info: Option<InfoId>) -> Result<()> {
    let dict = w.objects.infos.get(required(info)?).clone();
    let comm = w.objects.files.get(fh)?.comm;
    w.world.engine.file_agree(comm, Ok(()))?;
    let f = w.objects.files.get_mut(fh)?;
    for (k, v) in dict.pairs() {
        f.hints.set(k, v)?;
    }
    Ok(())
}

/// `MPI_File_sync` (collective): flushes this rank's writes to the storage device.
pub fn file_sync(w: &mut Mpi, fh: FileId) -> Result<()> {
    let f = w.objects.files.get(fh)?;
    let comm = f.comm;
    let synced = f
        .file
        .sync_all()
        .map_err(|e| io::io_error("cannot sync", &f.path, &e));
    w.world.engine.file_agree(comm, synced)
}

/// `MPI_File_set_atomicity` (collective; the same flag everywhere).
pub fn file_set_atomicity(w: &mut Mpi, fh: FileId, flag: c_int) -> Result<()> {
    let comm = w.objects.files.get(fh)?.comm;
    let on = flag != 0;
    w.world
        .engine
        .file_same(comm, &[on as u8], "the atomicity flag")?;
    w.objects.files.get_mut(fh)?.atomic = on;
    Ok(())
}

/// `MPI_File_get_atomicity`.
pub fn file_get_atomicity(w: &mut Mpi, fh: FileId, flag: *mut c_int) -> Result<()> {
    write(flag, c_int::from(w.objects.files.get(fh)?.atomic));
    Ok(())
}

/// `MPI_File_set_errhandler` (`MPI_FILE_NULL`: the default of files opened later).
pub fn file_set_errhandler(
    w: &mut Mpi,
    file: Option<FileId>,
    errhandler: MPI_Errhandler,
) -> Result<()> {
    super::env::check_errhandler(w, errhandler)?;
    match file {
        Some(id) => w.objects.files.get_mut(id)?.errhandler = errhandler,
        None => w.objects.files.null_errhandler = errhandler,
    }
    Ok(())
}

/// `MPI_File_get_errhandler`.
pub fn file_get_errhandler(
    w: &mut Mpi,
    file: Option<FileId>,
    errhandler: *mut MPI_Errhandler,
) -> Result<()> {
    write(errhandler, w.objects.files.errhandler(file));
    Ok(())
}

/// `MPI_File_create_errhandler`.
pub fn file_create_errhandler(
    w: &mut Mpi,
    file_errhandler_fn: *const c_void,
    errhandler: *mut MPI_Errhandler,
) -> Result<()> {
    super::comm_create_errhandler(w, file_errhandler_fn, errhandler)
}

/// `MPI_File_call_errhandler`.
pub fn file_call_errhandler(w: &mut Mpi, fh: Option<FileId>, errorcode: c_int) -> Result<()> {
    let target = fh.map_or(handles::FILE_NULL_TARGET, |i| {
        handles::file_target(handles::file_handle(i))
    });
    crate::call::dispatch(
        w,
        "MPI_File_call_errhandler",
        Some(target),
        &crate::errors::existing(errorcode),
    );
    Ok(())
}

/// `MPI_File_c2f`: the table index plus one (0 is `MPI_FILE_NULL`).
pub fn file_c2f(file: MPI_File) -> MPI_Fint {
    handles::file_index(file).map_or(0, |i| i as MPI_Fint + 1)
}

/// `MPI_File_f2c`.
pub fn file_f2c(file: MPI_Fint) -> MPI_File {
    match u32::try_from(file) {
        Ok(i) if i > 0 => handles::file_handle(i - 1),
        _ => std::ptr::null_mut(),
    }
}
