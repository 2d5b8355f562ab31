//! File views and file pointers (MPI-3.1 §13.3, §13.4.3-4): set/get view, type extents in the
//! file, seek, position, byte offset.
//!
//! Offsets are in etypes relative to the view; the individual file pointer is kept in bytes of
//! view data (`OpenFile::pointer`) and the mapping to file bytes is `reflex_engine::file::View`.
//! The data representation is checked against the view's types here and applied to each access
//! by `file_rep`.

use super::file_rep::check_layout;
use super::util::{c_string, write, write_string};
use crate::datarep::{Rep, MAX_DATAREP_STRING};
use crate::ffi::*;
use crate::files::FileId;
use crate::handles;
use crate::info::InfoId;
use crate::kinds::TypeArg;
use crate::state::Mpi;
use reflex_engine::file::View;
use reflex_engine::{ErrorClass, MpiError, Result};
use std::ffi::{c_char, c_int};

/// `MPI_DISPLACEMENT_CURRENT`.
const DISPLACEMENT_CURRENT: MPI_Offset = -54_278_278;
/// `MPI_SEEK_SET`, `MPI_SEEK_CUR`, `MPI_SEEK_END`.
pub(super) const SEEK_SET: c_int = 600;
pub(super) const SEEK_CUR: c_int = 602;
pub(super) const SEEK_END: c_int = 604;

fn is_builtin(h: MPI_Datatype) -> bool {
    crate::datatypes::builtin(h).is_some()
}

/// A handle of the view's own for `t`: predefined types as they are, derived ones duplicated
/// (the application may free its handle while the view lives).
fn keep_type(w: &mut Mpi, t: &TypeArg) -> Result<MPI_Datatype> {
    if is_builtin(t.handle) {
        return Ok(t.handle);
    }
    let mut dup = handles::DATATYPE_NULL;
    super::type_dup(w, t.clone(), &mut dup)?;
    Ok(dup)
}

/// Frees the view's own duplicates of derived etypes and filetypes.
pub(super) fn free_view_types(w: &mut Mpi, types: (MPI_Datatype, MPI_Datatype)) {
    for mut h in [types.0, types.1] {
        if !is_builtin(h) {
            // The handle is the view's own: freeing it cannot fail.
            let _ = super::type_free(w, &mut h);
        }
    }
}

fn offset_arg(v: MPI_Offset, what: &str) -> Result<u64> {
    u64::try_from(v)
        .map_err(|_| MpiError::new(ErrorClass::Arg, format!("{what} is negative ({v})")))
}

/// The view this rank asks for on file `fh`, checked, and its data representation.
fn new_view(
    w: &Mpi,
    fh: FileId,
    disp: MPI_Offset,
    etype: &TypeArg,
    filetype: &TypeArg,
    datarep: *const c_char,
) -> Result<(View, Rep)> {
    let rep = w.objects.datareps.find(&c_string(datarep, "datarep")?)?;
    crate::kinds::datatype(w, etype.handle)?;
    crate::kinds::datatype(w, filetype.handle)?;
    check_layout(w, rep, etype, "etype")?;
    check_layout(w, rep, filetype, "filetype")?;
    let disp = match disp {
        DISPLACEMENT_CURRENT => current_displacement(w, fh)?,
        _ => offset_arg(disp, "the displacement")?,
    };
    let writable = !w.objects.files.get(fh)?.amode.read_only();
    let view = View::new(disp, etype.dt.clone(), filetype.dt.clone(), writable)?;
    Ok((view, rep))
}

/// `MPI_DISPLACEMENT_CURRENT`: the file byte the shared file pointer is at, under the current
/// view (MPI-3.1 section 13.3: valid only for a file opened with `MPI_MODE_SEQUENTIAL`). Read
/// by every rank before any can reset the pointer (the view's agreement comes first).
fn current_displacement(w: &Mpi, fh: FileId) -> Result<u64> {
    let f = w.objects.files.get(fh)?;
    if !f.amode.sequential() {
        return Err(MpiError::new(
            ErrorClass::Arg,
            "MPI_DISPLACEMENT_CURRENT is only valid for a file opened with MPI_MODE_SEQUENTIAL",
        ));
    }
    Ok(f.view.byte_offset(f.shared.get()?))
}

/// `MPI_File_set_view` (collective): the file pointers go back to 0.
pub fn file_set_view(
    w: &mut Mpi,
    fh: FileId,
    disp: MPI_Offset,
    etype: TypeArg,
    filetype: TypeArg,
    datarep: *const c_char,
    info: Option<InfoId>,
) -> Result<()> {
    let comm = w.objects.files.get(fh)?.comm;
    let view = new_view(w, fh, disp, &etype, &filetype, datarep);
    let rep = c_string(datarep, "datarep").unwrap_or_default();
    let engine = &mut w.world.engine;
    engine.file_same(comm, rep.as_bytes(), "the data representation")?;
    let esize = etype.dt.size() as u64;
    engine.file_same(comm, &esize.to_le_bytes(), "the etype size")?;
    let (view, rep) = engine.file_agree(comm, view)?;
    let kept = (keep_type(w, &etype)?, keep_type(w, &filetype)?);
    let hints = info.map(|i| w.objects.infos.get(i).clone());
    reset_shared(w, fh)?;
    let f = w.objects.files.get_mut(fh)?;
    let old = std::mem::replace(&mut f.view_types, kept);
    f.view = view;
    f.rep = rep;
    f.pointer = 0;
    for (k, v) in hints.iter().flat_map(|d| d.pairs()) {
        f.hints.set(k, v)?;
    }
    free_view_types(w, old);
    Ok(())
}

/// Puts the shared file pointer back to 0 (rank 0 removes the sidecar; a missing one is 0),
/// before any rank can use it again.
fn reset_shared(w: &mut Mpi, fh: FileId) -> Result<()> {
    let f = w.objects.files.get(fh)?;
    let comm = f.comm;
    let reset = match super::file::rank_in(w, comm)? {
        0 => f.shared.remove(),
        _ => Ok(()),
    };
    w.world.engine.file_agree(comm, reset)
}

/// A handle for the application: predefined as is, derived as a new duplicate it frees.
fn hand_out(w: &mut Mpi, h: MPI_Datatype, out: *mut MPI_Datatype) -> Result<()> {
    if is_builtin(h) {
        write(out, h);
        return Ok(());
    }
    let t = w.objects.types.any(h)?;
    super::type_dup(w, t, out)
}

/// `MPI_File_get_view`.
pub fn file_get_view(
    w: &mut Mpi,
    fh: FileId,
    disp: *mut MPI_Offset,
    etype: *mut MPI_Datatype,
    filetype: *mut MPI_Datatype,
    datarep: *mut c_char,
) -> Result<()> {
    let f = w.objects.files.get(fh)?;
    let (d, (e, t), rep) = (f.view.disp, f.view_types, f.rep);
    write(disp, d as MPI_Offset);
    hand_out(w, e, etype)?;
    hand_out(w, t, filetype)?;
    let name = w.objects.datareps.name(rep);
    write_string(datarep, std::ptr::null_mut(), name, MAX_DATAREP_STRING)
}

/// `MPI_File_get_byte_offset`: the absolute byte of view offset `offset` (in etypes).
pub fn file_get_byte_offset(
    w: &mut Mpi,
    fh: FileId,
    offset: MPI_Offset,
    disp: *mut MPI_Offset,
) -> Result<()> {
    let view = &w.objects.files.get(fh)?.view;
    let at = offset_arg(offset, "offset")? * view.etype_size();
    write(disp, view.byte_offset(at) as MPI_Offset);
    Ok(())
}

/// Checks `whence` and applies `offset` (in etypes) to `base`, the etype it counts from.
pub(super) fn seek_from(base: u64, offset: MPI_Offset, whence: c_int) -> Result<u64> {
    if ![SEEK_SET, SEEK_CUR, SEEK_END].contains(&whence) {
        return Err(MpiError::new(
            ErrorClass::Arg,
            format!("whence is {whence}, not MPI_SEEK_SET, MPI_SEEK_CUR or MPI_SEEK_END"),
        ));
    }
    let to = (base as i64).checked_add(offset).filter(|&p| p >= 0);
    to.map(|p| p as u64).ok_or_else(|| {
        MpiError::new(
            ErrorClass::Arg,
            format!("seeking by {offset} from etype {base} goes before the start of the view"),
        )
    })
}

/// `MPI_File_seek`: moves the individual file pointer (in etypes; `MPI_SEEK_END` counts from the
/// view data before the end of the file).
pub fn file_seek(w: &mut Mpi, fh: FileId, offset: MPI_Offset, whence: c_int) -> Result<()> {
    let f = w.objects.files.get(fh)?;
    let esize = f.view.etype_size();
    let base = match whence {
        SEEK_CUR => f.pointer / esize,
        SEEK_END => f.view.data_before(super::file::size_of(f)?) / esize,
        _ => 0,
    };
    let to = seek_from(base, offset, whence)?;
    w.objects.files.get_mut(fh)?.pointer = to * esize;
    Ok(())
}

/// `MPI_File_get_position`: the individual file pointer, in etypes.
pub fn file_get_position(w: &mut Mpi, fh: FileId, offset: *mut MPI_Offset) -> Result<()> {
    let f = w.objects.files.get(fh)?;
    write(offset, (f.pointer / f.view.etype_size()) as MPI_Offset);
    Ok(())
}
