//! Hosts chosen by a selector: `mpiexec -n N` without `-hosts` or `-f`.
//!
//! REXEC's client either takes an explicit node list or asks a `vexecd` from its
//! `VEXEC_SVRS` list for the best n nodes, and an explicit list always wins (`seed000a.md`
//! §1.2). Here: `-hosts`/`-f` win; else the selectors of `-selector`, else those of the
//! configuration file (`[mpiexec] selectors`, first file of
//! [`reflexd::config::client_config_paths`]) are asked, in order, for N slots; with none, the
//! job runs on this host as before. The answer becomes the job's host list (names, slots and
//! daemon ports), placed like `-hosts` (each host gets its slots as consecutive ranks).

use std::borrow::Cow;

use reflexd::config::{load_client_config, Config};
use reflexd::discovery::policy::{by_name, NAMES};
use reflexd::discovery::query::{ask_any, split_addr};

use crate::args::JobSpec;
use crate::hosts::HostEntry;

/// Parses `-selector a,b:7291`.
pub fn parse_selectors(list: &str) -> Result<Vec<String>, String> {
    let selectors: Vec<String> = list
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    if selectors.is_empty() {
        return Err("no selector given".into());
    }
    for s in &selectors {
        split_addr(s)?;
    }
    Ok(selectors)
}

/// Checks a policy name.
pub fn check_policy(name: &str) -> Result<(), String> {
    match by_name(name) {
        Some(_) => Ok(()),
        None => Err(format!(
            "unknown policy {name:?} (one of {})",
            NAMES.join(", ")
        )),
    }
}

/// The job as it will run: `spec` itself, with the configuration's certificate directory
/// unless `-certs` gave one, and with the selector's hosts unless `-hosts`/`-f` gave them.
pub fn resolve(spec: &JobSpec) -> Result<Cow<'_, JobSpec>, String> {
    choose(spec, &load_client_config()?)
}

fn choose<'a>(spec: &'a JobSpec, config: &Config) -> Result<Cow<'a, JobSpec>, String> {
    let c = &config.mpiexec;
    let selectors = if spec.remote.selectors.is_empty() {
        &c.selectors
    } else {
        &spec.remote.selectors
    };
    let certs_from_config = spec.remote.certs.is_none() && c.certs.is_some();
    let select = !spec.remote.is_remote() && !selectors.is_empty();
    if !select && !certs_from_config {
        return Ok(Cow::Borrowed(spec));
    }
    let mut job = spec.clone();
    if certs_from_config {
        job.remote.certs = c.certs.clone();
    }
    if !select {
        return Ok(Cow::Owned(job));
    }
    let policy = job
        .remote
        .policy
        .clone()
        .or_else(|| c.policy.clone())
        .unwrap_or_default();
    let tls = crate::remote::credentials(&job)?
        .client_config()
        .map_err(|e| e.to_string())?;
    let chosen = ask_any(selectors, spec.ranks, &policy, &tls)?;
    job.remote.hosts = chosen
        .into_iter()
        .map(|h| HostEntry {
            name: h.name,
            slots: h.slots.max(1),
            port: Some(h.port),
        })
        .collect();
    if job.remote.hosts.is_empty() {
        return Err("the selector chose no host".into());
    }
    Ok(Cow::Owned(job))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::{parse_args, Invocation};

    fn spec(args: &[&str]) -> JobSpec {
        match parse_args(args.iter().map(std::ffi::OsString::from)) {
            Ok(Invocation::Run(s)) => *s,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn explicit_hosts_win_and_no_selector_means_this_host() {
        let with_config = Config {
            mpiexec: reflexd::config::ClientSection {
                selectors: vec!["127.0.0.1:1".into()],
                ..Default::default()
            },
            ..Default::default()
        };
        let hosts = spec(&["-hosts", "a", "true"]);
        assert!(matches!(
            choose(&hosts, &with_config).unwrap(),
            Cow::Borrowed(_)
        ));
        let local = spec(&["true"]);
        assert!(matches!(
            choose(&local, &Config::default()).unwrap(),
            Cow::Borrowed(_)
        ));
        // A configured selector that cannot be used is an error, not a silent local run.
        let certs = spec(&["-certs", "/nonexistent", "true"]);
        let err = choose(&certs, &with_config).unwrap_err();
        assert!(err.contains("/nonexistent"), "{err}");
    }

    #[test]
    fn selector_lists_and_policies() {
        assert_eq!(parse_selectors(" a , b:9 ").unwrap(), ["a", "b:9"]);
        assert!(parse_selectors(",").is_err());
        assert!(parse_selectors("a:x").is_err());
        assert!(check_policy("fill").is_ok());
        assert!(check_policy("best").unwrap_err().contains("least-load"));
    }
}
