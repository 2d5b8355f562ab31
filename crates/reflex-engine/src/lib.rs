//! Reflex's MPI engine: everything MPI means, built on the active messages of a transport.
//!
//! The C ABI layer (`reflex-mpi`) checks arguments, converts handles and calls into [`Engine`]; the
//! engine implements the semantics (matching, protocols, requests, communicators, collectives) and
//! moves bytes only through the [`reflex_base::transport::Transport`] contract. It contains no
//! `unsafe` code: user memory arrives wrapped in `reflex_base::buf` types.
//!
//! Map of the crate: [`packet`] (wire format) → [`core`](crate::core) (matching and protocol
//! reactions) → [`engine`] (progress, waiting, the outbox) → [`p2p`], [`completion`], [`coll`],
//! [`comm_ops`] (the MPI operations) and [`world`] (start-up over PMI and shared memory).
#![forbid(unsafe_code)]

pub mod bsend;
mod cancel;
pub mod coll;
pub mod comm;
mod comm_bridge;
pub mod comm_create;
mod comm_idup;
pub mod comm_inter;
pub mod comm_ops;
pub mod completion;
mod coop;
mod core;
pub mod datatype;
pub mod dynproc;
pub mod engine;
pub mod error;
pub mod fabric;
mod fastpath;
pub mod file;
pub mod group_ops;
pub mod msgbuf;
pub mod op;
pub mod p2p;
pub mod packet;
mod partitioned;
mod path;
mod placement;
pub mod procs;
pub mod request;
pub mod rma;
mod single_copy;
pub mod spawn;
mod spin;
pub mod testing;
pub mod topo;
pub mod topo_ops;
pub mod traffic;
pub mod world;

pub use comm::{
    CommId, Comparison, GroupId, COMM_SELF, COMM_SESSIONS, COMM_WORLD, FIRST_USER_COMM,
};
pub use completion::Completion;
pub use datatype::{Basic, Datatype, PairValue, ValueKind};
pub use engine::{Engine, Tuning};
pub use error::{ErrorClass, MpiError, Result};
pub use msgbuf::CopyStats;
pub use op::ReduceOp;
pub use p2p::Message;
pub use request::{RequestId, SendMode, Status, ANY_SOURCE, ANY_TAG, PROC_NULL};
pub use rma::sync::{MODE_NOCHECK, MODE_NOSUCCEED};
pub use rma::{Built, Flavor, Layout, LockKind, WinBuild, WinId, WinInfo};
pub use traffic::Traffic;

/// The error handler every communicator starts with (`MPI_ERRORS_ARE_FATAL` in MPICH's ABI); the
/// engine stores handlers as opaque C-layer handles.
pub const ERRORS_ARE_FATAL: i32 = 0x5400_0000;
