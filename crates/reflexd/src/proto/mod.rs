//! The launcher protocol between `mpiexec` and each host's `reflexd`, without I/O: the wire
//! format ([`codec`]), the daemon's and the client's rules ([`daemon`], [`client`]) and the
//! heartbeat rule ([`heartbeat`]).

pub mod client;
pub mod codec;
pub mod daemon;
pub mod heartbeat;
