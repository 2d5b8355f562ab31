//! `reflexd`: the remote-execution daemon of one host (see the crate README).

use std::path::PathBuf;
use std::process::ExitCode;

use reflexd::cli::{parse, Command, HELP};
use reflexd::daemon::{run, DaemonConfig};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let config = match parse(&args) {
        Ok(Command::Help) => {
            print!("{HELP}");
            return ExitCode::SUCCESS;
        }
        Ok(Command::Run(config)) => config,
        Err(e) => {
            eprintln!("reflexd: {e}");
            return ExitCode::from(2);
        }
    };
    let daemon = DaemonConfig {
        listen: config.daemon.listen.clone(),
        certs: config.daemon.certs.clone(),
        session: config.daemon.session.clone().unwrap_or_else(|| {
            std::env::current_exe()
                .ok()
                .and_then(|p| p.parent().map(|d| d.join("reflex-session")))
                .unwrap_or_else(|| PathBuf::from("reflex-session"))
        }),
    };
    let result = reflexd::discovery::service::start(&config)
        .and_then(|announcer| run(&daemon, announcer.as_ref()));
    match result {
        Ok(0) => ExitCode::SUCCESS,
        Ok(_) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("reflexd: {e}");
            ExitCode::FAILURE
        }
    }
}
