//! Reflex's remote execution for many hosts, after REXEC (`shared/reference/seed000a.md` §1).
//!
//! `mpiexec -hosts` opens a direct TLS connection to the `reflexd` of every host (no central
//! master); each daemon authenticates the user by certificate and runs that host's ranks in a
//! session process. The crate README maps concepts to files:
//! - [`proto`]: the launcher protocol, without I/O (codec, daemon and client state machines);
//! - [`tls`]: rustls configurations and a non-blocking TLS link for poll loops;
//! - [`identity`]: the user a certificate names, and the local account check;
//! - [`ca`]: the cluster CA (`reflex-ca`), [`cluster_key`]: the secret that authenticates
//!   discovery announcements;
//! - [`discovery`]: announcements, membership, selection policies, the selector (REXEC's
//!   `vexecd`); [`config`]: the TOML configuration of `reflexd` and `mpiexec`;
//! - [`cleanup`]: all-or-nothing cleanup of a job's processes (cgroup v2, else process group);
//! - [`daemon`]: `reflexd`'s accept loop.

#![forbid(unsafe_code)]

pub mod ca;
pub mod cleanup;
pub mod cli;
pub mod cluster_key;
pub mod config;
pub mod daemon;
pub mod discovery;
pub mod identity;
pub mod proto;
pub mod tls;
