//! `reflexd`'s command line: `-config FILE` first, then every other flag overrides the file.
//!
//! Flags keep the single-dash spelling of the first `reflexd` (`-listen`, `-certs`,
//! `-session`); `--name` works too. Parsing is separate from the binary so that it is tested.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::PathBuf;

use crate::config::Config;

/// `reflexd -help`.
pub const HELP: &str = "\
usage: reflexd [-config FILE] [-listen ADDR:PORT] [-certs DIR] [-session PATH]
               [-announce | -no-announce] [-group ADDR:PORT] [-interface ADDR]
               [-interval SECONDS] [-slots N] [-selector] [-selector-listen ADDR:PORT]
               [-policy least-load|round-robin|fill]

Accepts mpiexec connections (TLS 1.3, client certificates from the cluster CA) and runs each
job's ranks on this host; announces the host to the cluster (UDP multicast, authenticated with
the cluster key) and, with -selector, also chooses hosts for mpiexec (see docs/cluster.md).
  -config FILE        TOML configuration (flags override it)
  -listen ADDR:PORT   where to listen (default 0.0.0.0:7290)
  -certs DIR          ca.pem, host.pem, host.key, cluster.key (default /etc/reflex)
  -session PATH       the session program (default: reflex-session next to reflexd)
  -announce           announce this host (default: when DIR/cluster.key exists)
  -no-announce        do not announce this host
  -group ADDR:PORT    multicast group and UDP port (default 239.255.72.90:7290)
  -interface ADDR     local address of the interface to announce and listen on
  -interval SECONDS   time between announcements (default 10)
  -slots N            slots to announce (default: the number of CPUs)
  -selector           also run a selector (membership and host selection)
  -selector-listen ADDR:PORT  where the selector answers (default 0.0.0.0:7291)
  -policy P           the selector's default policy (default least-load)
";

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Help,
    Run(Box<Config>),
}

/// Parses `reflexd`'s arguments (without the program name).
pub fn parse(args: &[String]) -> Result<Command, String> {
    let mut flags: Vec<(&str, Option<&str>)> = Vec::new();
    let mut file = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let name = arg.trim_start_matches('-');
        if !arg.starts_with('-') {
            return Err(format!("unexpected argument {arg:?} (see reflexd -help)"));
        }
        let value = match name {
            "h" | "help" => return Ok(Command::Help),
            "announce" | "no-announce" | "selector" => None,
            _ => Some(it.next().ok_or(format!("{arg} needs a value"))?.as_str()),
        };
        if name == "config" {
            file = value;
        } else {
            flags.push((name, value));
        }
    }
    let mut config = match file {
        Some(path) => Config::load(path.as_ref())?,
        None => Config::default(),
    };
    for (name, value) in flags {
        apply(&mut config, name, value.unwrap_or(""))?;
    }
    config.check()?;
    Ok(Command::Run(Box::new(config)))
}

fn number<T: std::str::FromStr>(name: &str, v: &str) -> Result<T, String> {
    v.parse()
        .map_err(|_| format!("-{name} {v:?}: not a valid value"))
}

fn apply(c: &mut Config, name: &str, v: &str) -> Result<(), String> {
    match name {
        "listen" => c.daemon.listen = v.to_owned(),
        "certs" => c.daemon.certs = PathBuf::from(v),
        "session" => c.daemon.session = Some(PathBuf::from(v)),
        "announce" => c.discovery.announce = Some(true),
        "no-announce" => c.discovery.announce = Some(false),
        "group" => {
            let addr: SocketAddrV4 = number(name, v)?;
            (c.discovery.group, c.discovery.port) = (*addr.ip(), addr.port());
        }
        "interface" => c.discovery.interface = Some(number::<Ipv4Addr>(name, v)?),
        "interval" => c.discovery.interval_s = number(name, v)?,
        "slots" => c.discovery.slots = Some(number(name, v)?),
        "selector" => c.selector.enabled = true,
        "selector-listen" => c.selector.listen = v.to_owned(),
        "policy" => c.selector.policy = v.to_owned(),
        _ => return Err(format!("unknown option -{name} (see reflexd -help)")),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Result<Config, String> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        match parse(&args)? {
            Command::Run(c) => Ok(*c),
            Command::Help => Err("help".into()),
        }
    }

    #[test]
    fn flags_override_the_file_whatever_their_order() {
        let dir = std::env::temp_dir().join(format!("reflexd-cli-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("c.toml");
        std::fs::write(
            &file,
            "[daemon]\nlisten = \"1.2.3.4:1\"\ncerts = \"/a\"\n[selector]\npolicy = \"fill\"\n",
        )
        .unwrap();
        let c = run(&[
            "-listen",
            "5.6.7.8:2",
            "-config",
            file.to_str().unwrap(),
            "-selector",
        ])
        .unwrap();
        assert_eq!(c.daemon.listen, "5.6.7.8:2");
        assert_eq!(c.daemon.certs, PathBuf::from("/a"));
        assert_eq!(c.selector.policy, "fill");
        assert!(c.selector.enabled);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn todays_flags_and_the_new_ones() {
        let c = run(&["-listen", "10.0.0.1:7290", "-certs", "/c", "-session", "/s"]).unwrap();
        assert_eq!(c.daemon.session, Some(PathBuf::from("/s")));
        assert_eq!(c.discovery.announce, None);
        let c = run(&[
            "--group",
            "239.1.1.1:9000",
            "-interval",
            "0.5",
            "-slots",
            "3",
            "-no-announce",
        ])
        .unwrap();
        assert_eq!(
            (c.discovery.group, c.discovery.port),
            (Ipv4Addr::new(239, 1, 1, 1), 9000)
        );
        assert_eq!((c.discovery.interval_s, c.discovery.slots), (0.5, Some(3)));
        assert_eq!(c.discovery.announce, Some(false));
        let errors = [
            (vec!["-listen"], "needs a value"),
            (vec!["-frob", "1"], "unknown option -frob"),
            (vec!["-group", "10.0.0.1:5"], "not a multicast address"),
            (vec!["-interval", "x"], "not a valid value"),
            (vec!["-policy", "random"], "unknown policy"),
            (vec!["stray"], "unexpected argument"),
            (vec!["-config", "/nonexistent/reflex.toml"], "cannot read"),
        ];
        for (args, want) in errors {
            let err = run(&args).unwrap_err();
            assert!(err.contains(want), "{args:?}: {err}");
        }
        assert_eq!(run(&["-h"]).unwrap_err(), "help");
    }
}
