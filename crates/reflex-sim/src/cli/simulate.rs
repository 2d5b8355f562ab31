//! `reflex-sim simulate`: an experiment (topology, routing, simulation parameters, load sweep,
//! timed switch/link events) from a JSON file or from command-line flags, and its outputs
//! (JSON, CSV, latency plots as SVG and PNG).

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use serde::{Deserialize, Serialize};

use super::{RoutingArgs, TopoArgs};
use crate::error::{Result, SimError};
use crate::reconfig::{run_with_events, ControlTiming, Event, EventKind, Strategy};
use crate::report::plot::{Plot, Series};
use crate::report::{to_json, write_file, write_plot};
use crate::routing::RoutingSpec;
use crate::sim::sweep::{linear_rates, progress_bar, saturation, sweep, to_csv, CSV_HEADER};
use crate::sim::{Lengths, Pattern, SimConfig, Simulator, Switching};
use crate::topology::generate::TopologySpec;

/// A complete experiment as a JSON file (unknown keys are rejected).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Experiment {
    /// Network.
    pub topology: TopologySpec,
    /// Routing.
    pub routing: RoutingSpec,
    /// Simulation parameters.
    pub sim: SimConfig,
    /// Offered loads to sweep (empty: only `sim.traffic.rate`).
    #[serde(default)]
    pub rates: Vec<f64>,
    /// Topology changes during the run (needs virtual cut-through; the routing becomes adaptive
    /// with the routing's orientation as escape).
    #[serde(default)]
    pub events: Vec<Event>,
    /// How the events are handled.
    #[serde(default = "default_strategy")]
    pub reconfiguration: Strategy,
    /// Control-plane timing.
    #[serde(default)]
    pub control: ControlTiming,
}

fn default_strategy() -> Strategy {
    Strategy::Dynamic
}

/// Arguments of `simulate`.
#[derive(Args, Debug, Clone)]
pub struct SimulateArgs {
    /// Experiment file (JSON); the other options build one when it is absent.
    #[arg(long)]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub topo: TopoArgs,
    #[command(flatten)]
    pub routing: RoutingArgs,
    /// Switching technique.
    #[arg(long, value_enum, default_value_t = SwitchingArg::Wormhole)]
    pub switching: SwitchingArg,
    /// Traffic pattern.
    #[arg(long, value_enum, default_value_t = PatternArg::Uniform)]
    pub pattern: PatternArg,
    /// Message length in flits.
    #[arg(long, default_value_t = 32)]
    pub flits: u32,
    /// Offered load, flits/cycle/host.
    #[arg(long, default_value_t = 0.05)]
    pub rate: f64,
    /// Sweep this many loads up to --rate.
    #[arg(long)]
    pub sweep: Option<usize>,
    /// Warm-up cycles.
    #[arg(long, default_value_t = 20_000)]
    pub warmup: u64,
    /// Measured cycles.
    #[arg(long, default_value_t = 50_000)]
    pub cycles: u64,
    /// Seed of the simulation.
    #[arg(long, default_value_t = 1)]
    pub sim_seed: u64,
    /// Directory for result.json, sweep.csv and the latency plot (SVG and PNG).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Switch this switch off at --fail-at (and on again at --restore-at, if given).
    #[arg(long)]
    pub fail_switch: Option<usize>,
    /// Take the link between switches A and B down at --fail-at (and up again at --restore-at,
    /// if given), written `A-B`.
    #[arg(long, value_name = "A-B", value_parser = parse_link)]
    pub fail_link: Option<(usize, usize)>,
    /// Cycle of the failure.
    #[arg(long, default_value_t = 30_000)]
    pub fail_at: u64,
    /// Cycle the failed switch or link comes back.
    #[arg(long)]
    pub restore_at: Option<u64>,
    /// Reconfiguration technique for --fail-switch and --fail-link.
    #[arg(long, value_enum, default_value_t = ReconfigArg::Dynamic)]
    pub reconfig: ReconfigArg,
    /// Time-series window in cycles (0 = none).
    #[arg(long, default_value_t = 0)]
    pub window: u64,
    /// Print the experiment as JSON (a starting point for --config) and exit.
    #[arg(long)]
    pub print_config: bool,
}

/// Parses `A-B` (the link between switches A and B).
fn parse_link(text: &str) -> std::result::Result<(usize, usize), String> {
    let bad = || format!("expected A-B (two switch numbers), got {text:?}");
    let (a, b) = text.split_once('-').ok_or_else(bad)?;
    let num = |x: &str| x.trim().parse::<usize>().map_err(|_| bad());
    let (a, b) = (num(a)?, num(b)?);
    if a == b {
        return Err(format!("a link joins two different switches, got {text:?}"));
    }
    Ok((a, b))
}

/// Reconfiguration techniques on the command line.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum ReconfigArg {
    /// Autonet-style: stop, flush, recompute, restart.
    Static,
    /// Topology Task + Partial Progressive Reconfiguration.
    Dynamic,
}

/// Switching on the command line.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum SwitchingArg {
    /// Wormhole.
    Wormhole,
    /// Virtual cut-through.
    Vct,
}

/// Patterns on the command line.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum PatternArg {
    /// Uniform.
    Uniform,
    /// Bit reversal.
    BitReversal,
    /// Perfect shuffle.
    Shuffle,
    /// Matrix transpose.
    Transpose,
    /// 60% within 5 links (host links included, i.e. 3 switch hops).
    Local,
}

impl SimulateArgs {
    fn experiment(&self) -> Result<Experiment> {
        if let Some(path) = &self.config {
            let text = std::fs::read_to_string(path)
                .map_err(|e| SimError::io(format!("reading {}", path.display()), e))?;
            return serde_json::from_str(&text).map_err(|e| {
                SimError::parse(
                    &path.display().to_string(),
                    e.line(),
                    e.to_string().to_lowercase(),
                )
            });
        }
        let mut sim = SimConfig::paper_a(self.flits, self.rate);
        sim.warmup_cycles = self.warmup;
        sim.measure_cycles = self.cycles;
        sim.seed = self.sim_seed;
        if let SwitchingArg::Vct = self.switching {
            sim.switching = Switching::VirtualCutThrough;
            sim.vcs = 2;
            sim.buffer_flits = sim.buffer_flits.max(2 * self.flits);
        }
        sim.traffic.lengths = Lengths::Fixed { flits: self.flits };
        sim.traffic.pattern = match self.pattern {
            PatternArg::Uniform => Pattern::Uniform,
            PatternArg::BitReversal => Pattern::BitReversal,
            PatternArg::Shuffle => Pattern::PerfectShuffle,
            PatternArg::Transpose => Pattern::Transpose,
            PatternArg::Local => Pattern::Local {
                radius: 3,
                fraction: 0.6,
            },
        };
        sim.window_cycles = self.window;
        let rates = self
            .sweep
            .map(|n| linear_rates(self.rate, n))
            .unwrap_or_default();
        let mut events = Vec::new();
        let mut fail = |down: EventKind, up: EventKind| {
            events.push(Event {
                at: self.fail_at,
                kind: down,
            });
            if let Some(at) = self.restore_at {
                events.push(Event { at, kind: up });
            }
        };
        if let Some(switch) = self.fail_switch {
            fail(
                EventKind::SwitchDown { switch },
                EventKind::SwitchUp { switch },
            );
        }
        if let Some((a, b)) = self.fail_link {
            fail(EventKind::LinkDown { a, b }, EventKind::LinkUp { a, b });
        }
        let reconfiguration = match self.reconfig {
            ReconfigArg::Static => Strategy::Static,
            ReconfigArg::Dynamic => Strategy::Dynamic,
        };
        Ok(Experiment {
            topology: self.topo.spec()?,
            routing: self.routing.spec(),
            sim,
            rates,
            events,
            reconfiguration,
            control: ControlTiming::default(),
        })
    }
}

pub(super) fn simulate(args: &SimulateArgs) -> Result<()> {
    let exp = args.experiment()?;
    if args.print_config {
        println!("{}", to_json(&exp));
        return Ok(());
    }
    let t = exp.topology.build()?;
    let may_leave = exp.sim.switching == Switching::VirtualCutThrough;
    let b = exp.routing.build(&t, may_leave)?;
    let label = exp.routing.orientation().label();
    if !exp.events.is_empty() {
        return simulate_events(&exp, &t, &label, args.out.as_deref());
    }
    if exp.rates.is_empty() {
        let r = Simulator::new(t, b.routing, &exp.sim)?.run()?;
        println!("{}", to_json(&r));
        if let Some(dir) = &args.out {
            write_file(dir, "result.json", &to_json(&r))?;
        }
        return Ok(());
    }
    let bar = progress_bar(exp.rates.len() as u64, &label, true);
    let points = sweep(&t, &b.routing, &exp.sim, &exp.rates, &bar)?;
    bar.finish_and_clear();
    let csv = format!("{CSV_HEADER}{}", to_csv(&label, &points));
    print!("{csv}");
    println!(
        "saturation throughput: {:.4} flits/cycle/host",
        saturation(&points)
    );
    if let Some(dir) = &args.out {
        write_file(dir, "sweep.csv", &csv)?;
        write_file(dir, "sweep.json", &to_json(&points))?;
        let plot = Plot {
            title: format!("{label}: latency vs accepted traffic"),
            x_label: "accepted traffic (flits/cycle/host)".into(),
            y_label: "latency (cycles)".into(),
            series: vec![Series {
                label,
                points: points
                    .iter()
                    .map(|p| (p.result.accepted, p.result.avg_latency))
                    .collect(),
            }],
            y_max: None,
        };
        write_plot(dir, "latency", &plot)?;
    }
    Ok(())
}

/// Runs an experiment with timed events; prints the result as JSON and one line per event, and
/// writes `result.json`, `series.csv` and the latency-over-time plot into `out`.
fn simulate_events(
    exp: &Experiment,
    t: &crate::topology::Topology,
    label: &str,
    out: Option<&std::path::Path>,
) -> Result<()> {
    let r = run_with_events(
        t,
        exp.routing.orientation(),
        &exp.sim,
        &exp.events,
        exp.reconfiguration,
        &exp.control,
    )?;
    println!("{}", to_json(&r));
    for rec in &r.reconfigurations {
        let what = rec
            .event
            .map_or_else(|| "event".to_string(), |k| k.to_string());
        let late = if rec.delayed > 0 {
            format!(
                " (delayed {} cycles by the previous reconfiguration)",
                rec.delayed
            )
        } else {
            String::new()
        };
        println!(
            "{what} at cycle {}{late}: {:?} reconfiguration took {} cycles, {} control messages",
            rec.event_at, exp.reconfiguration, rec.duration, rec.control_messages
        );
    }
    let causes: Vec<String> = r
        .sim
        .discarded
        .iter()
        .map(|(cause, n)| format!("{cause} {n}"))
        .collect();
    println!(
        "discarded packets: {}",
        if causes.is_empty() {
            "none".to_string()
        } else {
            causes.join(", ")
        }
    );
    let Some(dir) = out else {
        return Ok(());
    };
    write_file(dir, "result.json", &to_json(&r))?;
    let mut csv = String::from("window_start,delivered,avg_latency,injected_flits,discarded\n");
    for w in &r.sim.series {
        csv.push_str(&format!(
            "{},{},{:.3},{},{}\n",
            w.start, w.delivered, w.avg_latency, w.injected_flits, w.discarded
        ));
    }
    write_file(dir, "series.csv", &csv)?;
    let plot = Plot {
        title: format!("{:?} reconfiguration", exp.reconfiguration),
        x_label: "simulation time (cycles)".into(),
        y_label: "instantaneous latency (cycles)".into(),
        series: vec![Series {
            label: label.to_string(),
            points: r
                .sim
                .series
                .iter()
                .map(|w| (w.start as f64, w.avg_latency))
                .collect(),
        }],
        y_max: None,
    };
    write_plot(dir, "latency_over_time", &plot)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    fn args(extra: &[&str]) -> SimulateArgs {
        let base = [
            "reflex-sim",
            "simulate",
            "--switches",
            "8",
            "--seed",
            "1",
            "--switching",
            "vct",
            "--flits",
            "16",
            "--rate",
            "0.3",
            "--warmup",
            "0",
            "--cycles",
            "6000",
            "--window",
            "500",
        ];
        let line: Vec<&str> = base.iter().chain(extra).copied().collect();
        match Cli::try_parse_from(line).unwrap().command {
            Command::Simulate(a) => a,
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn link_flags_become_events() {
        let exp = args(&[
            "--fail-link",
            "1-0",
            "--fail-at",
            "2000",
            "--restore-at",
            "4000",
        ])
        .experiment()
        .unwrap();
        assert_eq!(
            exp.events,
            vec![
                Event {
                    at: 2000,
                    kind: EventKind::LinkDown { a: 1, b: 0 }
                },
                Event {
                    at: 4000,
                    kind: EventKind::LinkUp { a: 1, b: 0 }
                },
            ]
        );
        assert!(to_json(&exp).contains("\"kind\": \"link_down\""));
        for bad in ["3", "3-3", "a-1", "1-"] {
            assert!(parse_link(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn link_failure_at_a_cycle_is_applied_and_reported() {
        let dir = std::env::temp_dir().join(format!("reflex-sim-link-{}", std::process::id()));
        let mut a = args(&["--fail-link", "0-1", "--fail-at", "2000"]);
        a.out = Some(dir.clone());
        simulate(&a).unwrap();
        let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
        let json: serde_json::Value = serde_json::from_str(&read("result.json")).unwrap();
        let rec = &json["reconfigurations"][0];
        assert_eq!(rec["event"]["kind"], "link_down");
        assert_eq!(
            (rec["event"]["a"].as_u64(), rec["event"]["b"].as_u64()),
            (Some(0), Some(1))
        );
        assert_eq!(rec["event_at"], 2000);
        // Packets crossing the link when it failed are lost and counted by cause, in the window
        // of the failure; traffic keeps flowing after it.
        let lost = json["sim"]["discarded"]["component_failure"].as_u64();
        assert!(lost.is_some_and(|n| n >= 1), "{}", json["sim"]["discarded"]);
        let series = json["sim"]["series"].as_array().unwrap();
        assert_eq!(series.len(), 12);
        let at_failure = series.iter().find(|w| w["start"] == 2000).unwrap();
        assert!(at_failure["discarded"].as_u64() >= lost);
        assert!(series.iter().all(|w| w["delivered"].as_u64() > Some(0)));
        assert_eq!(read("series.csv").lines().count(), 13);
        assert!(read("latency_over_time.svg").contains("<polyline"));
        let png = std::fs::read(dir.join("latency_over_time.png")).unwrap();
        assert!(png.starts_with(b"\x89PNG"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
