//! Every schedule the selection table can pick, forced through `CollTuning` the way the
//! `REFLEX_COLL_*` settings force it, on 1 to 9 ranks of the in-process transport: barrier
//! (dissemination, pairwise), bcast (binomial, k-nomial r = 3, postal λ = 3, scatter-allgather)
//! from every root, allreduce (recursive doubling, ring, Rabenseifner; in place; bit-identical
//! doubles; Rabenseifner also with a non-commutative operation, in rank order),
//! allgather (direct, ring, Bruck; in place), alltoall (direct, pairwise), each checked against
//! a serial reference.

use reflex_base::buf::{RecvBuf, SendBuf};
use reflex_base::config::{AllgatherAlgo, AllreduceAlgo, AlltoallAlgo, BarrierAlgo, BcastAlgo};
use reflex_engine::coll::select::CollTuning;
use reflex_engine::coll::{Coll, RecvData, Reducer, SendData, UserReduce};
use reflex_engine::testing::{run_ranks, small_tuning, MemTransport};
use reflex_engine::*;
use std::sync::Arc;

type E = Engine<MemTransport>;

fn int() -> Datatype {
    Datatype::Basic(Basic::plain(ValueKind::Signed, 4))
}

fn leak(bytes: Vec<u8>) -> &'static mut [u8] {
    Box::leak(bytes.into_boxed_slice())
}

fn send(v: &[i32]) -> SendData {
    let bytes = v.iter().flat_map(|x| x.to_ne_bytes()).collect();
    SendData {
        buf: SendBuf::from_slice(leak(bytes)),
        count: v.len(),
        dt: int(),
    }
}

fn recv_holding(v: &[i32]) -> RecvData {
    let bytes = v.iter().flat_map(|x| x.to_ne_bytes()).collect();
    RecvData {
        buf: RecvBuf::from_slice(leak(bytes)),
        count: v.len(),
        dt: int(),
    }
}

fn recv(count: usize) -> RecvData {
    recv_holding(&vec![-1; count])
}

fn ints(r: &RecvData) -> Vec<i32> {
    (r.buf.as_slice().chunks_exact(4))
        .map(|w| i32::from_ne_bytes(w.try_into().unwrap()))
        .collect()
}

fn input(r: usize, len: usize) -> Vec<i32> {
    (0..len).map(|i| (r * 1000 + i) as i32).collect()
}

/// Runs `body` on 1 to 9 ranks with collective settings `coll`.
fn each_size(coll: CollTuning, body: fn(&mut E)) {
    for n in 1..=9 {
        let tuning = Tuning {
            coll,
            ..small_tuning()
        };
        run_ranks(n, 16, 4096, tuning, body);
    }
}

fn forced(change: impl Fn(&mut CollTuning)) -> CollTuning {
    let mut t = CollTuning {
        large: 1 << 30, // auto never switches to the large schedules by itself here
        ..CollTuning::default()
    };
    change(&mut t);
    t
}

fn bcast_from_every_root(e: &mut E) {
    let (me, n) = (e.world_rank(), e.world_size());
    for root in 0..n {
        for len in [1, 5, 700] {
            let data = if me == root {
                recv_holding(&input(root, len))
            } else {
                recv(len)
            };
            let root = root as i32;
            e.collective(
                COMM_WORLD,
                Coll::Bcast {
                    data: data.clone(),
                    root,
                },
            )
            .unwrap();
            assert_eq!(ints(&data), input(root as usize, len), "rank {me} of {n}");
        }
    }
    e.barrier(COMM_WORLD).unwrap();
}

#[test]
fn every_broadcast_tree_delivers_from_every_root() {
    for algo in [
        BcastAlgo::Binomial,
        BcastAlgo::Knomial,
        BcastAlgo::Postal,
        BcastAlgo::ScatterAllgather,
    ] {
        let t = forced(|t| {
            t.bcast = algo;
            t.fanout = 3;
            t.lambda = 3;
        });
        each_size(t, bcast_from_every_root);
    }
}

#[test]
fn both_barriers_hold_everybody() {
    for algo in [BarrierAlgo::Dissemination, BarrierAlgo::Pairwise] {
        each_size(forced(|t| t.barrier = algo), |e| {
            // A barrier between a send and the matching probe: the message must be there.
            let (me, n) = (e.world_rank(), e.world_size());
            let v = [me as i32];
            let s = send(&v);
            let to = ((me + 1) % n) as i32;
            let req = e.isend(s.buf, 1, int(), to, 9, COMM_WORLD, SendMode::Standard);
            for _ in 0..3 {
                e.barrier(COMM_WORLD).unwrap();
            }
            let got = recv(1);
            let from = ((me + n - 1) % n) as i32;
            e.recv(got.buf, 1, int(), from, 9, COMM_WORLD).unwrap();
            e.wait(req.unwrap()).unwrap();
            assert_eq!(ints(&got), [from]);
        });
    }
}

fn allreduce_sums(e: &mut E) {
    let (me, n) = (e.world_rank(), e.world_size());
    for len in [1, 9, 1000] {
        for in_place in [false, true] {
            let out = if in_place {
                recv_holding(&input(me, len))
            } else {
                recv(len)
            };
            let coll = Coll::Allreduce {
                send: (!in_place).then(|| send(&input(me, len))),
                recv: out.clone(),
                op: Reducer::Predefined(ReduceOp::Sum),
            };
            e.collective(COMM_WORLD, coll).unwrap();
            let want: Vec<i32> = (0..len)
                .map(|i| (0..n).map(|r| input(r, len)[i]).sum())
                .collect();
            assert_eq!(ints(&out), want, "rank {me} of {n}, {len} ints");
        }
    }
    // Doubles whose sum depends on the order: the same bits on every rank.
    let mine: Vec<u8> = (0..300)
        .flat_map(|i| (1.0f64 / ((me * 300 + i) as f64 + 0.3)).to_ne_bytes())
        .collect();
    let double = Datatype::Basic(Basic::plain(ValueKind::Float, 8));
    let out = RecvData {
        buf: RecvBuf::from_slice(leak(vec![0; 2400])),
        count: 300,
        dt: double.clone(),
    };
    let coll = Coll::Allreduce {
        send: Some(SendData {
            buf: SendBuf::from_slice(leak(mine)),
            count: 300,
            dt: double,
        }),
        recv: out.clone(),
        op: Reducer::Predefined(ReduceOp::Sum),
    };
    e.collective(COMM_WORLD, coll).unwrap();
    let theirs = RecvData {
        buf: RecvBuf::from_slice(leak(out.buf.as_slice().to_vec())),
        count: 600,
        dt: int(),
    };
    let root_copy = theirs.clone();
    e.collective(
        COMM_WORLD,
        Coll::Bcast {
            data: root_copy.clone(),
            root: 0,
        },
    )
    .unwrap();
    assert_eq!(root_copy.buf.as_slice(), out.buf.as_slice(), "bits differ");
}

#[test]
fn every_allreduce_sums_and_agrees_bit_for_bit() {
    for algo in [
        AllreduceAlgo::RecursiveDoubling,
        AllreduceAlgo::Ring,
        AllreduceAlgo::Rabenseifner,
    ] {
        each_size(forced(|t| t.allreduce = algo), allreduce_sums);
    }
}

fn allgather_blocks(e: &mut E) {
    let (me, n) = (e.world_rank(), e.world_size());
    for per in [1, 3, 700] {
        for in_place in [false, true] {
            let parts: Vec<RecvData> = (0..n).map(|_| recv(per)).collect();
            if in_place {
                let mut own = parts[me].buf;
                own.as_mut_slice()
                    .copy_from_slice(recv_holding(&input(me, per)).buf.as_slice());
            }
            let coll = Coll::Allgather {
                send: (!in_place).then(|| send(&input(me, per))),
                recv: parts.clone(),
            };
            e.collective(COMM_WORLD, coll).unwrap();
            for (r, p) in parts.iter().enumerate() {
                assert_eq!(ints(p), input(r, per), "rank {me} of {n}, block {r}");
            }
        }
    }
}

/// Affine maps x ↦ a·x + b as int pairs, composed "lower first, then upper" (wrapping):
/// associative, not commutative.
struct Compose;

impl UserReduce for Compose {
    fn commutative(&self) -> bool {
        false
    }
    fn reduce(&self, input: &[u8], inout: &mut [u8], _count: usize) -> Result<()> {
        let word = |b: &[u8], i: usize| i32::from_ne_bytes(b[4 * i..4 * i + 4].try_into().unwrap());
        for (lo, up) in input.chunks_exact(8).zip(inout.chunks_exact_mut(8)) {
            let (a1, b1, a2, b2) = (word(lo, 0), word(lo, 1), word(up, 0), word(up, 1));
            let (a, b) = (a1.wrapping_mul(a2), b1.wrapping_mul(a2).wrapping_add(b2));
            up[..4].copy_from_slice(&a.to_ne_bytes());
            up[4..].copy_from_slice(&b.to_ne_bytes());
        }
        Ok(())
    }
}

fn map_of(rank: usize, i: usize) -> [i32; 2] {
    [(rank + i % 3 + 2) as i32, (rank * 7 + i) as i32]
}

#[test]
fn rabenseifner_keeps_rank_order_for_a_non_commutative_operation() {
    let t = forced(|t| t.allreduce = AllreduceAlgo::Rabenseifner);
    each_size(t, |e| {
        let (me, n) = (e.world_rank(), e.world_size());
        let pairs =
            Datatype::derived(reflex_engine::datatype::Layout::vector(1, 2, 2, int()).unwrap());
        let count = 50;
        let mine: Vec<i32> = (0..count).flat_map(|i| map_of(me, i)).collect();
        let out = recv(2 * count);
        let coll = Coll::Allreduce {
            send: Some(SendData {
                dt: pairs.clone(),
                count,
                ..send(&mine)
            }),
            recv: RecvData {
                dt: pairs,
                count,
                ..out.clone()
            },
            op: Reducer::User(Arc::new(Compose)),
        };
        e.collective(COMM_WORLD, coll).unwrap();
        let want: Vec<i32> = (0..count)
            .flat_map(|i| {
                (1..n).fold(map_of(0, i), |[a, b], r| {
                    let [a2, b2] = map_of(r, i);
                    [a.wrapping_mul(a2), b.wrapping_mul(a2).wrapping_add(b2)]
                })
            })
            .collect();
        assert_eq!(ints(&out), want, "rank {me} of {n}");
    });
}

#[test]
fn every_allgather_gathers_in_rank_order() {
    for algo in [
        AllgatherAlgo::Direct,
        AllgatherAlgo::Ring,
        AllgatherAlgo::Bruck,
    ] {
        each_size(forced(|t| t.allgather = algo), allgather_blocks);
    }
}

#[test]
fn both_alltoalls_deliver_every_block() {
    for algo in [AlltoallAlgo::Direct, AlltoallAlgo::Pairwise] {
        each_size(forced(|t| t.alltoall = algo), |e| {
            let (me, n) = (e.world_rank(), e.world_size());
            let outs: Vec<SendData> = (0..n).map(|d| send(&input(me * 10 + d, 40))).collect();
            let ins: Vec<RecvData> = (0..n).map(|_| recv(40)).collect();
            let coll = Coll::Alltoall {
                send: Some(outs),
                recv: ins.clone(),
                regular: true,
            };
            e.collective(COMM_WORLD, coll).unwrap();
            for (s, p) in ins.iter().enumerate() {
                assert_eq!(ints(p), input(s * 10 + me, 40));
            }
        });
    }
}
