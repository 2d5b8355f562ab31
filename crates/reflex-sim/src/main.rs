//! `reflex-sim` binary: parses the command line and runs [`reflex_sim::cli::run`].
#![forbid(unsafe_code)]

use clap::Parser;

fn main() -> std::process::ExitCode {
    match reflex_sim::cli::run(reflex_sim::cli::Cli::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("reflex-sim: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
