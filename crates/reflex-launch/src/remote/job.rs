//! The event loop of `mpiexec -hosts`: one TLS link per host and job, each job's PMI server,
//! output, stdin, signals and heartbeats (see [`crate::remote`]; spawned jobs: `spawn`).

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::{self, Read};
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStringExt;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::Signal;
use nix::sys::signalfd::SignalFd;
use reflex_pmi::{Event, Outcome, Server};
use reflexd::proto::client::{HostEvent, HostPhase, HostProtocol};
use reflexd::proto::codec::{LaunchSpec, Msg, VERSION};
use reflexd::proto::heartbeat::{Beat, Liveness};
use reflexd::tls::TlsLink;

use crate::jobctl::{self, JobControl};
use crate::output::{Labeler, RankOf, Sink, Sinks};
use crate::procs::repeated_signal_message;
use crate::remote::Assignment;

/// Status of a job that failed because of a host (not a rank).
const HOST_FAILURE: i32 = 1;
const STDIN_BLOCK: usize = 64 * 1024;
/// How long mpiexec waits for its `Stop` messages to leave before it stops itself (they are a
/// few bytes per host; only a socket filled by a flood of stdin could need more).
const STOP_FLUSH_LIMIT: Duration = Duration::from_secs(1);

/// One host's part of one job: a TLS link to its reflexd.
#[derive(Debug)]
pub(super) struct Host {
    pub(super) name: String,
    pub(super) link: Option<TlsLink>,
    proto: HostProtocol,
    live: Liveness,
    launch: Option<LaunchSpec>,
    /// The job (index into `jobs`) whose ranks this link runs.
    pub(super) job: usize,
    /// How many of them.
    procs: u32,
}

impl Host {
    pub(super) fn new(a: Assignment, link: TlsLink, launch: LaunchSpec, job: usize) -> Self {
        Self {
            procs: a.ranks.len() as u32,
            name: a.host,
            link: Some(link),
            proto: HostProtocol::new(a.ranks),
            live: Liveness::new(Instant::now()),
            launch: Some(launch),
            job,
        }
    }

    pub(super) fn proto_phase(&self) -> HostPhase {
        self.proto.phase()
    }
}

/// The PMI side of one job of the run: the first one, or one that a rank spawned.
#[derive(Debug)]
pub(super) struct PmiJob {
    pub(super) server: Server,
    /// The host (index into `hosts`) of every rank.
    pub(super) owner: Vec<usize>,
    /// A spawn whose processes have not all started: its answer is still owed.
    pub(super) pending: Option<PendingSpawn>,
    /// A spawn that failed: its hosts are being told to kill what they started, and what they
    /// report from now on fails nothing.
    pub(super) abandoned: bool,
}

impl PmiJob {
    pub(super) fn new(server: Server, owner: Vec<usize>) -> Self {
        Self {
            server,
            owner,
            pending: None,
            abandoned: false,
        }
    }
}

/// Who waits for a spawn and for which hosts.
#[derive(Debug)]
pub(super) struct PendingSpawn {
    /// The job and rank that asked.
    pub(super) parent: (usize, u32),
    /// Hosts (indices into `hosts`) whose processes have not started yet.
    pub(super) waiting: Vec<usize>,
    pub(super) procs: usize,
}

#[derive(Debug, Clone, Copy)]
enum Slot {
    Signals,
    Stdin,
    Host(usize),
    /// A thread finished connecting to a spawned job's daemons.
    Wake,
}

/// A job running on remote hosts, with the jobs its ranks spawn.
#[derive(Debug)]
pub struct RemoteJob {
    pub(super) hosts: Vec<Host>,
    pub(super) jobs: Vec<PmiJob>,
    signals: SignalFd,
    sinks: Sinks,
    labels: Option<HashMap<(usize, u32, bool), Labeler>>,
    stdin: Option<std::fs::File>,
    pub(super) status: Option<i32>,
    user_signals: u32,
    /// How to start spawned jobs (`None`: spawns are refused).
    pub(super) spawner: Option<super::SpawnContext>,
    /// Spawns whose daemons are being connected to.
    pub(super) connecting: Vec<super::spawn::Connecting>,
    /// How their threads wake the loop (made with the spawner).
    pub(super) wake: Option<super::wake::Wake>,
}

impl RemoteJob {
    /// A job over connected links (one per assignment, hellos not yet sent).
    pub fn new(
        assignments: Vec<(Assignment, TlsLink, LaunchSpec)>,
        server: Server,
        signals: SignalFd,
        label: bool,
    ) -> Self {
        let size = server_size(&assignments);
        let mut owner = vec![0; size];
        let hosts = assignments
            .into_iter()
            .enumerate()
            .map(|(h, (a, link, launch))| {
                for &r in &a.ranks {
                    owner[r as usize] = h;
                }
                Host::new(a, link, launch, 0)
            })
            .collect();
        let stdin = io::stdin()
            .as_fd()
            .try_clone_to_owned()
            .ok()
            .map(std::fs::File::from);
        Self {
            hosts,
            jobs: vec![PmiJob::new(server, owner)],
            signals,
            sinks: Sinks::default(),
            labels: label.then(HashMap::new),
            stdin,
            status: None,
            user_signals: 0,
            spawner: None,
            connecting: Vec::new(),
            wake: None,
        }
    }

    /// Lets the job's ranks spawn jobs (`MPI_Comm_spawn`) on the job's hosts.
    pub fn allow_spawn(&mut self, context: super::SpawnContext) {
        match super::wake::Wake::new() {
            Ok(wake) => {
                self.wake = Some(wake);
                self.spawner = Some(context);
            }
            Err(e) => eprintln!("mpiexec: spawns will be refused: no wake-up socket: {e}"),
        }
    }

    /// Runs the job to its end; returns mpiexec's exit status.
    pub fn run(mut self) -> i32 {
        for h in 0..self.hosts.len() {
            self.hello(h);
        }
        while self.hosts.iter().any(|h| h.link.is_some()) {
            self.tick(Instant::now());
            self.poll_once();
        }
        if let Some(labels) = self.labels.as_mut() {
            for ((_, _, err), labeler) in labels.iter_mut() {
                let mut out = Vec::new();
                labeler.finish(&mut out);
                let sink = if *err { Sink::Stderr } else { Sink::Stdout };
                self.sinks.write(sink, &out);
            }
        }
        self.status.unwrap_or(0)
    }

    /// Opens the conversation with host `h`.
    pub(super) fn hello(&mut self, h: usize) {
        let (uid, user) = current_user();
        let hello = Msg::Hello {
            version: VERSION,
            uid,
            user,
        };
        self.send(h, &hello);
    }

    pub(super) fn send(&mut self, h: usize, msg: &Msg) {
        let host = &mut self.hosts[h];
        let Some(link) = host.link.as_mut() else {
            return;
        };
        match link.send(msg) {
            Ok(()) => host.live.spoke(Instant::now()),
            Err(e) => self.lose(h, &format!("cannot send: {e}")),
        }
    }

    /// Prints `mpiexec: <message>` (the first failure only) and ends the job everywhere.
    pub(super) fn fail(&mut self, message: &str, status: i32) {
        if self.status.is_some_and(|s| s != 0) {
            return;
        }
        self.sinks
            .write(Sink::Stderr, format!("mpiexec: {message}\n").as_bytes());
        self.status = Some(status);
        for h in 0..self.hosts.len() {
            self.send(h, &Msg::Kill);
        }
    }

    /// Hangs up on host `h` (once); the slots of a spawned job's processes there are free
    /// again for later spawns.
    pub(super) fn close_link(&mut self, h: usize) {
        let Some(mut link) = self.hosts[h].link.take() else {
            return;
        };
        link.close();
        if self.hosts[h].job > 0 {
            let (host, procs) = (&self.hosts[h].name, self.hosts[h].procs);
            if let Some(spawner) = self.spawner.as_mut() {
                spawner.layout.release(host, procs);
            }
        }
    }

    /// Host `h` is gone; unless it had finished, that fails the job.
    fn lose(&mut self, h: usize, why: &str) {
        self.close_link(h);
        let done = self.hosts[h].proto.phase() == HostPhase::Done;
        if !done {
            let name = self.hosts[h].name.clone();
            self.host_failed(h, &format!("lost host {name}: {why}"), HOST_FAILURE);
        }
    }

    /// Something went wrong on host `h`: a spawn still starting fails (the job goes on), a
    /// running job fails the whole run.
    fn host_failed(&mut self, h: usize, what: &str, status: i32) {
        let job = self.hosts[h].job;
        if self.jobs[job].abandoned {
            return;
        }
        if self.jobs[job].pending.is_some() {
            return self.abandon_spawn(job, what);
        }
        self.fail(&format!("{what}; terminating the job"), status);
    }

    fn tick(&mut self, now: Instant) {
        for h in 0..self.hosts.len() {
            if self.hosts[h].link.is_none() {
                continue;
            }
            match self.hosts[h].live.tick(now) {
                Beat::Send => self.send(h, &Msg::Heartbeat),
                Beat::PeerDead => self.lose(h, "no heartbeat from its reflexd"),
                Beat::Nothing => {}
            }
        }
    }

    fn poll_once(&mut self) {
        let now = Instant::now();
        let timeout = self
            .hosts
            .iter()
            .filter(|h| h.link.is_some())
            .map(|h| h.live.next_deadline(now))
            .min()
            .unwrap_or(Duration::ZERO)
            .max(Duration::from_millis(1));
        let (slots, ready) = {
            let (slots, mut fds) = self.poll_set();
            let timeout = PollTimeout::try_from(timeout).unwrap_or(PollTimeout::MAX);
            if let Err(e) = poll(&mut fds, timeout) {
                if e != Errno::EINTR {
                    self.fail(&format!("poll failed: {e}"), HOST_FAILURE);
                }
                return;
            }
            let ready: Vec<PollFlags> = fds
                .iter()
                .map(|f| f.revents().unwrap_or(PollFlags::empty()))
                .collect();
            (slots, ready)
        };
        for (slot, flags) in slots.into_iter().zip(ready) {
            if !flags.is_empty() {
                match slot {
                    Slot::Signals => self.read_signals(),
                    Slot::Stdin => self.forward_stdin(),
                    Slot::Host(h) => self.service_host(h),
                    Slot::Wake => {}
                }
            }
        }
        if !self.connecting.is_empty() {
            self.connected();
        }
        self.flush_links(Duration::ZERO);
    }

    fn poll_set(&self) -> (Vec<Slot>, Vec<PollFd<'_>>) {
        let mut set = vec![(
            Slot::Signals,
            PollFd::new(self.signals.as_fd(), PollFlags::POLLIN),
        )];
        for (h, host) in self.hosts.iter().enumerate() {
            if let Some(link) = &host.link {
                let mut events = PollFlags::POLLIN;
                if link.wants_write() {
                    events |= PollFlags::POLLOUT;
                }
                set.push((Slot::Host(h), PollFd::new(link.fd(), events)));
            }
        }
        // stdin goes to rank 0 once it runs, and only while its link is not backed up.
        let h0 = self.jobs[0].owner.first().copied().unwrap_or(0);
        let rank0_ready = self.hosts.get(h0).is_some_and(|h| {
            h.proto.phase() == HostPhase::Running
                && h.link.as_ref().is_some_and(|l| !l.wants_write())
        });
        if let (Some(stdin), true) = (&self.stdin, rank0_ready) {
            set.push((Slot::Stdin, PollFd::new(stdin.as_fd(), PollFlags::POLLIN)));
        }
        if let (Some(wake), false) = (&self.wake, self.connecting.is_empty()) {
            set.push((Slot::Wake, PollFd::new(wake.fd(), PollFlags::POLLIN)));
        }
        set.into_iter().unzip()
    }

    fn forward_stdin(&mut self) {
        let Some(stdin) = self.stdin.as_mut() else {
            return;
        };
        let mut block = vec![0u8; STDIN_BLOCK];
        let h0 = self.jobs[0].owner[0];
        match stdin.read(&mut block) {
            Ok(0) | Err(_) => {
                self.stdin = None;
                self.send(h0, &Msg::StdinEof);
            }
            Ok(n) => {
                block.truncate(n);
                self.send(h0, &Msg::Stdin(block));
            }
        }
    }

    fn read_signals(&mut self) {
        while let Ok(Some(info)) = self.signals.read_signal() {
            let signal = info.ssi_signo as i32;
            match JobControl::from_signal(signal) {
                Some(JobControl::Stop) => self.stop_job(),
                Some(JobControl::Continue) => self.continue_job(),
                None if signal == Signal::SIGCHLD as i32 => {}
                None => self.forward_user_signal(signal),
            }
        }
    }

    /// Ctrl-Z: every host stops its ranks and stops watching for heartbeats; once the `Stop`
    /// messages are on the wire, mpiexec stops itself (see [`crate::jobctl`]).
    fn stop_job(&mut self) {
        for h in 0..self.hosts.len() {
            self.hosts[h].live.suspend();
            self.send(h, &Msg::Stop);
        }
        self.flush_links(STOP_FLUSH_LIMIT);
        jobctl::stop_self();
    }

    /// SIGCONT: every host continues its ranks; the time spent stopped is no host's silence.
    fn continue_job(&mut self) {
        let now = Instant::now();
        for h in 0..self.hosts.len() {
            self.hosts[h].live.resume(now);
            self.send(h, &Msg::Continue);
        }
    }

    /// Writes out what every link holds, waiting at most `limit` for sockets that are full.
    fn flush_links(&mut self, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            for h in 0..self.hosts.len() {
                if let Some(Err(e)) = self.hosts[h].link.as_mut().map(TlsLink::flush) {
                    self.lose(h, &e.to_string());
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            let mut full: Vec<PollFd<'_>> = self
                .hosts
                .iter()
                .filter_map(|h| h.link.as_ref().filter(|l| l.wants_write()))
                .map(|l| PollFd::new(l.fd(), PollFlags::POLLOUT))
                .collect();
            if full.is_empty() {
                return;
            }
            let _ = poll(
                &mut full,
                PollTimeout::try_from(left).unwrap_or(PollTimeout::MAX),
            );
        }
    }

    /// SIGINT/SIGTERM/SIGHUP go to every host's ranks; a second one kills the job.
    fn forward_user_signal(&mut self, signal: i32) {
        self.user_signals += 1;
        if self.user_signals > 1 {
            self.fail(&repeated_signal_message(signal), 128 + signal);
        } else {
            for h in 0..self.hosts.len() {
                self.send(h, &Msg::Signal(signal));
            }
        }
    }

    fn service_host(&mut self, h: usize) {
        let Some(link) = self.hosts[h].link.as_mut() else {
            return;
        };
        let received = match link.receive() {
            Ok(r) => r,
            Err(e) => return self.lose(h, &e.to_string()),
        };
        for msg in received.msgs {
            self.hosts[h].live.heard(Instant::now());
            match self.hosts[h].proto.on_message(msg) {
                Ok(event) => self.on_event(h, event),
                Err(text) => {
                    let name = self.hosts[h].name.clone();
                    self.close_link(h);
                    return self.host_failed(h, &format!("host {name}: {text}"), HOST_FAILURE);
                }
            }
        }
        if received.closed {
            self.lose(h, "its reflexd closed the connection");
        }
    }

    fn on_event(&mut self, h: usize, event: HostEvent) {
        let job = self.hosts[h].job;
        match event {
            HostEvent::Nothing => {}
            HostEvent::Started { .. } => self.started(h),
            HostEvent::Welcome { .. } => {
                if let Some(launch) = self.hosts[h].launch.take() {
                    self.send(h, &Msg::Launch(launch));
                }
            }
            HostEvent::Output { rank, err, bytes } => self.output(job, rank, err, &bytes),
            HostEvent::PmiRequest { rank, line } => {
                let outcome = self.jobs[job].server.handle_line(rank, &line);
                self.apply(job, outcome);
            }
            HostEvent::Exit { rank, status, how } => {
                let outcome = self.jobs[job].server.disconnect(rank);
                self.apply(job, outcome);
                if status != 0 {
                    let name = self.hosts[h].name.clone();
                    let who = RankOf { job, rank };
                    self.host_failed(h, &format!("{who} (on {name}) {how}"), status);
                }
            }
            HostEvent::Done => self.close_link(h),
        }
    }

    fn output(&mut self, job: usize, rank: u32, err: bool, bytes: &[u8]) {
        let sink = if err { Sink::Stderr } else { Sink::Stdout };
        match self.labels.as_mut() {
            Some(labels) => {
                let mut out = Vec::new();
                labels
                    .entry((job, rank, err))
                    .or_insert_with(|| Labeler::new(RankOf { job, rank }.tag()))
                    .feed(bytes, &mut out);
                self.sinks.write(sink, &out);
            }
            None => self.sinks.write(sink, bytes),
        }
    }

    /// Relays the replies of job `job`'s PMI server to the ranks' hosts and acts on its event.
    pub(super) fn apply(&mut self, job: usize, outcome: Outcome) {
        for reply in outcome.replies {
            if let Some(&h) = self.jobs[job].owner.get(reply.rank as usize) {
                let msg = Msg::PmiReply {
                    rank: reply.rank,
                    line: reply.line.into_bytes(),
                };
                self.send(h, &msg);
            }
        }
        match outcome.event {
            Some(Event::Abort { rank, code, msg }) => {
                let detail = msg.map(|m| format!(": {m}")).unwrap_or_default();
                let who = RankOf { job, rank };
                self.fail(
                    &format!("{who} called MPI_Abort with code {code}{detail}"),
                    code,
                );
            }
            Some(Event::BarrierBroken { missing, waiting }) => self.fail(
                &format!(
                    "{waiting} rank(s) wait in a pmi barrier that rank {missing} can no longer \
                     reach; terminating the job"
                ),
                1,
            ),
            Some(Event::ProtocolError { rank, error }) => self.fail(
                &format!(
                    "{} broke the pmi protocol: {error}; terminating the job",
                    RankOf { job, rank }
                ),
                1,
            ),
            Some(Event::Spawn { rank, request }) => {
                if let Some(result) = self.spawn_job(job, rank, &request) {
                    self.answer_spawn((job, rank), &result);
                }
            }
            Some(Event::Finalize { .. } | Event::BarrierComplete) | None => {}
        }
    }
}

fn server_size(assignments: &[(Assignment, TlsLink, LaunchSpec)]) -> usize {
    assignments.iter().map(|(a, _, _)| a.ranks.len()).sum()
}

/// The uid and user name mpiexec runs as.
fn current_user() -> (u32, String) {
    let uid = nix::unistd::getuid();
    let name = nix::unistd::User::from_uid(uid)
        .ok()
        .flatten()
        .map_or_else(|| uid.to_string(), |u| u.name);
    (uid.as_raw(), name)
}

/// The job description sent to one host.
pub fn launch_spec(
    spec: &crate::args::JobSpec,
    kvsname: &str,
    a: &Assignment,
    vars: &[(OsString, OsString)],
    cwd: &std::path::Path,
) -> LaunchSpec {
    let bytes = |s: &OsString| s.clone().into_vec();
    let mut argv = vec![bytes(&spec.program)];
    argv.extend(spec.args.iter().map(bytes));
    LaunchSpec {
        kvsname: kvsname.to_owned(),
        size: spec.ranks,
        ranks: a.ranks.clone(),
        node: a.node,
        argv,
        env: vars.iter().map(|(k, v)| (bytes(k), bytes(v))).collect(),
        cwd: cwd.as_os_str().to_owned().into_vec(),
    }
}
