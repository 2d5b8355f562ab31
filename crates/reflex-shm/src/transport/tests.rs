//! Transport tests: ranks are threads (or one thread) of this process, each with its own mapping.

use super::*;
use crate::segment::ShmParams;
use crate::testkit::{self, Rng};
use reflex_base::segment::{segment_name, unlink};

/// Long enough never to end a sleep in a healthy run: a timed-out sleep means a lost wake-up.
const NEVER: Duration = Duration::from_secs(60);

/// `n` ranks on a fresh segment (rank 0 created it, the others opened it), already unlinked.
fn node(tag: &str, n: usize, ring_bytes: usize, ordering: WakeOrdering) -> Vec<ShmTransport> {
    let name = segment_name(&format!("shmtransport{}-{tag}", std::process::id()), 0);
    let first = ShmSegment::create(&name, n, &ShmParams { ring_bytes }).unwrap();
    let mut segs = vec![first];
    segs.extend((1..n).map(|_| ShmSegment::open(&name).unwrap()));
    unlink(&name).unwrap();
    segs.into_iter()
        .enumerate()
        .map(|(r, s)| ShmTransport::with_ordering(s, r, ordering).unwrap())
        .collect()
}

/// Everything `t` receives in one poll, as (source, bytes).
fn drain(t: &mut ShmTransport) -> Vec<(usize, Vec<u8>)> {
    let mut got = Vec::new();
    t.poll(|src, b| got.push((src, b.to_vec())));
    got
}

#[test]
fn packets_reach_peers_and_self_in_order() {
    let mut ranks = node("fifo", 3, 4096, WakeOrdering::Fence);
    assert_eq!(ranks[0].max_packet(), 1016);
    for seq in 0..10u64 {
        for dest in 0..3 {
            ranks[1]
                .try_send(dest, seq as usize * 7, |b| testkit::fill(b, seq))
                .unwrap();
        }
    }
    for (r, rank) in ranks.iter_mut().enumerate() {
        let got = drain(rank);
        assert_eq!(got.len(), 10, "rank {r}");
        for (seq, (src, bytes)) in got.iter().enumerate() {
            assert_eq!(*src, 1);
            assert_eq!(bytes.len(), seq * 7);
            assert!(testkit::check(bytes, seq as u64));
        }
    }
    assert_eq!(ranks[2].poll(|_, _| panic!("nothing left")), 0);
    assert_eq!(ranks[0].peer_pid(1), Some(std::process::id()));
    assert!(ranks[0].broken_sources().is_empty());
}

#[test]
fn poll_takes_a_bounded_burst_and_rotates_its_start() {
    let mut ranks = node("fair", 3, 65536, WakeOrdering::Fence);
    for seq in 0..40 {
        ranks[1].try_send(0, 8, |b| testkit::fill(b, seq)).unwrap();
        ranks[2].try_send(0, 8, |b| testkit::fill(b, seq)).unwrap();
    }
    let first = drain(&mut ranks[0]);
    assert_eq!(first.len(), 2 * POLL_BURST);
    assert_eq!(first[0].0, 1);
    assert_eq!(first.iter().filter(|(s, _)| *s == 2).count(), POLL_BURST);
    let second = drain(&mut ranks[0]);
    assert_eq!(second.len(), 2 * (40 - POLL_BURST));
    assert_eq!(second[0].0, 2, "the next poll starts one source further");
}

#[test]
fn poll_stops_taking_from_a_source_after_its_byte_burst() {
    let mut ranks = node("bytes", 2, 1 << 20, WakeOrdering::Fence);
    let len = 40 << 10; // two of them pass POLL_BURST_BYTES (64 KiB)
    for seq in 0..5 {
        ranks[1]
            .try_send(0, len, |b| testkit::fill(b, seq))
            .unwrap();
    }
    let mut got = Vec::new();
    ranks[0].poll(|_, b| got.push(b.len()));
    assert_eq!(
        got,
        [len, len],
        "the burst ends at the packet that passes the byte bound"
    );
    let (second, third) = (drain(&mut ranks[0]), drain(&mut ranks[0]));
    assert_eq!((second.len(), third.len()), (2, 1));
    let rest = second.iter().chain(&third);
    assert!(rest
        .enumerate()
        .all(|(i, (_, b))| testkit::check(b, i as u64 + 2)));
}

#[test]
fn a_full_ring_refuses_without_calling_fill_then_recovers() {
    let mut ranks = node("full", 2, 1024, WakeOrdering::Fence);
    let mut sent = 0;
    while ranks[0].try_send(1, 100, |_| ()).is_ok() {
        sent += 1;
    }
    assert!(sent > 0);
    assert_eq!(
        ranks[0].try_send(1, 100, |_| panic!("fill on WouldBlock")),
        Err(WouldBlock)
    );
    assert_eq!(drain(&mut ranks[1]).len(), sent);
    ranks[0].try_send(1, 100, |_| ()).unwrap();
}

#[test]
fn attaching_twice_or_out_of_range_is_refused() {
    let name = segment_name(&format!("shmtransport{}-attach", std::process::id()), 0);
    let seg = ShmSegment::create(&name, 2, &ShmParams::default()).unwrap();
    let again = ShmSegment::open(&name).unwrap();
    let third = ShmSegment::open(&name).unwrap();
    unlink(&name).unwrap();
    let _t = ShmTransport::new(seg, 1).unwrap();
    let err = ShmTransport::new(again, 1).unwrap_err();
    assert!(err.to_string().contains("already attached"), "{err}");
    let err = ShmTransport::new(third, 2).unwrap_err();
    assert!(err.to_string().contains("out of range"), "{err}");
}

#[test]
fn sleep_returns_at_once_when_something_is_pending() {
    let mut ranks = node("pending", 2, 4096, WakeOrdering::Fence);
    ranks[0].try_send(1, 8, |_| ()).unwrap();
    ranks[1].sleep(NEVER);
    assert_eq!(ranks[1].stats().sleeps_avoided, 1);
    ranks[1].sleep(Duration::ZERO);
    assert_eq!(ranks[1].stats().sleeps + ranks[1].stats().sleeps_avoided, 1);
    ranks[0].sleep(Duration::from_millis(1));
    assert_eq!(
        ranks[0].stats().sleeps,
        1,
        "nothing pending: blocked until the timeout"
    );
}

/// Ping-pong between two threads that always sleep when idle: every message needs a wake-up.
fn ping_pong_with_sleeps(ordering: WakeOrdering) {
    let mut ranks = node(&format!("wake{ordering:?}"), 2, 4096, ordering);
    let (mut b, mut a) = (ranks.pop().unwrap(), ranks.pop().unwrap());
    let rounds = 1000u64;
    let echo = std::thread::spawn(move || {
        for seq in 0..rounds {
            let mut got = None;
            while got.is_none() {
                if b.poll(|_, bytes| got = Some(bytes.to_vec())) == 0 {
                    b.sleep(NEVER);
                }
            }
            assert!(testkit::check(&got.unwrap(), seq));
            b.try_send(0, 16, |buf| testkit::fill(buf, seq)).unwrap();
        }
        b.stats()
    });
    for seq in 0..rounds {
        a.try_send(1, 16, |buf| testkit::fill(buf, seq)).unwrap();
        while a.poll(|_, bytes| assert!(testkit::check(bytes, seq))) == 0 {
            a.sleep(NEVER);
        }
    }
    let b_stats = echo.join().unwrap();
    for s in [a.stats(), b_stats] {
        assert_eq!(s.timeouts, 0, "a lost wake-up: {s:?}");
    }
}

#[test]
fn sleepers_are_woken_with_fences() {
    ping_pong_with_sleeps(WakeOrdering::Fence);
}

#[test]
fn sleepers_are_woken_with_membarrier() {
    if crate::doorbell::membarrier_supported() {
        ping_pong_with_sleeps(WakeOrdering::Membarrier);
    }
}

/// Sends `per_pair` packets from every rank to every rank (itself included), receiving as it goes
/// and sleeping whenever a round moved nothing; checks per-source order and content.
fn all_to_all(mut t: ShmTransport, per_pair: u64) -> ShmStats {
    let n = t.nranks();
    let me = t.rank();
    let max = t.max_packet();
    let mut next_out = vec![0u64; n];
    let mut next_in = vec![0u64; n];
    let mut rng_out: Vec<Rng> = (0..n).map(|d| Rng::new((me * n + d) as u64)).collect();
    let mut rng_in: Vec<Rng> = (0..n).map(|s| Rng::new((s * n + me) as u64)).collect();
    let mut lens_out: Vec<usize> = rng_out.iter_mut().map(|r| r.packet_len(max)).collect();
    while next_out.iter().chain(&next_in).any(|&c| c < per_pair) {
        let mut moved = 0;
        for dest in 0..n {
            let seq = next_out[dest];
            if seq < per_pair
                && t.try_send(dest, lens_out[dest], |b| testkit::fill(b, seq))
                    .is_ok()
            {
                next_out[dest] += 1;
                lens_out[dest] = rng_out[dest].packet_len(max);
                moved += 1;
            }
        }
        moved += t.poll(|src, bytes| {
            let seq = next_in[src];
            assert_eq!(
                bytes.len(),
                rng_in[src].packet_len(max),
                "rank {me}: packet {seq} from {src}"
            );
            assert!(
                testkit::check(bytes, seq),
                "rank {me}: packet {seq} from {src}"
            );
            next_in[src] += 1;
        });
        if moved == 0 {
            t.sleep(NEVER);
        }
    }
    t.stats()
}

#[test]
fn four_ranks_all_to_all_with_back_pressure_and_sleeps() {
    let per_pair = if cfg!(debug_assertions) {
        3_000
    } else {
        100_000
    };
    for ordering in [WakeOrdering::Fence, WakeOrdering::Membarrier] {
        if ordering == WakeOrdering::Membarrier && !crate::doorbell::membarrier_supported() {
            continue;
        }
        let ranks = node(&format!("a2a{ordering:?}"), 4, 1024, ordering);
        let threads: Vec<_> = ranks
            .into_iter()
            .map(|t| std::thread::spawn(move || all_to_all(t, per_pair)))
            .collect();
        for th in threads {
            let stats = th.join().unwrap();
            assert_eq!(stats.timeouts, 0, "a lost wake-up: {stats:?}");
        }
    }
}
