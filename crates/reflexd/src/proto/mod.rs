//! The launcher protocol between `mpiexec` and each host's `reflexd`, without I/O: the wire
//! format ([`codec`]), the daemon's and the client's rules ([`daemon`], [`client`]) and the
//! heartbeat rule ([`heartbeat`]); `fuzzing` (hidden) is the codec's fuzz body, run by
//! `cargo fuzz` and by `cargo test`.

pub mod client;
pub mod codec;
pub mod daemon;
#[doc(hidden)]
pub mod fuzzing;
pub mod heartbeat;
