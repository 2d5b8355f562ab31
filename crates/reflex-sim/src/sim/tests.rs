//! Simulator tests on tiny networks with hand-computed latencies, determinism and the watchdog.

use super::*;
use crate::check::cdg::tests::clockwise;
use crate::routing::tables::{AnyRouting, TableRouting};
use crate::routing::trees::bfs_orientation;
use crate::topology::tests::ring;
use crate::topology::{Topology, TopologyBuilder};

fn line(n: usize, hosts: usize) -> Topology {
    let mut b = TopologyBuilder::uniform(n, 8, hosts);
    for s in 1..n {
        b.connect(s - 1, s).unwrap();
    }
    b.build().unwrap()
}

fn quiet(flits: u32) -> SimConfig {
    let mut c = SimConfig::paper_a(flits, 0.0);
    c.warmup_cycles = 0;
    c.measure_cycles = 1_000_000;
    c
}

fn updown(t: &Topology) -> AnyRouting {
    AnyRouting::Table(TableRouting::all_shortest(
        t,
        &bfs_orientation(t, 0),
        0,
        false,
    ))
}

/// Runs until drained; returns the result.
fn drain(sim: &mut Simulator) -> SimResult {
    assert!(sim.drain(100_000).unwrap());
    sim.result()
}

#[test]
fn one_switch_latency_by_hand() {
    // Header: 24 cycles routing delay, granted at cycle 24, first flit delivered at 25,
    // tail at 25 + 31 = 56.
    let t = TopologyBuilder::uniform(1, 8, 3).build().unwrap();
    let mut sim = Simulator::new(t.clone(), updown(&t), &quiet(32)).unwrap();
    sim.send(0, 1, 32).unwrap();
    let r = drain(&mut sim);
    assert_eq!(r.delivered_packets, 1);
    assert_eq!(r.avg_latency, 56.0);
    assert_eq!(r.avg_hops, 0.0);
}

#[test]
fn two_switch_latency_by_hand() {
    // Per switch: 24 cycles routing + 1 cycle grant-to-transfer; then 31 body flits.
    let t = line(2, 1);
    let mut sim = Simulator::new(t.clone(), updown(&t), &quiet(32)).unwrap();
    sim.send(0, 1, 32).unwrap();
    let r = drain(&mut sim);
    assert_eq!(r.avg_latency, 2.0 * 25.0 + 31.0);
    assert_eq!(r.avg_hops, 1.0);
    // Opposite corners of a ring of four: two hops.
    let t = ring(4, 1);
    let mut sim = Simulator::new(t.clone(), updown(&t), &quiet(8)).unwrap();
    sim.send(0, 2, 8).unwrap();
    let r = drain(&mut sim);
    assert_eq!(r.avg_latency, 3.0 * 25.0 + 7.0);
    assert_eq!(r.avg_hops, 2.0);
}

#[test]
fn wormhole_blocking_by_hand() {
    // Two 32-flit messages to the same host: the second header is granted the cycle after the
    // first tail leaves (cycle 56 + 1), its tail arrives at 58 + 31 = 89.
    let t = TopologyBuilder::uniform(1, 8, 3).build().unwrap();
    let mut sim = Simulator::new(t.clone(), updown(&t), &quiet(32)).unwrap();
    sim.send(0, 2, 32).unwrap();
    sim.send(1, 2, 32).unwrap();
    let r = drain(&mut sim);
    assert_eq!(r.delivered_packets, 2);
    assert_eq!(r.avg_latency, (56.0 + 89.0) / 2.0);
    assert_eq!(r.max_latency, 89);
}

#[test]
fn virtual_cut_through_waits_for_room() {
    // With 4-flit buffers, a 4-flit packet fits; VCT and wormhole give the same unloaded latency.
    let t = line(2, 1);
    let mut cfg = quiet(4);
    cfg.switching = Switching::VirtualCutThrough;
    cfg.buffer_flits = 4;
    cfg.vcs = 2;
    let mut sim = Simulator::new(t.clone(), updown(&t), &cfg).unwrap();
    sim.send(0, 1, 4).unwrap();
    assert_eq!(drain(&mut sim).avg_latency, 2.0 * 25.0 + 3.0);
    cfg.buffer_flits = 3;
    assert!(Simulator::new(t.clone(), updown(&t), &cfg).is_err());
}

fn loaded(rate: f64, seed: u64) -> SimConfig {
    let mut c = SimConfig::paper_a(16, rate);
    c.warmup_cycles = 2_000;
    c.measure_cycles = 6_000;
    c.buffer_flits = 4;
    c.watchdog_cycles = 3_000;
    c.seed = seed;
    c
}

#[test]
fn same_seed_same_result() {
    let t = ring(6, 2);
    let run = |seed| {
        Simulator::new(t.clone(), updown(&t), &loaded(0.3, seed))
            .unwrap()
            .run()
            .unwrap()
    };
    let a = run(5);
    assert_eq!(a, run(5));
    let mut sim = Simulator::new(t.clone(), updown(&t), &loaded(0.3, 5)).unwrap();
    sim.run().unwrap();
    sim.audit().unwrap();
    assert_ne!(a, run(6));
    assert!(a.delivered_packets > 100);
}

#[test]
fn planted_cycle_deadlocks_checked_tables_do_not() {
    let t = ring(4, 2);
    let mut bad = Simulator::new(
        t.clone(),
        AnyRouting::Source(clockwise(&t)),
        &loaded(0.9, 1),
    )
    .unwrap();
    let err = bad.run().unwrap_err().to_string();
    assert!(err.starts_with("deadlock: no flit moved"), "{err}");
    assert!(err.contains("wait-for cycle"), "{err}");
    let r = Simulator::new(t.clone(), updown(&t), &loaded(0.9, 1))
        .unwrap()
        .run()
        .unwrap();
    assert!(r.accepted > 0.05, "{r:?}");
}

#[test]
fn accepted_follows_offered_below_saturation() {
    let t = ring(4, 2);
    let r = Simulator::new(t.clone(), updown(&t), &loaded(0.05, 2))
        .unwrap()
        .run()
        .unwrap();
    assert!((r.accepted - r.offered).abs() < 0.01, "{r:?}");
}

#[test]
fn adaptive_vct_under_load_conserves_flits() {
    let t = crate::topology::generate::TopologySpec::Irregular {
        switches: 10,
        ports: 8,
        hosts_per_switch: 4,
        seed: 3,
    }
    .build()
    .unwrap();
    let o = bfs_orientation(&t, 0);
    let routing = AnyRouting::Adaptive(crate::routing::AdaptiveRouting::new(&t, &o, true));
    let mut cfg = loaded(0.5, 9);
    cfg.switching = Switching::VirtualCutThrough;
    cfg.vcs = 2;
    cfg.buffer_flits = 32;
    let mut sim = Simulator::new(t, routing, &cfg).unwrap();
    for _ in 0..80 {
        for _ in 0..100 {
            sim.step().unwrap();
        }
        sim.audit().unwrap();
    }
    assert!(sim.result().delivered_packets > 500);
}

#[test]
fn link_failure_discards_the_crossing_worm() {
    // The header crosses the only link at cycle 25; at cycle 40 the worm spans it.
    let t = line(2, 1);
    let mut sim = Simulator::new(t.clone(), updown(&t), &quiet(32)).unwrap();
    sim.send(0, 1, 32).unwrap();
    while sim.now() < 40 {
        sim.step().unwrap();
    }
    sim.set_link(0, false).unwrap();
    sim.audit().unwrap();
    let r = drain(&mut sim);
    assert_eq!(r.delivered_packets, 0);
    assert_eq!(r.discarded.get("component_failure"), Some(&1));
    assert!(sim.set_link(1, false).is_err());
}

#[test]
fn link_failure_before_the_first_flit_reroutes() {
    // 0 -> 2 on a ring of four: granted the link to switch 1 at cycle 24, nothing sent yet at 25;
    // the link fails, the header gives the grant back and goes round through switch 3.
    let t = ring(4, 1);
    let mut sim = Simulator::new(t.clone(), updown(&t), &quiet(8)).unwrap();
    sim.send(0, 2, 8).unwrap();
    while sim.now() < 25 {
        sim.step().unwrap();
    }
    let l = t.find_link(0, 1).unwrap();
    let gp = sim.net.channel_port[t.channel(l, 0)] as usize;
    assert_ne!(
        sim.out_owner[gp],
        network::NONE,
        "the header holds the link"
    );
    sim.set_link(l, false).unwrap();
    let r = drain(&mut sim);
    assert_eq!(r.delivered_packets, 1);
    assert!(r.discarded.is_empty(), "{:?}", r.discarded);
    assert_eq!(r.avg_hops, 2.0);
    assert!(r.avg_latency > 3.0 * 25.0 + 7.0);
}
