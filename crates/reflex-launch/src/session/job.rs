//! The event loop of one session: TLS link to `mpiexec`, the host's ranks, their PMI sockets,
//! output pipes and stdin, signals and heartbeats (see the module documentation of
//! [`crate::session`]).

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, ErrorKind, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::Signal;
use nix::sys::signalfd::SignalFd;
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{getpid, Pid};
use reflexd::cleanup::JobGroup;
use reflexd::identity::{local_uid, subject_common_name};
use reflexd::proto::codec::{LaunchSpec, Msg};
use reflexd::proto::daemon::{DaemonProtocol, Step};
use reflexd::proto::heartbeat::{Beat, Liveness};
use reflexd::tls::TlsLink;

use crate::args::{EnvPolicy, JobSpec};
use crate::pmi_conn::PmiConn;
use crate::procs::{live_children, signal_all, signal_rank_groups, Ending};
use crate::session::send_error;
use crate::spawn::{spawn_rank, Job, Place, Spawned};
use crate::supervise::KILL_GRACE;

/// Largest output chunk sent at once.
const OUTPUT_CHUNK: usize = 64 * 1024;
/// How long output pipes may stay open once every process of the job is gone.
const DRAIN_GRACE: Duration = Duration::from_secs(1);
/// How often processes are looked for while the job is being killed.
const KILL_RESCAN: Duration = Duration::from_millis(100);

#[derive(Debug)]
struct HostRank {
    rank: u32,
    pid: Pid,
    ending: Option<Ending>,
    pmi: Option<PmiConn>,
}

#[derive(Debug)]
struct RawPipe {
    fd: Option<OwnedFd>,
    rank: u32,
    err: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Running,
    Terminating { kill_at: Instant },
    Killing,
}

#[derive(Debug, Clone, Copy)]
enum Slot {
    Link,
    Signals,
    Pmi(usize),
    Output(usize),
    Stdin,
}

/// One session's job on this host.
#[derive(Debug)]
pub struct HostJob {
    link: TlsLink,
    link_open: bool,
    signals: SignalFd,
    group: Option<JobGroup>,
    ranks_group: Option<JobGroup>,
    proto: Option<DaemonProtocol>,
    live: Liveness,
    me: Pid,
    ranks: Vec<HostRank>,
    outputs: Vec<RawPipe>,
    stdin: Option<File>,
    stdin_buf: Vec<u8>,
    stdin_eof: bool,
    phase: Phase,
    /// The job's PMI name once its ranks were launched: the session removes the job's
    /// `/dev/shm` files (shared segments, shared file pointers) on this host when the job ends.
    launched: Option<String>,
    drain_until: Option<Instant>,
    user: Option<(u32, u32)>,
}

impl HostJob {
    /// A session over `link`; `group` is its cgroup, if any.
    pub fn new(link: TlsLink, signals: SignalFd, group: Option<JobGroup>, now: Instant) -> Self {
        Self {
            link,
            link_open: true,
            signals,
            group,
            ranks_group: None,
            proto: None,
            live: Liveness::new(now),
            me: getpid(),
            ranks: Vec::new(),
            outputs: Vec::new(),
            stdin: None,
            stdin_buf: Vec::new(),
            stdin_eof: false,
            phase: Phase::Running,
            launched: None,
            drain_until: None,
            user: None,
        }
    }

    /// Runs until the job on this host is over (or never started); an error describes why
    /// the connection ended early.
    pub fn run(&mut self) -> io::Result<()> {
        let mut failure = None;
        loop {
            self.reap();
            let now = Instant::now();
            self.advance_phase(now);
            if self.finished(now) {
                break;
            }
            if !self.link_open && self.launched.is_none() {
                break;
            }
            if self.link_open {
                match self.live.tick(now) {
                    Beat::Send => self.send(&Msg::Heartbeat),
                    Beat::PeerDead => {
                        failure.get_or_insert_with(|| "mpiexec fell silent".to_owned());
                        self.lose_link();
                    }
                    Beat::Nothing => {}
                }
            }
            if let Err(e) = self.poll_once(now) {
                failure.get_or_insert_with(|| e.to_string());
                self.lose_link();
            }
        }
        self.remove_segments();
        if self.link_open && self.launched.is_some() {
            self.send(&Msg::Done);
            self.link.close();
        }
        match failure {
            Some(f) => Err(io::Error::other(f)),
            None => Ok(()),
        }
    }

    /// Removes what the job's ranks left in `/dev/shm` on this host (a rank that crashed
    /// cannot remove its segments or its files' shared-pointer sidecars), as `mpiexec` does on
    /// its own host.
    fn remove_segments(&self) {
        let Some(kvsname) = &self.launched else {
            return;
        };
        if let Err(e) = reflex_base::segment::remove_job_segments(kvsname) {
            eprintln!(
                "reflex-session: cannot remove the shared-memory files of job {kvsname}: {e}"
            );
        }
    }

    fn send(&mut self, msg: &Msg) {
        if self.link_open {
            if self.link.send(msg).is_err() {
                self.lose_link();
            } else {
                self.live.spoke(Instant::now());
            }
        }
    }

    /// The connection is gone: the job cannot go on.
    fn lose_link(&mut self) {
        self.link_open = false;
        self.terminate();
    }

    fn poll_once(&mut self, now: Instant) -> io::Result<()> {
        let timeout = self.poll_timeout(now);
        let (slots, ready) = {
            let (slots, mut fds) = self.poll_set();
            match poll(&mut fds, timeout) {
                Ok(_) | Err(Errno::EINTR) => {}
                Err(e) => return Err(e.into()),
            }
            let ready: Vec<PollFlags> = fds
                .iter()
                .map(|f| f.revents().unwrap_or(PollFlags::empty()))
                .collect();
            (slots, ready)
        };
        for (slot, flags) in slots.into_iter().zip(ready) {
            if !flags.is_empty() {
                self.dispatch(slot)?;
            }
        }
        if self.link_open {
            self.link.flush()?;
        }
        Ok(())
    }

    fn poll_timeout(&self, now: Instant) -> PollTimeout {
        let mut wait = if self.link_open {
            self.live.next_deadline(now)
        } else {
            KILL_RESCAN
        };
        match self.phase {
            Phase::Terminating { kill_at } => {
                wait = wait.min(kill_at.saturating_duration_since(now).min(KILL_RESCAN))
            }
            Phase::Killing => wait = wait.min(KILL_RESCAN),
            Phase::Running if self.launched.is_some() && self.all_ranks_ended() => {
                wait = wait.min(KILL_RESCAN)
            }
            Phase::Running => {}
        }
        PollTimeout::try_from(wait.max(Duration::from_millis(1))).unwrap_or(PollTimeout::MAX)
    }

    fn poll_set(&self) -> (Vec<Slot>, Vec<PollFd<'_>>) {
        let mut set = vec![(
            Slot::Signals,
            PollFd::new(self.signals.as_fd(), PollFlags::POLLIN),
        )];
        if self.link_open {
            let mut events = PollFlags::POLLIN;
            if self.link.wants_write() {
                events |= PollFlags::POLLOUT;
            }
            set.push((Slot::Link, PollFd::new(self.link.fd(), events)));
        }
        for (i, r) in self.ranks.iter().enumerate() {
            if let Some(conn) = &r.pmi {
                let mut events = PollFlags::POLLIN;
                if conn.wants_write() {
                    events |= PollFlags::POLLOUT;
                }
                set.push((Slot::Pmi(i), PollFd::new(conn.fd(), events)));
            }
        }
        for (i, o) in self.outputs.iter().enumerate() {
            if let Some(fd) = &o.fd {
                set.push((Slot::Output(i), PollFd::new(fd.as_fd(), PollFlags::POLLIN)));
            }
        }
        if let (Some(pipe), false) = (&self.stdin, self.stdin_buf.is_empty() && !self.stdin_eof) {
            set.push((Slot::Stdin, PollFd::new(pipe.as_fd(), PollFlags::POLLOUT)));
        }
        set.into_iter().unzip()
    }

    fn dispatch(&mut self, slot: Slot) -> io::Result<()> {
        match slot {
            Slot::Link => self.receive_link()?,
            Slot::Signals => self.read_signals(),
            Slot::Pmi(i) => {
                if let Some(conn) = self.ranks[i].pmi.as_mut() {
                    conn.flush();
                }
                self.receive_pmi(i);
            }
            Slot::Output(i) => self.pump_output(i),
            Slot::Stdin => self.write_stdin(),
        }
        Ok(())
    }

    fn receive_link(&mut self) -> io::Result<()> {
        let received = self.link.receive()?;
        if self.proto.is_none() && !self.link.is_handshaking() {
            let cert = self.link.peer_certificates().and_then(|c| c.first());
            let user = cert
                .ok_or_else(|| io::Error::other("no client certificate"))
                .and_then(|c| subject_common_name(c.as_ref()).map_err(io::Error::other))?;
            self.proto = Some(DaemonProtocol::new(&user));
        }
        for msg in received.msgs {
            self.live.heard(Instant::now());
            let Some(proto) = self.proto.as_mut() else {
                return Err(io::Error::other("message before the handshake ended"));
            };
            match proto.on_message(msg, local_uid) {
                Ok(step) => self.act(step),
                Err(text) => {
                    send_error(&mut self.link, &text);
                    return Err(io::Error::other(text));
                }
            }
        }
        if received.closed {
            self.lose_link();
            if self.launched.is_some() && !self.all_ranks_ended() {
                return Err(io::Error::other("mpiexec closed the connection"));
            }
        }
        Ok(())
    }

    fn act(&mut self, step: Step) {
        match step {
            Step::Nothing => {}
            Step::Welcome { uid, .. } => match self.become_user(uid) {
                Ok(()) => {
                    let host = host_name();
                    self.send(&Msg::Welcome { host });
                }
                Err(e) => {
                    send_error(&mut self.link, &e);
                    self.link_open = false;
                }
            },
            Step::Launch(spec) => self.launch(&spec),
            Step::Stdin(bytes) => self.stdin_buf.extend_from_slice(&bytes),
            Step::StdinEof => self.stdin_eof = true,
            Step::Signal(s) => {
                if let Ok(sig) = Signal::try_from(s) {
                    self.signal_job(sig);
                }
            }
            Step::PmiReply { rank, line } => {
                if let Some(conn) = self
                    .ranks
                    .iter_mut()
                    .find(|r| r.rank == rank)
                    .and_then(|r| r.pmi.as_mut())
                {
                    conn.send(&String::from_utf8_lossy(&line));
                }
            }
            Step::Kill => self.terminate(),
            Step::Stop => {
                self.signal_job(Signal::SIGSTOP);
                self.live.suspend();
            }
            Step::Continue => {
                self.live.resume(Instant::now());
                self.signal_job(Signal::SIGCONT);
            }
        }
    }
}

#[path = "lifecycle.rs"]
mod lifecycle;
use lifecycle::host_name;
