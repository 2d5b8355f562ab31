//! The C layer's own object tables (the state of the completeness chapters that the engine
//! does not need): info objects, keyvals and attributes, the info hints of communicators, the
//! datatype handle table and user-defined operations.
//! One [`Objects`] lives in [`crate::state::Mpi`].

use crate::attr::{Attributes, Obj};
use crate::info::{Dict, Infos};
use crate::ops::OpTable;
use crate::typetable::TypeTable;
use reflex_engine::CommId;
use std::collections::HashMap;

/// Info objects, attributes and communicator hints.
#[derive(Debug, Default)]
pub struct Objects {
    /// User info objects and `MPI_INFO_ENV`.
    pub infos: Infos,
    /// Keyvals and the attributes set on communicators and datatypes.
    pub attrs: Attributes,
    /// The hints given to `MPI_Comm_set_info` / `MPI_Comm_dup_with_info`, per communicator.
    pub comm_hints: HashMap<CommId, Dict>,
    /// User datatypes (and names given to predefined ones).
    pub types: TypeTable,
    /// User-defined reduction operations.
    pub ops: OpTable,
    /// Blocks handed out by `MPI_Alloc_mem`, by address.
    pub allocations: HashMap<usize, std::alloc::Layout>,
    /// What the C layer keeps about each window.
    pub wins: HashMap<reflex_engine::WinId, WinExtra>,
    /// Open files and `MPI_FILE_NULL`'s error handler.
    pub files: crate::files::Files,
    /// Data representations registered with `MPI_Register_datarep`.
    pub datareps: crate::datarep::Datareps,
    /// Open sessions (MPI-4.0).
    pub sessions: crate::sessions::Sessions,
}

/// The C layer's state of one window: error handler, name, hints, and the storage its
/// predefined attributes point into.
#[derive(Debug)]
pub struct WinExtra {
    /// `MPI_Win_set_errhandler` (default `MPI_ERRORS_ARE_FATAL`).
    pub errhandler: crate::ffi::MPI_Errhandler,
    /// `MPI_Win_set_name`.
    pub name: String,
    /// Hints given at creation or by `MPI_Win_set_info`.
    pub hints: Dict,
    /// Memory `MPI_Win_allocate` took with `MPI_Alloc_mem` (freed with the window).
    pub allocated: Option<usize>,
    /// `MPI_WIN_SIZE`, `MPI_WIN_DISP_UNIT`, `MPI_WIN_CREATE_FLAVOR`, `MPI_WIN_MODEL` values.
    pub attr_values: Box<WinAttrValues>,
}

/// Stable storage for the predefined window attributes (`MPI_Win_get_attr` hands out pointers).
#[derive(Debug, Default)]
pub struct WinAttrValues {
    /// `MPI_WIN_BASE` (the attribute is the address itself).
    pub base: usize,
    /// `MPI_WIN_SIZE`.
    pub size: crate::ffi::MPI_Aint,
    /// `MPI_WIN_DISP_UNIT`.
    pub disp_unit: std::ffi::c_int,
    /// `MPI_WIN_CREATE_FLAVOR`.
    pub flavor: std::ffi::c_int,
    /// `MPI_WIN_MODEL`.
    pub model: std::ffi::c_int,
}

impl Objects {
    /// Forgets everything recorded about a freed communicator (the caller ran the delete
    /// callbacks of its attributes first, since that calls back into the application).
    pub fn forget_comm(&mut self, id: CommId) {
        self.comm_hints.remove(&id);
        self.attrs.drop_all(Obj::Comm(id));
    }
}
