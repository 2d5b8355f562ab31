//! The transport contract: what the engine needs from any transport (shared memory, TCP, ...).
//!
//! Following the UCX/MPICH-ch4 model (see `shared/reference/style-models.md` §5.2), a transport only
//! moves packets (small active messages) between ranks; it knows nothing of MPI. The engine builds all
//! of MPI on top of these few methods. Back-pressure is a return value ([`WouldBlock`]), never a spin
//! or a block inside the transport: the engine queues what could not be sent.
//!
//! Packets between one ordered pair of ranks are delivered in the order they were sent (FIFO); the
//! engine's non-overtaking guarantee relies on it.
//!
//! A few optional methods, with defaults that any transport satisfies, let a byte-stream transport
//! (TCP) avoid copies the kernel makes unnecessary: it says which peers it reaches by stream
//! ([`Transport::is_stream`]), takes a payload by reference ([`Transport::try_send_parts`]) and
//! lands the bulk of a large packet where the engine's [`Sink`] says ([`Transport::poll_into`]).

use crate::cache::CachePadded;
use crate::coop::CoopSlot;

/// Returned by [`Transport::try_send`] when the path to a peer is momentarily full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WouldBlock;

/// A packet mover between the ranks of one job (indexed `0..nranks`).
pub trait Transport {
    /// Largest packet, in bytes, that [`Transport::try_send`] accepts.
    fn max_packet(&self) -> usize;

    /// Sends one packet of `len` bytes (`len <= max_packet()`) to rank `dest`. `fill` writes the
    /// packet's bytes in place (straight into the transport's memory: this is where the engine packs),
    /// and is called exactly once on success, never on `WouldBlock`.
    fn try_send<F: FnOnce(&mut [u8])>(
        &mut self,
        dest: usize,
        len: usize,
        fill: F,
    ) -> Result<(), WouldBlock>;

    /// Largest packet towards `dest`: [`Transport::max_packet`] unless the transport reaches some
    /// peers by a path that carries bigger packets (a fabric of shared memory and TCP).
    fn max_packet_to(&self, dest: usize) -> usize {
        let _ = dest;
        self.max_packet()
    }

    /// Whether packets to `dest` travel as a byte stream through the kernel (TCP) rather than
    /// through shared memory. Every packet on a stream costs system calls and is copied by the
    /// kernel anyway, so the engine sends fewer, larger packets there (its eager limit and chunk
    /// size are chosen per kind of path) and hands payloads over with
    /// [`Transport::try_send_parts`].
    fn is_stream(&self, dest: usize) -> bool {
        let _ = dest;
        false
    }

    /// Sends one packet made of `head` then `body` (`head.len() + body.len() <= max_packet_to`),
    /// as [`Transport::try_send`] with a `fill` that copies both would. A stream transport gives
    /// `body` to the kernel from where it lies (`writev`), without a copy in user space.
    fn try_send_parts(&mut self, dest: usize, head: &[u8], body: &[u8]) -> Result<(), WouldBlock> {
        self.try_send(dest, head.len() + body.len(), |b| copy_parts(b, head, body))
    }

    /// Delivers received packets to `sink`, like [`Transport::poll`]; a stream transport may
    /// instead land the bulk of a large packet where [`Sink::place`] says (no copy in user space).
    fn poll_into<S: Sink>(&mut self, sink: &mut S) -> usize {
        self.poll(|src, bytes: &[u8]| sink.packet(src, bytes))
    }

    /// Delivers received packets to `handler(source, bytes)`, in per-source FIFO order, and returns
    /// how many were delivered. The slice is valid only during the call (it may point into shared
    /// memory); the handler copies what it keeps. Must not block.
    fn poll<H: FnMut(usize, &[u8])>(&mut self, handler: H) -> usize;

    /// The cooperative-copy slots ([`crate::coop`]) of large messages from transport index
    /// `sender` to transport index `receiver` (one of them is this rank): memory both processes
    /// map. `None` (the default) where the transport has none for that pair.
    fn coop_slots(&self, sender: usize, receiver: usize) -> Option<&[CachePadded<CoopSlot>]> {
        let _ = (sender, receiver);
        None
    }

    /// Blocks the calling process until a packet may have arrived for it, or `timeout` passes.
    /// Called by the engine only after its own spinning budget ran out (spin-then-block); a spurious
    /// return is allowed. Senders wake a sleeping receiver.
    fn sleep(&mut self, timeout: std::time::Duration);

    /// A link to a peer that failed while both ends may live (an I/O error, a frame cut off,
    /// malformed input, not an orderly close) and has stayed broken for `grace`: the peer and
    /// why. Asked only before the engine sleeps. `None` (the default) for transports whose
    /// links cannot fail that way.
    fn failed_link(&self, grace: std::time::Duration) -> Option<(usize, String)> {
        let _ = grace;
        None
    }
}

/// Writes `head` then `body` into `packet` (exactly their total length): the `fill` of a
/// [`Transport::try_send_parts`] that a transport without gathering turns into `try_send`.
pub fn copy_parts(packet: &mut [u8], head: &[u8], body: &[u8]) {
    let (h, rest) = packet.split_at_mut(head.len());
    h.copy_from_slice(head);
    rest.copy_from_slice(body);
}

/// Packets from this many bytes on are worth landing in place ([`Sink::place`]); the first
/// [`PLACE_HEAD`] bytes of such a packet identify it.
pub const PLACE_MIN: usize = 32 << 10;
/// Bytes at the start of a packet that a stream transport keeps while it lands the rest.
pub const PLACE_HEAD: usize = 64;

/// Where [`Transport::poll_into`] puts arrivals (the engine). A transport may use `packet` only;
/// a stream transport that has the start of a large packet (at least [`PLACE_MIN`] bytes) may
/// ask `place` for the final home of the rest and read it there straight from the kernel.
pub trait Sink {
    /// A whole packet from transport index `src`, valid only during the call.
    fn packet(&mut self, src: usize, bytes: &[u8]);

    /// For a packet of `len` bytes from `src` that begins with `head`: the buffer where packet
    /// bytes `at..len` belong, exactly `len - at` bytes long, or `None` to have the packet
    /// delivered whole through [`Sink::packet`]. The first call has `at == head.len()` and the
    /// sink takes the bytes of `head` then; later calls (the rest arrives over several polls)
    /// pass the packet's first `min(len, PLACE_HEAD)` bytes only to name it, with any `at` past
    /// the first call's (a packet striped over several sockets lands piece by piece, in any
    /// order), and a sink that said yes once says yes again.
    fn place(&mut self, src: usize, head: &[u8], len: usize, at: usize) -> Option<&mut [u8]> {
        let _ = (src, head, len, at);
        None
    }

    /// Every byte of a packet that [`Sink::place`] took has landed.
    fn placed(&mut self, src: usize, head: &[u8], len: usize) {
        let _ = (src, head, len);
    }
}

impl<F: FnMut(usize, &[u8])> Sink for F {
    fn packet(&mut self, src: usize, bytes: &[u8]) {
        self(src, bytes)
    }
}
