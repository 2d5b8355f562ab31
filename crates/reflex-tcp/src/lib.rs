//! Reflex's TCP transport: the engine's packets between ranks on different hosts.
//!
//! [`TcpTransport`] implements [`reflex_base::transport::Transport`] over non-blocking TCP
//! sockets (DESIGN.md "transports"): one connection per pair of ranks, opened lazily on the
//! first send, polled through epoll by the engine's progress loop, with back-pressure as
//! `WouldBlock` when the kernel's socket buffer is full. The crate README maps concepts to files:
//! - [`frame`]: the 8-byte frame header and the hello, with a total, bounds-checked parser;
//! - [`bridge`]: who may connect to a bridge between jobs (dynamic processes);
//! - [`card`]: business cards (where a rank listens) and the choice of address;
//! - [`link`]: the I/O-free rules that keep one connection per pair when both ranks connect;
//! - `conn`: one connection's buffers; `hot`: the connection read directly while its peer
//!   keeps answering, out of the epoll set; `place`: large frames read straight into the engine's
//!   buffer; `stripe`: several sockets per peer, large packets split across them;
//!   [`TcpTransport`]: the transport;
//! - `stall`: connections whose peer stopped acknowledging (read from the kernel's `TCP_INFO`,
//!   the crate's only `unsafe` code);
//! - `fuzzing` (hidden): the wire formats' fuzz body, run by `cargo fuzz` and by `cargo test`.

#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod bridge;
pub mod card;
mod conn;
pub mod frame;
#[doc(hidden)]
pub mod fuzzing;
mod hot;
pub mod link;
mod place;
#[allow(unsafe_code)] // one getsockopt(TCP_INFO); see the module's SAFETY notes
mod stall;
mod stripe;
mod transport;

pub use card::{Card, CardError};
pub use frame::MAX_STREAMS;
pub use link::LinkPhase;
pub use transport::{
    Keepalive, TcpParams, TcpStats, TcpTransport, DEFAULT_KEEPALIVE_S, DEFAULT_MAX_PACKET,
    DEFAULT_STRIPE_MIN, KEEPALIVE_PROBES, MAX_UNIDENTIFIED,
};
