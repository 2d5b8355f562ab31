//! Reflex's remote execution for many hosts, after REXEC (`shared/reference/seed000a.md` §1):
//! the launcher protocol core, as I/O-free code (the crate README maps concepts to files).

#![forbid(unsafe_code)]

pub mod proto;
