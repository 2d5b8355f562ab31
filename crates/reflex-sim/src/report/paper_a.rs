//! Reproduction of Paper A (Sancho, Robles, Duato): Table 1 routing metrics of UD_BFS vs UD_DFS
//! on random networks of 9/16/32/64 switches, and saturation throughput under wormhole switching
//! with Myrinet timing for uniform, permutation and local traffic (seed000b.md §A.3).

use std::fmt::Write;

use serde::Serialize;

use super::plot::{Plot, Series};
use super::reproduce::{verdict, Ctx, Mode};
use crate::error::Result;
use crate::metrics::RoutingMetrics;
use crate::routing::{OrientationSpec, PathPolicy, RoutingSpec};
use crate::sim::sweep::{find_saturation, SweepPoint};
use crate::sim::{Lengths, Pattern, SimConfig};
use crate::topology::generate::TopologySpec;
use crate::topology::Topology;

/// Published Table 1: (switches, [avg dist BFS, DFS], [restr/node BFS, DFS], [long% BFS, DFS],
/// [diameter BFS, DFS], [crossing BFS, DFS]).
type Table1Row = (usize, [f64; 2], [f64; 2], [f64; 2], [f64; 2], [f64; 2]);
const TABLE1: [Table1Row; 4] = [
    (
        9,
        [1.583, 1.556],
        [3.774, 3.552],
        [5.0, 3.7],
        [3.0, 3.0],
        [12.0, 6.0],
    ),
    (
        16,
        [2.208, 2.108],
        [3.375, 3.125],
        [9.0, 4.0],
        [4.0, 4.0],
        [37.0, 23.0],
    ),
    (
        32,
        [3.102, 2.792],
        [3.562, 2.821],
        [21.0, 9.0],
        [7.0, 6.0],
        [173.0, 73.0],
    ),
    (
        64,
        [4.013, 3.634],
        [3.281, 2.687],
        [26.0, 14.0],
        [8.0, 7.0],
        [593.0, 204.0],
    ),
];

/// Published throughput ratios UD_DFS/UD_BFS (32-flit messages; `None` = not given).
const UNIFORM_RATIO: [(usize, Option<f64>); 4] = [
    (9, Some(1.17)),
    (16, None),
    (32, Some(1.65)),
    (64, Some(2.0)),
];

/// Throughput of one (topology, traffic) pair under both methods.
#[derive(Clone, Debug, Serialize)]
pub struct RatioResult {
    /// Topology label.
    pub topology: String,
    /// Traffic label.
    pub traffic: String,
    /// Saturation throughput of UD_BFS, flits/cycle/host.
    pub bfs: f64,
    /// Saturation throughput of UD_DFS, flits/cycle/host.
    pub dfs: f64,
    /// Sweeps (BFS, DFS).
    #[serde(skip)]
    pub sweeps: [Vec<SweepPoint>; 2],
}

impl RatioResult {
    /// UD_DFS / UD_BFS.
    pub fn ratio(&self) -> f64 {
        self.dfs / self.bfs.max(1e-12)
    }
}

fn irregular(n: usize, seed: u64) -> TopologySpec {
    TopologySpec::Irregular {
        switches: n,
        ports: 8,
        hosts_per_switch: 4,
        seed,
    }
}

fn source(o: OrientationSpec) -> RoutingSpec {
    RoutingSpec::Source {
        orientation: o,
        policy: PathPolicy::LeastLoaded,
        seed: 0,
    }
}

/// Mean Table 1 metrics over `seeds` for both methods; also returns the seed whose crossing-path
/// ratio DFS/BFS is the median (the "average behaviour" topology used for simulation).
fn table1_size(n: usize, seeds: u64) -> Result<([RoutingMetrics; 2], Vec<u64>)> {
    let mut sums: Vec<[f64; 6]> = vec![[0.0; 6]; 2];
    let mut ratios = Vec::new();
    let mut last = None;
    for seed in 0..seeds {
        let t = irregular(n, seed).build()?;
        let mut cross = [0.0; 2];
        for (i, o) in [OrientationSpec::UdBfs, OrientationSpec::UdDfs]
            .into_iter()
            .enumerate()
        {
            let b = source(o).build(&t, false)?;
            let m = RoutingMetrics::compute(&t, &b.orientation, &b.paths);
            let v = [
                m.avg_distance,
                m.restrictions_per_node,
                m.long_paths_pct,
                m.diameter as f64,
                m.crossing_paths as f64,
                m.avg_topological_distance,
            ];
            for k in 0..6 {
                sums[i][k] += v[k] / seeds as f64;
            }
            cross[i] = m.crossing_paths as f64;
            last = Some(m);
        }
        ratios.push((cross[1] / cross[0].max(1.0), seed));
    }
    ratios.sort_by(|a, b| a.0.total_cmp(&b.0));
    let order: Vec<u64> = {
        let mid = ratios.len() / 2;
        let mut o: Vec<(usize, u64)> = ratios
            .iter()
            .enumerate()
            .map(|(i, r)| (i.abs_diff(mid), r.1))
            .collect();
        o.sort();
        o.into_iter().map(|x| x.1).collect()
    };
    let base = last.ok_or_else(|| crate::error::SimError::invalid("no seeds"))?;
    let mk = |s: &[f64; 6]| RoutingMetrics {
        avg_distance: s[0],
        restrictions_per_node: s[1],
        long_paths_pct: s[2],
        diameter: s[3].round() as u32,
        crossing_paths: s[4].round() as u32,
        avg_topological_distance: s[5],
        ..base.clone()
    };
    Ok(([mk(&sums[0]), mk(&sums[1])], order))
}

fn throughput(ctx: &Ctx, t: &Topology, label: &str, cfg: &SimConfig) -> Result<RatioResult> {
    let mut sats = [0.0; 2];
    let mut sweeps = [Vec::new(), Vec::new()];
    for (i, o) in [OrientationSpec::UdBfs, OrientationSpec::UdDfs]
        .into_iter()
        .enumerate()
    {
        let b = source(o).build(t, false)?;
        let (sat, pts) = find_saturation(t, &b.routing, &b.paths, cfg, ctx.points, &ctx.bar)?;
        sats[i] = sat;
        sweeps[i] = pts;
    }
    Ok(RatioResult {
        topology: format!("{} switches", t.switches()),
        traffic: label.into(),
        bfs: sats[0],
        dfs: sats[1],
        sweeps,
    })
}

fn plot(r: &RatioResult, cycle_ns: f64, hosts_per_switch: f64) -> Plot {
    let conv = |p: &SweepPoint| {
        (
            p.result.accepted * hosts_per_switch / cycle_ns,
            p.result.avg_latency_ns,
        )
    };
    Plot {
        title: format!("{}, {}", r.topology, r.traffic),
        x_label: "accepted traffic (flits/ns/switch)".into(),
        y_label: "average message latency (ns)".into(),
        series: vec![
            Series {
                label: "UD_BFS".into(),
                points: r.sweeps[0].iter().map(conv).collect(),
            },
            Series {
                label: "UD_DFS".into(),
                points: r.sweeps[1].iter().map(conv).collect(),
            },
        ],
        y_max: Some(
            5.0 * r
                .sweeps
                .iter()
                .flatten()
                .map(|p| p.result.avg_latency_ns)
                .fold(f64::MAX, f64::min),
        ),
    }
}

/// Runs the Paper A section and appends it to the report.
pub fn run(ctx: &mut Ctx) -> Result<()> {
    let seeds = ctx.pick(1, 4, 10);
    let mut md = String::from("## Paper A: UD_DFS vs UD_BFS (Sancho, Robles, Duato)\n\n");
    let _ = writeln!(md, "### Table 1: routing metrics (mean of {seeds} random topologies per size; published / ours)\n");
    md.push_str("| Switches | Avg dist BFS | Avg dist DFS | Restr/node BFS | Restr/node DFS | Long paths BFS | Long paths DFS | Diameter BFS | Diameter DFS | Crossing BFS | Crossing DFS |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
    let mut all_lower = true;
    let mut picked = Vec::new();
    for (n, ad, rn, lp, di, cr) in TABLE1 {
        ctx.bar.set_message(format!("table 1, {n} switches"));
        let ([b, d], order) = table1_size(n, seeds)?;
        all_lower &= d.avg_distance < b.avg_distance
            && d.restrictions_per_node < b.restrictions_per_node
            && d.crossing_paths < b.crossing_paths;
        let _ = writeln!(
            md,
            "| {n} | {:.3} / {:.3} | {:.3} / {:.3} | {:.3} / {:.3} | {:.3} / {:.3} | {}% / {:.1}% | {}% / {:.1}% | {} / {} | {} / {} | {} / {} | {} / {} |",
            ad[0], b.avg_distance, ad[1], d.avg_distance, rn[0], b.restrictions_per_node, rn[1], d.restrictions_per_node,
            lp[0], b.long_paths_pct, lp[1], d.long_paths_pct, di[0], b.diameter, di[1], d.diameter, cr[0], b.crossing_paths, cr[1], d.crossing_paths
        );
        ctx.json.insert(
            format!("a_table1_{n}"),
            serde_json::json!({"bfs": b, "dfs": d}),
        );
        picked.push((n, order));
    }
    let _ = writeln!(md, "\nExpectation: UD_DFS below UD_BFS in average distance, restrictions and crossing paths at every size: **{}**.\n", verdict(all_lower));
    ctx.check(
        "A: UD_DFS < UD_BFS in avg distance, restrictions, crossing paths (9/16/32/64)",
        all_lower,
    );

    let topo_count = ctx.pick(1, 1, 3);
    // Smoke runs simulate only the small networks.
    let max_size = ctx.pick(16, usize::MAX, usize::MAX);
    md.push_str(
        "### Saturation throughput, uniform traffic, 32-flit messages (UD_DFS / UD_BFS)\n\n",
    );
    md.push_str("| Switches | Topologies (seeds) | UD_BFS (flits/cycle/host) | UD_DFS | Ratio ours (min-max) | Ratio published |\n|---|---|---|---|---|---|\n");
    let mut ratios = Vec::new();
    for ((n, order), (_, published)) in picked
        .iter()
        .zip(UNIFORM_RATIO)
        .filter(|p| p.0 .0 <= max_size)
    {
        ctx.bar
            .set_message(format!("uniform traffic, {n} switches"));
        let mut rs = Vec::new();
        for &seed in order.iter().take(topo_count) {
            let t = irregular(*n, seed).build()?;
            let r = throughput(
                ctx,
                &t,
                "uniform, 32 flits",
                &ctx.sim_a(32, Pattern::Uniform),
            )?;
            if rs.is_empty() {
                ctx.write_plot(&format!("a_uniform_{n}"), &plot(&r, 6.25, 4.0))?;
                ctx.write_csv(&format!("a_uniform_{n}"), &r.sweeps)?;
            }
            rs.push(r);
        }
        let mean =
            |f: &dyn Fn(&RatioResult) -> f64| rs.iter().map(f).sum::<f64>() / rs.len() as f64;
        let (lo, hi) = rs
            .iter()
            .map(RatioResult::ratio)
            .fold((f64::MAX, 0.0f64), |(a, b), x| (a.min(x), b.max(x)));
        let ratio = mean(&RatioResult::ratio);
        let seeds: Vec<String> = order
            .iter()
            .take(topo_count)
            .map(|s| s.to_string())
            .collect();
        let _ = writeln!(
            md,
            "| {n} | {} | {:.4} | {:.4} | ×{ratio:.2} ({lo:.2}-{hi:.2}) | {} |",
            seeds.join(","),
            mean(&|r| r.bfs),
            mean(&|r| r.dfs),
            published.map_or("(figure only)".into(), |p| format!("×{p:.2}"))
        );
        ctx.json.insert(
            format!("a_uniform_{n}"),
            serde_json::to_value(&rs).unwrap_or_default(),
        );
        ratios.push(ratio);
    }
    let growing = ratios.windows(2).filter(|w| w[1] >= w[0] * 0.95).count()
        >= ratios.len().saturating_sub(2)
        && ratios[ratios.len() - 1] > ratios[0];
    let _ = writeln!(md, "\nExpectation: ratio > 1 everywhere and growing with size (×1.17 at 9 to ×2 at 64): **{}** (ours: {}).\n",
        verdict(ratios.iter().all(|&r| r > 1.0) && growing),
        ratios.iter().map(|r| format!("×{r:.2}")).collect::<Vec<_>>().join(", "));
    ctx.check(
        "A: throughput ratio UD_DFS/UD_BFS > 1 and growing with size",
        ratios.iter().all(|&r| r > 1.0) && growing,
    );

    patterns(ctx, &mut md, &picked)?;
    ctx.md.push_str(&md);
    Ok(())
}

fn lengths_is_short(cfg: &SimConfig) -> bool {
    cfg.traffic.lengths.max() <= 32
}

fn patterns(ctx: &mut Ctx, md: &mut String, picked: &[(usize, Vec<u64>)]) -> Result<()> {
    // The published ratios are for 32 switches; smoke runs use 16.
    let size = ctx.pick(16, 32, 32);
    let seed = picked
        .iter()
        .find(|p| p.0 == size)
        .and_then(|p| p.1.first().copied())
        .unwrap_or(0);
    let t = irregular(size, seed).build()?;
    let mut cases: Vec<(&str, Pattern, Lengths, Option<f64>)> = vec![
        (
            "bit-reversal",
            Pattern::BitReversal,
            Lengths::Fixed { flits: 32 },
            Some(2.0),
        ),
        (
            "perfect shuffle",
            Pattern::PerfectShuffle,
            Lengths::Fixed { flits: 32 },
            Some(1.8),
        ),
        (
            "matrix transpose",
            Pattern::Transpose,
            Lengths::Fixed { flits: 32 },
            Some(2.1),
        ),
        (
            "local (60% within 5 links = 3 switch hops)",
            Pattern::Local {
                radius: 3,
                fraction: 0.6,
            },
            Lengths::Fixed { flits: 32 },
            Some(1.15),
        ),
    ];
    if ctx.mode == Mode::Smoke {
        // One permutation and the local pattern are enough to run every step.
        cases.retain(|c| matches!(c.1, Pattern::BitReversal | Pattern::Local { .. }));
    }
    if ctx.mode == Mode::Full {
        cases.push((
            "uniform, 512 flits",
            Pattern::Uniform,
            Lengths::Fixed { flits: 512 },
            None,
        ));
        cases.push((
            "uniform, bimodal 75%x32 + 25%x512",
            Pattern::Uniform,
            Lengths::Bimodal {
                short: 32,
                long: 512,
                long_fraction: 0.25,
            },
            None,
        ));
    }
    let _ = writeln!(md, "### Other traffic, {size} switches (seed {seed})\n\n| Traffic | UD_BFS | UD_DFS | Ratio ours | Ratio published |\n|---|---|---|---|---|");
    let mut ok = true;
    let mut gains: Vec<(bool, f64)> = Vec::new();
    for (i, (label, pattern, lengths, published)) in cases.into_iter().enumerate() {
        let is_local = matches!(pattern, Pattern::Local { .. });
        ctx.bar.set_message(format!("{label}, {size} switches"));
        let mut cfg = ctx.sim_a(32, pattern);
        if lengths.max() > 32 {
            cfg.measure_cycles *= 3;
            cfg.warmup_cycles *= 2;
        }
        cfg.traffic.lengths = lengths;
        let r = throughput(ctx, &t, label, &cfg)?;
        ctx.write_plot(&format!("a_traffic_{i}"), &plot(&r, 6.25, 4.0))?;
        ok &= r.ratio() > 1.0;
        if lengths_is_short(&cfg) {
            gains.push((is_local, r.ratio()));
        }
        let _ = writeln!(
            md,
            "| {label} | {:.4} | {:.4} | ×{:.2} | {} |",
            r.bfs,
            r.dfs,
            r.ratio(),
            published.map_or("\"slightly smaller gain\"".into(), |p| format!("×{p:.2}"))
        );
        ctx.json.insert(
            format!("a_traffic_{i}"),
            serde_json::to_value(&r).unwrap_or_default(),
        );
    }
    let dist = t.distance_matrix();
    let n = t.switches();
    let near = (0..n)
        .flat_map(|s| (0..n).map(move |d| (s, d)))
        .filter(|&(s, d)| s != d && dist[s][d] <= 3)
        .count();
    let local_gain = gains.iter().find(|g| g.0).map_or(0.0, |g| g.1);
    let local_smallest = gains.iter().all(|g| g.0 || g.1 >= local_gain);
    let _ = writeln!(
        md,
        "\nExpectations: UD_DFS ahead for every pattern: **{}**; smallest gain for local traffic: **{}** \
         ({:.0}% of the other switches are within 3 hops in this network, so local traffic is only mildly local).\n",
        verdict(ok),
        verdict(local_smallest),
        100.0 * near as f64 / (n * (n - 1)) as f64
    );
    ctx.check(
        &format!("A: UD_DFS ahead for permutation and local traffic at {size} switches"),
        ok,
    );
    ctx.check(
        "A: smallest UD_DFS gain for local traffic (paper: +15%)",
        local_smallest,
    );
    Ok(())
}
