//! PMI client: how a rank learns its rank, size and peers under any launcher we support.
//!
//! One [`PmiClient`] with three backends. Detection order (launchers.md §5): `PMIX_NAMESPACE`
//! (`srun --mpi=pmix`, Open MPI's `mpirun`: PMIx through libpmix, module [`crate::pmix`]), then
//! MPICH's own order (§2.1): `PMI_FD` (Reflex's mpiexec, Hydra, `srun --mpi=pmi2`), then
//! `PMI_PORT` + `PMI_ID` (Hydra `-pmi-port`, with the `cmd=initack` handshake of §2.3), then a
//! singleton (rank 0 of 1 with a local key-value store). PMI-1 start-up
//! sends what MPICH sends: init, get_maxes, get_appnum, get_universe_size, get_my_kvsname and a
//! get of `PMI_process_mapping`. Every request is checked against the 1024-byte line limit and
//! the limits the server announced, so code that works here also works under Slurm.

use std::collections::HashMap;
use std::net::TcpStream;
use std::os::unix::net::UnixStream;

use crate::codec::{format_abort, Message};
use crate::mapping::parse_process_mapping;
use crate::pmix::{self, PmixJob};
use crate::server::{KEYLEN_MAX, PROCESS_MAPPING_KEY, VALLEN_MAX};
use crate::wire::{check_rc, Stream, Wire};
use crate::{fd, new_kvsname, PmiError};

/// How the client reaches the key-value store.
#[derive(Debug)]
enum Backend {
    Wire(Wire),
    Pmix(PmixJob),
    Singleton(Local),
}

/// A singleton's own key-value space and name service.
#[derive(Debug, Default)]
struct Local {
    kvs: HashMap<String, String>,
    names: HashMap<String, String>,
}

/// A connected PMI client (see the module documentation).
#[derive(Debug)]
pub struct PmiClient {
    rank: u32,
    size: u32,
    appnum: Option<u32>,
    universe_size: Option<u32>,
    kvsname: String,
    mapping: Option<Vec<u32>>,
    keylen_max: usize,
    vallen_max: usize,
    /// Started by another job's spawn (`PMI_SPAWNED`).
    spawned: bool,
    backend: Backend,
}

impl PmiClient {
    /// Connects the way the environment says: `PMIX_NAMESPACE`, else `PMI_FD`, else `PMI_PORT`,
    /// else singleton.
    pub fn from_env() -> Result<Self, PmiError> {
        if env_var("PMIX_NAMESPACE").is_some() {
            return Self::over_pmix(pmix::LIBRARY);
        }
        if let Some(fd) = env_var("PMI_FD") {
            let fd_num = parse_env::<i32>("PMI_FD", &fd)?;
            let rank = required_env::<u32>("PMI_RANK")?;
            let size = required_env::<u32>("PMI_SIZE")?;
            let stream = fd::adopt_pmi_fd(fd_num).map_err(|reason| PmiError::Env {
                var: "PMI_FD",
                value: fd,
                reason,
            })?;
            return Self::over_unix(stream, rank, size).map(Self::spawned_from_env);
        }
        if let Some(port) = env_var("PMI_PORT") {
            let id = required_env::<u32>("PMI_ID")?;
            return Self::over_tcp(&port, id).map(Self::spawned_from_env);
        }
        Ok(Self::singleton())
    }

    /// Runs the PMI-1 start-up over an already connected Unix socket (the `PMI_FD` case).
    pub fn over_unix(stream: UnixStream, rank: u32, size: u32) -> Result<Self, PmiError> {
        check_rank(rank, size)?;
        Self::start(Wire::new(Stream::Unix(stream)), rank, size)
    }

    /// Connects to `host:port`, identifies as `pmi_id` with `cmd=initack` and runs the start-up.
    pub fn over_tcp(port: &str, pmi_id: u32) -> Result<Self, PmiError> {
        let stream = TcpStream::connect(port).map_err(|source| PmiError::Io {
            context: "connect to PMI_PORT",
            source,
        })?;
        // PMI is a request/reply protocol of short lines: don't let Nagle delay each request.
        stream.set_nodelay(true).map_err(|source| PmiError::Io {
            context: "set TCP_NODELAY",
            source,
        })?;
        let mut wire = Wire::new(Stream::Tcp(stream));
        let (rank, size) = initack(&mut wire, pmi_id)?;
        check_rank(rank, size)?;
        Self::start(wire, rank, size)
    }

    /// Loads the PMIx client `library` (normally [`pmix::LIBRARY`]) and connects to the PMIx
    /// server that launched this process.
    pub fn over_pmix(library: &str) -> Result<Self, PmiError> {
        let (job, facts) = PmixJob::connect(library)?;
        Ok(Self {
            rank: facts.rank,
            size: facts.size,
            appnum: facts.appnum,
            universe_size: facts.universe_size,
            kvsname: facts.nspace,
            mapping: facts.mapping,
            keylen_max: pmix::KEYLEN_MAX,
            vallen_max: pmix::VALLEN_MAX,
            spawned: false,
            backend: Backend::Pmix(job),
        })
    }

    /// A job of one rank with a process-local key-value store.
    pub fn singleton() -> Self {
        Self {
            rank: 0,
            size: 1,
            appnum: Some(0),
            universe_size: Some(1),
            kvsname: new_kvsname("singleton"),
            mapping: Some(vec![0]),
            keylen_max: KEYLEN_MAX,
            vallen_max: VALLEN_MAX,
            spawned: false,
            backend: Backend::Singleton(Local::default()),
        }
    }

    fn start(mut wire: Wire, rank: u32, size: u32) -> Result<Self, PmiError> {
        let init = Message::new("init")
            .with("pmi_version", 1)
            .with("pmi_subversion", 1);
        wire.call(&init, "response_to_init")?;
        let maxes = wire.call(&Message::new("get_maxes"), "maxes")?;
        let keylen_max = max_field(&maxes, "keylen_max", KEYLEN_MAX)?;
        let vallen_max = max_field(&maxes, "vallen_max", VALLEN_MAX)?;
        let appnum = wire.call(&Message::new("get_appnum"), "appnum")?;
        let universe = wire.call(&Message::new("get_universe_size"), "universe_size")?;
        let my_kvsname = wire.call(&Message::new("get_my_kvsname"), "my_kvsname")?;
        let kvsname = required_field(&my_kvsname, "kvsname")?.to_owned();
        let mut client = Self {
            rank,
            size,
            appnum: optional_count(&appnum, "appnum")?,
            universe_size: optional_count(&universe, "size")?,
            kvsname,
            mapping: None,
            keylen_max,
            vallen_max,
            spawned: false,
            backend: Backend::Wire(wire),
        };
        client.mapping = match client.get(PROCESS_MAPPING_KEY) {
            Ok(mapping) => Some(parse_process_mapping(&mapping, size)?),
            Err(PmiError::KeyNotFound { .. }) => None,
            Err(e) => return Err(e),
        };
        Ok(client)
    }

    /// Marks the client as spawned when `PMI_SPAWNED` is a non-zero number (MPICH's reading).
    fn spawned_from_env(mut self) -> Self {
        self.spawned = env_var("PMI_SPAWNED")
            .and_then(|v| v.trim().parse::<i64>().ok())
            .is_some_and(|n| n != 0);
        self
    }

    /// Whether another job started this one (`MPI_Comm_spawn`): the parent's port is then in
    /// the key-value space (see [`PmiClient::get_optional`]).
    pub fn spawned(&self) -> bool {
        self.spawned
    }

    /// This process's rank in the job.
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// Number of ranks in the job.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// The application number (`MPI_APPNUM`); `None` when the launcher says -1 (Slurm).
    pub fn appnum(&self) -> Option<u32> {
        self.appnum
    }

    /// The universe size; `None` when the launcher says -1 (Hydra).
    pub fn universe_size(&self) -> Option<u32> {
        self.universe_size
    }

    /// The job's key-value space name, unique per job (used to name shared-memory segments).
    pub fn kvsname(&self) -> &str {
        &self.kvsname
    }

    /// Node index of every rank, from `PMI_process_mapping`, when the launcher publishes it.
    /// A singleton knows its own layout: `[0]`.
    pub fn process_mapping(&self) -> Option<&[u32]> {
        self.mapping.as_deref()
    }

    /// The largest value [`PmiClient::put`] accepts for `key` (line and server limits).
    pub fn max_value_len(&self, key: &str) -> usize {
        if matches!(self.backend, Backend::Pmix(_)) {
            return self.vallen_max - 1;
        }
        let overhead = Message::new("put")
            .with("kvsname", &self.kvsname)
            .with("key", key)
            .with("value", "")
            .to_line()
            .map_or(crate::codec::MAX_LINE, |l| l.len());
        (crate::codec::MAX_LINE.saturating_sub(overhead)).min(self.vallen_max.saturating_sub(1))
    }

    /// Stores `key=value`; other ranks see it after the next [`PmiClient::barrier`].
    pub fn put(&mut self, key: &str, value: &str) -> Result<(), PmiError> {
        if key.len() >= self.keylen_max {
            let what = format!(
                "key {key:?} is {} bytes; the server allows {}",
                key.len(),
                self.keylen_max - 1
            );
            return Err(PmiError::Limit { what });
        }
        let max = self.max_value_len(key);
        if value.len() > max {
            let what = format!(
                "value of key {key:?} is {} bytes; at most {max} fit one pmi line",
                value.len()
            );
            return Err(PmiError::Limit { what });
        }
        match &mut self.backend {
            Backend::Wire(wire) => {
                wire.send_line(&put_line(&self.kvsname, key, value)?)?;
                let reply = wire.expect("put_result")?;
                check_rc("put", &reply)
            }
            Backend::Pmix(job) => job.put(key, value),
            Backend::Singleton(local) => {
                put_line(&self.kvsname, key, value)?;
                local.kvs.insert(key.to_owned(), value.to_owned());
                Ok(())
            }
        }
    }

    /// Reads a value put by any rank before the last barrier.
    pub fn get(&mut self, key: &str) -> Result<String, PmiError> {
        match &mut self.backend {
            Backend::Wire(wire) => {
                let line = Message::new("get")
                    .with("kvsname", &self.kvsname)
                    .with("key", key)
                    .to_line()?;
                wire.send_line(&line)?;
                let reply = wire.expect("get_result")?;
                match (reply.get("rc"), reply.get("value")) {
                    (Some("0"), Some(value)) => Ok(value.to_owned()),
                    (Some("0"), None) => Err(PmiError::UnexpectedReply {
                        expected: "get_result with a value",
                        line: reply.to_reply_line().unwrap_or_default(),
                    }),
                    _ => Err(PmiError::KeyNotFound {
                        key: key.to_owned(),
                    }),
                }
            }
            Backend::Pmix(job) => job.get(key),
            Backend::Singleton(local) => {
                local
                    .kvs
                    .get(key)
                    .cloned()
                    .ok_or_else(|| PmiError::KeyNotFound {
                        key: key.to_owned(),
                    })
            }
        }
    }

    /// Key-value fence: waits for every rank; puts before it are visible to gets after it.
    pub fn barrier(&mut self) -> Result<(), PmiError> {
        match &mut self.backend {
            Backend::Wire(wire) => wire
                .call(&Message::new("barrier_in"), "barrier_out")
                .map(drop),
            Backend::Pmix(job) => job.fence(),
            Backend::Singleton(_) => Ok(()),
        }
    }

    /// Asks the launcher to kill the job with exit code `code` (no reply comes; the caller exits
    /// right after). `msg` travels as MPICH 4.1+ sends it; older servers ignore it.
    pub fn abort(&mut self, code: i32, msg: &str) -> Result<(), PmiError> {
        match &mut self.backend {
            Backend::Wire(wire) => wire.send_line(&format_abort(code, msg)),
            Backend::Pmix(job) => job.abort(code, msg),
            Backend::Singleton(_) => Ok(()),
        }
    }

    /// Tells the launcher this rank is done with PMI.
    pub fn finalize(&mut self) -> Result<(), PmiError> {
        match &mut self.backend {
            Backend::Wire(wire) => wire
                .call(&Message::new("finalize"), "finalize_ack")
                .map(drop),
            Backend::Pmix(job) => job.finalize(),
            Backend::Singleton(_) => Ok(()),
        }
    }

    /// Whether this client is a singleton (no launcher).
    pub fn is_singleton(&self) -> bool {
        matches!(self.backend, Backend::Singleton(_))
    }
}

/// The `-pmi-port` handshake: `cmd=initack`, then exactly three `cmd=set` lines carrying
/// `size`, `rank` and `debug` (Hydra's order; any order is accepted). Returns (rank, size).
fn initack(wire: &mut Wire, pmi_id: u32) -> Result<(u32, u32), PmiError> {
    wire.send_line(&Message::new("initack").with("pmiid", pmi_id).to_line()?)?;
    wire.expect("initack")?;
    let (mut rank, mut size) = (None, None);
    for _ in 0..3 {
        let set = wire.expect("set")?;
        if let Some(r) = set.get("rank") {
            rank = Some(parse_field("rank", r)?);
        }
        if let Some(s) = set.get("size") {
            size = Some(parse_field("size", s)?);
        }
    }
    match (rank, size) {
        (Some(rank), Some(size)) => Ok((rank, size)),
        _ => Err(PmiError::UnexpectedReply {
            expected: "cmd=set lines with rank and size",
            line: "initack without them".to_owned(),
        }),
    }
}

/// The PMI-1 `put` line (also formatted by the singleton, so that it accepts only what a
/// server would).
fn put_line(kvsname: &str, key: &str, value: &str) -> Result<String, PmiError> {
    Ok(Message::new("put")
        .with("kvsname", kvsname)
        .with("key", key)
        .with("value", value)
        .to_line()?)
}

fn check_rank(rank: u32, size: u32) -> Result<(), PmiError> {
    if size == 0 || rank >= size {
        return Err(PmiError::Env {
            var: "PMI_RANK",
            value: rank.to_string(),
            reason: format!("must be below the job size {size}"),
        });
    }
    Ok(())
}

fn env_var(var: &'static str) -> Option<String> {
    std::env::var_os(var).map(|v| v.to_string_lossy().into_owned())
}

fn required_env<T: std::str::FromStr>(var: &'static str) -> Result<T, PmiError> {
    let value = env_var(var).ok_or_else(|| PmiError::Env {
        var,
        value: String::new(),
        reason: "is not set".to_owned(),
    })?;
    parse_env(var, &value)
}

fn parse_env<T: std::str::FromStr>(var: &'static str, value: &str) -> Result<T, PmiError> {
    value.trim().parse().map_err(|_| PmiError::Env {
        var,
        value: value.to_owned(),
        reason: "is not a non-negative integer".to_owned(),
    })
}

fn parse_field<T: std::str::FromStr>(key: &str, value: &str) -> Result<T, PmiError> {
    value.parse().map_err(|_| PmiError::UnexpectedReply {
        expected: "a number",
        line: format!("{key}={value}"),
    })
}

fn required_field<'a>(reply: &'a Message, key: &str) -> Result<&'a str, PmiError> {
    reply.get(key).ok_or_else(|| PmiError::UnexpectedReply {
        expected: "a reply with the requested field",
        line: reply.to_reply_line().unwrap_or_default(),
    })
}

/// A count where -1 means "unknown" (Slurm's appnum, Hydra's universe size).
fn optional_count(reply: &Message, key: &str) -> Result<Option<u32>, PmiError> {
    let value: i64 = parse_field(key, required_field(reply, key)?)?;
    Ok(u32::try_from(value).ok())
}

/// A `maxes` field, defaulting to the common value when a server leaves it out.
fn max_field(reply: &Message, key: &str, default: usize) -> Result<usize, PmiError> {
    match reply.get(key) {
        Some(v) => parse_field::<usize>(key, v).map(|m| m.max(2)),
        None => Ok(default),
    }
}

#[path = "client_dyn.rs"]
mod dynamic;

#[cfg(test)]
#[path = "client_tests.rs"]
mod tests;
