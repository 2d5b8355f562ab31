//! `reflexd`: the remote-execution daemon of one host (see the crate README).

use std::path::PathBuf;
use std::process::ExitCode;

use reflexd::daemon::{run, DaemonConfig, DEFAULT_PORT};

const HELP: &str = "\
usage: reflexd [-listen ADDR:PORT] [-certs DIR] [-session PATH]

Accepts mpiexec connections (TLS 1.3, client certificates from the cluster CA) and runs each
job's ranks on this host.
  -listen ADDR:PORT   where to listen (default 0.0.0.0:7290)
  -certs DIR          ca.pem, host.pem, host.key (default /etc/reflex)
  -session PATH       the session program (default: reflex-session next to reflexd)
";

fn main() -> ExitCode {
    let mut config = DaemonConfig {
        listen: format!("0.0.0.0:{DEFAULT_PORT}"),
        certs: PathBuf::from("/etc/reflex"),
        session: std::env::current_exe()
            .ok()
            .and_then(|p| p.parent().map(|d| d.join("reflex-session")))
            .unwrap_or_else(|| PathBuf::from("reflex-session")),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        let result = match arg.trim_start_matches('-') {
            "listen" => value().map(|v| config.listen = v),
            "certs" => value().map(|v| config.certs = v.into()),
            "session" => value().map(|v| config.session = v.into()),
            "h" | "help" => {
                print!("{HELP}");
                return ExitCode::SUCCESS;
            }
            _ => Err(format!("unknown option {arg} (see reflexd -help)")),
        };
        if let Err(e) = result {
            eprintln!("reflexd: {e}");
            return ExitCode::from(2);
        }
    }
    match run(&config) {
        Ok(0) => ExitCode::SUCCESS,
        Ok(_) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("reflexd: {e}");
            ExitCode::FAILURE
        }
    }
}
