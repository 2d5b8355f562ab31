//! Every collective schedule against a serial reference, on 1 to 7 ranks of the in-process
//! transport: roots, v-variants with uneven counts, in place, a non-dense datatype, predefined
//! and non-commutative user operations, bit-identical allreduce, the neighbourhood collectives
//! on a grid and a graph, nonblocking collectives in flight together and with point-to-point
//! traffic, and persistent collectives started several times.

use reflex_base::buf::{RecvBuf, SendBuf};
use reflex_engine::coll::{Coll, RecvData, Reducer, SendData, UserReduce};
use reflex_engine::datatype::Layout;
use reflex_engine::testing::{run_ranks, small_tuning, MemTransport};
use reflex_engine::topo::Cart;
use reflex_engine::*;
use std::sync::Arc;

type E = Engine<MemTransport>;

fn each_size(body: impl Fn(&mut E) + Send + Sync + Copy + 'static) {
    for n in 1..=7 {
        run_ranks(n, 16, 4096, small_tuning(), body);
    }
}

fn int() -> Datatype {
    Datatype::Basic(Basic::plain(ValueKind::Signed, 4))
}

fn double() -> Datatype {
    Datatype::Basic(Basic::plain(ValueKind::Float, 8))
}

/// An int followed by a 4-byte gap: `count` of them are not dense.
fn gapped_int() -> Datatype {
    Datatype::derived(Layout::resized(int(), 0, 8).unwrap())
}

fn bytes_of(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_ne_bytes()).collect()
}

fn ints_of(b: &[u8]) -> Vec<i32> {
    b.chunks_exact(4)
        .map(|w| i32::from_ne_bytes(w.try_into().unwrap()))
        .collect()
}

fn send(v: &[i32]) -> SendData {
    let bytes = Box::leak(bytes_of(v).into_boxed_slice());
    SendData {
        buf: SendBuf::from_slice(bytes),
        count: v.len(),
        dt: int(),
    }
}

fn zeroed(len: usize) -> RecvBuf {
    RecvBuf::from_slice(Box::leak(vec![0u8; len].into_boxed_slice()))
}

/// `count` ints in a fresh buffer.
fn recv(count: usize) -> RecvData {
    RecvData {
        buf: zeroed(4 * count),
        count,
        dt: int(),
    }
}

/// Holding `v` (for in-place calls).
fn recv_holding(v: &[i32]) -> RecvData {
    let mut r = recv(v.len());
    r.buf.as_mut_slice().copy_from_slice(&bytes_of(v));
    r
}

fn ints(r: &RecvData) -> Vec<i32> {
    ints_of(&r.buf.as_slice()[..4 * r.count])
}

/// Blocks of `counts[i]` ints, one after the other in one buffer (in reverse rank order, so
/// displacements are not monotonic), and the buffer.
fn blocks(counts: &[usize]) -> (Vec<RecvData>, RecvBuf) {
    let total: usize = counts.iter().sum();
    let buf = zeroed(4 * total);
    let mut offset = 4 * total;
    let parts = counts
        .iter()
        .map(|&c| {
            offset -= 4 * c;
            RecvData {
                buf: buf.slice(offset, 4 * c),
                count: c,
                dt: int(),
            }
        })
        .collect();
    (parts, buf)
}

/// The input of rank `r`: `len` ints.
fn input(r: usize, len: usize) -> Vec<i32> {
    (0..len).map(|i| (r * 1000 + i) as i32).collect()
}

fn sum() -> Reducer {
    Reducer::Predefined(ReduceOp::Sum)
}

/// 2×2 integer matrices under multiplication (wrapping): associative, not commutative.
struct MatMul;

fn matmul(a: [i32; 4], b: [i32; 4]) -> [i32; 4] {
    let m = |x: i32, y: i32| x.wrapping_mul(y);
    [
        m(a[0], b[0]).wrapping_add(m(a[1], b[2])),
        m(a[0], b[1]).wrapping_add(m(a[1], b[3])),
        m(a[2], b[0]).wrapping_add(m(a[3], b[2])),
        m(a[2], b[1]).wrapping_add(m(a[3], b[3])),
    ]
}

impl UserReduce for MatMul {
    fn commutative(&self) -> bool {
        false
    }
    fn reduce(&self, input: &[u8], inout: &mut [u8], count: usize) -> Result<()> {
        assert_eq!(input.len(), 16 * count);
        for (i, o) in input.chunks_exact(16).zip(inout.chunks_exact_mut(16)) {
            let a: [i32; 4] = ints_of(i).try_into().unwrap();
            let b: [i32; 4] = ints_of(o).try_into().unwrap();
            o.copy_from_slice(&bytes_of(&matmul(a, b)));
        }
        Ok(())
    }
}

fn matrix(r: usize) -> [i32; 4] {
    [1, r as i32 + 1, 2, 3 - r as i32]
}

/// `matrix(lo) · … · matrix(hi - 1)`.
fn product(lo: usize, hi: usize) -> [i32; 4] {
    (lo..hi).fold([1, 0, 0, 1], |acc, r| matmul(acc, matrix(r)))
}

fn rank_size(e: &E) -> (usize, usize) {
    (e.world_rank(), e.world_size())
}

#[test]
fn barrier_and_bcast_from_every_root() {
    each_size(|e| {
        let (me, n) = rank_size(e);
        e.barrier(COMM_WORLD).unwrap();
        for root in 0..n {
            for len in [1, 700] {
                let data = if me == root {
                    recv_holding(&input(root, len))
                } else {
                    recv(len)
                };
                let root = root as i32;
                let coll = Coll::Bcast {
                    data: data.clone(),
                    root,
                };
                e.collective(COMM_WORLD, coll).unwrap();
                assert_eq!(ints(&data), input(root as usize, len), "rank {me} of {n}");
            }
        }
    });
}

#[test]
fn gatherv_and_scatterv_with_uneven_blocks_and_in_place() {
    each_size(|e| {
        let (me, n) = rank_size(e);
        let counts: Vec<usize> = (0..n).map(|r| r * 90 + 1).collect();
        for root in 0..n {
            for in_place in [false, true] {
                let (parts, _) = blocks(&counts);
                let mine = input(me, counts[me]);
                let at_root = me == root;
                if in_place && at_root {
                    let mut own = parts[me].clone();
                    own.buf.as_mut_slice().copy_from_slice(&bytes_of(&mine));
                }
                let coll = Coll::Gather {
                    send: (!(in_place && at_root)).then(|| send(&mine)),
                    recv: if at_root { parts.clone() } else { Vec::new() },
                    root: root as i32,
                };
                e.collective(COMM_WORLD, coll).unwrap();
                if at_root {
                    for (r, p) in parts.iter().enumerate() {
                        assert_eq!(ints(p), input(r, counts[r]), "gather to {root}");
                    }
                }
                // Scatter the gathered blocks back (the root's own block in place or not).
                let out = recv(counts[me]);
                let srcs: Vec<SendData> = parts.iter().map(RecvData::as_send).collect();
                let coll = Coll::Scatter {
                    send: if at_root { srcs } else { Vec::new() },
                    recv: (!(in_place && at_root)).then(|| out.clone()),
                    root: root as i32,
                };
                e.collective(COMM_WORLD, coll).unwrap();
                if !(in_place && at_root) {
                    assert_eq!(ints(&out), mine, "scatter from {root}");
                }
            }
        }
    });
}

#[test]
fn allgather_small_large_in_place_and_into_a_gapped_type() {
    each_size(|e| {
        let (me, n) = rank_size(e);
        for per in [3, 700] {
            for in_place in [false, true] {
                let (parts, _) = blocks(&vec![per; n]);
                if in_place {
                    let mut own = parts[me].clone();
                    own.buf
                        .as_mut_slice()
                        .copy_from_slice(&bytes_of(&input(me, per)));
                }
                let coll = Coll::Allgather {
                    send: (!in_place).then(|| send(&input(me, per))),
                    recv: parts.clone(),
                };
                e.collective(COMM_WORLD, coll).unwrap();
                for (r, p) in parts.iter().enumerate() {
                    assert_eq!(ints(p), input(r, per), "rank {me}, block {r}, {per} ints");
                }
            }
        }
        // Every block lands in every other int of one buffer.
        let buf = zeroed(8 * 2 * n);
        let parts = (0..n)
            .map(|r| RecvData {
                buf: buf.slice(16 * r, 12),
                count: 2,
                dt: gapped_int(),
            })
            .collect();
        let coll = Coll::Allgather {
            send: Some(send(&input(me, 2))),
            recv: parts,
        };
        e.collective(COMM_WORLD, coll).unwrap();
        let got = ints_of(buf.as_slice());
        for r in 0..n {
            assert_eq!(
                [got[4 * r], got[4 * r + 2]],
                [input(r, 2)[0], input(r, 2)[1]]
            );
        }
    });
}

#[test]
fn alltoallv_uneven_and_in_place() {
    each_size(|e| {
        let (me, n) = rank_size(e);
        // Rank s sends (s + d) % 3 * 200 + 1 ints to rank d.
        let len = |s: usize, d: usize| (s + d) % 3 * 200 + 1;
        let value = |s: usize, d: usize| input(s * 10 + d, len(s, d));
        let outgoing: Vec<SendData> = (0..n).map(|d| send(&value(me, d))).collect();
        let (parts, _) = blocks(&(0..n).map(|s| len(s, me)).collect::<Vec<_>>());
        let coll = Coll::Alltoall {
            send: Some(outgoing),
            recv: parts.clone(),
            regular: false,
        };
        e.collective(COMM_WORLD, coll).unwrap();
        for (s, p) in parts.iter().enumerate() {
            assert_eq!(ints(p), value(s, me), "rank {me} from {s}");
        }
        // In place (same counts both ways, as the standard requires).
        let (parts, _) = blocks(&vec![300; n]);
        for (d, p) in parts.iter().enumerate() {
            let mut p = p.clone();
            p.buf
                .as_mut_slice()
                .copy_from_slice(&bytes_of(&input(me * 10 + d, 300)));
        }
        let coll = Coll::Alltoall {
            send: None,
            recv: parts.clone(),
            regular: true,
        };
        e.collective(COMM_WORLD, coll).unwrap();
        for (s, p) in parts.iter().enumerate() {
            assert_eq!(ints(p), input(s * 10 + me, 300));
        }
    });
}

#[test]
fn reduce_to_every_root_with_sum_and_a_non_commutative_operation() {
    each_size(|e| {
        let (me, n) = rank_size(e);
        for root in 0..n {
            for len in [2, 300] {
                let at_root = me == root;
                let out = if at_root {
                    recv_holding(&input(me, len))
                } else {
                    recv(len)
                };
                let in_place = at_root && len == 2;
                let coll = Coll::Reduce {
                    send: (!in_place).then(|| send(&input(me, len))),
                    recv: at_root.then(|| out.clone()),
                    op: sum(),
                    root: root as i32,
                };
                e.collective(COMM_WORLD, coll).unwrap();
                if at_root {
                    let expect: Vec<i32> = (0..len)
                        .map(|i| (0..n).map(|r| input(r, len)[i]).sum())
                        .collect();
                    assert_eq!(ints(&out), expect);
                }
            }
            let out = recv(8);
            let coll = Coll::Reduce {
                send: Some(send(&[matrix(me), matrix(me + 1)].concat())),
                recv: (me == root).then(|| out.clone()),
                op: Reducer::User(Arc::new(MatMul)),
                root: root as i32,
            };
            let four = Datatype::derived(Layout::vector(4, 1, 4, int()).unwrap());
            let coll = with_type(coll, four);
            e.collective(COMM_WORLD, coll).unwrap();
            if me == root {
                let expect = [product(0, n), product(1, n + 1)].concat();
                assert_eq!(ints(&out), expect, "rank order at root {root}");
            }
        }
    });
}

/// Re-describes the ints of a reduction as elements of `dt` (4 ints each).
fn with_type(coll: Coll, dt: Datatype) -> Coll {
    let retype_s = |s: SendData| SendData {
        count: s.count / 4,
        dt: dt.clone(),
        ..s
    };
    let retype_r = |r: RecvData| RecvData {
        count: r.count / 4,
        dt: dt.clone(),
        ..r
    };
    match coll {
        Coll::Reduce {
            send,
            recv,
            op,
            root,
        } => Coll::Reduce {
            send: send.map(retype_s),
            recv: recv.map(retype_r),
            op,
            root,
        },
        Coll::Allreduce { send, recv, op } => Coll::Allreduce {
            send: send.map(retype_s),
            recv: retype_r(recv),
            op,
        },
        Coll::Scan {
            send,
            recv,
            op,
            exclusive,
        } => Coll::Scan {
            send: send.map(retype_s),
            recv: retype_r(recv),
            op,
            exclusive,
        },
        other => other,
    }
}

fn matrices() -> Datatype {
    Datatype::derived(Layout::vector(4, 1, 4, int()).unwrap())
}

#[test]
fn allreduce_is_bit_identical_everywhere_and_in_rank_order() {
    each_size(|e| {
        let (me, n) = rank_size(e);
        // Doubles whose sum depends on the order of additions.
        let mine: Vec<u8> = (0..64)
            .flat_map(|i| (1.0f64 / ((me * 64 + i) as f64 + 0.3)).to_ne_bytes())
            .collect();
        let out = RecvData {
            buf: zeroed(64 * 8),
            count: 64,
            dt: double(),
        };
        let coll = Coll::Allreduce {
            send: Some(SendData {
                buf: SendBuf::from_slice(Box::leak(mine.into_boxed_slice())),
                count: 64,
                dt: double(),
            }),
            recv: out.clone(),
            op: sum(),
        };
        e.collective(COMM_WORLD, coll).unwrap();
        // Everyone's result, gathered everywhere: all the same bits.
        let (parts, all) = blocks(&vec![128; n]);
        let coll = Coll::Allgather {
            send: Some(SendData {
                buf: out.buf.as_send(),
                count: 128,
                dt: int(),
            }),
            recv: parts,
        };
        e.collective(COMM_WORLD, coll).unwrap();
        let all = all.as_slice();
        assert!(all.chunks_exact(512).all(|c| c == &all[..512]), "n = {n}");

        for in_place in [false, true] {
            let out = recv_holding(&matrix(me));
            let coll = Coll::Allreduce {
                send: (!in_place).then(|| send(&matrix(me))),
                recv: out.clone(),
                op: Reducer::User(Arc::new(MatMul)),
            };
            e.collective(COMM_WORLD, with_type(coll, matrices()))
                .unwrap();
            assert_eq!(ints(&out), product(0, n), "rank {me} of {n}");
        }
    });
}

#[test]
fn reduce_scatter_with_uneven_counts_and_in_place() {
    each_size(|e| {
        let (me, n) = rank_size(e);
        let counts: Vec<usize> = (0..n).map(|r| (r % 3) * 50 + 1).collect();
        let total: usize = counts.iter().sum();
        let start: usize = counts[..me].iter().sum();
        let expect: Vec<i32> = (start..start + counts[me])
            .map(|i| (0..n).map(|r| input(r, total)[i]).sum())
            .collect();
        for in_place in [false, true] {
            let out = if in_place {
                recv_holding(&input(me, total))
            } else {
                recv(counts[me])
            };
            let coll = Coll::ReduceScatter {
                send: (!in_place).then(|| send(&input(me, total))),
                recv: out.clone(),
                counts: counts.clone(),
                op: sum(),
            };
            e.collective(COMM_WORLD, coll).unwrap();
            assert_eq!(&ints(&out)[..counts[me]], &expect[..], "rank {me} of {n}");
        }
    });
}

#[test]
fn scan_and_exscan_in_rank_order() {
    each_size(|e| {
        let (me, n) = rank_size(e);
        let _ = n;
        for exclusive in [false, true] {
            let out = recv(3);
            let coll = Coll::Scan {
                send: Some(send(&input(me, 3))),
                recv: out.clone(),
                op: sum(),
                exclusive,
            };
            e.collective(COMM_WORLD, coll).unwrap();
            let upto = if exclusive { me } else { me + 1 };
            if upto > 0 {
                let expect: Vec<i32> = (0..3)
                    .map(|i| (0..upto).map(|r| input(r, 3)[i]).sum())
                    .collect();
                assert_eq!(ints(&out), expect, "exclusive {exclusive}, rank {me}");
            } else {
                assert_eq!(ints(&out), vec![0; 3], "exscan leaves rank 0 alone");
            }
            let out = recv_holding(&matrix(me));
            let coll = Coll::Scan {
                send: None,
                recv: out.clone(),
                op: Reducer::User(Arc::new(MatMul)),
                exclusive,
            };
            e.collective(COMM_WORLD, with_type(coll, matrices()))
                .unwrap();
            let expect = if upto > 0 {
                product(0, upto)
            } else {
                matrix(0)
            };
            assert_eq!(ints(&out), expect, "exclusive {exclusive}, rank {me}");
        }
    });
}

#[test]
fn neighbor_alltoall_on_a_periodic_ring_and_a_graph() {
    each_size(|e| {
        let (me, n) = rank_size(e);
        let ring = e
            .cart_create(COMM_WORLD, Cart::new(&[n as i32], &[1]).unwrap())
            .unwrap()
            .unwrap();
        // Send "down" my rank * 10, "up" my rank * 10 + 1.
        let outgoing = vec![send(&[me as i32 * 10]), send(&[me as i32 * 10 + 1])];
        let (down, up) = (recv(1), recv(1));
        let coll = Coll::Neighbor {
            send: outgoing,
            recv: vec![down.clone(), up.clone()],
        };
        e.collective(ring, coll).unwrap();
        // From below comes what it sent up, from above what it sent down.
        assert_eq!(
            ints(&down),
            vec![((me + n - 1) % n) as i32 * 10 + 1],
            "n = {n}"
        );
        assert_eq!(ints(&up), vec![((me + 1) % n) as i32 * 10], "n = {n}");
        e.comm_free(ring).unwrap();

        // A directed graph: every rank sends to the next two ranks.
        let dests: Vec<usize> = (1..=2).map(|k| (me + k) % n).collect();
        let srcs: Vec<usize> = (1..=2).map(|k| (me + 2 * n - k) % n).collect();
        let edges = |v: &[usize]| -> Vec<(i32, i32)> { v.iter().map(|&r| (r as i32, 1)).collect() };
        let graph = e
            .dist_graph_create_adjacent(COMM_WORLD, &edges(&srcs), &edges(&dests), false)
            .unwrap();
        let outgoing = dests
            .iter()
            .map(|&d| send(&[(me * 100 + d) as i32]))
            .collect();
        let incoming: Vec<RecvData> = srcs.iter().map(|_| recv(1)).collect();
        let coll = Coll::Neighbor {
            send: outgoing,
            recv: incoming.clone(),
        };
        e.collective(graph, coll).unwrap();
        let got: Vec<i32> = incoming.iter().flat_map(ints).collect();
        let want: Vec<i32> = srcs.iter().map(|&s| (s * 100 + me) as i32).collect();
        if n > 2 {
            assert_eq!(got, want, "rank {me} of {n}");
        } else {
            // Duplicate edges between the same pair: matched in order, as a multiset.
            let (mut g, mut w) = (got, want);
            g.sort();
            w.sort();
            assert_eq!(g, w);
        }
        e.comm_free(graph).unwrap();
    });
}

#[test]
fn nonblocking_collectives_overlap_each_other_and_point_to_point() {
    each_size(|e| {
        let (me, n) = rank_size(e);
        let data = if me == 0 {
            recv_holding(&input(0, 500))
        } else {
            recv(500)
        };
        let sums = recv(300);
        let p2p_in = zeroed(4);
        let from = ((me + n - 1) % n) as i32;
        let r = e.irecv(p2p_in, 1, int(), from, 7, COMM_WORLD).unwrap();
        let a = e
            .coll_start(
                COMM_WORLD,
                Coll::Bcast {
                    data: data.clone(),
                    root: 0,
                },
            )
            .unwrap();
        let b = e.coll_start(COMM_WORLD, Coll::Barrier).unwrap();
        let c = e
            .coll_start(
                COMM_WORLD,
                Coll::Allreduce {
                    send: Some(send(&input(me, 300))),
                    recv: sums.clone(),
                    op: sum(),
                },
            )
            .unwrap();
        let to = ((me + 1) % n) as i32;
        let out = send(&[me as i32]);
        let s = e
            .isend(out.buf, 1, int(), to, 7, COMM_WORLD, SendMode::Standard)
            .unwrap();
        // Complete in an order unrelated to the start order.
        for id in [c, s, a, r, b] {
            let st = e.wait(id).unwrap();
            assert!(st.error.is_none());
        }
        assert_eq!(ints(&data), input(0, 500));
        let expect: Vec<i32> = (0..300)
            .map(|i| (0..n).map(|r| input(r, 300)[i]).sum())
            .collect();
        assert_eq!(ints(&sums), expect);
        assert_eq!(ints_of(p2p_in.as_slice()), vec![from]);
    });
}

#[test]
fn persistent_collectives_restart_with_new_contents() {
    each_size(|e| {
        let (me, n) = rank_size(e);
        let mut input_buf = recv(4);
        let out = recv(4);
        let coll = Coll::Allreduce {
            send: Some(input_buf.as_send()),
            recv: out.clone(),
            op: Reducer::Predefined(ReduceOp::Max),
        };
        let id = e.coll_init(COMM_WORLD, coll).unwrap();
        assert!(!e.is_active(id).unwrap());
        for round in 0..3 {
            let mine = [(me + round) as i32, -(me as i32), round as i32, 7];
            input_buf
                .buf
                .as_mut_slice()
                .copy_from_slice(&bytes_of(&mine));
            e.start(id).unwrap();
            let done = e.wait_retire(id).unwrap();
            assert!(!done.freed && done.status.error.is_none());
            let expect = [(n - 1 + round) as i32, 0, round as i32, 7];
            assert_eq!(ints(&out), expect, "round {round}");
        }
        e.request_free(id).unwrap();
    });
}

#[test]
fn mismatched_arguments_and_bad_roots_are_errors() {
    run_ranks(2, 16, 4096, small_tuning(), |e| {
        let (me, _) = rank_size(e);
        let err = e
            .collective(
                COMM_WORLD,
                Coll::Bcast {
                    data: recv(1),
                    root: 2,
                },
            )
            .unwrap_err();
        assert_eq!(err.class, ErrorClass::Root);
        // Rank 1 broadcasts more than rank 0 expects: truncation at rank 0's end... of the root's
        // message at the receiver.
        let data = recv(if me == 0 { 4 } else { 1 });
        let outcome = e.collective(COMM_WORLD, Coll::Bcast { data, root: 0 });
        if me == 1 {
            assert_eq!(outcome.unwrap_err().class, ErrorClass::Truncate);
        } else {
            outcome.unwrap();
        }
        let bad = Coll::Allreduce {
            send: Some(send(&[1])),
            recv: recv(1),
            op: Reducer::Predefined(ReduceOp::Minloc),
        };
        assert_eq!(
            e.collective(COMM_WORLD, bad).unwrap_err().class,
            ErrorClass::Op
        );
    });
}
