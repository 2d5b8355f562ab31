//! The configuration file (TOML) shared by `reflexd` and `mpiexec`, with its defaults.
//!
//! One file describes a host: `[daemon]` (where `reflexd` listens, its certificates, the
//! session program), `[discovery]` (the multicast announcements), `[selector]` (whether this
//! daemon also keeps the membership and answers selection requests) and `[mpiexec]` (which
//! selectors `mpiexec` asks when no hosts are given). Every key is optional; unknown keys are
//! errors (serde's `deny_unknown_fields`), so a typo is never silently ignored. `reflexd`
//! reads the file named by `-config`; its flags override the file. `mpiexec` reads the first
//! of [`client_config_paths`] that exists. The reference is in `docs/cluster.md`.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::daemon::DEFAULT_PORT;

/// The default multicast group of announcements (organisation-local scope, RFC 2365).
pub const DEFAULT_GROUP: Ipv4Addr = Ipv4Addr::new(239, 255, 72, 90);
/// The default UDP port of announcements (the daemon's TCP port number, over UDP).
pub const DEFAULT_ANNOUNCE_PORT: u16 = DEFAULT_PORT;
/// The default TCP port of a selector.
pub const DEFAULT_SELECTOR_PORT: u16 = DEFAULT_PORT + 1;

/// The whole file.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub daemon: DaemonSection,
    pub discovery: DiscoverySection,
    pub selector: SelectorSection,
    pub mpiexec: ClientSection,
}

/// `[daemon]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DaemonSection {
    /// Address and port to listen on.
    pub listen: String,
    /// Directory with `ca.pem`, `host.pem`, `host.key` (and `cluster.key`).
    pub certs: PathBuf,
    /// The session program (default: `reflex-session` next to `reflexd`).
    pub session: Option<PathBuf>,
}

impl Default for DaemonSection {
    fn default() -> Self {
        Self {
            listen: format!("0.0.0.0:{DEFAULT_PORT}"),
            certs: PathBuf::from("/etc/reflex"),
            session: None,
        }
    }
}

/// `[discovery]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DiscoverySection {
    /// Announce this host: `true`, `false`, or unset (announce when the cluster key exists).
    pub announce: Option<bool>,
    /// Multicast group and UDP port.
    pub group: Ipv4Addr,
    pub port: u16,
    /// Local address of the interface to announce and listen on (unset: by route).
    pub interface: Option<Ipv4Addr>,
    /// Multicast time to live (1: this network only).
    pub ttl: u32,
    /// Seconds between periodic announcements (there is one more at every job start and end).
    pub interval_s: f64,
    /// A host silent for this many intervals is dropped by selectors.
    pub expiry_intervals: u32,
    /// Largest difference between a sender's clock and ours, in seconds (replay window).
    pub max_skew_s: f64,
    /// The cluster key (default: `cluster.key` in the certificate directory).
    pub key: Option<PathBuf>,
    /// Names to announce (default: the name the host certificate was issued for).
    pub names: Option<Vec<String>>,
    /// Slots to offer (default: the number of CPUs).
    pub slots: Option<u32>,
}

impl Default for DiscoverySection {
    fn default() -> Self {
        Self {
            announce: None,
            group: DEFAULT_GROUP,
            port: DEFAULT_ANNOUNCE_PORT,
            interface: None,
            ttl: 1,
            interval_s: 10.0,
            expiry_intervals: 3,
            max_skew_s: 60.0,
            key: None,
            names: None,
            slots: None,
        }
    }
}

impl DiscoverySection {
    /// The announcement period.
    pub fn interval(&self) -> Duration {
        Duration::from_secs_f64(self.interval_s)
    }

    /// How long a selector keeps a silent host.
    pub fn expiry(&self) -> Duration {
        self.interval() * self.expiry_intervals
    }

    /// The cluster key's file.
    pub fn key_path(&self, certs: &Path) -> PathBuf {
        self.key
            .clone()
            .unwrap_or_else(|| certs.join(crate::cluster_key::FILE))
    }
}

/// `[selector]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SelectorSection {
    /// Run a selector in this daemon.
    pub enabled: bool,
    /// Where it answers requests (TLS, the daemon's host certificate).
    pub listen: String,
    /// The policy used when a request names none.
    pub policy: String,
}

impl Default for SelectorSection {
    fn default() -> Self {
        Self {
            enabled: false,
            listen: format!("0.0.0.0:{DEFAULT_SELECTOR_PORT}"),
            policy: crate::discovery::policy::NAMES[0].to_owned(),
        }
    }
}

/// `[mpiexec]`.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClientSection {
    /// Selectors (`host` or `host:port`), asked in order until one answers.
    pub selectors: Vec<String>,
    /// The policy to ask for (default: the selector's).
    pub policy: Option<String>,
    /// Directory with the user's `ca.pem`, `user.pem`, `user.key` (default `$HOME/.reflex`).
    pub certs: Option<PathBuf>,
}

impl Config {
    /// Parses a file's text; errors name the file, line and key.
    pub fn parse(text: &str, origin: &Path) -> Result<Config, String> {
        let config: Config =
            toml::from_str(text).map_err(|e| format!("{}: {e}", origin.display()))?;
        config
            .check()
            .map_err(|e| format!("{}: {e}", origin.display()))?;
        Ok(config)
    }

    /// Reads and parses `path`.
    pub fn load(path: &Path) -> Result<Config, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Self::parse(&text, path)
    }

    /// Checks values serde cannot (ranges, names).
    pub fn check(&self) -> Result<(), String> {
        let d = &self.discovery;
        if !(0.05..=3600.0).contains(&d.interval_s) {
            return Err(format!(
                "discovery.interval_s = {}: expected 0.05 to 3600",
                d.interval_s
            ));
        }
        if d.expiry_intervals < 2 {
            return Err("discovery.expiry_intervals must be at least 2".into());
        }
        if !(d.max_skew_s > 0.0 && d.max_skew_s <= 86_400.0) {
            return Err(format!(
                "discovery.max_skew_s = {}: expected 0 to 86400",
                d.max_skew_s
            ));
        }
        if !(d.group.is_multicast()) {
            return Err(format!(
                "discovery.group = {}: not a multicast address",
                d.group
            ));
        }
        if d.port == 0 || !(1..=255).contains(&d.ttl) {
            return Err("discovery.port must not be 0, discovery.ttl must be 1 to 255".into());
        }
        if let Some(bad) = d
            .names
            .iter()
            .flatten()
            .find(|n| !crate::discovery::announce::valid_name(n))
        {
            return Err(format!("discovery.names: {bad:?} is not a host name"));
        }
        let policies = [Some(&self.selector.policy), self.mpiexec.policy.as_ref()];
        if let Some(bad) = policies
            .into_iter()
            .flatten()
            .find(|p| crate::discovery::policy::by_name(p).is_none())
        {
            return Err(format!(
                "unknown policy {bad:?} (one of {})",
                crate::discovery::policy::NAMES.join(", ")
            ));
        }
        Ok(())
    }
}

/// Where `mpiexec` looks for its configuration, in order: `$REFLEX_CONFIG`,
/// `$HOME/.reflex/config.toml`, `/etc/reflex/config.toml`.
pub fn client_config_paths() -> Vec<PathBuf> {
    let mut paths = Vec::new();
    if let Some(p) = std::env::var_os("REFLEX_CONFIG").filter(|p| !p.is_empty()) {
        paths.push(PathBuf::from(p));
    }
    if let Some(home) = std::env::var_os("HOME") {
        paths.push(PathBuf::from(home).join(".reflex/config.toml"));
    }
    paths.push(PathBuf::from("/etc/reflex/config.toml"));
    paths
}

/// The client configuration: the first of [`client_config_paths`] that exists (a file named
/// by `$REFLEX_CONFIG` must exist), else the defaults. A file found by the search that this user
/// may not read (a root-only `/etc/reflex/config.toml`) is skipped with a warning.
pub fn load_client_config() -> Result<Config, String> {
    let paths = client_config_paths();
    let explicit = std::env::var_os("REFLEX_CONFIG").is_some_and(|p| !p.is_empty());
    for (i, path) in paths.iter().enumerate() {
        if explicit && i == 0 {
            return Config::load(path);
        }
        match std::fs::File::open(path) {
            Ok(_) => return Config::load(path),
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                eprintln!("warning: cannot read {}: {e}; ignored", path.display());
            }
            Err(_) => {}
        }
    }
    Ok(Config::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, String> {
        Config::parse(text, Path::new("test.toml"))
    }

    #[test]
    fn every_key_parses_and_defaults_fill_the_rest() {
        let c = parse(
            r#"
            [daemon]
            listen = "10.0.0.1:7300"
            certs = "/srv/reflex"
            session = "/opt/reflex/bin/reflex-session"
            [discovery]
            announce = true
            group = "239.1.2.3"
            port = 7400
            interface = "10.0.0.1"
            ttl = 2
            interval_s = 0.5
            expiry_intervals = 4
            max_skew_s = 10
            key = "/srv/reflex/k"
            names = ["node1", "10.0.0.1"]
            slots = 8
            [selector]
            enabled = true
            listen = "0.0.0.0:7401"
            policy = "fill"
            [mpiexec]
            selectors = ["node1", "node2:7401"]
            policy = "round-robin"
            certs = "/home/a/.reflex"
            "#,
        )
        .unwrap();
        assert_eq!(c.daemon.listen, "10.0.0.1:7300");
        assert_eq!(c.discovery.expiry(), Duration::from_secs(2));
        assert_eq!(
            c.discovery.key_path(Path::new("/x")),
            PathBuf::from("/srv/reflex/k")
        );
        assert_eq!(c.mpiexec.selectors.len(), 2);
        let d = parse("").unwrap();
        assert_eq!(d, Config::default());
        assert_eq!(
            d.discovery.key_path(Path::new("/x")),
            PathBuf::from("/x/cluster.key")
        );
        assert_eq!(d.selector.listen, "0.0.0.0:7291");
    }

    #[test]
    fn mistakes_are_errors_that_say_where() {
        let cases = [
            ("[daemon]\nlisten = 7290\n", "invalid type"),
            ("[daemon]\nlisen = \"x\"\n", "unknown field `lisen`"),
            (
                "[discovery]\ngroup = \"10.0.0.1\"\n",
                "not a multicast address",
            ),
            ("[discovery]\ninterval_s = 0\n", "interval_s"),
            ("[discovery]\nexpiry_intervals = 1\n", "at least 2"),
            ("[discovery]\nnames = [\"a b\"]\n", "not a host name"),
            (
                "[selector]\npolicy = \"random\"\n",
                "unknown policy \"random\"",
            ),
            ("[mpiexec]\npolicy = \"x\"\n", "unknown policy"),
            ("[extra]\n", "unknown field `extra`"),
        ];
        for (text, want) in cases {
            let err = parse(text).unwrap_err();
            assert!(
                err.starts_with("test.toml: ") && err.contains(want),
                "{text:?}: {err}"
            );
        }
    }
}
