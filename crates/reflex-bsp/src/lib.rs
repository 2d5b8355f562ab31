//! BSPlib (the Oxford BSPlib API of Hill, McColl et al.) on MPI one-sided communication:
//! `libbsp.so` and `bsp.h`, with the cost model's probe and the visual BSP debugger's error
//! detectors as a run-time debug mode (Martin and Wilson, "A Visual BSP Programming
//! Environment", P2 in `reference/seed000a.md`).
//!
//! The library uses only the standard MPI C API (MPICH ABI), so it runs on any `libmpi.so.12`.
//! Map of the crate (see README.md):
//! - [`capi`]: the C functions; [`runtime`]: the run of this process, begin/end, the error boundary;
//! - [`ops`]: argument checks of the operations; [`registry`]: registrations;
//! - [`drma`]: puts and gets; [`bsmp`]: messages; [`sync`]: the superstep protocol;
//! - [`debug`]: the debug mode; [`mpi`]: the MPI calls used; [`loc`]: locations and errors;
//!   [`config`]: `REFLEX_BSP_DEBUG`.

pub mod bsmp;
pub mod capi;
pub mod config;
pub mod debug;
pub mod drma;
pub mod loc;
pub mod mpi;
pub mod ops;
pub mod registry;
pub mod runtime;
pub mod sync;
