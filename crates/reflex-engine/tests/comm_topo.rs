//! Groups, the newer communicator constructors and process topologies over the in-process
//! transport (ranks are threads): the collective parts (context agreement, edge exchange) run
//! for real; the C tests cover the same calls through the library.

use reflex_engine::group_ops::SetOp;
use reflex_engine::testing::MemTransport;
use reflex_engine::topo::{Cart, Topology};
use reflex_engine::*;

type E = Engine<MemTransport>;

fn run(n: usize, body: impl Fn(&mut E) + Send + Sync + Copy + 'static) {
    let tuning = Tuning {
        spin_polls: 10,
        yield_polls: 10,
        sleep: std::time::Duration::from_micros(100),
        ..Tuning::default()
    };
    reflex_engine::testing::run_ranks(n, 64, 4096, tuning, body);
}

/// A collective sum over `comm` (checks that a new communicator carries traffic).
fn sum(e: &mut E, comm: CommId, v: i32) -> i32 {
    let mut all = vec![0u8; 4 * e.comm(comm).unwrap().size()];
    let send = reflex_base::buf::SendBuf::from_slice(Box::leak(Box::new(v.to_le_bytes())));
    let recv = reflex_base::buf::RecvBuf::from_slice(Box::leak(
        std::mem::take(&mut all).into_boxed_slice(),
    ));
    let int = Datatype::Basic(Basic::plain(ValueKind::Signed, 4));
    let size = e.comm(comm).unwrap().size();
    let blocks = (0..size)
        .map(|r| coll::RecvData {
            buf: recv.slice(4 * r, 4),
            count: 1,
            dt: int.clone(),
        })
        .collect();
    let send = coll::SendData {
        buf: send,
        count: 1,
        dt: int,
    };
    let allgather = coll::Coll::Allgather {
        send: Some(send),
        recv: blocks,
    };
    e.collective(comm, allgather).unwrap();
    recv.as_slice()
        .chunks_exact(4)
        .map(|w| i32::from_le_bytes(w.try_into().unwrap()))
        .sum()
}

#[test]
fn group_constructors_build_the_right_members() {
    run(4, |e| {
        let world = e.comm_group(COMM_WORLD).unwrap();
        let evens = e.group_select_ranges(world, &[[0, 3, 2]], false).unwrap();
        let odds = e.group_select_ranges(world, &[[0, 3, 2]], true).unwrap();
        assert_eq!(&*e.group(evens).unwrap().members, &[0, 2]);
        assert_eq!(&*e.group(odds).unwrap().members, &[1, 3]);
        let union = e.group_combine(odds, evens, SetOp::Union).unwrap();
        assert_eq!(&*e.group(union).unwrap().members, &[1, 3, 0, 2]);
        let none = e.group_combine(odds, evens, SetOp::Intersection).unwrap();
        assert_eq!(none, comm::GROUP_EMPTY);
        e.group_free(none).unwrap();
        let diff = e.group_combine(world, odds, SetOp::Difference).unwrap();
        assert_eq!(e.group_compare(diff, evens).unwrap(), Comparison::Ident);
    });
}

#[test]
fn comm_create_group_involves_members_only() {
    run(4, |e| {
        let me = e.world_rank();
        let world = e.comm_group(COMM_WORLD).unwrap();
        // Two disjoint groups created concurrently with the same tag, then an overlapping one.
        let g = e
            .group_select(world, &[(me % 2) as i32, (me % 2 + 2) as i32], false)
            .unwrap();
        let c = e.comm_create_group(COMM_WORLD, g, 5).unwrap().unwrap();
        assert_eq!(e.comm(c).unwrap().rank as usize, me / 2);
        assert_eq!(sum(e, c, me as i32), if me % 2 == 0 { 2 } else { 4 });
        if me < 3 {
            let first3 = e.group_select(world, &[2, 1, 0], false).unwrap();
            let c3 = e.comm_create_group(COMM_WORLD, first3, 0).unwrap().unwrap();
            assert_eq!(e.comm(c3).unwrap().rank as usize, 2 - me);
            assert_eq!(sum(e, c3, 1), 3);
        } else {
            let first3 = e.group_select(world, &[0, 1, 2], false).unwrap();
            assert!(e
                .comm_create_group(COMM_WORLD, first3, 0)
                .unwrap()
                .is_none());
        }
    });
}

#[test]
fn split_by_label_groups_equal_labels() {
    run(4, |e| {
        let me = e.world_rank();
        let label: Option<&[u8]> = match me {
            2 => Some(b"b"),
            3 => None,
            _ => Some(b"host-a"),
        };
        let c = e
            .comm_split_by_label(COMM_WORLD, label, -(me as i32))
            .unwrap();
        if me == 3 {
            assert!(c.is_none());
            return;
        }
        let c = c.unwrap();
        let size = e.comm(c).unwrap().size();
        assert_eq!(size, if me == 2 { 1 } else { 2 });
        assert_eq!(e.comm(c).unwrap().rank, u32::from(me == 0));
    });
}

#[test]
fn cartesian_grids_and_sub_grids() {
    run(4, |e| {
        let me = e.world_rank();
        let cart = Cart::new(&[3, 1], &[1, 0]).unwrap();
        let c = e.cart_create(COMM_WORLD, cart).unwrap();
        assert_eq!(c.is_some(), me < 3);
        if let Some(c) = c {
            let topo = e.cart(c).unwrap();
            let Topology::Cart(grid) = &*topo else {
                panic!("not a grid")
            };
            assert_eq!(grid.shift(me, 0, 1).unwrap().1 as usize, (me + 1) % 3);
            let dup = e.comm_dup(c).unwrap();
            assert_eq!(e.topology(dup).unwrap().unwrap().kind(), 2);
            let rows = e.cart_sub(c, &[false, true]).unwrap();
            assert_eq!(e.comm(rows).unwrap().size(), 1);
            let cols = e.cart_sub(c, &[true, false]).unwrap();
            assert_eq!(sum(e, cols, 1), 3);
        }
        assert_eq!(
            e.cart_create(COMM_WORLD, Cart::new(&[5], &[0]).unwrap())
                .unwrap_err()
                .class,
            ErrorClass::Arg
        );
        assert_eq!(e.cart(COMM_WORLD).unwrap_err().class, ErrorClass::Topology);
    });
}

#[test]
fn distributed_graph_edges_reach_both_ends() {
    run(3, |e| {
        let me = e.world_rank() as u32;
        // Rank 0 names every edge of a ring 0→1→2→0, with weight = 10 * source + destination.
        let edges: Vec<(u32, u32, i32)> = if me == 0 {
            (0..3)
                .map(|s| (s, (s + 1) % 3, (10 * s + (s + 1) % 3) as i32))
                .collect()
        } else {
            Vec::new()
        };
        let c = e.dist_graph_create(COMM_WORLD, &edges, true).unwrap();
        let Some(topo) = e.topology(c).unwrap() else {
            panic!("no topology")
        };
        let Topology::DistGraph(g) = &*topo else {
            panic!("not a dist graph")
        };
        let (next, prev) = ((me as usize + 1) % 3, (me as usize + 2) % 3);
        assert_eq!(
            g.destinations,
            vec![(next, (10 * me as usize + next) as i32)]
        );
        assert_eq!(g.sources, vec![(prev, (10 * prev + me as usize) as i32)]);
        assert!(g.weighted);
        assert_eq!(sum(e, c, 2), 6);
    });
}
