//! The daemon's announcer thread: sends its host's state to the group every interval and at
//! once when the set of jobs changes (REXEC's announce thread, `seed000a.md` §1.1).
//!
//! The sender socket is bound to the configured interface's address when there is one (Linux
//! then sends multicast out of that interface), else it follows the route to the group. Load is
//! the one-minute load average; ranks are the processes in the jobs' `ranks` cgroups (0 without
//! cgroup v2). A send error is logged once until it changes, so a host without a multicast
//! route neither fails nor floods its log.

use std::io;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::path::PathBuf;
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::time::Duration;

use super::announce::{seal, Announcement};
use super::unix_ms;
use crate::cluster_key::ClusterKey;

/// What the daemon tells the announcer: its jobs' cgroups (one per session; `None` where
/// cgroup v2 is not used).
#[derive(Debug, Clone, Default)]
pub struct Jobs(pub Vec<Option<PathBuf>>);

/// Fixed parts of this host's announcements.
#[derive(Debug, Clone)]
pub struct AnnounceSettings {
    pub key: ClusterKey,
    pub group: SocketAddrV4,
    pub interface: Option<Ipv4Addr>,
    pub ttl: u32,
    pub interval: Duration,
    pub names: Vec<String>,
    pub port: u16,
    pub cores: u32,
}

/// The handle of a running announcer; dropping it stops the thread.
#[derive(Debug)]
pub struct Announcer {
    tx: Sender<Jobs>,
}

impl Announcer {
    /// Opens the socket and starts the thread (the first announcement goes out at once).
    pub fn start(settings: AnnounceSettings) -> io::Result<Announcer> {
        let local = SocketAddrV4::new(settings.interface.unwrap_or(Ipv4Addr::UNSPECIFIED), 0);
        let sock = UdpSocket::bind(local)?;
        sock.set_multicast_ttl_v4(settings.ttl)?;
        sock.set_multicast_loop_v4(true)?; // a selector on this host hears it too
                                           // Checked now, so that a bad name is a start-up error rather than a silent thread.
        seal(
            &announcement(&settings, 0, 0, &Jobs::default()),
            &settings.key,
        )
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("announcement {e}")))?;
        let (tx, rx) = channel();
        super::spawn_quiet("announcer", move || announce_loop(&settings, &sock, &rx))?;
        Ok(Announcer { tx })
    }

    /// The daemon's jobs changed: announce now.
    pub fn jobs_changed(&self, jobs: Jobs) {
        let _ = self.tx.send(jobs);
    }
}

fn announce_loop(settings: &AnnounceSettings, sock: &UdpSocket, rx: &Receiver<Jobs>) {
    let mut instance = [0u8; 8];
    let _ = getrandom::getrandom(&mut instance);
    let instance = u64::from_le_bytes(instance);
    let mut jobs = Jobs::default();
    let mut last_error = String::new();
    for seq in 1.. {
        let a = announcement(settings, instance, seq, &jobs);
        let sent = seal(&a, &settings.key)
            .map_err(|e| e.to_string())
            .and_then(|d| sock.send_to(&d, settings.group).map_err(|e| e.to_string()));
        match sent {
            Err(e) if e != last_error => {
                eprintln!("reflexd: cannot announce to {}: {e}", settings.group);
                last_error = e;
            }
            Ok(_) if !last_error.is_empty() => {
                eprintln!("reflexd: announcing to {} again", settings.group);
                last_error.clear();
            }
            _ => {}
        }
        match rx.recv_timeout(settings.interval) {
            Ok(j) => jobs = rx.try_iter().last().unwrap_or(j), // coalesce a burst
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

fn announcement(s: &AnnounceSettings, instance: u64, seq: u64, jobs: &Jobs) -> Announcement {
    Announcement {
        instance,
        seq,
        time_ms: unix_ms(),
        port: s.port,
        cores: s.cores,
        load_milli: load_milli(),
        ranks: jobs
            .0
            .iter()
            .flatten()
            .map(|g| processes_in(&g.join("ranks")))
            .sum(),
        jobs: jobs.0.len() as u32,
        names: s.names.clone(),
    }
}

/// The one-minute load average x 1000 (0 if unreadable).
fn load_milli() -> u32 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0, |l| (l * 1000.0).min(f64::from(u32::MAX)) as u32)
}

/// Processes in a cgroup (0 if it does not exist).
fn processes_in(group: &std::path::Path) -> u32 {
    std::fs::read_to_string(group.join("cgroup.procs")).map_or(0, |t| t.lines().count() as u32)
}

/// The CPUs this process may use.
pub fn cpu_count() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}
