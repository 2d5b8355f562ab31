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
}

impl Objects {
    /// Forgets everything recorded about a freed communicator (the caller ran the delete
    /// callbacks of its attributes first, since that calls back into the application).
    pub fn forget_comm(&mut self, id: CommId) {
        self.comm_hints.remove(&id);
        self.attrs.drop_all(Obj::Comm(id));
    }
}
