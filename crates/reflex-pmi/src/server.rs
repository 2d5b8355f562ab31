//! PMI-1 server as an I/O-free state machine (in the style of rustls: bytes in, replies out).
//!
//! The launcher reads a line from rank `r`'s connection and calls [`Server::handle_line`]; the
//! [`Outcome`] lists the reply lines to write (to `r`, or to every rank when a barrier completes)
//! and at most one [`Event`] for the launcher (abort, finalize, a broken barrier, a protocol
//! error). Replies follow Hydra 4.0.2 byte for byte (launchers.md §2.2), since MPICH-built
//! programs are tested against it. Puts are staged and become visible at the next barrier, as
//! under Hydra, so a program that forgets the fence fails here too rather than only under Slurm.
//! The `-pmi-port` handshake (§2.3) is [`Server::accept_initack`]. A multi-line `mcmd=spawn`
//! request is buffered per rank until its last `endcmd` ([`crate::spawn::SpawnAssembler`]) and
//! becomes [`Event::Spawn`]; the launcher starts the job, builds its server with
//! [`Server::child`] (shared name service) and answers with [`Server::spawn_reply`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::codec::{parse_abort, Message};
use crate::spawn::{SpawnAssembler, SpawnRequest, SpawnResult, SPAWN_START};

/// `cmd=maxes` limits, as Hydra and Slurm announce them (launchers.md §2.2).
pub const KVSNAME_MAX: usize = 256;
/// Longest key plus its NUL.
pub const KEYLEN_MAX: usize = 64;
/// Longest value plus its NUL.
pub const VALLEN_MAX: usize = 1024;
/// The key under which the node layout is published.
pub const PROCESS_MAPPING_KEY: &str = "PMI_process_mapping";

/// A reply line for one rank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub rank: u32,
    pub line: String,
}

/// Something the launcher must act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The rank sent `cmd=abort`: kill the job and exit with `code`.
    Abort {
        rank: u32,
        code: i32,
        msg: Option<String>,
    },
    /// The rank sent `cmd=finalize` (it may exit now).
    Finalize { rank: u32 },
    /// Every rank reached the barrier; all were released.
    BarrierComplete,
    /// Ranks wait in a barrier that `missing` can never reach (it finalized or disconnected).
    BarrierBroken { missing: u32, waiting: u32 },
    /// The rank sent something that is not valid PMI-1; it will wait forever for a reply.
    ProtocolError { rank: u32, error: String },
    /// The rank asked for a new job (`mcmd=spawn`, complete and checked); it waits for the
    /// launcher's answer, formatted by [`Server::spawn_reply`].
    Spawn { rank: u32, request: SpawnRequest },
}

/// What one incoming line (or a disconnect) produced.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub replies: Vec<Reply>,
    pub event: Option<Event>,
}

impl Outcome {
    fn reply(rank: u32, message: Message) -> Self {
        Self {
            replies: vec![format_reply(rank, &message)],
            event: None,
        }
    }

    fn event(event: Event) -> Self {
        Self {
            replies: Vec::new(),
            event: Some(event),
        }
    }
}

/// Formats a reply; a reply the codec refuses becomes a failure reply naming the reason.
fn format_reply(rank: u32, message: &Message) -> Reply {
    let line = message.to_reply_line().unwrap_or_else(|e| {
        let msg = e.to_string().replace([' ', '\n'], "_");
        format!("cmd={} rc=-1 msg={}\n", message.cmd(), msg)
    });
    Reply { rank, line }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RankState {
    Active,
    InBarrier,
    Finalized,
    Gone,
}

/// The PMI-1 server of one job.
#[derive(Debug)]
pub struct Server {
    kvsname: String,
    size: u32,
    /// `get_appnum` of each rank (one value unless a spawn started several commands).
    appnums: Vec<i32>,
    universe: i32,
    visible: HashMap<String, String>,
    staged: Vec<(String, String)>,
    /// Published service names, shared with the jobs this one spawned ([`Server::child`]).
    names: Arc<Mutex<HashMap<String, String>>>,
    /// Ranks in the middle of a multi-line `mcmd=spawn`.
    spawns: HashMap<u32, SpawnAssembler>,
    ranks: Vec<RankState>,
    in_barrier: u32,
}

impl Server {
    /// A server for `size` ranks; `universe` is reported by `get_universe_size` (Hydra says -1).
    /// The process mapping defaults to all ranks on node 0, i.e. `(vector,(0,1,size))`.
    pub fn new(kvsname: &str, size: u32, appnum: i32, universe: i32) -> Self {
        let mut visible = HashMap::new();
        visible.insert(
            PROCESS_MAPPING_KEY.to_owned(),
            format!("(vector,(0,1,{size}))"),
        );
        Self {
            kvsname: kvsname.to_owned(),
            size,
            appnums: vec![appnum; size as usize],
            universe,
            visible,
            staged: Vec::new(),
            names: Arc::default(),
            spawns: HashMap::new(),
            ranks: vec![RankState::Active; size as usize],
            in_barrier: 0,
        }
    }

    /// Replaces the published `PMI_process_mapping` (for launchers that place ranks on nodes).
    pub fn set_process_mapping(&mut self, mapping: &str) {
        self.visible
            .insert(PROCESS_MAPPING_KEY.to_owned(), mapping.to_owned());
    }

    /// The server of a job that this job spawns: one rank per entry of `appnums` (that rank's
    /// `get_appnum`), the same universe size, the same name service, and `preput` visible from
    /// the start.
    pub fn child(&self, kvsname: &str, appnums: Vec<i32>, preput: &[(String, String)]) -> Self {
        let size = appnums.len() as u32;
        let mut child = Self::new(kvsname, size, 0, self.universe);
        child.appnums = appnums;
        child.names = Arc::clone(&self.names);
        child
            .visible
            .extend(preput.iter().map(|(k, v)| (k.clone(), v.clone())));
        child
    }

    /// The job's KVS name.
    pub fn kvsname(&self) -> &str {
        &self.kvsname
    }

    /// Answers the `-pmi-port` handshake `cmd=initack pmiid=<id>`: returns the rank and the lines
    /// `cmd=initack`, `cmd=set size=N`, `cmd=set rank=R`, `cmd=set debug=0` (launchers.md §2.3).
    pub fn accept_initack(&self, line: &[u8]) -> Result<(u32, String), String> {
        let message = Message::parse(line).map_err(|e| e.to_string())?;
        if message.cmd() != "initack" {
            return Err(format!("expected cmd=initack, got cmd={}", message.cmd()));
        }
        let id = message.get("pmiid").ok_or("initack without pmiid")?;
        let rank = id
            .parse::<u32>()
            .ok()
            .filter(|&r| r < self.size)
            .ok_or_else(|| format!("initack pmiid={id:?} is not a rank below {}", self.size))?;
        let size = self.size;
        Ok((
            rank,
            format!("cmd=initack\ncmd=set size={size}\ncmd=set rank={rank}\ncmd=set debug=0\n"),
        ))
    }

    /// Handles one request line from `rank`.
    pub fn handle_line(&mut self, rank: u32, line: &[u8]) -> Outcome {
        if rank >= self.size {
            let error = format!("rank {rank} is outside the job of {} ranks", self.size);
            return Outcome::event(Event::ProtocolError { rank, error });
        }
        if self.spawns.contains_key(&rank) || line.starts_with(SPAWN_START.as_bytes()) {
            return self.spawn_line(rank, line);
        }
        if let Some(abort) = parse_abort(line) {
            return Outcome::event(Event::Abort {
                rank,
                code: abort.code,
                msg: abort.message,
            });
        }
        match Message::parse(line) {
            Ok(request) => self.handle_request(rank, &request),
            Err(e) => Outcome::event(Event::ProtocolError {
                rank,
                error: e.to_string(),
            }),
        }
    }

    /// Records that `rank`'s connection closed (or the process exited). A barrier that it had
    /// not reached can no longer complete.
    pub fn disconnect(&mut self, rank: u32) -> Outcome {
        let Some(state) = self.ranks.get_mut(rank as usize) else {
            return Outcome::default();
        };
        if *state == RankState::InBarrier {
            self.in_barrier -= 1;
        }
        self.spawns.remove(&rank);
        *state = RankState::Gone;
        self.check_barrier_broken()
    }

    /// The reply to a spawn request of `rank` (after [`Event::Spawn`]).
    pub fn spawn_reply(&self, rank: u32, result: &SpawnResult) -> Reply {
        Reply {
            rank,
            line: result.to_reply_line(),
        }
    }

    /// One line of a multi-line `mcmd=spawn`: buffered per rank until the last `endcmd`.
    fn spawn_line(&mut self, rank: u32, line: &[u8]) -> Outcome {
        let assembler = self.spawns.entry(rank).or_default();
        match assembler.push_line(line) {
            Ok(None) => Outcome::default(),
            Ok(Some(request)) => {
                self.spawns.remove(&rank);
                Outcome::event(Event::Spawn { rank, request })
            }
            Err(e) => {
                self.spawns.remove(&rank);
                Outcome::event(Event::ProtocolError {
                    rank,
                    error: e.to_string(),
                })
            }
        }
    }

    fn handle_request(&mut self, rank: u32, request: &Message) -> Outcome {
        let reply = |m: Message| Outcome::reply(rank, m);
        match request.cmd() {
            "init" => reply(self.init_reply(request)),
            "get_maxes" => reply(
                Message::new("maxes")
                    .with("kvsname_max", KVSNAME_MAX)
                    .with("keylen_max", KEYLEN_MAX)
                    .with("vallen_max", VALLEN_MAX),
            ),
            "get_appnum" => {
                reply(Message::new("appnum").with("appnum", self.appnums[rank as usize]))
            }
            "get_universe_size" => reply(Message::new("universe_size").with("size", self.universe)),
            "get_my_kvsname" => reply(Message::new("my_kvsname").with("kvsname", &self.kvsname)),
            "put" => reply(self.put(request)),
            "get" => reply(self.get(request)),
            "barrier_in" => self.barrier_in(rank),
            "finalize" => {
                self.ranks[rank as usize] = RankState::Finalized;
                let mut outcome = reply(Message::new("finalize_ack"));
                outcome.event = Some(Event::Finalize { rank });
                outcome
            }
            "publish_name" => reply(self.publish(request)),
            "unpublish_name" => reply(self.unpublish(request)),
            "lookup_name" => reply(self.lookup(request)),
            other => Outcome::event(Event::ProtocolError {
                rank,
                error: format!("unknown pmi command {other:?}"),
            }),
        }
    }

    fn init_reply(&self, request: &Message) -> Message {
        let rc = if request.get("pmi_version") == Some("1") {
            0
        } else {
            -1
        };
        Message::new("response_to_init")
            .with("pmi_version", 1)
            .with("pmi_subversion", 1)
            .with("rc", rc)
    }

    fn put(&mut self, request: &Message) -> Message {
        let failure = |msg: &str| Message::new("put_result").with("rc", -1).with("msg", msg);
        if let Err(msg) = self.check_kvsname(request) {
            return failure(&msg);
        }
        match (request.get("key"), request.get("value")) {
            (Some(key), _) if key.len() >= KEYLEN_MAX => failure("key_too_long"),
            (Some(key), Some(value)) => {
                self.staged.push((key.to_owned(), value.to_owned()));
                Message::new("put_result")
                    .with("rc", 0)
                    .with("msg", "success")
            }
            _ => failure("put_needs_key_and_value"),
        }
    }

    fn get(&self, request: &Message) -> Message {
        let result = Message::new("get_result");
        if let Err(msg) = self.check_kvsname(request) {
            return result
                .with("rc", -1)
                .with("msg", msg)
                .with("value", "unknown");
        }
        let Some(key) = request.get("key") else {
            return result
                .with("rc", -1)
                .with("msg", "get_needs_key")
                .with("value", "unknown");
        };
        match self.visible.get(key) {
            Some(value) => result
                .with("rc", 0)
                .with("msg", "success")
                .with("value", value),
            None => result
                .with("rc", -1)
                .with("msg", format!("key_{key}_not_found"))
                .with("value", "unknown"),
        }
    }

    fn check_kvsname(&self, request: &Message) -> Result<(), String> {
        match request.get("kvsname") {
            None => Ok(()),
            Some(name) if name == self.kvsname => Ok(()),
            Some(name) => Err(format!("unknown_kvsname_{name}")),
        }
    }

    fn barrier_in(&mut self, rank: u32) -> Outcome {
        let state = &mut self.ranks[rank as usize];
        if *state != RankState::Active {
            let error = format!("barrier_in from a rank that is {:?}", *state).to_lowercase();
            return Outcome::event(Event::ProtocolError { rank, error });
        }
        *state = RankState::InBarrier;
        self.in_barrier += 1;
        if self.in_barrier < self.size {
            return self.check_barrier_broken();
        }
        self.visible.extend(self.staged.drain(..));
        self.in_barrier = 0;
        self.ranks.fill(RankState::Active);
        let out = Message::new("barrier_out");
        Outcome {
            replies: (0..self.size).map(|r| format_reply(r, &out)).collect(),
            event: Some(Event::BarrierComplete),
        }
    }

    /// A barrier with waiters is broken when some rank has finalized or left.
    fn check_barrier_broken(&self) -> Outcome {
        if self.in_barrier == 0 {
            return Outcome::default();
        }
        let missing = self
            .ranks
            .iter()
            .position(|s| matches!(s, RankState::Finalized | RankState::Gone));
        match missing {
            Some(missing) => Outcome::event(Event::BarrierBroken {
                missing: missing as u32,
                waiting: self.in_barrier,
            }),
            None => Outcome::default(),
        }
    }

    fn names(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.names.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `publish_name`; publishing a service twice is an error (MPI-4.0 §11.4.4).
    fn publish(&mut self, request: &Message) -> Message {
        let result = Message::new("publish_result");
        let (Some(service), Some(port)) = (request.get("service"), request.get("port")) else {
            return result
                .with("rc", -1)
                .with("msg", "publish_needs_service_and_port");
        };
        let mut names = self.names();
        if names.contains_key(service) {
            return result
                .with("rc", -1)
                .with("msg", "service_already_published");
        }
        names.insert(service.to_owned(), port.to_owned());
        result.with("rc", 0).with("msg", "success")
    }

    fn unpublish(&mut self, request: &Message) -> Message {
        let result = Message::new("unpublish_result");
        match request.get("service").and_then(|s| self.names().remove(s)) {
            Some(_) => result.with("rc", 0).with("msg", "success"),
            None => result.with("rc", -1).with("msg", "service_not_found"),
        }
    }

    fn lookup(&self, request: &Message) -> Message {
        let result = Message::new("lookup_result");
        let port = request
            .get("service")
            .and_then(|s| self.names().get(s).cloned());
        match port {
            Some(port) => result
                .with("rc", 0)
                .with("msg", "success")
                .with("port", port),
            None => result.with("rc", -1).with("msg", "service_not_found"),
        }
    }
}

#[cfg(test)]
#[path = "server_tests.rs"]
mod tests;
