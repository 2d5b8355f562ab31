//! Reproduction of Paper C (Bermúdez et al.): the root switch (switch 0) is switched off and on
//! again while uniform traffic flows through a VCT network with adaptive routing and an
//! up*/down* escape VC; static (Autonet) and dynamic (TT + PPR) reconfiguration are compared by
//! instantaneous latency, discarded packets, reconfiguration time and control messages
//! (seed000b.md §C.3; the paper gives figures only).

use std::fmt::Write;

use rayon::prelude::*;

use super::plot::{Plot, Series};
use super::reproduce::{verdict, Ctx};
use crate::error::Result;
use crate::reconfig::{run_with_events, ControlTiming, Event, EventKind, ReconfigResult, Strategy};
use crate::rng::SimRng;
use crate::routing::{LegalPaths, OrientationSpec, PathPolicy, PathSet};
use crate::sim::sweep::load_bound;
use crate::sim::{Lengths, SimConfig, Switching};
use crate::topology::generate::TopologySpec;
use crate::topology::Topology;

/// A topology of `n` switches that stays connected without switch 0.
fn topology(n: usize) -> Result<(u64, Topology)> {
    let mut seed = 0;
    loop {
        let t = TopologySpec::Irregular {
            switches: n,
            ports: 8,
            hosts_per_switch: 4,
            seed,
        }
        .build()?;
        let mut without = t.clone();
        without.set_switch(0, false)?;
        if without.is_connected() || seed > 1000 {
            return Ok((seed, t));
        }
        seed += 1;
    }
}

fn config(ctx: &Ctx, t: &Topology) -> Result<(SimConfig, [u64; 2])> {
    let mut c = SimConfig::paper_a(16, 0.0);
    c.switching = Switching::VirtualCutThrough;
    c.vcs = 2;
    c.buffer_flits = 32;
    c.traffic.lengths = Lengths::Fixed { flits: 16 };
    let (down, up, end, window) = ctx.pick(
        (2_000, 7_000, 10_000, 250),
        (20_000, 40_000, 60_000, 250),
        (150_000, 200_000, 250_000, 250),
    );
    c.warmup_cycles = 0;
    c.measure_cycles = end;
    c.window_cycles = window;
    let o = OrientationSpec::Mdst.orient(t)?;
    let paths = PathSet::select(
        t,
        &LegalPaths::new(t, &o),
        PathPolicy::LeastLoaded,
        &mut SimRng::new(0),
    );
    // The paper does not state the load; a third of the up*/down* bound keeps the network
    // unsaturated before the change.
    c.traffic.rate = 0.33 * load_bound(t, &paths, &c, 64)?;
    Ok((c, [down, up]))
}

fn discarded(r: &ReconfigResult) -> u64 {
    r.sim
        .discarded
        .iter()
        .filter(|(k, _)| k.as_str() != "destination_down")
        .map(|(_, v)| v)
        .sum()
}

/// Windows without any delivery between the failure and the end of its reconfiguration.
fn silent_windows(r: &ReconfigResult, down: u64) -> usize {
    let end = down + r.reconfigurations.first().map_or(0, |x| x.duration);
    r.sim
        .series
        .iter()
        .filter(|w| w.start >= down && w.start < end && w.delivered == 0)
        .count()
}

/// Runs the Paper C section and appends it to the report.
pub fn run(ctx: &mut Ctx) -> Result<()> {
    let sizes: &[usize] = ctx.pick(&[16], &[16, 32], &[16, 24, 32, 48, 64]);
    ctx.bar.set_message("paper C: reconfiguration runs");
    let timing = ControlTiming::default();
    let jobs: Vec<(usize, Strategy)> = sizes
        .iter()
        .flat_map(|&n| [(n, Strategy::Static), (n, Strategy::Dynamic)])
        .collect();
    let results: Vec<(usize, Strategy, u64, [u64; 2], ReconfigResult)> = jobs
        .par_iter()
        .map(|&(n, strategy)| {
            let (seed, t) = topology(n)?;
            let (cfg, [down, up]) = config(ctx, &t)?;
            let events = [
                Event {
                    at: down,
                    kind: EventKind::SwitchDown { switch: 0 },
                },
                Event {
                    at: up,
                    kind: EventKind::SwitchUp { switch: 0 },
                },
            ];
            let r = run_with_events(&t, &OrientationSpec::Mdst, &cfg, &events, strategy, &timing)?;
            Ok((n, strategy, seed, [down, up], r))
        })
        .collect::<Result<_>>()?;
    let mut md = String::from(
        "## Paper C: static vs dynamic reconfiguration (Bermúdez et al.)\n\n\
         Root switch 0 is switched off and on again; VCT, 2 VCs (adaptive + MDST up*/down* escape), \
         16-flit packets, uniform traffic at a third of the up*/down* load bound. Discards exclude \
         packets addressed to the hosts of the switch that is off (`destination_down`, the same for both).\n\n\
         | Switches | Discarded static | Discarded dynamic | Reconf. time static (cycles) | dynamic | Control msgs static | dynamic | PPR rounds | Steps verified |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    let (mut fewer, mut flowing, mut stopped, mut faster) = (true, true, true, true);
    let mut disc_series = [Vec::new(), Vec::new()];
    let mut time_series = [Vec::new(), Vec::new()];
    for &n in sizes {
        let get = |s: Strategy| results.iter().find(|r| r.0 == n && r.1 == s);
        let (Some(st), Some(dy)) = (get(Strategy::Static), get(Strategy::Dynamic)) else {
            continue;
        };
        let (rs, rd) = (&st.4, &dy.4);
        let down = st.3[0];
        let (ts, td) = (
            rs.reconfigurations[0].duration,
            rd.reconfigurations[0].duration,
        );
        let _ = writeln!(
            md,
            "| {n} (seed {}) | {} {:?} | {} {:?} | {ts} | {td} | {} | {} | {} | {} |",
            st.2,
            discarded(rs),
            rs.sim.discarded,
            discarded(rd),
            rd.sim.discarded,
            rs.reconfigurations[0].control_messages,
            rd.reconfigurations[0].control_messages,
            rd.reconfigurations
                .iter()
                .map(|r| r.ppr_rounds)
                .sum::<u64>(),
            rd.reconfigurations
                .iter()
                .map(|r| r.steps_checked)
                .sum::<u64>()
        );
        fewer &= discarded(rd) < discarded(rs);
        flowing &= silent_windows(rd, down) == 0;
        stopped &= silent_windows(rs, down) > 0;
        faster &= td < ts;
        disc_series[0].push((n as f64, discarded(rs) as f64));
        disc_series[1].push((n as f64, discarded(rd) as f64));
        time_series[0].push((n as f64, ts as f64));
        time_series[1].push((n as f64, td as f64));
        ctx.json.insert(
            format!("c_{n}"),
            serde_json::json!({"static": rs, "dynamic": rd}),
        );
        if n == 32 || n == 48 || sizes.len() == 1 {
            let line = |r: &ReconfigResult| {
                r.sim
                    .series
                    .iter()
                    .map(|w| (w.start as f64, w.avg_latency))
                    .collect()
            };
            ctx.write_plot(
                &format!("c_latency_{n}"),
                &Plot {
                    title: format!("{n} switches: root off at {}, on at {}", st.3[0], st.3[1]),
                    x_label: "simulation time (cycles)".into(),
                    y_label: "instantaneous latency (cycles)".into(),
                    series: vec![
                        Series {
                            label: "static".into(),
                            points: line(rs),
                        },
                        Series {
                            label: "dynamic".into(),
                            points: line(rd),
                        },
                    ],
                    y_max: None,
                },
            )?;
        }
    }
    let labels = ["static", "dynamic"];
    let series = |data: &[Vec<(f64, f64)>; 2]| -> Vec<Series> {
        data.iter()
            .zip(labels)
            .map(|(d, l)| Series {
                label: l.into(),
                points: d.clone(),
            })
            .collect()
    };
    ctx.write_plot(
        "c_discarded",
        &Plot {
            title: "discarded packets (root switch off and on)".into(),
            x_label: "switches".into(),
            y_label: "packets".into(),
            series: series(&disc_series),
            y_max: None,
        },
    )?;
    ctx.write_plot(
        "c_reconf_time",
        &Plot {
            title: "reconfiguration time (root switch off)".into(),
            x_label: "switches".into(),
            y_label: "cycles".into(),
            series: series(&time_series),
            y_max: None,
        },
    )?;
    let _ = writeln!(
        md,
        "\nExpectations: static stops traffic (a window without deliveries): **{}**; dynamic keeps traffic flowing: **{}**; \
         dynamic discards fewer packets at every size: **{}**; dynamic reconfigures faster (paper's Fig. 7): **{}**. \
         Plots (`.svg` and `.png`): `c_latency_*` (Figs. 4-5), `c_discarded` (Fig. 6), `c_reconf_time` (Fig. 7).\n",
        verdict(stopped),
        verdict(flowing),
        verdict(fewer),
        verdict(faster)
    );
    ctx.check("C: static reconfiguration stops traffic", stopped);
    ctx.check("C: dynamic reconfiguration keeps traffic flowing", flowing);
    ctx.check("C: dynamic discards fewer packets than static", fewer);
    ctx.check(
        "C: dynamic reconfiguration takes less time than static",
        faster,
    );
    ctx.md.push_str(&md);
    Ok(())
}
