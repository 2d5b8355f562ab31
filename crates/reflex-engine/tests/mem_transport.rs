//! Engine behaviour over the in-process transport: ranks are threads.
//!
//! These tests exercise matching, both large-message protocols' streaming path, back-pressure,
//! persistent and buffered sends, the collectives, and the cooperative large-message copy, for
//! several rank counts, without shared memory. The C test suite covers the same ground through the real library and transport.

use reflex_base::buf::{RecvBuf, SendBuf};
use reflex_engine::testing::{small_tuning, MemTransport};
use reflex_engine::*;

type E = Engine<MemTransport>;

fn byte() -> Datatype {
    Datatype::Basic(Basic::plain(ValueKind::Byte, 1))
}

fn int() -> Datatype {
    Datatype::Basic(Basic::plain(ValueKind::Signed, 4))
}

fn send_buf(v: Vec<u8>) -> SendBuf {
    SendBuf::from_slice(Box::leak(v.into_boxed_slice()))
}

fn recv_buf(n: usize) -> RecvBuf {
    RecvBuf::from_slice(Box::leak(vec![0u8; n].into_boxed_slice()))
}

/// Runs `body` on `n` ranks with a transport holding `capacity` packets per inbox.
fn run(
    n: usize,
    capacity: usize,
    tuning: Tuning,
    body: impl Fn(&mut E) + Send + Sync + Copy + 'static,
) {
    reflex_engine::testing::run_ranks(n, capacity, 4096, tuning, body);
}

#[test]
fn messages_from_one_sender_arrive_in_order_across_protocols() {
    run(2, 4, small_tuning(), |e| {
        let sizes = [0usize, 1, 255, 256, 257, 5000, 3, 70_000, 8];
        if e.world_rank() == 0 {
            let reqs: Vec<_> = sizes
                .iter()
                .enumerate()
                .map(|(i, &n)| {
                    e.isend(
                        send_buf(vec![i as u8; n]),
                        n,
                        byte(),
                        1,
                        7,
                        COMM_WORLD,
                        SendMode::Standard,
                    )
                    .unwrap()
                })
                .collect();
            for r in reqs {
                e.wait(r).unwrap();
            }
        } else {
            for (i, &n) in sizes.iter().enumerate() {
                let buf = recv_buf(n);
                let st = e
                    .recv(buf, n, byte(), ANY_SOURCE, ANY_TAG, COMM_WORLD)
                    .unwrap();
                assert_eq!((st.source, st.tag, st.bytes), (0, 7, n));
                assert!(
                    buf.as_slice().iter().all(|&b| b == i as u8),
                    "message {i} corrupted"
                );
            }
        }
    });
}

#[test]
fn tag_selection_skips_earlier_messages() {
    run(2, 16, small_tuning(), |e| {
        if e.world_rank() == 0 {
            for tag in [1, 2, 3] {
                e.send(
                    send_buf(vec![tag as u8; 4]),
                    4,
                    byte(),
                    1,
                    tag,
                    COMM_WORLD,
                    SendMode::Standard,
                )
                .unwrap();
            }
        } else {
            for tag in [3, 1, 2] {
                let buf = recv_buf(4);
                let st = e.recv(buf, 4, byte(), 0, tag, COMM_WORLD).unwrap();
                assert_eq!(st.tag, tag);
                assert_eq!(buf.as_slice(), &[tag as u8; 4]);
            }
        }
    });
}

#[test]
fn truncation_reports_the_error_and_keeps_the_tail() {
    for tuning in [small_tuning(), coop_tuning()] {
        truncation_with(tuning);
    }
}

/// A short receive of eager, streamed and (with the cooperative copy) several-chunk messages.
fn truncation_with(tuning: Tuning) {
    run(2, 16, tuning, |e| {
        for n in [100usize, 5000, 10_500] {
            if e.world_rank() == 0 {
                e.send(
                    send_buf(vec![9; n]),
                    n,
                    byte(),
                    1,
                    0,
                    COMM_WORLD,
                    SendMode::Standard,
                )
                .unwrap();
            } else {
                let buf = recv_buf(n);
                let st = e
                    .recv(buf.slice(0, n / 2), n / 2, byte(), 0, 0, COMM_WORLD)
                    .unwrap();
                assert_eq!(
                    st.error.as_ref().map(|e| e.class),
                    Some(ErrorClass::Truncate)
                );
                assert_eq!(st.bytes, n / 2);
                assert!(
                    buf.as_slice()[n / 2..].iter().all(|&b| b == 0),
                    "wrote past the receive buffer"
                );
            }
        }
    });
}

#[test]
fn synchronous_send_waits_for_the_match() {
    run(2, 16, small_tuning(), |e| {
        if e.world_rank() == 0 {
            let r = e
                .isend(
                    send_buf(vec![1; 8]),
                    8,
                    byte(),
                    1,
                    5,
                    COMM_WORLD,
                    SendMode::Synchronous,
                )
                .unwrap();
            // Rank 1 posts its receive only after this message; the ssend cannot be complete yet.
            for _ in 0..100 {
                e.progress();
            }
            assert!(!e.is_complete(r).unwrap());
            e.send(
                send_buf(vec![0; 1]),
                1,
                byte(),
                1,
                6,
                COMM_WORLD,
                SendMode::Standard,
            )
            .unwrap();
            e.wait(r).unwrap();
        } else {
            e.recv(recv_buf(1), 1, byte(), 0, 6, COMM_WORLD).unwrap();
            e.recv(recv_buf(8), 8, byte(), 0, 5, COMM_WORLD).unwrap();
        }
    });
}

#[test]
fn many_outstanding_requests_survive_back_pressure() {
    run(2, 2, small_tuning(), |e| {
        let n: i32 = 2000;
        let peer = 1 - e.world_rank() as i32;
        let bufs: Vec<_> = (0..n).map(|_| recv_buf(4)).collect();
        let mut reqs: Vec<_> = bufs
            .iter()
            .map(|b| e.irecv(*b, 1, int(), peer, ANY_TAG, COMM_WORLD).unwrap())
            .collect();
        for i in 0..n {
            let v = i.to_ne_bytes().to_vec();
            reqs.push(
                e.isend(
                    send_buf(v),
                    1,
                    int(),
                    peer,
                    i,
                    COMM_WORLD,
                    SendMode::Standard,
                )
                .unwrap(),
            );
        }
        for r in reqs {
            e.wait(r).unwrap();
        }
        for (i, b) in bufs.iter().enumerate() {
            assert_eq!(b.as_slice(), &(i as i32).to_ne_bytes());
        }
    });
}

#[test]
fn probe_and_matched_probe() {
    run(3, 16, small_tuning(), |e| {
        let me = e.world_rank();
        if me != 0 {
            e.send(
                send_buf(vec![me as u8; 10 * me]),
                10 * me,
                byte(),
                0,
                me as i32,
                COMM_WORLD,
                SendMode::Standard,
            )
            .unwrap();
            return;
        }
        let st = e.probe(ANY_SOURCE, 2, COMM_WORLD).unwrap();
        assert_eq!((st.source, st.bytes), (2, 20));
        let (msg, st) = e.mprobe(1, ANY_TAG, COMM_WORLD).unwrap();
        assert_eq!(st.bytes, 10);
        let buf = recv_buf(10);
        e.mrecv(buf, 10, byte(), msg).unwrap();
        assert_eq!(buf.as_slice(), &[1; 10]);
        assert!(e.improbe(1, ANY_TAG, COMM_WORLD).unwrap().is_none());
        e.recv(recv_buf(20), 20, byte(), 2, 2, COMM_WORLD).unwrap();
    });
}

#[test]
fn persistent_requests_restart_and_cancel_works() {
    run(2, 16, small_tuning(), |e| {
        let me = e.world_rank();
        let buf = recv_buf(4);
        let req = if me == 0 {
            e.send_init(
                buf.as_send(),
                1,
                int(),
                1,
                0,
                COMM_WORLD,
                SendMode::Standard,
            )
            .unwrap()
        } else {
            e.recv_init(buf, 1, int(), 0, 0, COMM_WORLD).unwrap()
        };
        for round in 0..50i32 {
            if me == 0 {
                let mut b = buf;
                b.as_mut_slice().copy_from_slice(&round.to_ne_bytes());
            }
            e.start(req).unwrap();
            let c = e.wait_retire(req).unwrap();
            assert!(!c.freed);
            if me == 1 {
                assert_eq!(buf.as_slice(), &round.to_ne_bytes());
            }
        }
        e.request_free(req).unwrap();
        let r = e
            .irecv(recv_buf(4), 1, int(), ANY_SOURCE, 99, COMM_WORLD)
            .unwrap();
        e.cancel(r).unwrap();
        assert!(e.wait(r).unwrap().cancelled);
    });
}

#[test]
fn buffered_sends_complete_at_once_and_detach_waits() {
    run(2, 2, small_tuning(), |e| {
        if e.world_rank() == 0 {
            e.buffer_attach(0x1000, 10 * (64 + bsend::BSEND_OVERHEAD))
                .unwrap();
            for i in 0..10u8 {
                e.send(
                    send_buf(vec![i; 64]),
                    64,
                    byte(),
                    1,
                    0,
                    COMM_WORLD,
                    SendMode::Buffered,
                )
                .unwrap();
            }
            e.buffer_detach().unwrap();
            // A buffer one byte too small for the message and its overhead refuses it.
            e.buffer_attach(0x1000, 64 + bsend::BSEND_OVERHEAD - 1)
                .unwrap();
            let err = e
                .send(
                    send_buf(vec![0; 64]),
                    64,
                    byte(),
                    1,
                    0,
                    COMM_WORLD,
                    SendMode::Buffered,
                )
                .unwrap_err();
            assert_eq!(err.class, ErrorClass::Buffer);
            assert_eq!(
                e.buffer_detach().unwrap(),
                (0x1000, 64 + bsend::BSEND_OVERHEAD - 1)
            );
        } else {
            for i in 0..10u8 {
                let b = recv_buf(64);
                e.recv(b, 64, byte(), 0, 0, COMM_WORLD).unwrap();
                assert_eq!(b.as_slice(), &[i; 64]);
            }
        }
    });
}

#[test]
fn split_and_dup_build_working_communicators() {
    run(4, 8, small_tuning(), |e| {
        let me = e.world_rank() as i32;
        let half = e.comm_split(COMM_WORLD, me % 2, -me).unwrap().unwrap();
        let c = e.comm(half).unwrap();
        assert_eq!(c.size(), 2);
        assert_eq!(c.rank, if me < 2 { 1 } else { 0 }); // key -me reverses the order
        let dup = e.comm_dup(half).unwrap();
        assert_eq!(e.comm_compare(half, dup).unwrap(), Comparison::Congruent);
        let out = recv_buf(4);
        let allreduce = coll::Coll::Allreduce {
            send: Some(coll::SendData {
                buf: send_buf(me.to_ne_bytes().to_vec()),
                count: 1,
                dt: int(),
            }),
            recv: coll::RecvData {
                buf: out,
                count: 1,
                dt: int(),
            },
            op: coll::Reducer::Predefined(ReduceOp::Sum),
        };
        e.collective(dup, allreduce).unwrap();
        let expect: i32 = if me % 2 == 0 { 2 } else { 4 };
        assert_eq!(out.as_slice(), &expect.to_ne_bytes());
        assert!(e
            .comm_split(COMM_WORLD, comm_ops::UNDEFINED, 0)
            .unwrap()
            .is_none());
        e.comm_free(dup).unwrap();
        e.comm_free(half).unwrap();
    });
}

/// Two "nodes" of two ranks joined by a stream: every rank sends every other a run of sizes
/// around both pairs of limits; contents and order arrive intact, and contiguous payloads to the
/// other node are gathered from the user's buffer (not counted as packed), while those within
/// the node are packed into the transport.
#[test]
fn stream_paths_use_their_own_limits_and_gather_payloads() {
    const SIZES: [usize; 8] = [0, 255, 300, 999, 1001, 2999, 3001, 9000];
    let tuning = Tuning {
        stream_eager_limit: 1000,
        stream_chunk: 3000,
        ..small_tuning()
    };
    reflex_engine::testing::run_ranks_split(4, 2, 4, 4096, tuning, |e| {
        let me = e.world_rank();
        let before = e.copy_stats();
        let mut reqs = Vec::new();
        for peer in (0..4).filter(|&p| p != me) {
            for (i, &n) in SIZES.iter().enumerate() {
                let fill = (me * 16 + i) as u8;
                let buf = send_buf(vec![fill; n]);
                let mode = SendMode::Standard;
                reqs.push(
                    e.isend(buf, n, byte(), peer as i32, 3, COMM_WORLD, mode)
                        .unwrap(),
                );
            }
        }
        for peer in (0..4).filter(|&p| p != me) {
            for (i, &n) in SIZES.iter().enumerate() {
                let buf = recv_buf(n);
                let st = e.recv(buf, n, byte(), peer as i32, 3, COMM_WORLD).unwrap();
                assert_eq!(st.bytes, n);
                let want = (peer * 16 + i) as u8;
                assert!(
                    buf.as_slice().iter().all(|&b| b == want),
                    "{peer}->{me} #{i}"
                );
            }
        }
        for r in reqs {
            e.wait(r).unwrap();
        }
        let packed = e.copy_stats().since(&before).packed;
        let one_peer: u64 = SIZES.iter().map(|&n| n as u64).sum();
        assert_eq!(packed, one_peer, "only the peer on this node is packed for");
    });
}

// --- The cooperative rendezvous (`REFLEX_SINGLE_COPY=coop`): ranks are threads of one process,
// so `process_vm_readv`/`writev` on the own pid stand for the copies between processes and the
// transport's shared slots are plain memory. Only `testing::COOP_SLOTS` (4) slots per pair exist,
// so a window of more messages also takes the receiver-only path for some.

/// Tuning with the cooperative copy on and 1000-byte chunks (small messages already have many).
fn coop_tuning() -> Tuning {
    Tuning {
        coop_chunk: Some(1000),
        ..small_tuning()
    }
}

/// `MPI_Isend` of `data` as bytes to `peer` with `tag`.
fn isend_bytes(e: &mut E, data: Vec<u8>, peer: usize, tag: i32) -> RequestId {
    let n = data.len();
    e.isend(
        send_buf(data),
        n,
        byte(),
        peer as i32,
        tag,
        COMM_WORLD,
        SendMode::Standard,
    )
    .unwrap()
}

/// The bytes of message `i` of `n` bytes from `rank`: no two messages, no two offsets alike.
fn pattern(rank: usize, i: usize, n: usize) -> Vec<u8> {
    (0..n)
        .map(|k| (k.wrapping_mul(31) ^ (i * 7 + rank * 101)) as u8)
        .collect()
}

#[test]
fn sizes_around_the_chunk_arrive_intact_in_order() {
    reflex_engine::testing::run_ranks(2, 16, 4096, coop_tuning(), |e| {
        let sizes = [1001usize, 2000, 2999, 5000, 70_001, 257, 123_457];
        if e.world_rank() == 0 {
            let reqs: Vec<_> = sizes
                .iter()
                .enumerate()
                .map(|(i, &n)| isend_bytes(e, pattern(0, i, n), 1, 5))
                .collect();
            for r in reqs {
                e.wait(r).unwrap();
            }
        } else {
            let before = e.copy_stats();
            for (i, &n) in sizes.iter().enumerate() {
                let buf = recv_buf(n);
                let st = e.recv(buf, n, byte(), ANY_SOURCE, 5, COMM_WORLD).unwrap();
                assert_eq!((st.source, st.bytes), (0, n));
                assert!(buf.as_slice() == pattern(0, i, n), "message {i} corrupted");
            }
            let moved = e.copy_stats().since(&before).single_copy;
            assert_eq!(
                moved,
                sizes.iter().filter(|&&n| n > 256).sum::<usize>() as u64
            );
        }
    });
}

#[test]
fn both_directions_with_more_messages_than_slots() {
    reflex_engine::testing::run_ranks(2, 8, 4096, coop_tuning(), |e| {
        let me = e.world_rank();
        let peer = 1 - me;
        let n = 9000;
        let count = 24;
        let bufs: Vec<_> = (0..count).map(|_| recv_buf(n)).collect();
        let mut reqs: Vec<_> = bufs
            .iter()
            .map(|b| {
                e.irecv(*b, n, byte(), peer as i32, ANY_TAG, COMM_WORLD)
                    .unwrap()
            })
            .collect();
        for i in 0..count {
            reqs.push(isend_bytes(e, pattern(me, i, n), peer, i as i32));
        }
        for r in reqs {
            e.wait(r).unwrap();
        }
        for (i, b) in bufs.iter().enumerate() {
            assert!(b.as_slice() == pattern(peer, i, n), "message {i} corrupted");
        }
    });
}

#[test]
fn any_source_receives_from_three_senders() {
    reflex_engine::testing::run_ranks(4, 16, 4096, coop_tuning(), |e| {
        let n = 7777;
        let me = e.world_rank();
        if me > 0 {
            for i in 0..3 {
                let buf = send_buf(pattern(me, i, n));
                e.send(
                    buf,
                    n,
                    byte(),
                    0,
                    i as i32,
                    COMM_WORLD,
                    SendMode::Synchronous,
                )
                .unwrap();
            }
        } else {
            let mut next = [0usize; 4];
            for _ in 0..9 {
                let buf = recv_buf(n);
                let st = e
                    .recv(buf, n, byte(), ANY_SOURCE, ANY_TAG, COMM_WORLD)
                    .unwrap();
                let src = st.source as usize;
                assert_eq!(st.tag as usize, next[src], "non-overtaking from rank {src}");
                assert!(buf.as_slice() == pattern(src, next[src], n));
                next[src] += 1;
            }
        }
    });
}
