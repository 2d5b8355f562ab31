//! Tests over real loopback sockets: in one thread, across threads and across processes,
//! plus hostile peers. Loops are bounded by iteration counts, never by time.

use super::*;
use reflex_base::transport::{PLACE_HEAD, PLACE_MIN};
use std::io::{Read, Write};
use std::net::TcpStream;

/// Polls bound for any exchange (each poll is non-blocking; a sleep of 1 ms is added once
/// nothing moves, so this is far more than any exchange needs and ends a hung test).
const MAX_ROUNDS: usize = 200_000;

fn job(n: usize) -> Vec<TcpTransport> {
    job_with(n, TcpParams::default())
}

fn job_with(n: usize, params: TcpParams) -> Vec<TcpTransport> {
    let mut ts: Vec<TcpTransport> = (0..n)
        .map(|r| TcpTransport::bind(r, n, params).unwrap())
        .collect();
    let cards: Vec<String> = ts.iter().map(TcpTransport::card).collect();
    for t in &mut ts {
        for (p, c) in cards.iter().enumerate() {
            t.set_card(p, c).unwrap();
        }
    }
    ts
}

fn packet(src: usize, seq: u32, len: usize) -> Vec<u8> {
    let mut p = vec![0u8; len.max(8)];
    p[..4].copy_from_slice(&(src as u32).to_le_bytes());
    p[4..8].copy_from_slice(&seq.to_le_bytes());
    for (i, b) in p[8..].iter_mut().enumerate() {
        *b = (i as u32 ^ seq).wrapping_mul(31) as u8;
    }
    p
}

/// Sends `p` to `peer`: packets with an even sequence number through `try_send`, odd ones
/// gathered from two parts through `try_send_parts` (both paths, interleaved on one link).
fn send_either(t: &mut TcpTransport, peer: usize, seq: u32, p: &[u8]) -> Result<(), WouldBlock> {
    if seq % 2 == 0 {
        t.try_send(peer, p.len(), |b| b.copy_from_slice(p))
    } else {
        let (head, body) = p.split_at(p.len() / 3);
        t.try_send_parts(peer, head, body)
    }
}

/// Received packets per source, checked for FIFO order and content.
#[derive(Default)]
struct Inbox {
    next: Vec<u32>,
}

impl Inbox {
    fn take(&mut self, src: usize, bytes: &[u8], len_of: impl Fn(u32) -> usize) {
        if self.next.len() <= src {
            self.next.resize(src + 1, 0);
        }
        let seq = u32::from_le_bytes(bytes[4..8].try_into().unwrap());
        assert_eq!(seq, self.next[src], "packet from {src} out of order");
        assert_eq!(
            bytes,
            packet(src, seq, len_of(seq)),
            "packet {seq} from {src} corrupt"
        );
        self.next[src] += 1;
    }
}

/// Streams `count` packets from `a` to `b` (and `b` to `a` when `both`), driving both.
fn exchange(
    ts: &mut [TcpTransport],
    a: usize,
    b: usize,
    count: u32,
    both: bool,
    len_of: fn(u32) -> usize,
) {
    let mut sent = [0u32; 2];
    let mut inbox = [Inbox::default(), Inbox::default()];
    let ends = [a, b];
    for _ in 0..MAX_ROUNDS {
        for side in 0..2 {
            let (me, peer) = (ends[side], ends[1 - side]);
            if (side == 0 || both) && sent[side] < count {
                let p = packet(me, sent[side], len_of(sent[side]));
                if send_either(&mut ts[me], peer, sent[side], &p).is_ok() {
                    sent[side] += 1;
                }
            }
            let ib = &mut inbox[side];
            ts[me].poll(|src, bytes| ib.take(src, bytes, len_of));
        }
        let got_b = inbox[1].next.get(a).copied().unwrap_or(0);
        let got_a = inbox[0].next.get(b).copied().unwrap_or(0);
        if got_b == count && (!both || got_a == count) {
            return;
        }
    }
    panic!("exchange did not finish: sent {sent:?}");
}

#[test]
fn ping_pong_in_one_thread() {
    let mut ts = job(2);
    exchange(&mut ts, 0, 1, 100, true, |_| 64);
    assert_eq!(ts[0].phase(1), LinkPhase::Up);
    assert_eq!(ts[1].phase(0), LinkPhase::Up);
    // Exactly one connection for the pair, whoever connected first.
    let s: Vec<TcpStats> = ts.iter().map(TcpTransport::stats).collect();
    assert_eq!(s[0].accepts + s[1].accepts, 1);
}

#[test]
fn packets_of_every_size_arrive_intact() {
    let mut ts = job(2);
    exchange(&mut ts, 1, 0, 64, false, |seq| {
        [8, 9, 100, 4096, 65_536, DEFAULT_MAX_PACKET][seq as usize % 6]
    });
}

#[test]
fn a_hot_peer_does_not_hide_new_connections_or_other_peers() {
    let mut ts = job(3);
    // Rank 0 now reads rank 1's connection directly on most polls, out of the epoll set, and
    // asks epoll rarely (nobody else has said anything for long)...
    exchange(&mut ts, 0, 1, 200, true, |_| 64);
    assert!(
        ts[0].detached(1),
        "rank 1 kept answering but is still in the epoll set"
    );
    // ...yet rank 2's connection is accepted and its packets arrive, interleaved with more of
    // rank 1's.
    exchange(&mut ts, 2, 0, 20, false, |_| 100);
    exchange(&mut ts, 1, 0, 20, false, |_| 64);
    exchange(&mut ts, 2, 0, 20, false, |_| 70_000);
}

/// Whether epoll reports the connection to `peer` readable (waiting up to 100 ms for it).
fn epoll_reports(t: &mut TcpTransport, peer: usize) -> bool {
    let mut events = vec![EpollEvent::empty(); EVENTS];
    let ready = t.epoll.wait(&mut events, 100u16).unwrap_or(0);
    events[..ready].iter().any(|e| e.data() == peer as u64)
}

#[test]
fn a_detached_connection_goes_back_into_epoll_before_sleeping() {
    let mut ts = job(2);
    exchange(&mut ts, 0, 1, 40, true, |_| 64);
    assert!(ts[1].detached(0) && ts[1].stats().detaches >= 1);
    // Data from rank 0 is there, but epoll does not see it: no callback, no wake-up...
    let p = packet(0, 0, 64);
    ts[0]
        .try_send(1, p.len(), |b| b.copy_from_slice(&p))
        .unwrap();
    assert!(!epoll_reports(&mut ts[1], 0));
    // ...until the rank is about to block: the connection is back and reported at once.
    ts[1].sleep(Duration::from_millis(1));
    assert!(!ts[1].detached(0));
    assert!(epoll_reports(&mut ts[1], 0));
    let mut got = Vec::new();
    for _ in 0..MAX_ROUNDS {
        ts[1].poll(|src, b| got.push((src, b.to_vec())));
        if !got.is_empty() {
            break;
        }
    }
    assert_eq!(got, [(0, p)]);
}

#[test]
fn a_detached_connection_that_fills_up_is_watched_for_room() {
    let mut ts = job(2);
    exchange(&mut ts, 0, 1, 40, true, |_| 64);
    assert!(ts[0].detached(1));
    let len = 60_000;
    let mut sent = 0u32;
    // Rank 1 does not poll: a frame is left half sent and rank 0 is refused.
    while send_either(&mut ts[0], 1, sent, &packet(0, sent, len)).is_ok() {
        sent += 1;
        assert!(sent < 100_000, "the socket never filled");
    }
    assert!(!ts[0].detached(1), "waiting for room needs epoll");
    let mut inbox = Inbox::default();
    for _ in 0..MAX_ROUNDS {
        if sent < 200 && send_either(&mut ts[0], 1, sent, &packet(0, sent, len)).is_ok() {
            sent += 1;
        }
        ts[0].poll(|_, _| panic!("nothing is sent back"));
        ts[1].poll(|src, b| inbox.take(src, b, |_| len));
        if sent >= 200 && inbox.next.first() == Some(&sent) {
            return;
        }
    }
    panic!("received {:?} of {sent}", inbox.next);
}

/// A sink that places every packet it is offered in a buffer of its own (checking the offers
/// follow the `Sink` contract), and collects whole packets and placed ones alike.
#[derive(Default)]
struct PlacingSink {
    building: Option<Vec<u8>>,
    placed: usize,
    got: Vec<(usize, Vec<u8>)>,
}

impl Sink for PlacingSink {
    fn packet(&mut self, src: usize, bytes: &[u8]) {
        assert!(
            self.building.is_none(),
            "a whole packet inside a placed one"
        );
        self.got.push((src, bytes.to_vec()));
    }

    fn place(&mut self, _: usize, head: &[u8], len: usize, at: usize) -> Option<&mut [u8]> {
        assert!(
            head.len() > PLACE_HEAD.min(len) || at > head.len(),
            "offer too short"
        );
        let buf = self.building.get_or_insert_with(|| vec![0; len]);
        assert_eq!(buf.len(), len, "another packet while one is being placed");
        if at == head.len() {
            buf[..at].copy_from_slice(head);
        } else {
            assert_eq!(&buf[..head.len()], head, "the kept head changed");
        }
        Some(&mut buf[at..])
    }

    fn placed(&mut self, src: usize, head: &[u8], len: usize) {
        let buf = self.building.take().expect("placed without a place");
        assert_eq!((buf.len(), &buf[..head.len()]), (len, head));
        self.placed += 1;
        self.got.push((src, buf));
    }
}

#[test]
fn large_packets_land_in_the_sinks_buffer_in_order() {
    land_in_place(TcpParams::default());
}

/// Sends large and small packets, one way, to a sink that places every large one it is offered.
fn land_in_place(params: TcpParams) -> TcpStats {
    let mut ts = job_with(2, params);
    exchange(&mut ts, 0, 1, 1, false, |_| 64); // connect
    let len_of = |seq: u32| [PLACE_MIN, 40, 3 << 20, PLACE_MIN - 1, 300_000][seq as usize % 5];
    let count = 15;
    let mut sink = PlacingSink::default();
    let mut sent = 0;
    for _ in 0..MAX_ROUNDS {
        if sent < count {
            let p = packet(0, sent, len_of(sent));
            if send_either(&mut ts[0], 1, sent, &p).is_ok() {
                sent += 1;
            }
        }
        ts[0].poll(|_, _| {});
        ts[1].poll_into(&mut sink);
        if sink.got.len() == count as usize {
            break;
        }
    }
    let mut inbox = Inbox::default();
    for (src, bytes) in &sink.got {
        inbox.take(*src, bytes, len_of);
    }
    assert_eq!(inbox.next, [count]);
    assert!(sink.placed > 0, "no packet was placed");
    ts[0].stats()
}

#[test]
fn self_sends_loop_back() {
    let mut ts = job(1);
    let p = packet(0, 0, 10);
    let q = packet(0, 1, 30);
    ts[0].try_send(0, 10, |b| b.copy_from_slice(&p)).unwrap();
    ts[0].try_send_parts(0, &q[..4], &q[4..]).unwrap();
    let mut got = Vec::new();
    assert_eq!(ts[0].poll(|src, b| got.push((src, b.to_vec()))), 2);
    assert_eq!(got, [(0, p), (0, q)]);
}

#[test]
fn back_pressure_is_would_block_and_nothing_is_lost() {
    back_pressure(60_000); // sent from the caller's buffers
    back_pressure(1_000); // gathered into the queue
}

fn back_pressure(len: usize) {
    let mut ts = job(2);
    exchange(&mut ts, 0, 1, 1, false, |_| 64); // connect
    let mut sent = 0u32;
    let mut refused = false;
    // The receiver does not poll: the kernel buffers fill up and the sender is refused.
    for _ in 0..100_000 {
        let p = packet(0, sent + 1, len);
        match send_either(&mut ts[0], 1, sent + 1, &p) {
            Ok(()) => sent += 1,
            Err(WouldBlock) => {
                refused = true;
                break;
            }
        }
        ts[0].poll(|_, _| panic!("nothing is sent back"));
    }
    assert!(
        refused,
        "{sent} packets of {len} bytes never filled the socket"
    );
    assert!(ts[0].stats().would_block >= 1);
    // Now the receiver drains; every packet arrives in order.
    let mut inbox = Inbox { next: vec![1] };
    for _ in 0..MAX_ROUNDS {
        ts[1].poll(|src, b| inbox.take(src, b, |_| len));
        ts[0].poll(|_, _| {});
        if inbox.next[0] == sent + 1 {
            return;
        }
    }
    panic!("received {} of {sent}", inbox.next[0] - 1);
}

#[test]
fn simultaneous_connects_keep_one_connection() {
    for _ in 0..20 {
        let mut ts = job(2);
        // Both sides start connecting before either polls.
        for (me, peer) in [(0, 1), (1, 0)] {
            assert_eq!(ts[me].try_send(peer, 8, |_| {}), Err(WouldBlock));
        }
        exchange(&mut ts, 0, 1, 50, true, |_| 32);
        let accepts: u64 = ts.iter().map(|t| t.stats().accepts).sum();
        assert_eq!(
            accepts,
            1,
            "{:?}",
            ts.iter().map(TcpTransport::stats).collect::<Vec<_>>()
        );
    }
}

#[test]
fn all_to_all_across_threads() {
    const N: usize = 4;
    const COUNT: u32 = 300;
    let ts = job(N);
    let handles: Vec<_> = ts
        .into_iter()
        .map(|mut t| {
            std::thread::spawn(move || {
                let me = t.rank();
                let mut sent = [0u32; N];
                let mut inbox = Inbox::default();
                let mut idle = 0;
                loop {
                    let mut moved = 0;
                    for (peer, s) in sent.iter_mut().enumerate() {
                        if *s < COUNT {
                            let p = packet(me, *s, 100 + (*s as usize % 7) * 1000);
                            if send_either(&mut t, peer, *s, &p).is_ok() {
                                *s += 1;
                                moved += 1;
                            }
                        }
                    }
                    moved += t.poll(|src, b| inbox.take(src, b, |s| 100 + (s as usize % 7) * 1000));
                    let done = inbox.next.len() == N && inbox.next.iter().all(|&c| c == COUNT);
                    if done && sent.iter().all(|&s| s == COUNT) {
                        linger(&mut t, 1000);
                        return t.stats();
                    }
                    if moved == 0 {
                        idle += 1;
                        assert!(idle < MAX_ROUNDS, "rank {me} stuck: sent {sent:?}");
                        t.sleep(Duration::from_millis(1));
                    }
                }
            })
        })
        .collect();
    let stats: Vec<TcpStats> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let accepts: u64 = stats.iter().map(|s| s.accepts).sum();
    assert_eq!(accepts as usize, N * (N - 1) / 2, "{stats:?}");
}

/// Keeps serving for `polls` polls once a thread's rank is done, so that its peers, which may
/// still need its progress (a partially sent frame), finish too; dropping it closes its sockets.
fn linger(t: &mut TcpTransport, polls: usize) {
    for _ in 0..polls {
        t.poll(|_, _| panic!("no more packets expected"));
        t.sleep(Duration::from_millis(1));
    }
}

#[test]
fn strangers_are_refused_and_the_job_goes_on() {
    let mut ts = job(2);
    let card = Card::parse(&ts[0].card()).unwrap();
    let addr = SocketAddrV4::new(Ipv4Addr::LOCALHOST, card.port);
    let wrong_cookie = Hello {
        from: 1,
        to: 0,
        cookie: card.cookie ^ 1,
        stream: 0,
        streams: 1,
        job: 0,
    };
    let attacks: Vec<Vec<u8>> = vec![
        b"GET / HTTP/1.1\r\n\r\n".to_vec(),
        vec![0xff; 64],
        wrong_cookie.encode().to_vec(),
        Hello {
            from: 7,
            to: 0,
            cookie: card.cookie,
            stream: 0,
            streams: 1,
            job: 0,
        }
        .encode()
        .to_vec(),
        vec![1, 0, 0, 0, 1, 0, 0, 0, 0xaa],   // data before hello
        Vec::new(),                           // connect and close
        wrong_cookie.encode()[..20].to_vec(), // a cut hello
    ];
    let mut socks = Vec::new();
    for attack in &attacks {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(attack).unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        socks.push(s);
    }
    for _ in 0..MAX_ROUNDS {
        ts[0].poll(|_, _| panic!("a stranger delivered a packet"));
        if ts[0].stats().refused == attacks.len() as u64 {
            break;
        }
    }
    assert_eq!(ts[0].stats().refused, attacks.len() as u64);
    for mut s in socks {
        let mut buf = [0u8; 16];
        assert_eq!(s.read(&mut buf).unwrap_or(0), 0, "a stranger got an answer");
    }
    exchange(&mut ts, 1, 0, 10, true, |_| 16);
}

#[test]
fn a_peer_with_a_malformed_frame_is_disconnected() {
    let mut ts = job(2);
    let card = Card::parse(&ts[0].card()).unwrap();
    let mut s = TcpStream::connect(SocketAddrV4::new(Ipv4Addr::LOCALHOST, card.port)).unwrap();
    s.write_all(
        &Hello {
            from: 1,
            to: 0,
            cookie: card.cookie,
            stream: 0,
            streams: 1,
            job: 0,
        }
        .encode(),
    )
    .unwrap();
    let mut accept = [0u8; HEADER_LEN];
    for _ in 0..MAX_ROUNDS {
        ts[0].poll(|_, _| {});
        if ts[0].phase(1) == LinkPhase::Up {
            break;
        }
    }
    s.read_exact(&mut accept).unwrap();
    assert_eq!(accept[4], 3, "accept frame");
    // One good packet, then a header announcing more than the packet limit.
    let mut good = [0u8; HEADER_LEN + 3];
    encode_header(&mut good, Kind::Data, 3);
    good[HEADER_LEN..].copy_from_slice(b"abc");
    s.write_all(&good).unwrap();
    s.write_all(&[0xff, 0xff, 0xff, 0x7f, 1, 0, 0, 0]).unwrap();
    let mut got = Vec::new();
    for _ in 0..MAX_ROUNDS {
        ts[0].poll(|src, b| got.push((src, b.to_vec())));
        if ts[0].phase(1) == LinkPhase::Broken {
            break;
        }
    }
    assert_eq!(got, [(1, b"abc".to_vec())]);
    let broken = ts[0].broken_peers();
    assert!(broken[0].1.contains("malformed"), "{broken:?}");
    assert_eq!(ts[0].try_send(1, 1, |_| {}), Err(WouldBlock));
    // A failure: reported once the grace has passed.
    let failed = ts[0].failed_link(Duration::ZERO);
    assert!(
        matches!(&failed, Some((1, why)) if why.contains("malformed")),
        "{failed:?}"
    );
    assert_eq!(ts[0].failed_link(Duration::from_secs(3600)), None);
}

#[test]
fn a_dead_peer_breaks_its_link_only() {
    let mut ts = job(3);
    exchange(&mut ts, 0, 1, 5, true, |_| 16);
    exchange(&mut ts, 0, 2, 5, true, |_| 16);
    let dead = ts.remove(1);
    drop(dead);
    for _ in 0..MAX_ROUNDS {
        ts[0].poll(|_, _| {});
        if ts[0].phase(1) == LinkPhase::Broken {
            break;
        }
    }
    assert_eq!(ts[0].phase(1), LinkPhase::Broken);
    assert_eq!(
        ts[0].try_send(1, 4, |_| panic!("not filled")),
        Err(WouldBlock)
    );
    // Closed in order between frames (as by a rank that finished): not a failure.
    assert_eq!(ts[0].failed_link(Duration::ZERO), None);
    // Rank 2 is now ts[1]; the link 0-2 still works.
    let mut inbox = Inbox::default();
    let p = packet(0, 0, 40);
    ts[0].try_send(2, 40, |b| b.copy_from_slice(&p)).unwrap();
    for _ in 0..MAX_ROUNDS {
        ts[1].poll(|src, b| inbox.take(src, b, |_| 40));
        if inbox.next.first() == Some(&1) {
            return;
        }
    }
    panic!("0 -> 2 lost");
}

#[test]
fn connecting_to_nobody_breaks_the_link() {
    let mut t = TcpTransport::bind(0, 2, TcpParams::default()).unwrap();
    // A port that was just closed: connect is refused.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    t.set_card(
        1,
        &format!("tcp1;port={port};cookie=0000000000000001;addrs=127.0.0.1/8"),
    )
    .unwrap();
    assert_eq!(t.try_send(1, 4, |_| {}), Err(WouldBlock));
    for _ in 0..MAX_ROUNDS {
        t.poll(|_, _| {});
        if t.phase(1) == LinkPhase::Broken {
            break;
        }
    }
    let broken = t.broken_peers();
    assert!(broken[0].1.contains("cannot connect"), "{broken:?}");
    assert!(t.failed_link(Duration::ZERO).is_some());
}

/// The child side of [`ping_pong_across_processes`]: rank 1 of 2, knowing only rank 0's card.
#[test]
fn child_process_rank() {
    let Ok(card) = std::env::var("REFLEX_TCP_TEST_PEER_CARD") else {
        return; // run only as a child
    };
    let mut t = TcpTransport::bind(1, 2, TcpParams::default()).unwrap();
    t.set_card(0, &card).unwrap();
    for seq in 0..200u32 {
        let p = packet(1, seq, 1000);
        while t.try_send(0, p.len(), |b| b.copy_from_slice(&p)).is_err() {
            t.poll(|_, _| {});
        }
        let mut got = None;
        while got.is_none() {
            t.poll(|src, b| got = Some((src, b.to_vec())));
            if got.is_none() {
                t.sleep(Duration::from_millis(5));
            }
        }
        assert_eq!(got, Some((0, packet(0, seq, 1000))));
    }
}

#[test]
fn ping_pong_across_processes() {
    let mut t = TcpTransport::bind(0, 2, TcpParams::default()).unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut child = std::process::Command::new(exe)
        .args([
            "--exact",
            "transport::tests::child_process_rank",
            "--nocapture",
        ])
        .env("REFLEX_TCP_TEST_PEER_CARD", t.card())
        .spawn()
        .unwrap();
    // Rank 0 never learns rank 1's card: the child connects, and replies use its connection.
    for seq in 0..200u32 {
        let mut got = None;
        while got.is_none() {
            t.poll(|src, b| got = Some((src, b.to_vec())));
            if got.is_none() {
                t.sleep(Duration::from_millis(5));
            }
        }
        assert_eq!(got, Some((1, packet(1, seq, 1000))));
        let p = packet(0, seq, 1000);
        while t.try_send(1, p.len(), |b| b.copy_from_slice(&p)).is_err() {
            t.poll(|_, _| {});
        }
    }
    assert!(child.wait().unwrap().success());
    assert_eq!(t.stats().accepts, 1);
}

/// Seeded mutants of a genuine hello (for rank 2, with the right cookie) and frames, from 160
/// strangers in batches: every stranger's connection ends closed by rank 0, nothing claims to
/// come from rank 1, at most one impostor of rank 2 is let in, and ranks 0 and 1 (linked before)
/// go on exchanging.
#[test]
fn random_bytes_from_many_strangers_never_disturb_the_job() {
    let mut ts = job(3);
    exchange(&mut ts, 0, 1, 5, true, |_| 16);
    let card = Card::parse(&ts[0].card()).unwrap();
    let addr = SocketAddrV4::new(Ipv4Addr::LOCALHOST, card.port);
    let mut genuine = Hello {
        from: 2,
        to: 0,
        cookie: card.cookie,
        stream: 0,
        streams: 1,
        job: 0,
    }
    .encode()
    .to_vec();
    let mut frame = [0u8; HEADER_LEN + 9];
    encode_header(&mut frame, Kind::Data, 9);
    genuine.extend_from_slice(&frame);
    let seeds = vec![genuine, crate::fuzzing::seeds().concat()];
    let mut m = reflex_base::mutate::Mutator::new(0x5_7a9e);
    let mut bytes = Vec::new();
    let accepts_before = ts[0].stats().accepts;
    for _batch in 0..10 {
        let mut socks: Vec<TcpStream> = (0..16)
            .map(|_| {
                m.mutant(&seeds, &mut bytes);
                let mut s = TcpStream::connect(addr).unwrap();
                s.write_all(&bytes).unwrap();
                s.shutdown(std::net::Shutdown::Write).unwrap();
                s.set_nonblocking(true).unwrap();
                s
            })
            .collect();
        for _ in 0..MAX_ROUNDS {
            ts[0].poll(|src, _| assert_eq!(src, 2, "a stranger passed for rank {src}"));
            // Ok(0): closed by rank 0; an error: reset by rank 0; WouldBlock: still open.
            let mut buf = [0u8; 64];
            socks.retain_mut(|s| loop {
                match s.read(&mut buf) {
                    Ok(0) => break false,
                    Ok(_) => continue,
                    Err(e) => break e.kind() == io::ErrorKind::WouldBlock,
                }
            });
            if socks.is_empty() {
                break;
            }
            ts[0].sleep(Duration::from_millis(1));
        }
        assert!(
            socks.is_empty(),
            "{} strangers still connected",
            socks.len()
        );
    }
    assert_eq!(ts[0].phase(1), LinkPhase::Up);
    assert!(ts[0].stats().refused > 0, "{:?}", ts[0].stats());
    // At most one impostor of rank 2 got in; once its link broke, it was never reopened.
    assert!(
        ts[0].stats().accepts <= accepts_before + 1,
        "{:?}",
        ts[0].stats()
    );
    exchange(&mut ts, 1, 0, 20, true, |_| 100);
}

#[path = "stripe_tests.rs"]
mod stripe;

/// The keepalive settings of the connection to `peer` (None: keepalive off).
fn keepalive_of(t: &TcpTransport, peer: usize) -> Option<(u32, u32, u32)> {
    use nix::sys::socket::{getsockopt, sockopt};
    let Link::Up(conn) = &t.links[peer] else {
        panic!("the link to {peer} is not up");
    };
    let s = &conn.stream;
    getsockopt(s, sockopt::KeepAlive).unwrap().then(|| {
        (
            getsockopt(s, sockopt::TcpKeepIdle).unwrap(),
            getsockopt(s, sockopt::TcpKeepInterval).unwrap(),
            getsockopt(s, sockopt::TcpKeepCount).unwrap(),
        )
    })
}

#[test]
fn both_ends_of_a_connection_probe_a_silent_peer() {
    let mut ts = job_with(
        2,
        TcpParams {
            keepalive_s: 7,
            ..TcpParams::default()
        },
    );
    exchange(&mut ts, 0, 1, 4, true, |_| 64);
    // The connecting end and the accepting end alike: 7 s idle, then a probe every 2 s, 3 probes.
    assert_eq!(keepalive_of(&ts[0], 1), Some((7, 2, KEEPALIVE_PROBES)));
    assert_eq!(keepalive_of(&ts[1], 0), Some((7, 2, KEEPALIVE_PROBES)));
    let mut off = job_with(
        2,
        TcpParams {
            keepalive_s: 0,
            ..TcpParams::default()
        },
    );
    exchange(&mut off, 0, 1, 4, true, |_| 64);
    assert_eq!(keepalive_of(&off[0], 1), None);
    assert_eq!(keepalive_of(&off[1], 0), None);
}

#[test]
fn keepalive_probes_a_third_of_the_idle_time_apart() {
    assert_eq!(Keepalive::after(0), None);
    let k = |s| Keepalive::after(s).map(|k| (k.idle_s, k.interval_s));
    assert_eq!(k(1), Some((1, 1)));
    assert_eq!(k(10), Some((10, 3)));
    assert_eq!(k(60), Some((60, 20)));
}
