//! Injection-rate sweeps: one simulation per offered load, run in parallel (rayon), each with its
//! own RNG stream derived from the configured seed and the point index, so results do not depend
//! on thread scheduling. The saturation throughput is the largest accepted traffic of the sweep
//! (the peak of the latency/accepted-traffic curve, as Paper A reads its plots).

use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use serde::Serialize;

use super::engine::Simulator;
use super::stats::SimResult;
use super::SimConfig;
use crate::error::Result;
use crate::rng::SimRng;
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
