//! Intercommunicators on 2 to 6 ranks of the in-process transport: even world ranks form group
//! A, odd ones group B. Point-to-point across (the source is the sender's rank in its own
//! group), the duplicate's traffic apart from the original's, merge order, split by parity, and
//! the collectives that cross between the groups, checked against the other group's data.

use reflex_base::buf::{RecvBuf, SendBuf};
use reflex_engine::coll::inter::ROOT;
use reflex_engine::coll::{Coll, RecvData, Reducer, SendData};
use reflex_engine::testing::{run_ranks, small_tuning, MemTransport};
use reflex_engine::*;

type E = Engine<MemTransport>;

fn int() -> Datatype {
    Datatype::Basic(Basic::plain(ValueKind::Signed, 4))
}

fn send(v: &[i32]) -> SendData {
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_ne_bytes()).collect();
    SendData {
        buf: SendBuf::from_slice(Box::leak(bytes.into_boxed_slice())),
        count: v.len(),
        dt: int(),
    }
}

fn recv(count: usize) -> RecvData {
    RecvData {
        buf: RecvBuf::from_slice(Box::leak(vec![0u8; 4 * count].into_boxed_slice())),
        count,
        dt: int(),
    }
}

fn ints(r: &RecvData) -> Vec<i32> {
    (r.buf.as_slice().chunks_exact(4))
        .map(|w| i32::from_ne_bytes(w.try_into().unwrap()))
        .collect()
}

/// This process's place: (in A, local rank, local size, remote size, world rank of remote r).
struct Place {
    in_a: bool,
    rank: usize,
    local: usize,
    remote: usize,
    world: usize,
}

impl Place {
    fn of(e: &E) -> Place {
        let (me, n) = (e.world_rank(), e.world_size());
        let in_a = me % 2 == 0;
        let local = if in_a { n.div_ceil(2) } else { n / 2 };
        Place {
            in_a,
            rank: me / 2,
            local,
            remote: n - local,
            world: me,
        }
    }

    fn remote_world(&self, r: usize) -> i32 {
        (2 * r + usize::from(self.in_a)) as i32
    }
}

fn create(e: &mut E, p: &Place) -> CommId {
    let local = e.comm_split(COMM_WORLD, i32::from(!p.in_a), 0).unwrap();
    let leader = if p.in_a { 1 } else { 0 };
    e.intercomm_create(local.unwrap(), 0, COMM_WORLD, leader, 9)
        .unwrap()
}

fn each_size(body: impl Fn(&mut E) + Send + Sync + Copy + 'static) {
    for n in 2..=6 {
        run_ranks(n, 16, 4096, small_tuning(), body);
    }
}

#[test]
fn point_to_point_names_senders_by_their_local_rank() {
    each_size(|e| {
        let p = Place::of(e);
        let ic = create(e, &p);
        let c = e.comm(ic).unwrap();
        assert!(c.is_inter());
        assert_eq!((c.size(), c.peers().size()), (p.local, p.remote));
        let mut sends = Vec::new();
        for r in 0..p.remote {
            let s = send(&[p.world as i32 * 100 + r as i32]);
            let mode = SendMode::Standard;
            sends.push(e.isend(s.buf, 1, int(), r as i32, 3, ic, mode).unwrap());
        }
        for _ in 0..p.remote {
            let into = recv(1);
            let st = e.recv(into.buf, 1, int(), ANY_SOURCE, 3, ic).unwrap();
            assert!((st.source as usize) < p.remote);
            let want = p.remote_world(st.source as usize) * 100 + p.rank as i32;
            assert_eq!(ints(&into), [want]);
        }
        for s in sends {
            e.wait(s).unwrap();
        }
    });
}

#[test]
fn merge_puts_the_low_group_first_and_dup_is_congruent() {
    each_size(|e| {
        let p = Place::of(e);
        let ic = create(e, &p);
        let dup = e.comm_dup(ic).unwrap();
        assert_eq!(e.comm_compare(ic, dup).unwrap(), Comparison::Congruent);
        let merged = e.intercomm_merge(dup, !p.in_a).unwrap();
        let m = e.comm(merged).unwrap();
        let a_first = if p.in_a { p.rank } else { p.remote + p.rank };
        assert_eq!(m.rank as usize, a_first);
        assert_eq!(m.size(), e.world_size());
        e.comm_free(merged).unwrap();
        e.comm_free(dup).unwrap();
    });
}

#[test]
fn collectives_deliver_the_other_groups_data() {
    each_size(|e| {
        let p = Place::of(e);
        let ic = create(e, &p);
        let me = p.world as i32;
        // allreduce: the sum over the remote group
        let out = recv(1);
        let op = Reducer::Predefined(ReduceOp::Sum);
        let coll = Coll::Allreduce {
            send: Some(send(&[me])),
            recv: out.clone(),
            op: op.clone(),
        };
        e.collective(ic, coll).unwrap();
        let sum: i32 = (0..p.remote).map(|r| p.remote_world(r)).sum();
        assert_eq!(ints(&out), [sum]);
        // allgather: every remote process's rank
        let blocks: Vec<RecvData> = (0..p.remote).map(|_| recv(1)).collect();
        let coll = Coll::Allgather {
            send: Some(send(&[me])),
            recv: blocks.clone(),
        };
        e.collective(ic, coll).unwrap();
        for (r, b) in blocks.iter().enumerate() {
            assert_eq!(ints(b), [p.remote_world(r)]);
        }
        // bcast rooted at rank 0 of A, then a reduce onto it
        let mut data = recv(2);
        if p.in_a && p.rank == 0 {
            data.buf.as_mut_slice().copy_from_slice(&[7u8; 8]);
        }
        let root = match (p.in_a, p.rank) {
            (true, 0) => ROOT,
            (true, _) => PROC_NULL,
            (false, _) => 0,
        };
        e.collective(
            ic,
            Coll::Bcast {
                data: data.clone(),
                root,
            },
        )
        .unwrap();
        if !p.in_a {
            assert_eq!(data.buf.as_slice(), [7u8; 8]);
        }
        let at_root = recv(1);
        let coll = Coll::Reduce {
            send: (!p.in_a).then(|| send(&[me])),
            recv: (root == ROOT).then(|| at_root.clone()),
            op,
            root,
        };
        e.collective(ic, coll).unwrap();
        if root == ROOT {
            assert_eq!(ints(&at_root), [sum]);
        }
        e.barrier(ic).unwrap();
    });
}
