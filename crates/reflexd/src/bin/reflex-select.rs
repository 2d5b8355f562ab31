//! `reflex-select`: asks a selector which hosts it knows, or which it would choose.

use std::path::PathBuf;
use std::process::ExitCode;

use reflexd::config::load_client_config;
use reflexd::discovery::query::ask_any;
use reflexd::tls::Credentials;

const HELP: &str = "\
usage: reflex-select [-selector H[:P],...] [-certs DIR] [-policy P] [N]

Without N, lists every host the selector has heard from (NAME FREE_SLOTS PORT); with N, prints
the hosts it chooses for N slots (NAME SLOTS PORT) and counts them as busy until their next
announcement. Selectors, policy and certificates default to the [mpiexec] section of the
first configuration file found ($REFLEX_CONFIG, $HOME/.reflex/config.toml,
/etc/reflex/config.toml); certificates then to $HOME/.reflex.
";

fn main() -> ExitCode {
    match run(std::env::args().skip(1).collect()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("reflex-select: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Vec<String>) -> Result<(), String> {
    let config = load_client_config()?.mpiexec;
    let (mut selectors, mut policy, mut certs) = (config.selectors, config.policy, config.certs);
    let mut slots = 0;
    let mut it = args.into_iter();
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or(format!("{arg} needs a value"));
        match arg.trim_start_matches('-') {
            "selector" => selectors = value()?.split(',').map(str::to_owned).collect(),
            "policy" => policy = Some(value()?),
            "certs" => certs = Some(PathBuf::from(value()?)),
            "h" | "help" => {
                print!("{HELP}");
                return Ok(());
            }
            n => {
                slots = n
                    .parse()
                    .map_err(|_| format!("{arg:?}: not an option or a number"))?
            }
        }
    }
    let dir = certs.unwrap_or_else(|| {
        PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/".into())).join(".reflex")
    });
    let tls = Credentials::load(&dir, "user")
        .and_then(|c| c.client_config())
        .map_err(|e| e.to_string())?;
    let hosts = ask_any(&selectors, slots, policy.as_deref().unwrap_or(""), &tls)?;
    for h in hosts {
        println!("{} {} {}", h.name, h.slots, h.port);
    }
    Ok(())
}
