//! `reflexd`'s main loop: accept connections and give each to its own session process.
//!
//! The daemon itself never parses what a client sends: every accepted connection becomes a
//! `reflex-session` process (TLS, authentication, the job), with the socket as its standard
//! input, in a fresh cgroup ([`crate::cleanup`]). So a misbehaving client can at worst kill its
//! own session, and one daemon serves any number of clients and jobs at once (REXEC's
//! per-client threads, as processes). When a session ends, however it ends, the daemon kills
//! what is left of its job (cgroup, else re-parented orphans: the daemon is a child subreaper)
//! and removes the group. On SIGTERM/SIGINT it terminates the sessions, which clean up, and
//! exits; if the daemon dies, its sessions get SIGTERM from the kernel (parent-death signal).
//! When discovery is on, every change in the set of sessions (a job starts or ends) is told to
//! the announcer, which announces at once (REXEC's event-driven announcements).

use std::collections::HashMap;
use std::io;
use std::net::TcpListener;
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{kill, SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::unistd::Pid;

use crate::cleanup::{kill_children_except, JobGroup};
use crate::discovery::announcer::{Announcer, Jobs};

/// The default TCP port of `reflexd`.
pub const DEFAULT_PORT: u16 = 7290;

/// How the daemon runs.
#[derive(Debug, Clone)]
pub struct DaemonConfig {
    /// Address to listen on (`0.0.0.0:7290` by default).
    pub listen: String,
    /// Directory with `ca.pem`, `host.pem`, `host.key`.
    pub certs: PathBuf,
    /// The session program (`reflex-session`, found next to `reflexd` by default).
    pub session: PathBuf,
}

struct Session {
    child: Child,
    group: Option<JobGroup>,
}

/// Runs the daemon until SIGTERM or SIGINT, telling `announcer` (if any) when jobs start and
/// end; returns the exit status.
pub fn run(config: &DaemonConfig, announcer: Option<&Announcer>) -> io::Result<i32> {
    // Fail early on unreadable credentials rather than in every session.
    crate::tls::Credentials::load(&config.certs, "host")?.server_config()?;
    let listener = TcpListener::bind(&config.listen).map_err(|e| {
        io::Error::new(e.kind(), format!("cannot listen on {}: {e}", config.listen))
    })?;
    listener.set_nonblocking(true)?;
    let mut mask = SigSet::empty();
    for s in [
        Signal::SIGCHLD,
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
    ] {
        mask.add(s);
    }
    mask.thread_block()?;
    let signals = SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)?;
    nix::sys::prctl::set_child_subreaper(true)?;
    eprintln!("reflexd: listening on {}", listener.local_addr()?);
    let mut sessions: HashMap<u32, Session> = HashMap::new();
    let mut counter = 0u64;
    loop {
        let mut fds = [
            PollFd::new(listener.as_fd(), PollFlags::POLLIN),
            PollFd::new(signals.as_fd(), PollFlags::POLLIN),
        ];
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(e.into()),
        }
        while let Ok(Some(info)) = signals.read_signal() {
            if info.ssi_signo != Signal::SIGCHLD as u32 {
                return Ok(shut_down(sessions));
            }
        }
        let before = sessions.len();
        reap(&mut sessions);
        let reaped = sessions.len() != before;
        while let Ok((sock, peer)) = listener.accept() {
            counter += 1;
            match start_session(config, sock, counter) {
                Ok(session) => {
                    sessions.insert(session.child.id(), session);
                }
                Err(e) => eprintln!("reflexd: cannot start a session for {peer}: {e}"),
            }
        }
        if let Some(a) = announcer.filter(|_| reaped || sessions.len() != before) {
            let groups = sessions
                .values()
                .map(|s| s.group.as_ref().map(|g| g.path().to_owned()));
            a.jobs_changed(Jobs(groups.collect()));
        }
    }
}

fn start_session(config: &DaemonConfig, sock: std::net::TcpStream, n: u64) -> io::Result<Session> {
    sock.set_nonblocking(false)?;
    let group = JobGroup::create(&format!("reflexd-{}-{n}", std::process::id()));
    let mut cmd = Command::new(&config.session);
    cmd.arg("--certs")
        .arg(&config.certs)
        .arg("--daemon-pid")
        .arg(std::process::id().to_string())
        .stdin(Stdio::from(std::os::fd::OwnedFd::from(sock)));
    if let Some(g) = &group {
        cmd.arg("--cgroup").arg(g.path());
    }
    match cmd.spawn() {
        Ok(child) => Ok(Session { child, group }),
        Err(e) => {
            if let Some(g) = group {
                let _ = g.kill_and_remove();
            }
            Err(io::Error::new(
                e.kind(),
                format!("cannot run {}: {e}", config.session.display()),
            ))
        }
    }
}

/// Reaps ended sessions and cleans up after them; kills orphans re-parented to the daemon.
fn reap(sessions: &mut HashMap<u32, Session>) {
    let ended: Vec<u32> = sessions
        .iter_mut()
        .filter_map(|(&pid, s)| {
            let over = s.child.try_wait().map_or(true, |status| status.is_some());
            over.then_some(pid)
        })
        .collect();
    for pid in ended {
        if let Some(Session { group: Some(g), .. }) = sessions.remove(&pid) {
            if let Err(e) = g.kill_and_remove() {
                eprintln!("reflexd: cleanup of session {pid}: {e}");
            }
        }
    }
    let keep: Vec<Pid> = sessions.keys().map(|&p| Pid::from_raw(p as i32)).collect();
    kill_children_except(&keep);
    // Reap the orphans just killed (and any other re-parented process).
    while let Ok(status) = nix::sys::wait::waitpid(
        Some(Pid::from_raw(-1)),
        Some(nix::sys::wait::WaitPidFlag::WNOHANG),
    ) {
        match status.pid() {
            Some(pid) if !keep.contains(&pid) => {}
            _ => break,
        }
    }
}

/// Terminates every session (they clean up their jobs), waits for them, removes the groups.
fn shut_down(mut sessions: HashMap<u32, Session>) -> i32 {
    for pid in sessions.keys() {
        let _ = kill(Pid::from_raw(*pid as i32), Signal::SIGTERM);
    }
    for (_, mut s) in sessions.drain() {
        let _ = s.child.wait();
        if let Some(g) = s.group {
            let _ = g.kill_and_remove();
        }
    }
    eprintln!("reflexd: stopped");
    0
}
