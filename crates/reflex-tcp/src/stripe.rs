//! Several sockets per peer (`REFLEX_TCP_STREAMS` > 1): large packets split across them.
//!
//! Stream 0 is the connection of `crate::link`; once it is accepted, its initiator opens the
//! other streams (hellos with their index, judged by `link::judge_extra_stream`). Every frame
//! but the pieces of split packets travels on stream 0, so stream 0's order is the pair's packet
//! order. A packet of at least the stripe threshold, sent while every stream is up, is cut into
//! one piece per stream ([`piece`]: even cuts, the first ones a byte longer when it does not
//! divide): a `HEAD` frame on stream 0 carries the packet's sequence number, its length and the
//! first piece; a `PART` frame on stream `k` carries the same sequence number, the piece's
//! offset and piece `k`. Each socket keeps its pieces in sequence order (`Conn::next_seq`).
//!
//! The receiver reads every socket as it becomes readable. When stream 0 reaches a `HEAD`, the
//! packet becomes the peer's split in progress: its destination is chosen once (the engine's
//! buffer, by `Sink::place`, or else a buffer of our own), and every socket's piece is read
//! straight into its range of it (`Conn::landing`), whatever socket's bytes come first. Stream 0
//! stalls until every piece has landed, so the engine still sees per-peer FIFO order; a `PART`
//! that arrives before its `HEAD` waits in its socket's buffer. Any violation (wrong sequence,
//! wrong offset or length, a frame of another kind on streams 1 and up) is a malformed peer and
//! breaks the link, with all its sockets, as does the end of stream 0.
//!
//! The end of stream `k` > 0 (closed, reset, or never connected) does not break the link at once:
//! a peer that sends its last packet and exits closes all its sockets together, and the receiver
//! may see stream `k` end before it has read that packet from stream 0 (the sockets are separate
//! TCP connections: nothing orders one's end after another's data). The stream is taken out of
//! epoll with what it buffered ([`Extra::ended`]); packets go whole on stream 0 from then on, and
//! the link breaks when stream 0 ends, or when a split packet needs a piece that an ended stream
//! no longer has (a clear error rather than a wait for bytes that cannot come).

use std::io::IoSlice;
use std::ops::Range;

use nix::sys::epoll::EpollFlags;
use reflex_base::transport::{Sink, WouldBlock, PLACE_HEAD, PLACE_MIN};

use crate::conn::{Conn, ReadOutcome};
use crate::frame::{encode_header, Kind, Stripe, HEADER_LEN, STRIPE_LEN};
use crate::transport::{Link, TcpTransport};

/// The bytes of piece `i` of a packet of `len` bytes cut into `n` pieces.
pub fn piece(len: usize, n: usize, i: usize) -> Range<usize> {
    let (base, extra) = (len / n, len % n);
    let start = i * base + i.min(extra);
    start..start + base + usize::from(i < extra)
}

/// Checks the `HEAD` of a split packet, with stripe header `stripe` and a piece of `body`
/// bytes, against a receiver with `n` streams that expects sequence number `seq` and packets of
/// at most `max` bytes: the packet's length, or why the peer is malformed.
pub fn check_head(
    stripe: Stripe,
    body: usize,
    n: usize,
    seq: u32,
    max: usize,
) -> Result<usize, String> {
    let len = stripe.value as usize;
    if n < 2 || stripe.seq != seq || !(PLACE_MIN..=max).contains(&len) {
        return Err(format!(
            "a split packet (seq {}, {len} bytes) out of place",
            stripe.seq
        ));
    }
    if body != piece(len, n, 0).len() || body <= PLACE_HEAD {
        return Err(format!("a first piece of {body} bytes"));
    }
    Ok(len)
}

/// Checks the `PART` on stream `k` of `n`, with stripe header `stripe` and a piece of `body`
/// bytes, against the split packet of `len` bytes in progress: the piece's range in the packet,
/// or why the peer is malformed.
pub fn check_part(
    stripe: Stripe,
    body: usize,
    n: usize,
    k: usize,
    len: usize,
) -> Result<Range<usize>, String> {
    let range = piece(len, n, k);
    if stripe.value as usize != range.start || body != range.len() {
        return Err(format!(
            "a piece at {} of {body} bytes on stream {k}",
            stripe.value
        ));
    }
    Ok(range)
}

/// Streams 1.. of the link to one peer, and the split packet being received from it.
#[derive(Debug, Default)]
pub(crate) struct Streams {
    /// Stream `k` at index `k - 1`, once opened (initiator) or accepted (acceptor).
    pub extra: Vec<Option<Extra>>,
    /// Whether this rank accepted the peer's stream 0 (so the peer opens the others).
    pub acceptor: bool,
    /// Sequence number of the next packet this rank splits towards the peer.
    pub send_seq: u32,
    /// The split packet being received.
    pub split: Option<Split>,
}

/// One of streams 1.. of a link.
#[derive(Debug)]
pub(crate) struct Extra {
    pub conn: Conn,
    /// The socket is connected (always, for an accepted one).
    pub connected: bool,
    /// The acceptor took it: pieces may travel.
    pub up: bool,
    /// Why the socket ended (read nothing more from it, split nothing more over it), once it did.
    pub ended: Option<String>,
}

/// A split packet being received.
#[derive(Debug)]
pub(crate) struct Split {
    seq: u32,
    len: usize,
    head: [u8; PLACE_HEAD],
    /// The packet's bytes when the sink declined to place it.
    owned: Option<Vec<u8>>,
    /// Bytes not landed yet.
    left: usize,
}

/// The epoll token of stream `stream` of the link to `peer` (stream 0's is the peer's index).
pub(crate) fn token(peer: usize, stream: usize) -> u64 {
    peer as u64 | (stream as u64) << 32
}

/// The peer and stream of a link token.
pub(crate) fn untoken(token: u64) -> (usize, usize) {
    ((token & 0xffff_ffff) as usize, (token >> 32) as usize)
}

impl Streams {
    /// Whether every stream is up, so that a packet may be split.
    fn all_up(&self, streams: usize) -> bool {
        self.extra.len() + 1 == streams
            && self
                .extra
                .iter()
                .flatten()
                .filter(|e| e.up && e.ended.is_none())
                .count()
                + 1
                == streams
    }
}

/// Up to `range` of the concatenation of `parts`, as slices of them.
fn sub_slices<'a>(parts: &[&'a [u8]], range: &Range<usize>) -> Vec<IoSlice<'a>> {
    let mut out = Vec::with_capacity(parts.len());
    let mut at = 0;
    for part in parts {
        let (lo, hi) = (range.start.max(at), range.end.min(at + part.len()));
        if lo < hi {
            out.push(IoSlice::new(&part[lo - at..hi - at]));
        }
        at += part.len();
    }
    out
}

impl TcpTransport {
    /// Whether a packet of `len` bytes to `dest` is split across the streams.
    pub(crate) fn splits(&self, dest: usize, len: usize) -> bool {
        self.streams > 1 && len >= self.stripe_min && self.stripes[dest].all_up(self.streams)
    }

    /// The initiator of `peer`'s stream 0, just accepted, opens the other streams.
    pub(crate) fn open_extra_streams(&mut self, peer: usize) {
        let mut extra = Vec::with_capacity(self.streams - 1);
        for k in 1..self.streams {
            match self.open(peer, k) {
                Ok(conn) => extra.push(Some(Extra {
                    conn,
                    connected: false,
                    up: false,
                    ended: None,
                })),
                Err(e) => {
                    self.break_link(peer, format!("cannot open stream {k}: {e}"));
                    return;
                }
            }
        }
        self.stripes[peer] = Streams {
            extra,
            ..Streams::default()
        };
    }

    /// Handles readiness of stream `k` > 0 of the link to `peer`; returns the packets delivered.
    pub(crate) fn service_extra<S: Sink>(
        &mut self,
        peer: usize,
        k: usize,
        flags: EpollFlags,
        sink: &mut S,
    ) -> usize {
        let max = self.max_packet;
        let Some(Some(e)) = self.stripes[peer].extra.get_mut(k - 1) else {
            return 0;
        };
        if e.ended.is_some() {
            return 0;
        }
        if !e.connected && flags.intersects(EpollFlags::EPOLLOUT | EpollFlags::EPOLLERR) {
            match e.conn.stream.take_error() {
                Ok(None) => e.connected = true,
                Ok(Some(err)) | Err(err) => {
                    return self.end_extra(
                        peer,
                        k,
                        format!("cannot connect stream {k}: {err}"),
                        sink,
                    )
                }
            }
        }
        let flushed = e
            .conn
            .flush()
            .and_then(|_| Self::watch_out(&self.epoll, &mut e.conn, token(peer, k)));
        if let Err(err) = flushed {
            return self.end_extra(peer, k, format!("stream {k} lost: {err}"), sink);
        }
        let readable =
            flags.intersects(EpollFlags::EPOLLIN | EpollFlags::EPOLLERR | EpollFlags::EPOLLHUP);
        if !readable || !e.connected {
            return 0;
        }
        if e.conn.landing.is_some() {
            return self.land_piece(peer, k, sink);
        }
        match e.conn.read(max) {
            Ok(ReadOutcome::Data(_)) if !e.up => match e.conn.next_frame(0) {
                Ok(None) => 0,
                Ok(Some((h, range))) if h.kind == Kind::Accept => {
                    e.conn.consume(range);
                    e.up = true;
                    // A piece may have come with the answer: a split waiting for it goes on.
                    self.process_frames(peer, sink)
                }
                Ok(Some((h, _))) => {
                    self.malformed(peer, &format!("a {:?} frame on stream {k}", h.kind));
                    0
                }
                Err(err) => {
                    self.malformed(peer, &format!("a malformed frame on stream {k} ({err})"));
                    0
                }
            },
            Ok(ReadOutcome::Data(_) | ReadOutcome::Empty) => self.process_frames(peer, sink),
            Ok(ReadOutcome::Eof) => {
                self.end_extra(peer, k, format!("rank {peer} closed stream {k}"), sink)
            }
            Err(err) => self.end_extra(peer, k, format!("stream {k} lost: {err}"), sink),
        }
    }

    /// Stream `k` > 0 of the link to `peer` ended (`why`): it leaves epoll, keeping what it
    /// buffered, and the link goes on over stream 0 (see the module documentation); a split in
    /// progress that needed more of it breaks the link now. Returns the packets delivered.
    fn end_extra<S: Sink>(&mut self, peer: usize, k: usize, why: String, sink: &mut S) -> usize {
        let Some(Some(e)) = self.stripes[peer].extra.get_mut(k - 1) else {
            return 0;
        };
        let _ = self.epoll.delete(&e.conn.stream);
        e.ended = Some(why);
        self.process_frames(peer, sink)
    }

    /// Why the split in progress from `peer` cannot complete: an ended stream that has not
    /// delivered its whole piece (it will get no more bytes).
    fn piece_cut_off(&self, peer: usize) -> Option<String> {
        let stripes = &self.stripes[peer];
        let split = stripes.split.as_ref()?;
        stripes.extra.iter().enumerate().find_map(|(i, e)| {
            let e = e.as_ref()?;
            let why = e.ended.as_ref()?;
            let missing = e.conn.landing.is_some() || e.conn.next_seq == split.seq;
            missing.then(|| {
                format!(
                    "split packet {} without its piece on stream {} ({why})",
                    split.seq,
                    i + 1
                )
            })
        })
    }

    /// Whether streams 1.. to `dest` have sent the tails of earlier frames (stream 0 is
    /// checked by `ready`), else `WouldBlock`.
    pub(crate) fn extra_streams_ready(&mut self, dest: usize) -> Result<(), WouldBlock> {
        let mut flushed = Ok(true);
        for e in self.stripes[dest].extra.iter_mut().flatten() {
            flushed = e.conn.flush().map(|done| done && flushed.unwrap_or(false));
            if flushed.is_err() {
                break;
            }
        }
        match flushed {
            Ok(true) => Ok(()),
            Ok(false) => {
                self.stats.would_block += 1;
                Err(WouldBlock)
            }
            Err(err) => {
                self.break_link(dest, format!("connection lost: {err}"));
                Err(WouldBlock)
            }
        }
    }

    /// Sends `packet` (the concatenation of its parts, `len` bytes) to `dest` as one piece per
    /// stream, once every stream is ready (`ready`, [`TcpTransport::extra_streams_ready`]).
    pub(crate) fn send_split(&mut self, dest: usize, packet: &[&[u8]], len: usize) {
        let n = self.streams;
        let seq = self.stripes[dest].send_seq;
        self.stripes[dest].send_seq = seq.wrapping_add(1);
        self.stats.stripes_sent += 1;
        for k in 0..n {
            let range = piece(len, n, k);
            let (kind, value) = if k == 0 {
                (Kind::Head, len)
            } else {
                (Kind::Part, range.start)
            };
            let mut header = [0u8; HEADER_LEN];
            encode_header(&mut header, kind, STRIPE_LEN + range.len());
            let stripe = Stripe {
                seq,
                value: value as u32,
            }
            .encode();
            let mut iov = vec![IoSlice::new(&header), IoSlice::new(&stripe)];
            iov.extend(sub_slices(packet, &range));
            let conn = match (k, &mut self.links[dest]) {
                (0, Link::Up(conn)) => conn,
                (0, _) => return,
                (k, _) => match &mut self.stripes[dest].extra[k - 1] {
                    Some(e) => &mut e.conn,
                    None => unreachable!("stream {k} to rank {dest} was up a moment ago"),
                },
            };
            let sent = conn
                .send_parts(&mut iov)
                .and_then(|()| Self::watch_out(&self.epoll, conn, token(dest, k)));
            if let Err(err) = sent {
                self.break_link(dest, format!("connection lost: {err}"));
                return;
            }
        }
    }

    /// The connection of stream `stream` to `peer`, if it is up.
    fn stream_conn(&mut self, peer: usize, stream: usize) -> Option<&mut Conn> {
        match stream {
            0 => match &mut self.links[peer] {
                Link::Up(conn) => Some(conn),
                _ => None,
            },
            k => self.stripes[peer]
                .extra
                .get_mut(k - 1)?
                .as_mut()
                .filter(|e| e.up)
                .map(|e| &mut e.conn),
        }
    }

    /// Stream 0 has a `HEAD` at the head of its buffer: makes its packet the split in progress
    /// once enough of it is in. Returns whether it did; an error is a malformed peer.
    pub(crate) fn begin_split<S: Sink>(
        &mut self,
        peer: usize,
        sink: &mut S,
    ) -> Result<bool, String> {
        let (n, max) = (self.streams, self.max_packet);
        let Link::Up(conn) = &mut self.links[peer] else {
            return Ok(false);
        };
        let Some(Ok(header)) = conn.peek_header(max) else {
            return Ok(false);
        };
        let buffered = conn.buffered();
        let Some(stripe) = buffered[HEADER_LEN..]
            .first_chunk::<STRIPE_LEN>()
            .map(Stripe::parse)
        else {
            return Ok(false);
        };
        let len = check_head(stripe, header.len - STRIPE_LEN, n, conn.next_seq, max)?;
        let first_piece = piece(len, n, 0);
        let first = &buffered[HEADER_LEN + STRIPE_LEN..];
        let first = &first[..first.len().min(first_piece.len())];
        if first.len() <= PLACE_HEAD {
            return Ok(false);
        }
        let mut head = [0u8; PLACE_HEAD];
        head.copy_from_slice(&first[..PLACE_HEAD]);
        let owned = match sink.place(peer, first, len, first.len()) {
            Some(_) => None,
            None => {
                let mut own = vec![0; len];
                own[..first.len()].copy_from_slice(first);
                Some(own)
            }
        };
        let took = first.len();
        conn.skip(HEADER_LEN + STRIPE_LEN + took);
        conn.landing = (took < first_piece.end).then_some(took..first_piece.end);
        conn.next_seq = conn.next_seq.wrapping_add(1);
        self.stripes[peer].split = Some(Split {
            seq: stripe.seq,
            len,
            head,
            owned,
            left: len - took,
        });
        Ok(true)
    }

    /// Takes the piece at the head of stream `k`'s buffer for the split in progress, if it is
    /// there; an error is a malformed peer.
    fn take_part<S: Sink>(&mut self, peer: usize, k: usize, sink: &mut S) -> Result<(), String> {
        let (n, max) = (self.streams, self.max_packet);
        let stripes = &mut self.stripes[peer];
        let (Some(split), Some(Some(e))) = (&mut stripes.split, stripes.extra.get_mut(k - 1))
        else {
            return Ok(());
        };
        let conn = &mut e.conn;
        if !e.up || conn.landing.is_some() {
            return Ok(());
        }
        let header = match conn.peek_header(max) {
            None => return Ok(()),
            Some(Ok(h)) if h.kind == Kind::Part => h,
            Some(Ok(h)) => return Err(format!("a {:?} frame on stream {k}", h.kind)),
            Some(Err(e)) => return Err(e.to_string()),
        };
        let buffered = conn.buffered();
        let Some(stripe) = buffered[HEADER_LEN..]
            .first_chunk::<STRIPE_LEN>()
            .map(Stripe::parse)
        else {
            return Ok(());
        };
        if stripe.seq != conn.next_seq {
            return Err(format!(
                "piece {} on stream {k}, expected {}",
                stripe.seq, conn.next_seq
            ));
        }
        if stripe.seq != split.seq {
            return Ok(());
        }
        let range = check_part(stripe, header.len - STRIPE_LEN, n, k, split.len)?;
        let body = &buffered[HEADER_LEN + STRIPE_LEN..];
        let body = &body[..body.len().min(range.len())];
        let took = body.len();
        if took > 0 {
            let to = range.start..range.start + took;
            let dest = split_dest(split, peer, sink, to).ok_or("the engine refused a piece")?;
            dest.copy_from_slice(body);
        }
        split.left -= took;
        conn.skip(HEADER_LEN + STRIPE_LEN + took);
        conn.landing = (range.start + took < range.end).then_some(range.start + took..range.end);
        conn.next_seq = conn.next_seq.wrapping_add(1);
        Ok(())
    }

    /// Moves the split in progress from `peer` on (pieces buffered on streams 1..) and delivers it
    /// when complete. Returns whether it was delivered; an error is a malformed peer.
    pub(crate) fn advance_split<S: Sink>(
        &mut self,
        peer: usize,
        sink: &mut S,
    ) -> Result<bool, String> {
        for k in 1..self.streams {
            self.take_part(peer, k, sink)?;
        }
        if let Some(why) = self.piece_cut_off(peer) {
            return Err(why);
        }
        let stripes = &mut self.stripes[peer];
        if stripes.split.as_ref().is_some_and(|s| s.left > 0) {
            return Ok(false);
        }
        let Some(split) = stripes.split.take() else {
            return Ok(false);
        };
        match &split.owned {
            Some(own) => sink.packet(peer, own),
            None => sink.placed(peer, &split.head, split.len),
        }
        Ok(true)
    }

    /// Reads once more of the piece that stream `k` of `peer` is landing; returns the packets
    /// delivered.
    pub(crate) fn land_piece<S: Sink>(&mut self, peer: usize, k: usize, sink: &mut S) -> usize {
        let outcome = {
            let stripes = &mut self.stripes[peer];
            let conn = match k {
                0 => match &mut self.links[peer] {
                    Link::Up(conn) => Some(conn),
                    _ => None,
                },
                k => stripes
                    .extra
                    .get_mut(k - 1)
                    .and_then(Option::as_mut)
                    .map(|e| &mut e.conn),
            };
            let split = stripes.split.as_mut();
            let (Some(split), Some(conn)) = (split, conn) else {
                return 0;
            };
            let Some(range) = conn.landing.clone() else {
                return 0;
            };
            match split_dest(split, peer, sink, range.clone()) {
                Some(dest) => (conn.read_into(dest), range),
                None => {
                    self.refused(peer, "the rest of a piece of a split packet");
                    return 0;
                }
            }
        };
        match self.bytes_read(peer, k, outcome.0) {
            Some(0) | None => 0,
            Some(got) => {
                self.landed_piece(peer, k, got, outcome.1);
                self.process_frames(peer, sink)
            }
        }
    }

    /// Books `got` bytes of `range` landed by stream `k` of `peer`.
    fn landed_piece(&mut self, peer: usize, k: usize, got: usize, range: Range<usize>) {
        if let Some(split) = &mut self.stripes[peer].split {
            split.left -= got;
        }
        if let Some(conn) = self.stream_conn(peer, k) {
            conn.landing = (range.start + got < range.end).then_some(range.start + got..range.end);
        }
    }
}

/// Where bytes `range` of the split packet go: the sink's buffer or our own.
fn split_dest<'a, S: Sink>(
    split: &'a mut Split,
    peer: usize,
    sink: &'a mut S,
    range: Range<usize>,
) -> Option<&'a mut [u8]> {
    match &mut split.owned {
        Some(own) => Some(&mut own[range]),
        None => {
            let len = range.len();
            sink.place(peer, &split.head, split.len, range.start)
                .map(|d| &mut d[..len])
        }
    }
}
