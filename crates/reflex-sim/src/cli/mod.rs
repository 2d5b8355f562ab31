//! Command-line interface of the `reflex-sim` binary (clap derive). Each subcommand maps to one
//! library entry point; `main.rs` only parses, calls [`run`] and prints errors.

use std::path::PathBuf;
use std::time::Instant;

use clap::{Args, Parser, Subcommand, ValueEnum};
use serde::{Deserialize, Serialize};

mod simulate;

pub use simulate::{Experiment, ReconfigArg, SimulateArgs};

use crate::check::{check_deadlock_free, check_escape};
use crate::error::{Result, SimError};
use crate::metrics::RoutingMetrics;
use crate::routing::{OrientationSpec, PathPolicy, RoutingSpec};
use crate::sim::sweep::progress_bar;
use crate::sim::{SimConfig, Simulator};
use crate::topology::format::{write_anynet, write_edge_list};
use crate::topology::generate::TopologySpec;

/// Interconnect simulator of Reflex: irregular networks, up*/down* and DFS routing, deadlock
/// checks, flit-level simulation, reconfiguration.
#[derive(Parser, Debug)]
#[command(name = "reflex-sim", version)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Generate a topology and print or write it.
    Generate {
        #[command(flatten)]
        topo: TopoArgs,
        /// Output format.
        #[arg(long, value_enum, default_value_t = FileFormat::Edges)]
        format: FileFormat,
        /// Output file (default: standard output).
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Print Paper A's Table 1 metrics of one or more orientation methods.
    Metrics {
        #[command(flatten)]
        topo: TopoArgs,
        /// Orientation methods.
        #[arg(long, value_enum, value_delimiter = ',', default_values_t = [Method::UdBfs, Method::UdDfs])]
        methods: Vec<Method>,
        /// Path selection policy for crossing paths.
        #[arg(long, value_enum, default_value_t = Policy::LeastLoaded)]
        policy: Policy,
    },
    /// Check a routing: correct graph, CDG acyclic from the tables, connectivity, Duato.
    Check {
        #[command(flatten)]
        topo: TopoArgs,
        #[command(flatten)]
        routing: RoutingArgs,
    },
    /// Export routing tables: per-switch tables, source routes or OpenSM LFTs.
    Tables {
        #[command(flatten)]
        topo: TopoArgs,
        #[command(flatten)]
        routing: RoutingArgs,
        /// Form of the export.
        #[arg(long, value_enum, default_value_t = TableForm::Switch)]
        form: TableForm,
        /// Output file (default: standard output).
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Run the checks on many random topologies per size.
    CheckRandom {
        /// Network sizes (switches).
        #[arg(long, value_delimiter = ',', default_values_t = [8usize, 16, 32, 64])]
        sizes: Vec<usize>,
        /// Topologies per size.
        #[arg(long, default_value_t = 100)]
        count: u64,
    },
    /// Simulate one offered load, or a sweep with --sweep.
    Simulate(SimulateArgs),
    /// Re-run the three papers' experiments and write a report (markdown, CSV, JSON, SVG).
    Reproduce {
        /// Fewer topologies and shorter runs (under a minute on 2 cores in release mode).
        #[arg(long, conflicts_with = "smoke")]
        quick: bool,
        /// Only check that every part runs: tiny networks, very short runs (meaningless numbers;
        /// seconds even in a debug build).
        #[arg(long)]
        smoke: bool,
        /// Output directory.
        #[arg(long, default_value = "reproduce-out")]
        out: PathBuf,
        /// Only these papers (a, b, c).
        #[arg(long, value_delimiter = ',')]
        papers: Vec<String>,
    },
    /// Measure simulation speed (cycles per second) at saturation.
    Bench {
        #[command(flatten)]
        topo: TopoArgs,
        /// Cycles to simulate.
        #[arg(long, default_value_t = 1_000_000)]
        cycles: u64,
        /// Offered load (flits/cycle/host); 1.0 is far past saturation.
        #[arg(long, default_value_t = 1.0)]
        rate: f64,
    },
}

/// Topology selection.
#[derive(Args, Debug, Clone)]
pub struct TopoArgs {
    /// Topology file (edge list or BookSim2 anynet).
    #[arg(long, conflicts_with = "switches")]
    pub topo: Option<String>,
    /// Random irregular network with this many switches.
    #[arg(long)]
    pub switches: Option<usize>,
    /// Ports per switch (random networks).
    #[arg(long, default_value_t = 8)]
    pub ports: usize,
    /// Host ports per switch (random networks).
    #[arg(long, default_value_t = 4)]
    pub hosts: usize,
    /// Seed of the random network.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

impl TopoArgs {
    /// The topology this selects.
    pub fn spec(&self) -> Result<TopologySpec> {
        match (&self.topo, self.switches) {
            (Some(path), _) => Ok(TopologySpec::File { path: path.clone() }),
            (None, Some(switches)) => Ok(TopologySpec::Irregular {
                switches,
                ports: self.ports,
                hosts_per_switch: self.hosts,
                seed: self.seed,
            }),
            (None, None) => Err(SimError::invalid("give --topo FILE or --switches N")),
        }
    }
}

/// Topology file formats.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum FileFormat {
    /// reflex-sim edge list.
    Edges,
    /// BookSim2 anynet.
    Anynet,
}

/// Table export forms.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum TableForm {
    /// Distributed tables: (switch, input port, destination) -> output ports.
    Switch,
    /// Source routes: port sequence per host pair.
    Source,
    /// InfiniBand LFT dump for OpenSM's file routing engine (destination-based up*/down*).
    Opensm,
}

/// Orientation methods on the command line.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[value(rename_all = "snake_case")]
pub enum Method {
    /// BFS, root = lowest id (Autonet).
    Mdst,
    /// BFS, root = minimum average distance (Paper A's baseline).
    UdBfs,
    /// Propagation-order spanning tree from the lowest id.
    Post,
    /// Paper A's DFS methodology.
    UdDfs,
    /// Exhaustive optimum (small networks).
    Opt,
    /// Paper B's genetic algorithm.
    Ga,
}

impl Method {
    /// The orientation spec.
    pub fn spec(self) -> OrientationSpec {
        match self {
            Method::Mdst => OrientationSpec::Mdst,
            Method::UdBfs => OrientationSpec::UdBfs,
            Method::Post => OrientationSpec::Post {
                initiator: None,
                seed: 0,
            },
            Method::UdDfs => OrientationSpec::UdDfs,
            Method::Opt => OrientationSpec::Exhaustive {
                max_links: crate::routing::search::default_max_links(),
            },
            Method::Ga => OrientationSpec::Genetic(Default::default()),
        }
    }
}

/// Path policies on the command line.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum Policy {
    /// Lowest port.
    First,
    /// Random (seeded).
    Random,
    /// Least-loaded channel.
    LeastLoaded,
}

impl From<Policy> for PathPolicy {
    fn from(p: Policy) -> Self {
        match p {
            Policy::First => PathPolicy::First,
            Policy::Random => PathPolicy::Random,
            Policy::LeastLoaded => PathPolicy::LeastLoaded,
        }
    }
}

/// Table kinds on the command line.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum TableKind {
    /// One source route per switch pair (Paper A).
    Source,
    /// Distributed tables with all shortest legal paths.
    All,
    /// Minimal adaptive + up*/down* escape (2 VCs).
    Adaptive,
}

/// Routing selection.
#[derive(Args, Debug, Clone)]
pub struct RoutingArgs {
    /// Orientation method.
    #[arg(long, value_enum, default_value_t = Method::UdDfs)]
    pub orientation: Method,
    /// Kind of tables.
    #[arg(long, value_enum, default_value_t = TableKind::Source)]
    pub tables: TableKind,
    /// Path policy for source routes.
    #[arg(long, value_enum, default_value_t = Policy::LeastLoaded)]
    pub policy: Policy,
}

impl RoutingArgs {
    /// The routing spec.
    pub fn spec(&self) -> RoutingSpec {
        let orientation = self.orientation.spec();
        match self.tables {
            TableKind::Source => RoutingSpec::Source {
                orientation,
                policy: self.policy.into(),
                seed: 0,
            },
            TableKind::All => RoutingSpec::UpDown { orientation },
            TableKind::Adaptive => RoutingSpec::Adaptive {
                escape: orientation,
            },
        }
    }
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Generate {
            topo,
            format,
            output,
        } => {
            let t = topo.spec()?.build()?;
            let text = match format {
                FileFormat::Edges => write_edge_list(&t),
                FileFormat::Anynet => write_anynet(&t),
            };
            match output {
                Some(p) => std::fs::write(&p, text)
                    .map_err(|e| SimError::io(format!("writing {}", p.display()), e)),
                None => {
                    print!("{text}");
                    Ok(())
                }
            }
        }
        Command::Metrics {
            topo,
            methods,
            policy,
        } => metrics(&topo, &methods, policy.into()),
        Command::Check { topo, routing } => check(&topo, &routing),
        Command::Tables {
            topo,
            routing,
            form,
            output,
        } => {
            use crate::routing::export;
            let t = topo.spec()?.build()?;
            let b = routing.spec().build(&t, true)?;
            let text = match form {
                TableForm::Switch => export::switch_tables(
                    &t,
                    &crate::routing::TableRouting::all_shortest(&t, &b.orientation, 0, false),
                ),
                TableForm::Source => export::source_routes(&t, &b.paths),
                TableForm::Opensm => export::opensm_lfts(&t, &b.orientation),
            };
            match output {
                Some(p) => std::fs::write(&p, text)
                    .map_err(|e| SimError::io(format!("writing {}", p.display()), e)),
                None => {
                    print!("{text}");
                    Ok(())
                }
            }
        }
        Command::CheckRandom { sizes, count } => check_random(&sizes, count),
        Command::Simulate(args) => simulate::simulate(&args),
        Command::Bench { topo, cycles, rate } => bench(&topo, cycles, rate),
        Command::Reproduce {
            quick,
            smoke,
            out,
            papers,
        } => {
            use crate::report::reproduce::Mode;
            let opts = crate::report::reproduce::ReproduceOptions {
                mode: match (smoke, quick) {
                    (true, _) => Mode::Smoke,
                    (false, true) => Mode::Quick,
                    (false, false) => Mode::Full,
                },
                out: out.clone(),
                progress: true,
                papers,
            };
            let missed = crate::report::reproduce::reproduce(&opts)?;
            println!(
                "report written to {} ({missed} expectations not met; see report.md)",
                out.join("report.md").display()
            );
            Ok(())
        }
    }
}

fn metrics(topo: &TopoArgs, methods: &[Method], policy: PathPolicy) -> Result<()> {
    let t = topo.spec()?.build()?;
    println!("method   avg_dist topo_dist restr/node long%  diam crossing cycles");
    for m in methods {
        let spec = RoutingSpec::Source {
            orientation: m.spec(),
            policy,
            seed: 0,
        };
        let b = spec.build(&t, true)?;
        let x = RoutingMetrics::compute(&t, &b.orientation, &b.paths);
        println!(
            "{:<8} {:>8.3} {:>9.3} {:>10.3} {:>5.1} {:>5} {:>8} {:>6}",
            spec.orientation().label(),
            x.avg_distance,
            x.avg_topological_distance,
            x.restrictions_per_node,
            x.long_paths_pct,
            x.diameter,
            x.crossing_paths,
            x.independent_cycles
        );
    }
    Ok(())
}

fn check(topo: &TopoArgs, routing: &RoutingArgs) -> Result<()> {
    let t = topo.spec()?.build()?;
    let b = routing.spec().build(&t, true)?;
    b.orientation.validate(&t)?;
    println!(
        "correct graph: acyclic, one root {:?}",
        b.orientation.roots(&t)
    );
    let s = match routing.tables {
        TableKind::Adaptive => check_escape(&t, &b.routing)?,
        _ => check_deadlock_free(&t, &b.routing)?,
    };
    println!(
        "tables: {} reachable states, {} channel dependencies, no cycle, every pair connected",
        s.states, s.dependencies
    );
    Ok(())
}

/// Checks every orientation method and table kind on `count` random topologies per size.
pub fn check_random(sizes: &[usize], count: u64) -> Result<()> {
    use rayon::prelude::*;
    for &n in sizes {
        let bar = progress_bar(count, &format!("{n} switches"), true);
        (0..count)
            .into_par_iter()
            .try_for_each(|seed| -> Result<()> {
                let t = TopologySpec::Irregular {
                    switches: n,
                    ports: 8,
                    hosts_per_switch: 4,
                    seed,
                }
                .build()?;
                for m in [Method::Mdst, Method::UdBfs, Method::Post, Method::UdDfs] {
                    let o = m.spec();
                    let ctx = |e: SimError| {
                        SimError::Check(format!("{n} switches, seed {seed}, {}: {e}", o.label()))
                    };
                    let src = RoutingSpec::Source {
                        orientation: o.clone(),
                        policy: PathPolicy::Random,
                        seed,
                    };
                    check_deadlock_free(&t, &src.build(&t, true).map_err(ctx)?.routing)
                        .map_err(ctx)?;
                    let all = RoutingSpec::UpDown {
                        orientation: o.clone(),
                    };
                    check_deadlock_free(&t, &all.build(&t, true).map_err(ctx)?.routing)
                        .map_err(ctx)?;
                    let ad = RoutingSpec::Adaptive { escape: o.clone() };
                    check_escape(&t, &ad.build(&t, true).map_err(ctx)?.routing).map_err(ctx)?;
                }
                bar.inc(1);
                Ok(())
            })?;
        bar.finish_and_clear();
        println!("{n} switches: {count} topologies x 4 orientations x 3 table kinds passed");
    }
    Ok(())
}

fn bench(topo: &TopoArgs, cycles: u64, rate: f64) -> Result<()> {
    let t = topo.spec()?.build()?;
    let b = RoutingSpec::Source {
        orientation: OrientationSpec::UdDfs,
        policy: PathPolicy::LeastLoaded,
        seed: 0,
    }
    .build(&t, false)?;
    let mut cfg = SimConfig::paper_a(32, rate);
    cfg.warmup_cycles = 0;
    cfg.measure_cycles = cycles;
    let start = Instant::now();
    let r = Simulator::new(t.clone(), b.routing, &cfg)?.run()?;
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{} switches, {} hosts, {cycles} cycles in {secs:.2} s: {:.0} cycles/s; accepted {:.4} flits/cycle/host, {} packets",
        t.switches(),
        t.hosts(),
        cycles as f64 / secs,
        r.accepted,
        r.delivered_packets
    );
    Ok(())
}
