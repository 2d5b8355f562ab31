//! [`TcpTransport`]: the engine's [`Transport`] over TCP sockets between hosts.
//!
//! Each rank listens on one socket (any address, ephemeral port) and publishes a business card
//! ([`crate::card`]). Connections are opened lazily, on the first send to a peer, with the
//! hello/accept rules of [`crate::link`] (one connection per pair, even when both ranks start
//! at once). Every socket is non-blocking with `TCP_NODELAY` and registered, level-triggered, in
//! one epoll set; [`Transport::poll`] asks epoll what is ready (`epoll_wait` with a zero
//! timeout), reads once from each ready connection and delivers every complete frame in place.
//! The connection that delivered last is "hot" ([`crate::hot`]): polls read it directly and ask
//! epoll only now and then, so a rank that spins for its peer's answer pays one `recv` per poll
//! and per message rather than `epoll_wait` plus `recv` (the shared-memory path's spinning, at
//! the cost of noticing other peers, new connections and send room a few polls later); a hot
//! connection that keeps delivering leaves the epoll set, which spares its sender the epoll
//! callback on every segment. [`Transport::sleep`] puts it back and is `epoll_wait` with the
//! timeout: a peer's data wakes it, and since epoll is level-triggered nothing is lost by
//! ignoring what it reports.
//!
//! Back-pressure: a frame leaves with one `send(2)`; the kernel's socket buffer is the send
//! queue. When it is full the unsent tail of that one frame is kept ([`crate::conn`]) and later
//! sends to that peer return [`WouldBlock`] until epoll says the socket is writable and the tail
//! has gone. A peer that sends a malformed frame is disconnected; a connection that is not from
//! a rank of the job (wrong cookie, bad hello) is closed. Neither can crash the process. A link
//! that broke is not reopened: sends to it return `WouldBlock` forever (the launcher ends the
//! job when a rank dies) and the first such send prints why. Every connection has TCP keepalive
//! ([`Keepalive`]), so one whose peer went silent (its host died, its network is gone) breaks
//! too instead of waiting forever.

use std::collections::{HashMap, VecDeque};
use std::io::{self, IoSlice};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};
use nix::sys::socket::{connect, socket, AddressFamily, SockFlag, SockType, SockaddrIn};
use reflex_base::transport::{Sink, Transport, WouldBlock, PLACE_MIN};

use crate::bridge::{BridgeIds, GlobalId};
use crate::card::{local_addrs, Card, CardError, IfAddr};
use crate::conn::{Conn, ReadOutcome};
use crate::frame::{encode_header, Hello, Kind, HEADER_LEN, HELLO_LEN, MAX_STREAMS};
use crate::hot::Hot;
use crate::link::{job_sender, judge_from, LinkPhase, Verdict};
use crate::stall::StallWatch;
use crate::stripe::{token, untoken, Extra, Streams};

/// Largest packet by default: 4 MiB (the engine clamps its TCP eager limit and chunk size to it;
/// a receive buffer grows to the largest frame a peer actually sends).
pub const DEFAULT_MAX_PACKET: usize = 4 << 20;
/// Packets from this many bytes on are split across the streams by default (when there are
/// several streams per peer).
pub const DEFAULT_STRIPE_MIN: usize = 128 << 10;
/// Seconds of silence before a connection is probed, by default (see [`Keepalive`]).
pub const DEFAULT_KEEPALIVE_S: u32 = 10;
/// Connections accepted but not yet identified by a hello, at most (the oldest is dropped).
pub const MAX_UNIDENTIFIED: usize = 256;

const LISTENER: u64 = u64::MAX;
const INCOMING: u64 = 1 << 40;
const EVENTS: usize = 64;
/// Connections accepted per poll at most (the rest wait for the next poll).
const ACCEPT_BURST: usize = 64;

/// Settings of a [`TcpTransport`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpParams {
    /// Largest packet accepted by `try_send` and from peers.
    pub max_packet: usize,
    /// Sockets per peer (1 to [`MAX_STREAMS`]; both ends must agree): `crate::stripe`.
    pub streams: usize,
    /// Packets from this many bytes on are split across the streams (at least `PLACE_MIN`).
    pub stripe_min: usize,
    /// Seconds of silence after which a connection is probed with TCP keepalive (0: never):
    /// see [`Keepalive`].
    pub keepalive_s: u32,
}

/// TCP keepalive on every connection: after `idle_s` seconds with nothing received, the kernel
/// sends a probe every `interval_s` seconds, and after [`KEEPALIVE_PROBES`] unanswered ones
/// fails the connection (`ETIMEDOUT`), which [`Transport::failed_link`] then reports. This is how
/// a peer whose host died, or whose network went silent, is noticed when no data is in flight:
/// nothing else would ever arrive on the connection, no reset either. A peer that is alive but
/// busy (computing, or not reading: a full receive window) still answers probes from its
/// kernel, so it is never mistaken for a dead one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keepalive {
    /// Seconds with nothing received before the first probe.
    pub idle_s: u32,
    /// Seconds between probes.
    pub interval_s: u32,
}

/// Unanswered keepalive probes after which a connection fails.
pub const KEEPALIVE_PROBES: u32 = 3;

impl Keepalive {
    /// Probing after `idle_s` seconds, every third of that (at least 1 s): a silent peer is
    /// declared dead about twice `idle_s` after its last word. `None` for 0 (off).
    pub fn after(idle_s: u32) -> Option<Keepalive> {
        (idle_s > 0).then(|| Keepalive {
            idle_s,
            interval_s: (idle_s / KEEPALIVE_PROBES).max(1),
        })
    }

    /// How long keepalive takes to declare a silent peer dead: the idle time and every probe.
    pub fn budget(self) -> Duration {
        Duration::from_secs(u64::from(self.idle_s + self.interval_s * KEEPALIVE_PROBES))
    }

    /// Turns keepalive on for `stream` with these timings.
    pub(crate) fn apply(self, stream: &TcpStream) -> io::Result<()> {
        use nix::sys::socket::{setsockopt, sockopt};
        setsockopt(stream, sockopt::KeepAlive, &true).map_err(errno)?;
        setsockopt(stream, sockopt::TcpKeepIdle, &self.idle_s).map_err(errno)?;
        setsockopt(stream, sockopt::TcpKeepInterval, &self.interval_s).map_err(errno)?;
        setsockopt(stream, sockopt::TcpKeepCount, &KEEPALIVE_PROBES).map_err(errno)
    }
}

impl Default for TcpParams {
    fn default() -> Self {
        Self {
            max_packet: DEFAULT_MAX_PACKET,
            streams: 1,
            stripe_min: DEFAULT_STRIPE_MIN,
            keepalive_s: DEFAULT_KEEPALIVE_S,
        }
    }
}

/// Counters, for tests and benchmarks.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TcpStats {
    /// Outgoing connections established.
    pub connects: u64,
    /// Incoming connections kept.
    pub accepts: u64,
    /// Connections dropped by the simultaneous-connect rule (either side).
    pub rejected: u64,
    /// Connections closed because they did not come from a rank of the job.
    pub refused: u64,
    /// Frames the kernel did not take whole (their tail waited in user space).
    pub partial_sends: u64,
    /// `try_send` calls answered `WouldBlock`.
    pub would_block: u64,
    /// Packets sent split across several streams.
    pub stripes_sent: u64,
    /// Times the hot connection left the epoll set ([`crate::hot`]).
    pub detaches: u64,
}

impl TcpStats {
    /// The counters of two transports together (a job's and its bridge to other jobs).
    pub fn sum(&self, other: &TcpStats) -> TcpStats {
        TcpStats {
            connects: self.connects + other.connects,
            accepts: self.accepts + other.accepts,
            rejected: self.rejected + other.rejected,
            refused: self.refused + other.refused,
            partial_sends: self.partial_sends + other.partial_sends,
            would_block: self.would_block + other.would_block,
            stripes_sent: self.stripes_sent + other.stripes_sent,
            detaches: self.detaches + other.detaches,
        }
    }
}

#[derive(Debug)]
pub(crate) enum Link {
    Idle,
    Connecting { conn: Conn, connected: bool },
    Up(Conn),
    Broken { reason: String, reported: bool },
}

impl Link {
    fn phase(&self) -> LinkPhase {
        match self {
            Link::Idle => LinkPhase::Idle,
            Link::Connecting { .. } => LinkPhase::Connecting,
            Link::Up(_) => LinkPhase::Up,
            Link::Broken { .. } => LinkPhase::Broken,
        }
    }
}

/// The TCP transport of one rank (see the module documentation).
#[derive(Debug)]
pub struct TcpTransport {
    pub(crate) me: usize,
    pub(crate) max_packet: usize,
    pub(crate) streams: usize,
    pub(crate) stripe_min: usize,
    pub(crate) keepalive: Option<Keepalive>,
    cookie: u64,
    card: Card,
    my_addrs: Vec<IfAddr>,
    cards: Vec<Option<Card>>,
    pub(crate) links: Vec<Link>,
    /// Per peer: streams 1.. and the split packet being received.
    pub(crate) stripes: Vec<Streams>,
    unidentified: HashMap<u64, Conn>,
    next_incoming: u64,
    self_queue: VecDeque<Vec<u8>>,
    scratch: Vec<u8>,
    events: Vec<EpollEvent>,
    /// The peer whose frames arrived last, read directly by `poll` ([`crate::hot`]).
    pub(crate) hot: Hot,
    pub(crate) stats: TcpStats,
    listener: TcpListener,
    pub(crate) epoll: Epoll,
    /// On a bridge between jobs: who this process is and which processes may connect.
    bridge: Option<BridgeIds>,
    /// On a bridge: accepted connections whose hello names a process not known yet (token,
    /// hello, connection), oldest first, at most [`MAX_UNIDENTIFIED`].
    parked: Vec<(u64, Hello, Conn)>,
    /// The first link that broke other than by the peer's orderly close (an I/O error, a frame
    /// cut off, malformed input), and when: [`Transport::failed_link`].
    pub(crate) failed: Option<(usize, String, Instant)>,
    /// Links whose peer stopped acknowledging (with keepalive on).
    stalls: StallWatch,
}

fn errno(e: Errno) -> io::Error {
    io::Error::from(e)
}

fn with_context(e: io::Error, what: &str) -> io::Error {
    io::Error::new(e.kind(), format!("tcp: {what}: {e}"))
}

/// 64 random bits from the kernel.
fn random_cookie() -> io::Result<u64> {
    use std::io::Read;
    let mut bytes = [0u8; 8];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| with_context(e, "cannot read /dev/urandom"))?;
    Ok(u64::from_le_bytes(bytes))
}

impl TcpTransport {
    /// Listens for the peers of rank `me` of `nranks`; publish [`TcpTransport::card`], then give
    /// every peer's card to [`TcpTransport::set_card`] before sending to it.
    pub fn bind(me: usize, nranks: usize, params: TcpParams) -> io::Result<TcpTransport> {
        assert!(me < nranks, "tcp: rank {me} outside a job of {nranks}");
        Self::listen(me, nranks, params)
    }

    /// Listens for processes of other jobs as process `me` (job id, rank in that job): a
    /// bridge (`crate::bridge`). It has no peers until [`TcpTransport::add_peer`] names them;
    /// its peer indices are the caller's (the engine's process indices).
    pub fn bind_bridge(me: GlobalId, params: TcpParams) -> io::Result<TcpTransport> {
        let mut t = Self::listen(usize::MAX, 0, params)?;
        t.bridge = Some(BridgeIds::new(me));
        Ok(t)
    }

    /// Tells a bridge about process `id`, its peer `index`, which listens at `card`: from now
    /// on it may connect to this process and this process to it.
    pub fn add_peer(&mut self, index: usize, id: GlobalId, card: &str) -> Result<(), String> {
        let ids = self
            .bridge
            .as_mut()
            .ok_or("tcp: peers are added to a bridge only")?;
        let card = Card::parse(card).map_err(|e| e.to_string())?;
        ids.add(index, id)?;
        if self.links.len() <= index {
            self.cards.resize(index + 1, None);
            self.links.resize_with(index + 1, || Link::Idle);
            self.stripes.resize_with(index + 1, Streams::default);
        }
        self.cards[index] = Some(card);
        self.unpark();
        Ok(())
    }

    fn listen(me: usize, nranks: usize, params: TcpParams) -> io::Result<TcpTransport> {
        assert!(
            (1..=MAX_STREAMS).contains(&params.streams),
            "tcp: {} streams per peer (1 to {MAX_STREAMS})",
            params.streams
        );
        let listener = TcpListener::bind(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0))
            .map_err(|e| with_context(e, "cannot listen"))?;
        listener.set_nonblocking(true)?;
        let epoll = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC).map_err(errno)?;
        epoll
            .add(&listener, EpollEvent::new(EpollFlags::EPOLLIN, LISTENER))
            .map_err(errno)?;
        let port = listener.local_addr()?.port();
        let cookie = random_cookie()?;
        let my_addrs =
            local_addrs().map_err(|e| with_context(e, "cannot list interface addresses"))?;
        let card = Card {
            port,
            cookie,
            addrs: if my_addrs.is_empty() {
                vec![IfAddr {
                    ip: Ipv4Addr::LOCALHOST,
                    prefix: 8,
                }]
            } else {
                my_addrs.clone()
            },
        };
        Ok(TcpTransport {
            me,
            max_packet: params.max_packet,
            streams: params.streams,
            stripe_min: params.stripe_min.max(PLACE_MIN),
            keepalive: Keepalive::after(params.keepalive_s),
            cookie,
            card,
            my_addrs,
            cards: vec![None; nranks],
            links: (0..nranks).map(|_| Link::Idle).collect(),
            stripes: (0..nranks).map(|_| Streams::default()).collect(),
            unidentified: HashMap::new(),
            next_incoming: 0,
            self_queue: VecDeque::new(),
            scratch: vec![0; HEADER_LEN + params.max_packet],
            events: vec![EpollEvent::empty(); EVENTS],
            hot: Hot::default(),
            stats: TcpStats::default(),
            listener,
            epoll,
            bridge: None,
            parked: Vec::new(),
            failed: None,
            stalls: StallWatch::default(),
        })
    }

    /// This rank's business card (to publish through PMI).
    pub fn card(&self) -> String {
        self.card.to_string()
    }

    /// Records where `peer` listens.
    pub fn set_card(&mut self, peer: usize, card: &str) -> Result<(), CardError> {
        let parsed = Card::parse(card)?;
        self.cards[peer] = Some(parsed);
        Ok(())
    }

    /// This rank's index.
    pub fn rank(&self) -> usize {
        self.me
    }

    /// How messages name this process: its rank, or on a bridge its job and rank.
    pub(crate) fn name(&self) -> String {
        match &self.bridge {
            Some(ids) => format!("process {} of job {:016x} (bridge)", ids.me.1, ids.me.0),
            None => format!("rank {}", self.me),
        }
    }

    /// Counters.
    pub fn stats(&self) -> TcpStats {
        self.stats
    }

    /// State of the link to `peer`.
    pub fn phase(&self, peer: usize) -> LinkPhase {
        self.links[peer].phase()
    }

    /// Peers whose connection broke, with the reason.
    pub fn broken_peers(&self) -> Vec<(usize, String)> {
        self.links
            .iter()
            .enumerate()
            .filter_map(|(p, l)| match l {
                Link::Broken { reason, .. } => Some((p, reason.clone())),
                _ => None,
            })
            .collect()
    }

    /// Handles readiness of the link to `peer`; returns the packets delivered.
    fn service_link<S: Sink>(&mut self, peer: usize, flags: EpollFlags, sink: &mut S) -> usize {
        let writable =
            flags.intersects(EpollFlags::EPOLLOUT | EpollFlags::EPOLLERR | EpollFlags::EPOLLHUP);
        let readable =
            flags.intersects(EpollFlags::EPOLLIN | EpollFlags::EPOLLERR | EpollFlags::EPOLLHUP);
        if let Link::Connecting {
            conn,
            connected: connected @ false,
        } = &mut self.links[peer]
        {
            if writable {
                match conn.stream.take_error() {
                    Ok(None) => {
                        *connected = true;
                        self.stats.connects += 1;
                    }
                    Ok(Some(e)) | Err(e) => {
                        self.break_link(peer, format!("cannot connect: {e}"));
                        return 0;
                    }
                }
            }
        }
        let result = match &mut self.links[peer] {
            Link::Connecting {
                conn,
                connected: true,
            }
            | Link::Up(conn) => conn
                .flush()
                .and_then(|_| Self::watch_out(&self.epoll, conn, peer as u64)),
            _ => Ok(()),
        };
        if let Err(e) = result {
            self.break_link(peer, format!("connection lost: {e}"));
            return 0;
        }
        if !readable {
            return 0;
        }
        self.receive(peer, sink)
    }

    /// Reads once from the link to `peer` and processes every complete frame.
    fn receive<S: Sink>(&mut self, peer: usize, sink: &mut S) -> usize {
        let max = self.max_packet;
        let outcome = match &mut self.links[peer] {
            Link::Up(conn) if conn.placing.is_some() => return self.land(peer, sink),
            Link::Up(conn) if conn.landing.is_some() => return self.land_piece(peer, 0, sink),
            Link::Connecting {
                conn,
                connected: true,
            }
            | Link::Up(conn) => conn.read(max),
            _ => return 0,
        };
        let delivered = self.process_frames(peer, sink);
        match outcome {
            Ok(ReadOutcome::Data(_) | ReadOutcome::Empty) => {}
            Ok(ReadOutcome::Eof) => {
                let cut = matches!(&self.links[peer], Link::Up(c) if c.has_partial());
                let what = if cut {
                    "closed its connection in the middle of a frame"
                } else {
                    "closed its connection"
                };
                if matches!(self.links[peer], Link::Up(_) | Link::Connecting { .. }) {
                    let reason = format!("rank {peer} {what}");
                    if cut {
                        self.break_link(peer, reason);
                    } else {
                        self.close_link(peer, reason);
                    }
                }
            }
            Err(e) => self.break_link(peer, format!("connection lost: {e}")),
        }
        delivered
    }

    /// Delivers the complete frames buffered on the link to `peer` (stream 0 sets the order; a
    /// split packet in progress holds it up until all its pieces are in).
    pub(crate) fn process_frames<S: Sink>(&mut self, peer: usize, sink: &mut S) -> usize {
        let max = self.max_packet;
        let mut delivered = 0;
        loop {
            if self.stripes[peer].split.is_some() {
                match self.advance_split(peer, sink) {
                    Ok(true) => delivered += 1,
                    Ok(false) => return delivered,
                    Err(why) => {
                        self.malformed(peer, &why);
                        return delivered;
                    }
                }
            }
            let (conn, up) = match &mut self.links[peer] {
                Link::Up(conn) => (conn, true),
                Link::Connecting { conn, .. } => (conn, false),
                _ => return delivered,
            };
            if up && matches!(conn.peek_header(max), Some(Ok(h)) if h.kind == Kind::Head) {
                match self.begin_split(peer, sink) {
                    Ok(true) => continue,
                    Ok(false) => return delivered,
                    Err(why) => {
                        self.malformed(peer, &why);
                        return delivered;
                    }
                }
            }
            let (header, range) = match conn.next_frame(max) {
                Ok(Some(frame)) => frame,
                Ok(None) if up => return delivered + self.start_placing(peer, sink),
                Ok(None) => return delivered,
                Err(e) => {
                    self.malformed(peer, &format!("a malformed frame ({e})"));
                    return delivered;
                }
            };
            match (up, header.kind) {
                (true, Kind::Data) => {
                    sink.packet(peer, conn.payload(range.clone()));
                    conn.consume(range);
                    delivered += 1;
                }
                (false, Kind::Accept) => {
                    conn.consume(range);
                    if let Link::Connecting { conn, .. } =
                        std::mem::replace(&mut self.links[peer], Link::Idle)
                    {
                        self.links[peer] = Link::Up(conn);
                        if self.streams > 1 {
                            self.open_extra_streams(peer);
                        }
                    }
                }
                (false, Kind::Reject) => {
                    if let Link::Connecting { conn, .. } =
                        std::mem::replace(&mut self.links[peer], Link::Idle)
                    {
                        let _ = self.epoll.delete(&conn.stream);
                    }
                    self.stats.rejected += 1;
                    return delivered;
                }
                (_, kind) => {
                    self.malformed(peer, &format!("an unexpected {kind:?} frame"));
                    return delivered;
                }
            }
        }
    }
    /// Whether a frame may go out to `dest` now: connected, with nothing left of the previous
    /// frame (else `WouldBlock`, after starting to connect or reporting a break).
    fn ready(&mut self, dest: usize) -> Result<(), WouldBlock> {
        let flushed = match &mut self.links[dest] {
            Link::Up(conn) => conn.flush(),
            Link::Idle => {
                self.connect(dest);
                self.stats.would_block += 1;
                return Err(WouldBlock);
            }
            Link::Connecting { .. } => {
                self.stats.would_block += 1;
                return Err(WouldBlock);
            }
            Link::Broken { .. } => {
                self.report_broken(dest);
                return Err(WouldBlock);
            }
        };
        match flushed {
            Ok(true) => {}
            Ok(false) => {
                self.stats.would_block += 1;
                return Err(WouldBlock);
            }
            Err(e) => {
                self.break_link(dest, format!("connection lost: {e}"));
                self.report_broken(dest);
                return Err(WouldBlock);
            }
        }
        Ok(())
    }

    /// The connection to `dest` after [`TcpTransport::ready`] said yes.
    fn up_conn(links: &mut [Link], dest: usize) -> &mut Conn {
        match &mut links[dest] {
            Link::Up(conn) => conn,
            _ => unreachable!("the link to rank {dest} was up a moment ago"),
        }
    }

    /// Books the outcome of handing a frame to the connection to `dest`: epoll watches for
    /// room while a tail waits; an error breaks the link.
    fn after_send(&mut self, dest: usize, sent: io::Result<()>) {
        let Link::Up(conn) = &mut self.links[dest] else {
            return;
        };
        match sent.and_then(|()| Self::watch_out(&self.epoll, conn, dest as u64)) {
            Ok(()) if conn.tx_pending() => self.stats.partial_sends += 1,
            Ok(()) => {}
            Err(e) => self.break_link(dest, format!("connection lost: {e}")),
        }
    }
}

impl Transport for TcpTransport {
    fn max_packet(&self) -> usize {
        self.max_packet
    }

    /// Every peer but this rank itself is behind a socket.
    fn is_stream(&self, dest: usize) -> bool {
        dest != self.me
    }

    /// # Panics
    /// If `dest` is not a rank of the job or `len > max_packet()`: both are engine bugs.
    #[inline]
    fn try_send<F: FnOnce(&mut [u8])>(
        &mut self,
        dest: usize,
        len: usize,
        fill: F,
    ) -> Result<(), WouldBlock> {
        assert!(
            len <= self.max_packet,
            "tcp: packet of {len} bytes exceeds {}",
            self.max_packet
        );
        if dest == self.me {
            let mut packet = vec![0; len];
            fill(&mut packet);
            self.self_queue.push_back(packet);
            return Ok(());
        }
        self.ready(dest)?;
        if self.splits(dest, len) {
            self.extra_streams_ready(dest)?;
            let mut scratch = std::mem::take(&mut self.scratch);
            let packet = &mut scratch[..len];
            fill(packet);
            self.send_split(dest, &[packet], len);
            self.scratch = scratch;
            return Ok(());
        }
        let conn = Self::up_conn(&mut self.links, dest);
        let frame = &mut self.scratch[..HEADER_LEN + len];
        encode_header(frame, Kind::Data, len);
        fill(&mut frame[HEADER_LEN..]);
        let sent = conn.send(frame);
        self.after_send(dest, sent);
        Ok(())
    }

    /// # Panics
    /// As [`Transport::try_send`].
    fn try_send_parts(&mut self, dest: usize, head: &[u8], body: &[u8]) -> Result<(), WouldBlock> {
        let len = head.len() + body.len();
        assert!(
            len <= self.max_packet,
            "tcp: packet of {len} bytes exceeds {}",
            self.max_packet
        );
        if dest == self.me {
            self.self_queue.push_back([head, body].concat());
            return Ok(());
        }
        self.ready(dest)?;
        if self.splits(dest, len) {
            self.extra_streams_ready(dest)?;
            self.send_split(dest, &[head, body], len);
            return Ok(());
        }
        let conn = Self::up_conn(&mut self.links, dest);
        let mut header = [0u8; HEADER_LEN];
        encode_header(&mut header, Kind::Data, len);
        let mut parts = [
            IoSlice::new(&header),
            IoSlice::new(head),
            IoSlice::new(body),
        ];
        let sent = conn.send_parts(&mut parts);
        self.after_send(dest, sent);
        Ok(())
    }

    fn poll<H: FnMut(usize, &[u8])>(&mut self, mut handler: H) -> usize {
        self.poll_into(&mut handler)
    }

    fn poll_into<S: Sink>(&mut self, sink: &mut S) -> usize {
        let mut delivered = 0;
        while let Some(packet) = self.self_queue.pop_front() {
            sink.packet(self.me, &packet);
            delivered += 1;
        }
        if let Some(peer) = self.hot.peer {
            let got = self.receive(peer, sink);
            if got > 0 {
                self.hot_delivered();
            }
            delivered += got;
            // A split packet in progress: its other pieces are read on this poll too.
            for k in 1..self.streams {
                if self.stripes[peer].split.is_some() {
                    delivered += self.service_extra(peer, k, EpollFlags::EPOLLIN, sink);
                }
            }
            if !matches!(self.links[peer], Link::Up(_)) {
                self.cool();
            }
            if !self.hot.epoll_due() {
                return delivered;
            }
        }
        let mut events = std::mem::take(&mut self.events);
        let ready = self
            .epoll
            .wait(&mut events, EpollTimeout::ZERO)
            .unwrap_or(0);
        self.hot.asked(ready);
        for event in &events[..ready] {
            match event.data() {
                LISTENER => self.accept_new(),
                token if token & INCOMING != 0 => self.identify(token),
                token => {
                    let (peer, stream) = untoken(token);
                    let got = match stream {
                        0 => self.service_link(peer, event.events(), sink),
                        k => self.service_extra(peer, k, event.events(), sink),
                    };
                    if got > 0 {
                        self.heat(peer);
                    }
                    delivered += got;
                }
            }
        }
        self.events = events;
        delivered
    }

    fn sleep(&mut self, timeout: Duration) {
        if timeout.is_zero() || !self.self_queue.is_empty() {
            return;
        }
        self.attach_hot();
        // epoll counts milliseconds: round up so that a short sleep still sleeps.
        let ms = timeout.as_millis().clamp(1, i32::MAX as u128) as i32;
        let timeout = EpollTimeout::try_from(ms).unwrap_or(EpollTimeout::MAX);
        let _ = self.epoll.wait(&mut self.events, timeout);
    }

    /// The first link that broke by a failure. A rank that dies has its connections closed or
    /// reset by its kernel, and its launcher ends the job soon after; a link that fails while
    /// both ranks live stays broken past `grace`, which tells the two apart.
    ///
    /// With keepalive on, a link whose peer leaves what was sent to it unacknowledged for the
    /// keepalive budget is reported too ([`crate::stall`]): keepalive itself does not probe
    /// while data is in flight.
    fn failed_link(&self, grace: Duration) -> Option<(usize, String)> {
        if let Some((peer, reason, at)) = self.failed.as_ref() {
            return (at.elapsed() >= grace).then(|| (*peer, reason.clone()));
        }
        let budget = self.keepalive?.budget();
        self.stalls.look(budget, self.open_streams())
    }
}

#[path = "transport_setup.rs"]
mod setup;

#[cfg(test)]
#[path = "transport_tests.rs"]
mod tests;
