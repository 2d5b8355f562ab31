//! PMI for Reflex: how ranks find each other under Reflex's `mpiexec`, Hydra, Slurm and Open MPI.
//!
//! - [`codec`]: bounds-checked parse/format of PMI-1 lines (1024-byte lines, 1023-byte values);
//! - [`client`]: [`PmiClient`], over PMIx (`PMIX_NAMESPACE`), `PMI_FD`, `PMI_PORT` or as a
//!   singleton, with [`PmiClient::put_large`] for values longer than a line;
//! - [`pmix`]: the PMIx backend, through `libpmix.so.2` loaded at run time;
//! - [`server`]: an I/O-free PMI-1 server state machine that a launcher drives line by line;
//! - [`spawn`]: the multi-line `mcmd=spawn` request and its `spawn_result` reply (client
//!   [`PmiClient::spawn`], server [`spawn::SpawnAssembler`]);
//! - [`mapping`]: `PMI_process_mapping` to a node index per rank.
//!
//! Wire facts (formats, limits, quirks) come from `shared/reference/launchers.md` §2, measured
//! against Hydra 4.0.2 and Slurm 22.05. The only `unsafe` code adopts the inherited `PMI_FD`
//! socket (module `fd`) and calls libpmix (module `pmix::ffi`).

#![deny(unsafe_code)]

pub mod client;
pub mod codec;
mod error;
#[allow(unsafe_code)] // adopting the inherited PMI_FD descriptor; see the module's SAFETY notes
mod fd;
mod large;
pub mod mapping;
pub mod pmix;
pub mod server;
pub mod spawn;
mod wire;

pub use client::PmiClient;
pub use error::PmiError;
pub use server::{Event, Outcome, Reply, Server};
pub use spawn::{SpawnCommand, SpawnRequest, SpawnResult};

use std::hash::{BuildHasher, Hasher};

/// A fresh job name `<prefix>-<pid>-<8 hex digits>`, unique across concurrent jobs on a host.
///
/// The random part comes from the OS-seeded keys of std's `RandomState`, so no RNG crate is needed.
pub fn new_kvsname(prefix: &str) -> String {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    format!(
        "{prefix}-{}-{:08x}",
        std::process::id(),
        hasher.finish() as u32
    )
}
