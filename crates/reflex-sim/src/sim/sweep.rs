//! Injection-rate sweeps: one simulation per offered load, run in parallel (rayon), each with its
//! own RNG stream derived from the configured seed and the point index, so results do not depend
//! on thread scheduling. The saturation throughput is the largest accepted traffic of the sweep
//! (the peak of the latency/accepted-traffic curve, as Paper A reads its plots).

use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use serde::Serialize;

use super::engine::Simulator;
use super::stats::SimResult;
use super::traffic::TrafficGen;
use super::SimConfig;
use crate::error::Result;
use crate::rng::SimRng;
use crate::routing::paths::PathSet;
use crate::routing::tables::AnyRouting;
use crate::topology::Topology;

/// One point of a sweep.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SweepPoint {
    /// Offered load requested, flits/cycle/host.
    pub rate: f64,
    /// Measurements.
    pub result: SimResult,
}

/// `count` evenly spaced rates from `max/count` to `max`.
pub fn linear_rates(max: f64, count: usize) -> Vec<f64> {
    (1..=count).map(|i| max * i as f64 / count as f64).collect()
}

/// A progress bar for `len` steps, hidden when `show` is false or stderr is not a terminal.
pub fn progress_bar(len: u64, label: &str, show: bool) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template(
        "{prefix:>12} [{bar:30}] {pos}/{len} {elapsed_precise} eta {eta}",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_prefix(label.to_string());
    bar
}

/// Runs one simulation per rate in parallel.
pub fn sweep(
    topo: &Topology,
    routing: &AnyRouting,
    base: &SimConfig,
    rates: &[f64],
    bar: &ProgressBar,
) -> Result<Vec<SweepPoint>> {
    rates
        .par_iter()
        .enumerate()
        .map(|(i, &rate)| {
            let mut cfg = base.clone();
            cfg.traffic.rate = rate;
            cfg.seed = SimRng::derive(base.seed, i as u64).next_u64();
            let result = Simulator::new(topo.clone(), routing.clone(), &cfg)?.run();
            bar.inc(1);
            Ok(SweepPoint {
                rate,
                result: result?,
            })
        })
        .collect()
}

/// Largest accepted traffic of a sweep (flits/cycle/host).
pub fn saturation(points: &[SweepPoint]) -> f64 {
    points.iter().map(|p| p.result.accepted).fold(0.0, f64::max)
}

/// Upper bound on the offered load (flits/cycle/host) that `paths` can carry under the traffic of
/// `cfg`: destinations are sampled from the pattern (`samples` per host), each host pair uses its
/// switch path plus the two host links, and the busiest channel must carry at most one flit per
/// cycle. Used to place sweep points; wormhole saturates below it.
pub fn load_bound(
    topo: &Topology,
    paths: &PathSet,
    cfg: &SimConfig,
    samples: usize,
) -> Result<f64> {
    let mut rng = SimRng::new(cfg.seed);
    let gen = TrafficGen::new(topo, &cfg.traffic, &mut rng)?;
    let hosts = topo.hosts();
    let mut load = vec![0.0f64; topo.channels()];
    let mut eject = vec![0.0f64; hosts];
    let per = 1.0 / samples.max(1) as f64;
    for h in 0..hosts {
        for _ in 0..samples {
            let Some(d) = gen.destination(h, &mut rng) else {
                continue;
            };
            eject[d] += per;
            for &c in paths.path(topo.host_switch(h), topo.host_switch(d)) {
                load[c] += per;
            }
        }
    }
    let max = load.iter().chain(eject.iter()).copied().fold(1.0, f64::max);
    Ok(1.0 / max)
}

/// Saturation search: a coarse sweep of `points` loads from 20% to 100% of [`load_bound`], then
/// `points / 2` loads refining around the best one. Returns all points sorted by rate.
pub fn find_saturation(
    topo: &Topology,
    routing: &AnyRouting,
    paths: &PathSet,
    cfg: &SimConfig,
    points: usize,
    bar: &ProgressBar,
) -> Result<(f64, Vec<SweepPoint>)> {
    let bound = load_bound(topo, paths, cfg, 64)?;
    let points = points.max(2);
    let coarse: Vec<f64> = (0..points)
        .map(|i| bound * (0.2 + 0.8 * i as f64 / (points - 1) as f64))
        .collect();
    let mut all = sweep(topo, routing, cfg, &coarse, bar)?;
    let best = all
        .iter()
        .max_by(|a, b| a.result.accepted.total_cmp(&b.result.accepted))
        .map_or(bound, |p| p.rate);
    let step = bound * 0.8 / (points - 1) as f64;
    let fine: Vec<f64> = (1..=points / 2)
        .map(|i| best - step + 2.0 * step * i as f64 / (points / 2 + 1) as f64)
        .collect();
    let mut cfg2 = cfg.clone();
    cfg2.seed = cfg.seed.wrapping_add(7919);
    all.extend(sweep(topo, routing, &cfg2, &fine, bar)?);
    all.sort_by(|a, b| a.rate.total_cmp(&b.rate));
    Ok((saturation(&all), all))
}

/// CSV of a sweep (`label` goes in the first column).
pub fn to_csv(label: &str, points: &[SweepPoint]) -> String {
    let mut out = String::new();
    for p in points {
        let r = &p.result;
        out.push_str(&format!(
            "{label},{:.5},{:.5},{:.5},{:.6},{:.2},{:.2},{},{:.3}\n",
            p.rate,
            r.offered,
            r.accepted,
            r.accepted_flits_ns_switch,
            r.avg_latency,
            r.avg_latency_ns,
            r.delivered_packets,
            r.avg_hops
        ));
    }
    out
}

/// Header line matching [`to_csv`].
pub const CSV_HEADER: &str =
    "label,rate,offered_flits_cycle_host,accepted_flits_cycle_host,accepted_flits_ns_switch,latency_cycles,latency_ns,delivered,avg_hops\n";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routing::tables::TableRouting;
    use crate::routing::trees::bfs_orientation;
    use crate::topology::tests::ring;

    #[test]
    fn sweep_is_deterministic_and_saturates() {
        let t = ring(4, 2);
        let r = AnyRouting::Table(TableRouting::all_shortest(
            &t,
            &bfs_orientation(&t, 0),
            0,
            false,
        ));
        let mut cfg = SimConfig::paper_a(16, 0.0);
        cfg.warmup_cycles = 1_000;
        cfg.measure_cycles = 3_000;
        let rates = linear_rates(0.8, 4);
        let a = sweep(&t, &r, &cfg, &rates, &ProgressBar::hidden()).unwrap();
        let b = sweep(&t, &r, &cfg, &rates, &ProgressBar::hidden()).unwrap();
        assert_eq!(a, b);
        let sat = saturation(&a);
        assert!(sat > 0.1 && sat < 0.8, "{sat}");
        assert_eq!(to_csv("x", &a).lines().count(), 4);
    }
}
