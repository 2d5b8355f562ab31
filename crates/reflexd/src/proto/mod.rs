//! The launcher protocol between `mpiexec` and each host's `reflexd`, without I/O.

pub mod codec;
