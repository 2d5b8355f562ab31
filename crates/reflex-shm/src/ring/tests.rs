//! Ring tests: single-threaded edge cases, then a two-thread stress run with content checks.

use super::*;
use crate::testkit::{self, Rng};

/// Pops one packet and returns a copy of it.
fn pop(c: &mut Consumer) -> Option<Vec<u8>> {
    c.recv_begin().map(|s| s.to_vec())
}

#[test]
fn packets_come_out_in_order_with_their_bytes() {
    let (mut p, mut c) = heap_ring(4096).unwrap();
    assert!(pop(&mut c).is_none());
    assert!(!c.has_packet());
    for (seq, len) in [
        (0u64, 0usize),
        (1, 1),
        (2, 56),
        (3, 57),
        (4, p.max_packet()),
    ] {
        p.try_push(len, |b| testkit::fill(b, seq)).unwrap();
    }
    assert!(c.has_packet());
    for (seq, len) in [(0u64, 0usize), (1, 1), (2, 56), (3, 57), (4, 4096 / 4 - 8)] {
        let got = pop(&mut c).unwrap();
        assert_eq!(got.len(), len);
        assert!(testkit::check(&got, seq), "packet {seq}");
    }
    assert!(pop(&mut c).is_none());
}

#[test]
fn payloads_are_eight_byte_aligned() {
    let (mut p, mut c) = heap_ring(1024).unwrap();
    for len in [0, 9, 100] {
        p.try_push(len, |b| assert_eq!(b.as_ptr() as usize % 8, 0))
            .unwrap();
        assert_eq!(c.recv_begin().unwrap().as_ptr() as usize % 8, 0);
    }
}

#[test]
fn a_full_ring_would_block_until_the_consumer_catches_up() {
    let (mut p, mut c) = heap_ring(1024).unwrap(); // 16 cells
    let mut sent = 0u64;
    while p.try_push(8, |b| testkit::fill(b, sent)).is_ok() {
        sent += 1;
    }
    assert_eq!(sent, 15, "one cell stays free for the next header");
    let mut called = false;
    assert_eq!(p.try_push(8, |_| called = true), Err(WouldBlock));
    assert!(!called, "fill must not run on WouldBlock");
    // The consumer publishes every quarter ring (4 cells): three pops free nothing yet.
    for seq in 0..3 {
        assert!(testkit::check(&pop(&mut c).unwrap(), seq));
    }
    assert_eq!(p.try_push(8, |_| ()), Err(WouldBlock));
    assert!(!p.room_again());
    assert!(testkit::check(&pop(&mut c).unwrap(), 3));
    assert_eq!(c.published(), 4);
    assert!(
        p.room_again(),
        "the consumer published room for the refused packet"
    );
    p.try_push(8, |b| testkit::fill(b, sent)).unwrap();
    assert!(!p.room_again(), "no refused push pending");
}

#[test]
fn wrap_around_skips_to_cell_zero_and_stays_in_order() {
    let (mut p, mut c) = heap_ring(1024).unwrap(); // 16 cells, max packet 248 B = 4 cells
    let mut rng = Rng::new(42);
    let (mut sent, mut got) = (0u64, 0u64);
    while got < 5_000 {
        let len = rng.packet_len(p.max_packet());
        if p.try_push(len, |b| testkit::fill(b, sent)).is_ok() {
            sent += 1;
        }
        if rng.next_u64() % 3 == 0 {
            while let Some(s) = c.recv_begin() {
                assert!(testkit::check(&s, got), "packet {got}");
                got += 1;
            }
        }
    }
}

#[test]
fn a_drained_ring_always_takes_a_maximum_packet() {
    for ring in [MIN_RING_BYTES, 1024, 65536] {
        let (mut p, mut c) = heap_ring(ring).unwrap();
        let max = p.max_packet();
        for round in 0..200u64 {
            // Any small offset, then a maximum packet, must go through once the consumer drained.
            p.try_push((round as usize * 13) % 60, |_| ()).unwrap();
            while pop(&mut c).is_some() {}
            p.try_push(max, |b| testkit::fill(b, round)).unwrap();
            assert!(testkit::check(&pop(&mut c).unwrap(), round));
        }
    }
}

#[test]
#[should_panic(expected = "exceeds max_packet")]
fn oversized_packets_are_a_caller_bug() {
    let (mut p, _c) = heap_ring(1024).unwrap();
    let _ = p.try_push(1024, |_| ());
}

#[test]
fn a_panicking_fill_publishes_nothing() {
    let (mut p, mut c) = heap_ring(1024).unwrap();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        p.try_push(8, |_| panic!("boom"))
    }));
    assert!(r.is_err());
    assert!(pop(&mut c).is_none());
    p.try_push(3, |b| b.copy_from_slice(b"abc")).unwrap();
    assert_eq!(pop(&mut c).unwrap(), b"abc");
}

#[test]
fn bad_ring_sizes_are_refused() {
    for bad in [0, 100, 256, 1000, 1 << 31] {
        assert!(heap_ring(bad).is_err(), "{bad}");
    }
}

#[test]
fn a_corrupt_header_stops_the_consumer_instead_of_reading_out_of_bounds() {
    for word in [READY | 1_000_000, READY | SKIP | 8, 1, READY | (1 << 40)] {
        let (_p, mut c) = heap_ring(1024).unwrap();
        c.mem.header(0).store(word, Relaxed);
        assert!(pop(&mut c).is_none(), "{word:#x}");
        assert!(c.is_broken() && !c.has_packet());
    }
    // A packet that would cross the end of the ring.
    let (_p, mut c) = heap_ring(1024).unwrap();
    c.tail = 15;
    c.mem.header(15).store(READY | 100, Relaxed);
    assert!(pop(&mut c).is_none() && c.is_broken());
}

/// Spins politely: the machine may have fewer cores than busy threads.
fn backoff(spins: &mut u32) {
    *spins += 1;
    if *spins % 16 == 0 {
        std::thread::yield_now();
    } else {
        std::hint::spin_loop();
    }
}

#[test]
fn two_threads_stream_packets_of_every_size_intact() {
    let n: u64 = if cfg!(debug_assertions) {
        50_000
    } else {
        2_000_000
    };
    for ring in [1024, 65536] {
        let (mut p, mut c) = heap_ring(ring).unwrap();
        let max = p.max_packet();
        let producer = std::thread::spawn(move || {
            let mut rng = Rng::new(ring as u64);
            let mut spins = 0;
            for seq in 0..n {
                let len = rng.packet_len(max);
                while p.try_push(len, |b| testkit::fill(b, seq)).is_err() {
                    backoff(&mut spins);
                }
            }
        });
        let mut rng = Rng::new(ring as u64);
        let mut spins = 0;
        for seq in 0..n {
            let want = rng.packet_len(max);
            let slot = loop {
                match c.recv_begin() {
                    Some(s) => break s,
                    None => backoff(&mut spins),
                }
            };
            assert_eq!(slot.len(), want, "packet {seq}");
            assert!(testkit::check(&slot, seq), "packet {seq}");
        }
        producer.join().unwrap();
        assert!(pop(&mut c).is_none());
    }
}
