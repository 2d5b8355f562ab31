//! Command line of the `reflex-models` binary (clap derive): `paper`, `fit`, `sweep-r` and
//! `list`. `src/bin/reflex-models.rs` only parses, calls [`run`] and prints errors.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

use super::fit::FitOptions;
use super::input::parse_samples;
use super::report::{fit_report, paper, sweep_r, FitReport, SweepCosts};
use super::{catalogue, rm};
use crate::error::{Result, SimError};

/// Analytical models of collective operations: the papers' equations with their published
/// parameters, fitted to measured latencies, predicted up to 1024 ranks.
#[derive(Parser, Debug)]
#[command(name = "reflex-models", version)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Print the papers' models with their published parameter sets for N = 2..32 (and the NIC
    /// barrier up to 1024), with the values the papers quote alongside.
    Paper {
        /// Fan-out r of the notification trees in (4.1) and (4.2).
        #[arg(long, default_value_t = 4)]
        r: usize,
    },
    /// Fit the models to measured latencies (CSV collective,algorithm,ranks,bytes,usec) and
    /// predict N = 2, 4, ..., 1024.
    Fit {
        /// The measurements (`bench/coll.py --csv FILE` writes them).
        #[arg(long)]
        input: PathBuf,
        /// Fan-out r assumed for the rm-* tree models.
        #[arg(long, default_value_t = 4)]
        r: usize,
        /// Hold a parameter at a value, e.g. --fix T_s=0 (repeatable; applies to every model with
        /// that parameter).
        #[arg(long, value_parser = parse_fix)]
        fix: Vec<(String, f64)>,
        /// Only these models (default: every model of each collective).
        #[arg(long, value_delimiter = ',')]
        models: Vec<String>,
        /// Predict at these message sizes in bytes (default: up to three measured sizes).
        #[arg(long, value_delimiter = ',')]
        sizes: Vec<usize>,
        /// Ignore measurements above this size (e.g. 16384: only Reflex's shared-memory board).
        #[arg(long)]
        max_bytes: Option<usize>,
        /// Minimise absolute instead of relative errors.
        #[arg(long)]
        absolute: bool,
    },
    /// The best fan-out r of the hierarchical barrier (4.2) and notification broadcast (4.1) at
    /// each N.
    SweepR {
        /// Parameter set.
        #[arg(long, value_enum, default_value_t = Set::Rm)]
        set: Set,
        /// Broadcast message length in bytes.
        #[arg(long, default_value_t = 0)]
        bytes: usize,
        /// Largest fan-out tried.
        #[arg(long, default_value_t = 16)]
        max_r: usize,
        /// Extra cost per tree level in µs (unstated software cost; see the calibration warning).
        #[arg(long, default_value_t = 0.0)]
        step_cost: f64,
        /// Extra cost per flag read in µs (larger values favour smaller fan-outs).
        #[arg(long, default_value_t = 0.0)]
        read_cost: f64,
    },
    /// List the models: name, collectives, formula, parameters.
    List,
}

/// Published reflective-memory parameter sets.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Set {
    /// SCRAMNet (slot 571 ns).
    Scramnet,
    /// The paper's RM model network (slot 58 ns).
    Rm,
}

fn parse_fix(s: &str) -> std::result::Result<(String, f64), String> {
    let (name, value) = s
        .split_once('=')
        .ok_or_else(|| format!("expected NAME=VALUE, got `{s}`"))?;
    let v: f64 = value
        .trim()
        .parse()
        .map_err(|_| format!("`{value}` is not a number"))?;
    if !v.is_finite() {
        return Err(format!("`{value}` is not a finite number"));
    }
    Ok((name.trim().to_string(), v))
}

/// Runs one command and returns what to print.
pub fn run(cli: Cli) -> Result<String> {
    match cli.command {
        Command::Paper { r } => {
            check_fanout(r)?;
            Ok(paper(r))
        }
        Command::Fit {
            input,
            r,
            fix,
            models,
            sizes,
            max_bytes,
            absolute,
        } => {
            check_fanout(r)?;
            let what = input.display().to_string();
            let text = std::fs::read_to_string(&input)
                .map_err(|e| SimError::io(format!("reading {what}"), e))?;
            let samples = parse_samples(&what, &text)?;
            check_fixes(&fix)?;
            let opts = FitReport {
                fit: FitOptions {
                    fanout: r,
                    fixed: fix,
                    relative: !absolute,
                },
                models,
                sizes,
                max_bytes,
            };
            fit_report(&what, &samples, &opts)
        }
        Command::SweepR {
            set,
            bytes,
            max_r,
            step_cost,
            read_cost,
        } => {
            check_fanout(max_r)?;
            if !step_cost.is_finite() || !read_cost.is_finite() {
                return Err(SimError::invalid(
                    "--step-cost and --read-cost must be finite numbers",
                ));
            }
            let params = match set {
                Set::Scramnet => rm::SCRAMNET,
                Set::Rm => rm::RM_MODEL,
            };
            let extra = SweepCosts {
                step: step_cost,
                read: read_cost,
            };
            Ok(sweep_r(params, bytes, max_r, extra))
        }
        Command::List => Ok(list()),
    }
}

fn check_fanout(r: usize) -> Result<()> {
    if r < 2 {
        return Err(SimError::invalid(format!(
            "the fan-out r must be at least 2, got {r}"
        )));
    }
    Ok(())
}

fn check_fixes(fix: &[(String, f64)]) -> Result<()> {
    let all = catalogue();
    for (name, _) in fix {
        if !all.iter().any(|m| m.params.contains(&name.as_str())) {
            let mut known: Vec<&str> = all.iter().flat_map(|m| m.params.iter().copied()).collect();
            known.sort_unstable();
            known.dedup();
            return Err(SimError::invalid(format!(
                "--fix {name}: no model has a parameter `{name}` (known: {})",
                known.join(", ")
            )));
        }
    }
    Ok(())
}

fn list() -> String {
    let mut out =
        String::from("| model | collectives | formula | parameters |\n|---|---|---|---|\n");
    for m in catalogue() {
        out.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            m.name,
            m.collectives.join(", "),
            m.formula,
            m.params.join(", ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_args(args: &[&str]) -> Result<String> {
        let mut argv = vec!["reflex-models"];
        argv.extend_from_slice(args);
        run(Cli::try_parse_from(argv).expect("arguments parse"))
    }

    #[test]
    fn bad_arguments_give_clear_errors() {
        let e = run_args(&["fit", "--input", "/nonexistent/m.csv"])
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("reading /nonexistent/m.csv: No such file"),
            "{e}"
        );
        let e = run_args(&["paper", "--r", "1"]).unwrap_err().to_string();
        assert!(e.contains("fan-out r must be at least 2"), "{e}");
        assert!(
            Cli::try_parse_from(["reflex-models", "fit", "--input", "x", "--fix", "T_s"]).is_err()
        );
        assert_eq!(parse_fix("T_s = 0.5"), Ok(("T_s".to_string(), 0.5)));
        let e = check_fixes(&[("T_x".into(), 1.0)]).unwrap_err().to_string();
        assert!(e.contains("no model has a parameter `T_x`"), "{e}");
    }

    #[test]
    fn list_names_every_model() {
        let text = run_args(&["list"]).unwrap();
        for m in catalogue() {
            assert!(text.contains(m.name));
        }
    }
}
