//! `mpiexec -hosts`: runs a job on other hosts through their `reflexd`, REXEC style.
//!
//! mpiexec connects directly to the daemon of every host that gets ranks (in parallel, no
//! central master; `seed000a.md` §1.1), authenticates with the user's certificate over TLS 1.3,
//! and sends each host its part of the job: the ranks, argv, the environment (`-genv*` rules),
//! the working directory. It serves PMI for the whole job itself: every PMI line of a rank is
//! relayed by its daemon, answered by one [`reflex_pmi::Server`] here, and the replies relayed
//! back; the node layout is published as `PMI_process_mapping`. stdout/stderr come back per
//! rank (`-l` labels them here), stdin goes to rank 0, SIGINT/SIGTERM/SIGHUP are forwarded,
//! Ctrl-Z stops the job on every host (`Stop`, [`crate::jobctl`]) and SIGCONT continues it.
//! All-or-nothing (§1.2): the first rank that fails, a daemon error, a lost connection or a
//! silent host (heartbeats) make mpiexec print one line, send `Kill` to every host and exit
//! with that rank's status (1 for a host failure) once every host reported `Done` or is gone.
//! Jobs that the ranks spawn run the same way, through links of their own (`spawn`).

mod job;
mod spawn;
mod wake;

use std::io;
use std::net::{TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use reflexd::daemon::DEFAULT_PORT;
use reflexd::tls::Credentials;

use crate::args::JobSpec;
use crate::hosts::{nodes_of, parse_hostfile, place_ranks, process_mapping, HostEntry};

pub use job::{launch_spec, RemoteJob};
pub use spawn::{JobLayout, SpawnContext};

/// How long connecting to one daemon may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// One host of the job: where it is and which ranks it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    pub host: String,
    /// The daemon's port if the host list says (a selector's answer).
    pub port: Option<u16>,
    pub node: u32,
    pub ranks: Vec<u32>,
}

/// The host list of `spec` (`-hosts`, or the hostfile's), the hosts of the job's ranks and
/// its `PMI_process_mapping`.
pub fn assign(spec: &JobSpec) -> Result<(Vec<HostEntry>, Vec<Assignment>, String), String> {
    let hosts = job_hosts(spec)?;
    let owner = place_ranks(&hosts, spec.ranks, spec.remote.ppn);
    let (assignments, mapping) = assign_owners(&hosts, &owner);
    Ok((hosts, assignments, mapping))
}

/// The host list of `spec`: `-hosts`, or the hostfile's.
fn job_hosts(spec: &JobSpec) -> Result<Vec<HostEntry>, String> {
    match &spec.remote.hostfile {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read hostfile {}: {e}", path.display()))?;
            parse_hostfile(&text).map_err(|e| format!("{}: {e}", path.display()))
        }
        None => Ok(spec.remote.hosts.clone()),
    }
}

/// One assignment per host that `owner` (the host of every rank, an index into `hosts`) uses,
/// numbered as nodes in order of first use, plus the `PMI_process_mapping` of that placement.
pub fn assign_owners(hosts: &[HostEntry], owner: &[usize]) -> (Vec<Assignment>, String) {
    let (nodes, used) = nodes_of(owner);
    let assignments = used
        .iter()
        .enumerate()
        .map(|(node, &h)| Assignment {
            host: hosts[h].name.clone(),
            port: hosts[h].port,
            node: node as u32,
            ranks: (0..owner.len() as u32)
                .filter(|&r| nodes[r as usize] == node as u32)
                .collect(),
        })
        .collect();
    (assignments, process_mapping(&nodes))
}

/// The user's credentials: `-certs DIR`, else `$HOME/.reflex`.
pub fn credentials(spec: &JobSpec) -> Result<Credentials, String> {
    let dir = spec.remote.certs.clone().unwrap_or_else(|| {
        PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/".into())).join(".reflex")
    });
    Credentials::load(&dir, "user").map_err(|e| format!("{e} (see reflex-ca user, or -certs DIR)"))
}

/// Connects to the daemon of every host at once; the first failure is reported.
pub fn connect_all(
    assignments: &[Assignment],
    port: Option<u16>,
) -> Result<Vec<TcpStream>, String> {
    let port = port.unwrap_or(DEFAULT_PORT);
    std::thread::scope(|scope| {
        let handles: Vec<_> = assignments
            .iter()
            .map(|a| scope.spawn(move || connect(&a.host, a.port.unwrap_or(port))))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("connect thread panicked".into()))
            })
            .collect()
    })
}

fn connect(host: &str, port: u16) -> Result<TcpStream, String> {
    let fail = |e: io::Error| format!("cannot reach reflexd on {host}:{port}: {e}");
    let addrs: Vec<_> = (host, port).to_socket_addrs().map_err(fail)?.collect();
    let mut last = io::Error::new(io::ErrorKind::NotFound, "no address");
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT) {
            Ok(sock) => {
                sock.set_nodelay(true).map_err(fail)?;
                sock.set_nonblocking(true).map_err(fail)?;
                return Ok(sock);
            }
            Err(e) => last = e,
        }
    }
    Err(fail(last))
}
