//! Derived datatypes through every transfer path, with the copy counters proving the path taken.
//!
//! Two ranks are threads over the in-process transport; single-copy reads work between them
//! because `process_vm_readv` on one's own process is allowed. Each test checks the received bytes
//! (gaps of the receive type must stay untouched) and how many bytes each side copied, by kind.

use reflex_base::buf::{RecvBuf, SendBuf};
use reflex_engine::datatype::{Block, Layout};
use reflex_engine::testing::MemTransport;
use reflex_engine::*;

type E = Engine<MemTransport>;

const SENTINEL: u8 = 0xee;

fn int() -> Datatype {
    Datatype::Basic(Basic::plain(ValueKind::Signed, 4))
}

/// Every other block of `block` bytes: `n` blocks, stride `2 * block`.
fn strided(n: usize, block: usize) -> Datatype {
    let b = Datatype::derived(Layout::vector(block / 4, 1, 4, int()).unwrap());
    Datatype::derived(Layout::vector(n, 1, 2 * block as isize, b).unwrap())
}

fn contiguous(bytes: usize) -> Datatype {
    Datatype::derived(Layout::vector(bytes / 4, 1, 4, int()).unwrap())
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
}

fn leak_send(v: Vec<u8>) -> SendBuf {
    SendBuf::from_slice(Box::leak(v.into_boxed_slice()))
}

fn leak_recv(len: usize) -> RecvBuf {
    RecvBuf::from_slice(Box::leak(vec![SENTINEL; len].into_boxed_slice()))
}

/// The bytes of `n` strided blocks, packed.
fn packed_of(mem: &[u8], n: usize, block: usize) -> Vec<u8> {
    (0..n)
        .flat_map(|i| mem[2 * block * i..2 * block * i + block].to_vec())
        .collect()
}

#[derive(Clone, Copy)]
enum Order {
    /// The receive is posted before the message is sent.
    Expected,
    /// The message arrives before the receive is posted.
    Unexpected,
}

struct Case {
    send_dt: Datatype,
    recv_dt: Datatype,
    send_mem: usize,
    recv_mem: usize,
    order: Order,
    tuning: Tuning,
}

/// Sends one message from rank 0 to rank 1; returns (sender copies, receiver copies, receive
/// memory, status).
fn exchange(case: Case) -> (CopyStats, CopyStats, Vec<u8>, Status) {
    let mut t = MemTransport::mesh(2, 64, 4096).into_iter();
    let (t0, t1) = (t.next().unwrap(), t.next().unwrap());
    let (sdt, sm, tuning, order) = (case.send_dt, case.send_mem, case.tuning, case.order);
    let sender = std::thread::spawn(move || {
        let mut e: E = Engine::new(t0, 0, vec![0, 1], tuning, true);
        let buf = leak_send(pattern(sm));
        if let Order::Expected = order {
            e.barrier(COMM_WORLD).unwrap();
        }
        let before = e.copy_stats();
        let id = e
            .isend(buf, 1, sdt, 1, 5, COMM_WORLD, SendMode::Standard)
            .unwrap();
        if let Order::Unexpected = order {
            e.barrier(COMM_WORLD).unwrap();
        }
        e.wait(id).unwrap();
        let copied = e.copy_stats().since(&before);
        e.barrier(COMM_WORLD).unwrap();
        copied
    });
    let mut e: E = Engine::new(t1, 1, vec![0, 1], tuning, true);
    let buf = leak_recv(case.recv_mem);
    let before = e.copy_stats();
    let status = match order {
        Order::Expected => {
            let id = e.irecv(buf, 1, case.recv_dt, 0, 5, COMM_WORLD).unwrap();
            e.barrier(COMM_WORLD).unwrap();
            e.wait(id).unwrap()
        }
        Order::Unexpected => {
            e.barrier(COMM_WORLD).unwrap();
            e.recv(buf, 1, case.recv_dt, 0, 5, COMM_WORLD).unwrap()
        }
    };
    let copied = e.copy_stats().since(&before);
    e.barrier(COMM_WORLD).unwrap();
    (
        sender.join().unwrap(),
        copied,
        buf.as_slice().to_vec(),
        status,
    )
}

fn tuning(eager_limit: usize, iov_min: usize) -> Tuning {
    Tuning {
        eager_limit,
        chunk: 1000,
        spin_polls: 10,
        yield_polls: 10,
        sleep: std::time::Duration::from_micros(100),
        iov_min,
        ..Tuning::default()
    }
}

fn stats(packed: u64, unpacked: u64, staged: u64, single_copy: u64) -> CopyStats {
    CopyStats {
        packed,
        unpacked,
        staged,
        single_copy,
    }
}

/// A strided send received strided (same layout): returns the copies and checks the data.
fn strided_round_trip(
    n: usize,
    block: usize,
    order: Order,
    tuning: Tuning,
) -> (CopyStats, CopyStats) {
    let mem = 2 * block * n;
    let (s, r, got, status) = exchange(Case {
        send_dt: strided(n, block),
        recv_dt: strided(n, block),
        send_mem: mem,
        recv_mem: mem,
        order,
        tuning,
    });
    let bytes = n * block;
    assert_eq!(status.bytes, bytes);
    assert!(status.error.is_none());
    let sent = pattern(mem);
    for i in 0..n {
        let (data, gap) = (2 * block * i, 2 * block * i + block);
        assert_eq!(
            got[data..data + block],
            sent[data..data + block],
            "block {i}"
        );
        if gap + block <= mem {
            assert!(
                got[gap..gap + block].iter().all(|&b| b == SENTINEL),
                "gap {i} touched"
            );
        }
    }
    (s, r)
}

#[test]
fn eager_expected_gathers_into_cells_and_scatters_out_of_them() {
    let (s, r) = strided_round_trip(8, 16, Order::Expected, tuning(1024, 1024));
    assert_eq!(s, stats(128, 0, 0, 0));
    assert_eq!(r, stats(0, 128, 0, 0));
}

#[test]
fn eager_unexpected_lands_in_a_temporary_then_unpacks() {
    let (s, r) = strided_round_trip(8, 16, Order::Unexpected, tuning(1024, 1024));
    assert_eq!(s, stats(128, 0, 0, 0));
    assert_eq!(r, stats(0, 128, 128, 0));
}

#[test]
fn large_blocks_move_by_one_single_copy_iovec_to_iovec() {
    for order in [Order::Expected, Order::Unexpected] {
        let (s, r) = strided_round_trip(64, 2048, order, tuning(1024, 1024));
        assert_eq!(s, stats(0, 0, 0, 0));
        assert_eq!(r, stats(0, 0, 0, 64 * 2048));
    }
}

#[test]
fn small_blocks_of_large_messages_stream_through_cells() {
    let (s, r) = strided_round_trip(1000, 16, Order::Expected, tuning(1024, 1024));
    assert_eq!(s, stats(16000, 0, 0, 0));
    assert_eq!(r, stats(0, 16000, 0, 0));
}

#[test]
fn direct_send_off_packs_into_a_temporary_first() {
    let t = Tuning {
        direct_send: false,
        ..tuning(1024, 1024)
    };
    let (s, r) = strided_round_trip(8, 16, Order::Expected, t);
    assert_eq!(s, stats(128, 0, 128, 0));
    assert_eq!(r, stats(0, 128, 0, 0));
    // Large: the receiver reads the sender's packed copy in one range.
    let (s, r) = strided_round_trip(64, 2048, Order::Expected, t);
    assert_eq!(s, stats(64 * 2048, 0, 0, 0));
    assert_eq!(r, stats(0, 0, 0, 64 * 2048));
}

#[test]
fn direct_recv_off_unpacks_at_completion() {
    let t = Tuning {
        direct_recv: false,
        ..tuning(1024, 1024)
    };
    let (s, r) = strided_round_trip(8, 16, Order::Expected, t);
    assert_eq!(s, stats(128, 0, 0, 0));
    assert_eq!(r, stats(0, 128, 128, 0));
    let (_, r) = strided_round_trip(64, 2048, Order::Expected, t);
    assert_eq!(r, stats(0, 64 * 2048, 0, 64 * 2048));
}

#[test]
fn strided_and_contiguous_sides_interoperate() {
    for (eager, n) in [(1 << 20, 10), (256, 300)] {
        let block = 32;
        let mem = 2 * block * n;
        let (_, _, got, status) = exchange(Case {
            send_dt: strided(n, block),
            recv_dt: contiguous(n * block),
            send_mem: mem,
            recv_mem: n * block,
            order: Order::Expected,
            tuning: tuning(eager, 16),
        });
        assert_eq!(status.bytes, n * block);
        assert_eq!(got, packed_of(&pattern(mem), n, block));
        let (_, _, got, _) = exchange(Case {
            send_dt: contiguous(n * block),
            recv_dt: strided(n, block),
            send_mem: n * block,
            recv_mem: mem,
            order: Order::Unexpected,
            tuning: tuning(eager, 16),
        });
        assert_eq!(packed_of(&got, n, block), pattern(n * block));
    }
}

#[test]
fn negative_displacements_reach_below_the_buffer_address() {
    // Two ints at -8 and +4 of the address: the buffer the caller wraps starts 8 bytes lower.
    let blocks = vec![
        Block {
            count: 1,
            disp: -8,
            dt: int(),
        },
        Block {
            count: 1,
            disp: 4,
            dt: int(),
        },
    ];
    let dt = Datatype::derived(Layout::blocks(blocks, false).unwrap());
    assert_eq!(dt.span(1).unwrap(), (-8, 16));
    let (_, _, got, status) = exchange(Case {
        send_dt: dt.clone(),
        recv_dt: dt,
        send_mem: 16,
        recv_mem: 16,
        order: Order::Expected,
        tuning: tuning(1024, 1024),
    });
    assert_eq!(status.bytes, 8);
    let sent = pattern(16);
    assert_eq!(got[..4], sent[..4]);
    assert_eq!(got[4..12], [SENTINEL; 8]);
    assert_eq!(got[12..], sent[12..]);
}

#[test]
fn truncation_is_reported_with_what_fitted() {
    let (_, _, got, status) = exchange(Case {
        send_dt: contiguous(64),
        recv_dt: strided(2, 16),
        send_mem: 64,
        recv_mem: 64,
        order: Order::Expected,
        tuning: tuning(1024, 1024),
    });
    assert_eq!(status.bytes, 32);
    assert_eq!(status.error.unwrap().class, ErrorClass::Truncate);
    assert_eq!(packed_of(&got, 2, 16), pattern(32));
}

#[test]
fn overlapping_receive_types_are_refused() {
    let mut e: E = Engine::new(
        MemTransport::mesh(1, 4, 4096).pop().unwrap(),
        0,
        vec![0],
        tuning(1024, 1024),
        false,
    );
    let twice = Datatype::derived(Layout::vector(2, 1, 0, int()).unwrap());
    let err = e
        .irecv(leak_recv(8), 1, twice.clone(), 0, 0, COMM_WORLD)
        .unwrap_err();
    assert_eq!(err.class, ErrorClass::Type);
    // Sending from overlapping blocks is legal.
    e.send(
        leak_send(pattern(4)),
        1,
        twice,
        PROC_NULL,
        0,
        COMM_WORLD,
        SendMode::Standard,
    )
    .unwrap();
    // Interleaved elements that collide: two ints 8 apart, extent 4, three elements.
    let pair = Datatype::derived(Layout::vector(2, 1, 8, int()).unwrap());
    let interleaved = Datatype::derived(Layout::resized(pair, 0, 4).unwrap());
    assert!(e
        .irecv(leak_recv(32), 2, interleaved.clone(), 0, 0, COMM_WORLD)
        .is_ok());
    let err = e
        .irecv(leak_recv(32), 3, interleaved, 0, 0, COMM_WORLD)
        .unwrap_err();
    assert_eq!(err.class, ErrorClass::Type);
}
