//! Starting discovery in `reflexd` from its configuration: the announcer (unless turned off)
//! and, with `[selector] enabled`, the selector thread.
//!
//! Announcing is on when the configuration says so, and by default when the cluster key file
//! exists (so a host set up before discovery existed keeps running as it did). The announced
//! name is, unless configured, the common name of the host certificate, which is the first name
//! `reflex-ca host` was given, so the name mpiexec will connect to is one the certificate
//! proves; the announced port is the daemon's own.

use std::io;
use std::path::Path;
use std::time::Duration;

use super::announcer::{cpu_count, AnnounceSettings, Announcer};
use super::membership::Membership;
use super::selector::{self, Selector};
use crate::cluster_key::{ClusterKey, FILE};
use crate::config::Config;

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

/// Starts what `config` asks for; returns the announcer the daemon must tell about jobs.
pub fn start(config: &Config) -> io::Result<Option<Announcer>> {
    let d = &config.discovery;
    let key_path = d.key_path(&config.daemon.certs);
    let announce = d.announce.unwrap_or_else(|| key_path.exists());
    if !announce && !config.selector.enabled {
        if d.announce.is_none() {
            eprintln!(
                "reflexd: no {} in {}: not announcing this host",
                FILE,
                config.daemon.certs.display()
            );
        }
        return Ok(None);
    }
    let key = ClusterKey::load(&key_path)?;
    if config.selector.enabled {
        let members = Membership::new(
            key.clone(),
            d.expiry(),
            Duration::from_secs_f64(d.max_skew_s),
        );
        let sel = Selector::new(members, &config.selector.policy).map_err(invalid)?;
        let tls = crate::tls::Credentials::load(&config.daemon.certs, "host")?.server_config()?;
        let listener = selector::bind(&config.selector.listen)?;
        selector::start(sel, super::listen_socket(d)?, listener, tls)?;
    }
    if !announce {
        return Ok(None);
    }
    let names = match &d.names {
        Some(names) => names.clone(),
        None => vec![certificate_name(&config.daemon.certs)?],
    };
    let settings = AnnounceSettings {
        key,
        group: super::group_addr(d),
        interface: d.interface,
        ttl: d.ttl,
        interval: d.interval(),
        names,
        port: listen_port(&config.daemon.listen)?,
        cores: d.slots.unwrap_or_else(cpu_count),
    };
    eprintln!(
        "reflexd: announcing {} ({} slots) to {} every {:?}",
        settings.names.join(","),
        settings.cores,
        settings.group,
        settings.interval
    );
    Announcer::start(settings).map(Some)
}

/// The common name of `certs/host.pem`.
fn certificate_name(certs: &Path) -> io::Result<String> {
    let path = certs.join("host.pem");
    let pem = std::fs::read(&path)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot read {}: {e}", path.display())))?;
    let cert = crate::tls::certs_from_pem(&pem)?;
    crate::identity::subject_common_name(&cert[0])
        .map_err(|e| invalid(format!("{}: {e}", path.display())))
}

/// The port of a listen address (`addr:port`).
fn listen_port(listen: &str) -> io::Result<u16> {
    listen
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse().ok())
        .ok_or_else(|| invalid(format!("listen address {listen:?} has no port")))
}
