//! The cooperative rendezvous (`REFLEX_SINGLE_COPY=coop`) over the in-process transport: ranks
//! are threads of one process, so `process_vm_readv`/`writev` on the own pid stand for the
//! copies between processes, and the transport's shared slots are plain memory. Only
//! `testing::COOP_SLOTS` (4) slots per pair exist, so a window of more messages also takes the
//! receiver-only path for some.

use reflex_base::buf::{RecvBuf, SendBuf};
use reflex_engine::testing::{run_ranks, small_tuning};
use reflex_engine::*;

fn byte() -> Datatype {
    Datatype::Basic(Basic::plain(ValueKind::Byte, 1))
}

fn send_buf(v: Vec<u8>) -> SendBuf {
    SendBuf::from_slice(Box::leak(v.into_boxed_slice()))
}

fn recv_buf(n: usize) -> RecvBuf {
    RecvBuf::from_slice(Box::leak(vec![0u8; n].into_boxed_slice()))
}

/// Tuning with the cooperative copy on and 1000-byte chunks (small messages already have many).
fn coop_tuning() -> Tuning {
    Tuning {
        coop_chunk: Some(1000),
        ..small_tuning()
    }
}

/// The bytes of message `i` of `n` bytes from `rank`: no two messages, no two offsets alike.
fn pattern(rank: usize, i: usize, n: usize) -> Vec<u8> {
    (0..n)
        .map(|k| (k.wrapping_mul(31) ^ (i * 7 + rank * 101)) as u8)
        .collect()
}

#[test]
fn sizes_around_the_chunk_arrive_intact_in_order() {
    run_ranks(2, 16, 4096, coop_tuning(), |e| {
        let sizes = [1001usize, 2000, 2999, 5000, 70_001, 257, 123_457];
        if e.world_rank() == 0 {
            let reqs: Vec<_> = sizes
                .iter()
                .enumerate()
                .map(|(i, &n)| {
                    let buf = send_buf(pattern(0, i, n));
                    e.isend(buf, n, byte(), 1, 5, COMM_WORLD, SendMode::Standard)
                        .unwrap()
                })
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
    run_ranks(2, 8, 4096, coop_tuning(), |e| {
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
            let buf = send_buf(pattern(me, i, n));
            let tag = i as i32;
            reqs.push(
                e.isend(
                    buf,
                    n,
                    byte(),
                    peer as i32,
                    tag,
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
            assert!(b.as_slice() == pattern(peer, i, n), "message {i} corrupted");
        }
    });
}

#[test]
fn a_short_receive_is_truncated_and_nothing_lands_past_it() {
    run_ranks(2, 16, 4096, coop_tuning(), |e| {
        let n = 10_500;
        if e.world_rank() == 0 {
            let buf = send_buf(pattern(0, 0, n));
            e.send(buf, n, byte(), 1, 0, COMM_WORLD, SendMode::Standard)
                .unwrap();
        } else {
            let buf = recv_buf(n);
            let short = 4321;
            let st = e
                .recv(buf.slice(0, short), short, byte(), 0, 0, COMM_WORLD)
                .unwrap();
            assert_eq!(
                st.error.as_ref().map(|e| e.class),
                Some(ErrorClass::Truncate)
            );
            assert_eq!(st.bytes, short);
            assert!(buf.as_slice()[..short] == pattern(0, 0, n)[..short]);
            assert!(
                buf.as_slice()[short..].iter().all(|&b| b == 0),
                "wrote past the buffer"
            );
        }
    });
}

#[test]
fn any_source_receives_from_three_senders() {
    run_ranks(4, 16, 4096, coop_tuning(), |e| {
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
