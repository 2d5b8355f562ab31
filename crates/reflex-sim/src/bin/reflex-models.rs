//! `reflex-models` binary: parses the command line, runs [`reflex_sim::models::cli::run`] and
//! prints its text (the papers' models, fits to measured latencies, predictions to 1024 ranks).
#![forbid(unsafe_code)]

use clap::Parser;

fn main() -> std::process::ExitCode {
    match reflex_sim::models::cli::run(reflex_sim::models::cli::Cli::parse()) {
        Ok(text) => {
            print!("{text}");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("reflex-models: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
