//! The table of open files (`MPI_File` handles) and what the C layer keeps about each: the
//! POSIX file, the private communicator of its collective calls, the view, the individual file
//! pointer, the error handler, the hints.
//!
//! The I/O itself (views, the read/write loop, access modes) is `reflex_engine::file`; the calls
//! are `imp/file*.rs`.

use crate::ffi::{MPI_Datatype, MPI_Errhandler};
use crate::handles;
use crate::info::Dict;
use reflex_base::slots::Slots;
use reflex_engine::file::{Amode, SharedPointer, View};
use reflex_engine::{CommId, ErrorClass, MpiError, Result};
use std::path::PathBuf;

/// A file's number in the table (its handle is [`handles::file_handle`]).
pub type FileId = u32;

/// One open file.
#[derive(Debug)]
pub struct OpenFile {
    /// This rank's descriptor.
    pub file: std::fs::File,
    /// The name given to `MPI_File_open`.
    pub path: PathBuf,
    /// The checked access mode.
    pub amode: Amode,
    /// A duplicate of the communicator of `MPI_File_open` (collective calls run on it).
    pub comm: CommId,
    /// The current view.
    pub view: View,
    /// The data representation of the view.
    pub rep: crate::datarep::Rep,
    /// The etype and filetype handles `MPI_File_get_view` returns (derived ones are private
    /// duplicates, freed with the view).
    pub view_types: (MPI_Datatype, MPI_Datatype),
    /// The individual file pointer, in bytes of view data.
    pub pointer: u64,
    /// `MPI_File_set_atomicity`.
    pub atomic: bool,
    /// The error handler (`MPI_FILE_NULL`'s at open).
    pub errhandler: MPI_Errhandler,
    /// Hints given at open or by `MPI_File_set_info` / `MPI_File_set_view`.
    pub hints: Dict,
    /// The shared file pointer (a sidecar file named by rank 0 at open).
    pub shared: SharedPointer,
    /// Bytes moved by the split collective begun and not yet ended.
    pub split: Option<usize>,
    /// Buffers kept between accesses (so that large accesses do not fault in fresh pages
    /// every time): the packed data of an access, and the collective buffer of an aggregator.
    pub buffers: Buffers,
}

/// See [`OpenFile::buffers`].
#[derive(Debug, Default)]
pub struct Buffers {
    /// The packed data of one access.
    pub staging: Vec<u8>,
    /// An aggregator's window of a collective access.
    pub collective: Vec<u8>,
}

/// Buffers larger than this are given back after the access that needed them.
const KEEP_AT_MOST: usize = 64 << 20;

impl Buffers {
    /// Themselves, less any buffer over [`KEEP_AT_MOST`] bytes.
    pub fn trimmed(mut self) -> Self {
        for b in [&mut self.staging, &mut self.collective] {
            if b.capacity() > KEEP_AT_MOST {
                *b = Vec::new();
            }
        }
        self
    }

    /// The first `len` bytes of the staging buffer (old contents, not cleared).
    pub fn staging(&mut self, len: usize) -> &mut [u8] {
        if self.staging.len() < len {
            self.staging.resize(len, 0);
        }
        &mut self.staging[..len]
    }
}

/// Open files by number, and the error handler of `MPI_FILE_NULL`.
#[derive(Debug)]
pub struct Files {
    slots: Slots<OpenFile>,
    /// `MPI_File_set_errhandler(MPI_FILE_NULL, ...)`: the default of new files (MPI-3.1 §13.7:
    /// `MPI_ERRORS_RETURN` to begin with).
    pub null_errhandler: MPI_Errhandler,
}

impl Default for Files {
    fn default() -> Self {
        Self {
            slots: Slots::default(),
            null_errhandler: handles::ERRORS_RETURN,
        }
    }
}

fn closed(id: FileId) -> MpiError {
    MpiError::new(
        ErrorClass::File,
        format!("file number {id} is not open (closed, or never opened)"),
    )
}

impl Files {
    /// Adds a file; returns its number (the lowest free one).
    pub fn insert(&mut self, f: OpenFile) -> FileId {
        self.slots.insert(f) as FileId
    }

    /// The open file number `id`.
    pub fn get(&self, id: FileId) -> Result<&OpenFile> {
        self.slots.get(id as usize).ok_or_else(|| closed(id))
    }

    /// The open file number `id`, to change.
    pub fn get_mut(&mut self, id: FileId) -> Result<&mut OpenFile> {
        self.slots.get_mut(id as usize).ok_or_else(|| closed(id))
    }

    /// Takes file `id` out of the table.
    pub fn remove(&mut self, id: FileId) -> Result<OpenFile> {
        self.slots.remove(id as usize).ok_or_else(|| closed(id))
    }

    /// The error handler of a file (`None`: `MPI_FILE_NULL`).
    pub fn errhandler(&self, id: Option<FileId>) -> MPI_Errhandler {
        match id.map(|i| self.get(i)) {
            Some(Ok(f)) => f.errhandler,
            _ => self.null_errhandler,
        }
    }
}
