//! The event loop of a running job: serve PMI, forward stdio and signals, reap, clean up.
//!
//! One `poll(2)` loop watches a signalfd (SIGCHLD, SIGINT, SIGTERM, SIGHUP, and SIGTSTP/SIGCONT
//! for [`crate::jobctl`]), every rank's PMI socket and stdout/stderr pipes, and the stdin
//! forwarding. Policy, as in DESIGN.md "Errors and
//! bad input": the first rank that exits non-zero, dies by a signal, calls MPI_Abort or breaks
//! the PMI protocol makes mpiexec print one line and terminate the job: SIGTERM to every process
//! of the job, SIGKILL after [`KILL_GRACE`]. The job is over only when every rank has been
//! reaped, no child of mpiexec (a subreaper) is left and every output pipe reached EOF, so no
//! orphan survives and no output is lost.

use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::Signal;
use nix::sys::signalfd::SignalFd;
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{getpid, Pid};
use reflex_pmi::{Event, Outcome, Server};

use crate::jobctl::{self, JobControl};
use crate::output::{OutputPipe, RankOf, Sink, Sinks};
use crate::pmi_conn::PmiConn;
use crate::procs::{
    live_children, repeated_signal_message, signal_all, signal_rank_groups, Ending,
};
use crate::spawn::Spawned;
use crate::stdin::StdinForward;

/// Time between SIGTERM and SIGKILL when the job is terminated (the whole job must be gone
/// within about a second, DESIGN.md).
pub const KILL_GRACE: Duration = Duration::from_millis(500);
/// How often processes re-parented to mpiexec are looked for while the job is being killed.
const KILL_RESCAN: Duration = Duration::from_millis(100);
/// How long output pipes may stay open after every process of the job is gone (a pipe can
/// only stay open if it was handed to a process outside the job).
const DRAIN_GRACE: Duration = Duration::from_secs(1);

/// mpiexec's exit status when the job ran past its time limit (as `timeout(1)`'s).
pub const TIMEOUT_STATUS: i32 = 124;

/// Read budgets spent on a rank's PMI socket after it exited (1 MiB: far above any real job).
const EXIT_DRAIN_ROUNDS: usize = 16;

/// One process as the loop sees it: rank `rank` of job `job`.
#[derive(Debug)]
struct Rank {
    pid: Pid,
    job: usize,
    rank: u32,
    ending: Option<Ending>,
    pmi: Option<PmiConn>,
}

/// One job: the first (from the command line) or one that a job spawned.
#[derive(Debug)]
struct Job {
    server: Server,
    /// Index of its rank 0 in [`Supervisor::ranks`] (a job's ranks are contiguous there).
    first: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Running,
    /// SIGTERM sent; SIGKILL at the deadline.
    Terminating {
        kill_at: Instant,
    },
    /// SIGKILL sent; repeated for processes that appear later.
    Killing,
}

/// What a poll slot belongs to.
#[derive(Debug, Clone, Copy)]
enum Slot {
    Signals,
    Pmi(usize),
    Output(usize),
    StdinSource,
    StdinTarget,
}

/// A running job.
#[derive(Debug)]
pub struct Supervisor {
    label: bool,
    me: Pid,
    signals: SignalFd,
    jobs: Vec<Job>,
    /// Every process of every job, in start order.
    ranks: Vec<Rank>,
    /// The environment of spawned jobs (the first job's); `None`: spawning is refused.
    spawn_env: Option<Vec<(std::ffi::OsString, std::ffi::OsString)>>,
    outputs: Vec<OutputPipe>,
    sinks: Sinks,
    stdin: StdinForward,
    phase: Phase,
    status: Option<i32>,
    user_signals: u32,
    drain_until: Option<Instant>,
    /// When the job is terminated for running too long (`MPIEXEC_TIMEOUT`), and that limit.
    time_limit: Option<(Instant, Duration)>,
}

impl Supervisor {
    /// A supervisor with no rank yet; `signals` must already be blocked and routed to it.
    pub fn new(signals: SignalFd, server: Server, label: bool) -> Self {
        Self {
            label,
            me: getpid(),
            signals,
            jobs: vec![Job { server, first: 0 }],
            ranks: Vec::new(),
            spawn_env: None,
            outputs: Vec::new(),
            sinks: Sinks::default(),
            stdin: StdinForward::new(None),
            phase: Phase::Running,
            status: None,
            user_signals: 0,
            drain_until: None,
            time_limit: None,
        }
    }

    /// Terminates the job if it runs longer than `limit` from now (exit status
    /// [`TIMEOUT_STATUS`]).
    pub fn limit_time(&mut self, limit: Duration) {
        self.time_limit = Some((Instant::now() + limit, limit));
    }

    /// Lets the job spawn jobs (`MPI_Comm_spawn`) whose processes get `vars` (and their PMI
    /// variables) as environment.
    pub fn allow_spawn(&mut self, vars: Vec<(std::ffi::OsString, std::ffi::OsString)>) {
        self.spawn_env = Some(vars);
    }

    /// Adds the next rank of the first job.
    pub fn add_rank(&mut self, mut spawned: Spawned) {
        let rank = self.ranks.len() as u32;
        if rank == 0 {
            self.stdin = StdinForward::new(spawned.stdin.take());
        }
        self.add_process(0, rank, spawned);
    }

    /// Adds rank `rank` of job `job`: its output pipes (labelled `[rank] ` in the first job,
    /// `[job:rank] ` in spawned ones) and its PMI socket.
    fn add_process(&mut self, job: usize, rank: u32, spawned: Spawned) {
        let label = self.label.then(|| RankOf { job, rank }.tag());
        self.outputs
            .push(OutputPipe::new(spawned.stdout, Sink::Stdout, label.clone()));
        self.outputs
            .push(OutputPipe::new(spawned.stderr, Sink::Stderr, label));
        self.ranks.push(Rank {
            pid: spawned.pid,
            job,
            rank,
            ending: None,
            pmi: Some(PmiConn::new(spawned.pmi)),
        });
    }

    /// How messages name process `index`: `rank 3`, or `rank 1 of spawned job 2`.
    fn name(&self, index: usize) -> String {
        let Rank { job, rank, .. } = self.ranks[index];
        RankOf { job, rank }.to_string()
    }

    /// Prints `mpiexec: <message>` and terminates the job with exit status `status`, unless
    /// the job is already being terminated (only the first failure is reported).
    pub fn fail(&mut self, message: &str, status: i32) {
        if self.phase != Phase::Running {
            return;
        }
        self.sinks
            .write(Sink::Stderr, format!("mpiexec: {message}\n").as_bytes());
        self.status.get_or_insert(status);
        self.terminate();
    }

    /// Runs the job to its end; returns mpiexec's exit status.
    pub fn run(mut self) -> i32 {
        loop {
            self.reap();
            let now = Instant::now();
            if let Some((deadline, limit)) = self.time_limit {
                if now >= deadline {
                    let secs = limit.as_secs();
                    let message = format!("the job ran past its time limit of {secs} s (MPIEXEC_TIMEOUT); terminating it");
                    self.fail(&message, TIMEOUT_STATUS);
                }
            }
            self.advance_phase(now);
            if self.finished(now) {
                break;
            }
            self.poll_once(now);
        }
        for output in &mut self.outputs {
            output.drain_and_close(&mut self.sinks);
        }
        // The first job's segments are the caller's to remove (it knows the kvsname).
        for job in &self.jobs[1..] {
            let kvsname = job.server.kvsname();
            if let Err(e) = reflex_base::segment::remove_job_segments(kvsname) {
                let message = format!(
                    "mpiexec: cannot remove the shared-memory segments of job {kvsname}: {e}\n"
                );
                self.sinks.write(Sink::Stderr, message.as_bytes());
            }
        }
        self.status.unwrap_or(0)
    }

    fn all_ranks_ended(&self) -> bool {
        self.ranks.iter().all(|r| r.ending.is_some())
    }

    /// Sends `signal` to every process of the job: the group of each unreaped rank, and every
    /// child of mpiexec (a subreaper: orphans of reaped ranks are among them).
    fn signal_job(&self, signal: Signal) {
        self.signal_ranks(signal);
        signal_all(&live_children(self.me), signal);
    }

    /// Sends `signal` to the group of each rank not reaped yet, of every job.
    fn signal_ranks(&self, signal: Signal) {
        let unreaped = self.ranks.iter().filter(|r| r.ending.is_none());
        signal_rank_groups(unreaped.map(|r| r.pid), signal);
    }

    fn terminate(&mut self) {
        self.signal_job(Signal::SIGTERM);
        // A stopped process only acts on SIGTERM once continued.
        self.signal_job(Signal::SIGCONT);
        self.phase = Phase::Terminating {
            kill_at: Instant::now() + KILL_GRACE,
        };
    }

    /// Escalates to SIGKILL at the deadline; while killing, kills newly re-parented processes.
    /// Once every rank has ended, leftover processes (a rank's background children) are
    /// terminated the same way, quietly.
    fn advance_phase(&mut self, now: Instant) {
        match self.phase {
            Phase::Running if self.all_ranks_ended() && !live_children(self.me).is_empty() => {
                self.terminate()
            }
            Phase::Terminating { kill_at } if now >= kill_at => {
                self.signal_job(Signal::SIGKILL);
                self.phase = Phase::Killing;
            }
            Phase::Killing => self.signal_job(Signal::SIGKILL),
            _ => {}
        }
    }

    fn finished(&mut self, now: Instant) -> bool {
        if !self.all_ranks_ended() || !live_children(self.me).is_empty() {
            return false;
        }
        if self.outputs.iter().all(|o| !o.is_open()) {
            return true;
        }
        let deadline = *self.drain_until.get_or_insert(now + DRAIN_GRACE);
        now >= deadline
    }

    /// Reaps every child that has ended (ranks and re-parented orphans).
    fn reap(&mut self) {
        loop {
            match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) | Err(_) => return,
                Ok(status) => {
                    if let Some((pid, ending)) = Ending::from_wait(status) {
                        self.on_exit(pid, ending);
                    }
                }
            }
        }
    }

    fn on_exit(&mut self, pid: Pid, ending: Ending) {
        let Some(rank) = self
            .ranks
            .iter()
            .position(|r| r.pid == pid && r.ending.is_none())
        else {
            return; // a re-parented orphan: nothing to report
        };
        // Everything the rank wrote to PMI before exiting (an abort, typically) comes first.
        // (Bounded: a process that inherited the socket could keep writing to it.)
        for _ in 0..EXIT_DRAIN_ROUNDS {
            if !self.receive_pmi(rank) {
                break;
            }
        }
        self.close_pmi(rank);
        self.ranks[rank].ending = Some(ending);
        if rank == 0 {
            self.stdin.stop();
        }
        if ending.is_failure() {
            let message = format!(
                "{} (pid {pid}) {}; terminating the job",
                self.name(rank),
                ending.describe()
            );
            self.fail(&message, ending.status_code());
        }
    }

    fn poll_once(&mut self, now: Instant) {
        let timeout = self.poll_timeout(now);
        let (slots, ready) = {
            let (slots, mut fds) = self.poll_set();
            match poll(&mut fds, timeout) {
                Ok(_) => {}
                Err(Errno::EINTR) => return,
                Err(e) => {
                    self.fail(&format!("poll failed: {e}"), 1);
                    return;
                }
            }
            let ready: Vec<PollFlags> = fds
                .iter()
                .map(|fd| fd.revents().unwrap_or(PollFlags::empty()))
                .collect();
            (slots, ready)
        };
        for (slot, flags) in slots.into_iter().zip(ready) {
            if !flags.is_empty() {
                self.dispatch(slot, flags);
            }
        }
    }

    fn poll_timeout(&self, now: Instant) -> PollTimeout {
        let wait = match self.phase {
            Phase::Terminating { kill_at } => {
                Some(kill_at.saturating_duration_since(now).min(KILL_RESCAN))
            }
            Phase::Killing => Some(KILL_RESCAN),
            Phase::Running if self.all_ranks_ended() => Some(KILL_RESCAN),
            Phase::Running => self
                .time_limit
                .map(|(at, _)| at.saturating_duration_since(now)),
        };
        let wait = match (wait, self.drain_until) {
            (Some(w), Some(d)) => Some(w.min(d.saturating_duration_since(now))),
            (w, d) => w.or(d.map(|d| d.saturating_duration_since(now))),
        };
        wait.map_or(PollTimeout::NONE, |w| {
            PollTimeout::try_from(w).unwrap_or(PollTimeout::MAX)
        })
    }

    fn poll_set(&self) -> (Vec<Slot>, Vec<PollFd<'_>>) {
        let mut set = vec![(
            Slot::Signals,
            PollFd::new(self.signals.as_fd(), PollFlags::POLLIN),
        )];
        for (i, rank) in self.ranks.iter().enumerate() {
            if let Some(conn) = &rank.pmi {
                let mut events = PollFlags::POLLIN;
                if conn.wants_write() {
                    events |= PollFlags::POLLOUT;
                }
                set.push((Slot::Pmi(i), PollFd::new(conn.fd(), events)));
            }
        }
        for (i, output) in self.outputs.iter().enumerate() {
            if let Some(fd) = output.fd() {
                set.push((Slot::Output(i), PollFd::new(fd, PollFlags::POLLIN)));
            }
        }
        if let Some(fd) = self.stdin.source_fd() {
            set.push((Slot::StdinSource, PollFd::new(fd, PollFlags::POLLIN)));
        }
        if let Some(fd) = self.stdin.target_fd() {
            set.push((Slot::StdinTarget, PollFd::new(fd, PollFlags::POLLOUT)));
        }
        set.into_iter().unzip()
    }

    fn dispatch(&mut self, slot: Slot, flags: PollFlags) {
        match slot {
            Slot::Signals => self.read_signals(),
            Slot::Pmi(rank) => {
                if flags.intersects(PollFlags::POLLOUT) {
                    if let Some(conn) = self.ranks[rank].pmi.as_mut() {
                        conn.flush();
                    }
                }
                if !(flags - PollFlags::POLLOUT).is_empty() {
                    let _ = self.receive_pmi(rank);
                }
            }
            Slot::Output(i) => self.outputs[i].pump(&mut self.sinks),
            Slot::StdinSource => self.stdin.read_source(),
            Slot::StdinTarget => self.stdin.write_target(),
        }
    }

    fn read_signals(&mut self) {
        while let Ok(Some(info)) = self.signals.read_signal() {
            let signal = info.ssi_signo as i32;
            match JobControl::from_signal(signal) {
                Some(JobControl::Stop) => {
                    self.signal_job(Signal::SIGSTOP);
                    jobctl::stop_self();
                }
                Some(JobControl::Continue) => self.signal_job(Signal::SIGCONT),
                None if signal != Signal::SIGCHLD as i32 => self.forward_user_signal(signal),
                None => {}
            }
        }
    }

    /// SIGINT/SIGTERM/SIGHUP go to the ranks; a second one kills the job.
    fn forward_user_signal(&mut self, signal: i32) {
        let Ok(sig) = Signal::try_from(signal) else {
            return;
        };
        self.user_signals += 1;
        if self.user_signals > 1 {
            self.fail(&repeated_signal_message(signal), 128 + signal);
            return;
        }
        self.signal_ranks(sig);
    }

    /// Reads and serves what `rank` sent on its PMI socket.
    /// Returns whether more bytes may be waiting (the read budget ran out).
    fn receive_pmi(&mut self, rank: usize) -> bool {
        let Some(conn) = self.ranks[rank].pmi.as_mut() else {
            return false;
        };
        let received = conn.receive();
        let (job, job_rank) = (self.ranks[rank].job, self.ranks[rank].rank);
        for line in &received.lines {
            let outcome = self.jobs[job].server.handle_line(job_rank, line);
            self.apply(job, outcome);
        }
        let broken = received.error.is_some();
        if let Some(error) = received.error {
            let event = Event::ProtocolError {
                rank: job_rank,
                error: error.to_string(),
            };
            self.apply(
                job,
                Outcome {
                    replies: Vec::new(),
                    event: Some(event),
                },
            );
        }
        if received.closed || broken {
            self.close_pmi(rank);
            return false;
        }
        received.more
    }

    fn close_pmi(&mut self, rank: usize) {
        if self.ranks[rank].pmi.take().is_some() {
            let (job, job_rank) = (self.ranks[rank].job, self.ranks[rank].rank);
            let outcome = self.jobs[job].server.disconnect(job_rank);
            self.apply(job, outcome);
        }
    }

    /// Writes job `job`'s server replies and acts on its event.
    fn apply(&mut self, job: usize, outcome: Outcome) {
        let first = self.jobs[job].first;
        for reply in outcome.replies {
            if let Some(conn) = self
                .ranks
                .get_mut(first + reply.rank as usize)
                .and_then(|r| r.pmi.as_mut())
            {
                conn.send(&reply.line);
            }
        }
        let Some(event) = outcome.event else {
            return;
        };
        let who = |rank: u32| self.name(first + rank as usize);
        match event {
            Event::Abort { rank, code, msg } => {
                let detail = msg.map(|m| format!(": {m}")).unwrap_or_default();
                let message = format!("{} called MPI_Abort with code {code}{detail}", who(rank));
                self.fail(&message, code);
            }
            Event::BarrierBroken { missing, waiting } => {
                let message = format!(
                    "{waiting} rank(s) wait in a pmi barrier that {} can no longer reach \
                     (it finalized or closed its pmi connection); terminating the job",
                    who(missing)
                );
                self.fail(&message, 1);
            }
            Event::ProtocolError { rank, error } => {
                let message = format!(
                    "{} broke the pmi protocol: {error}; terminating the job",
                    who(rank)
                );
                self.fail(&message, 1);
            }
            Event::Spawn { rank, request } => {
                let result = self.spawn_job(job, &request);
                let reply = self.jobs[job].server.spawn_reply(rank, &result);
                self.apply(
                    job,
                    Outcome {
                        replies: vec![reply],
                        event: None,
                    },
                );
            }
            Event::Finalize { .. } | Event::BarrierComplete => {}
        }
    }
}

#[path = "supervise_spawn.rs"]
mod spawn_jobs;
