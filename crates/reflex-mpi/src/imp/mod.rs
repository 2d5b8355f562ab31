//! The implementations behind the generated shims, one module per MPI chapter. Each function takes
//! the state and the arguments already checked and converted by their kinds (`crate::kinds`), and
//! returns `Result<()>`; the shim maps errors to codes and error handlers.
//!
//! Raw pointers arrive here unchanged from C. These functions are called only by the generated
//! `unsafe extern "C"` shims, whose `# Safety` contract (the MPI standard's preconditions on
//! buffers and output arguments) covers every dereference below; like rustls-ffi (PR #291) we keep
//! them safe `fn`s rather than repeat that contract on each one.
#![allow(clippy::not_unsafe_ptr_arg_deref)] // reason: see the module documentation
#![allow(clippy::too_many_arguments)] // reason: the parameter lists are the MPI standard's

mod attr;
mod coll;
mod comm;
mod comm_create;
mod env;
mod errclass;
mod file;
mod file_aggregate;
mod file_io;
mod file_rep;
mod file_shared;
mod file_view;
mod grequest;
mod group;
mod info;
mod intercomm;
mod large_count;
mod large_count_types;
mod mem;
mod pack;
mod part;
mod pt2pt;
pub(crate) mod rma;
mod session;
mod startup;
mod status;
mod tool;
mod tool_event;
mod tool_pvar;
mod topo;
mod type_ctor;
mod type_query;
mod types;
mod userop;
mod util;
mod wait;
mod win;

pub use attr::*;
pub use coll::*;
pub use comm::*;
pub use comm_create::*;
pub use env::*;
pub use errclass::*;
pub use file::*;
pub use file_io::*;
pub use file_rep::*;
pub use file_shared::*;
pub use file_view::*;
pub use grequest::*;
pub use group::*;
pub use info::*;
pub use intercomm::*;
pub use large_count::*;
pub use large_count_types::*;
pub use mem::*;
pub use pack::*;
pub use part::*;
pub use pt2pt::*;
pub use rma::*;
pub use session::*;
pub use status::*;
pub use tool::*;
pub use tool_event::*;
pub use tool_pvar::*;
pub use topo::*;
pub use type_ctor::*;
pub use type_query::*;
pub use types::*;
pub use userop::*;
pub use wait::*;
pub use win::*;
