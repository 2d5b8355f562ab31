//! `reflex-session`: one client connection of `reflexd`, from the TLS handshake to the end of
//! its job on this host.
//!
//! `reflexd` starts one session per accepted connection, with the socket as standard input and
//! a fresh cgroup ([`reflexd::cleanup`]). The session joins the cgroup, runs the TLS handshake
//! (client certificate required), checks the user ([`reflexd::proto::daemon`]), drops root
//! privileges to that user, and starts the host's ranks in the job's working directory with the
//! job's environment. Then one `poll(2)` loop relays: PMI lines between the ranks and `mpiexec`
//! (which runs the job's PMI server), stdout/stderr to `mpiexec`, stdin and signals from it,
//! exit statuses, heartbeats both ways. `Stop` (Ctrl-Z at `mpiexec`) stops the ranks with
//! SIGSTOP and suspends the heartbeat rule until `Continue` (SIGCONT), since `mpiexec` is
//! stopped too. The job on this host ends when every rank has ended,
//! every other process of the job is gone and every output pipe is drained: then `Done` goes
//! out and the session exits. `Kill`, a lost connection, silence beyond the heartbeat timeout
//! or SIGTERM (also sent by the kernel when `reflexd` dies) terminate the ranks (SIGTERM, then
//! SIGKILL after the grace time, through the cgroup when there is one).

mod job;

use std::io;
use std::net::TcpStream;
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::time::Instant;

use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use reflexd::cleanup::JobGroup;
use reflexd::proto::codec::Msg;
use reflexd::tls::{Credentials, TlsLink};

pub use job::HostJob;

/// The session's command line, as `reflexd` passes it.
#[derive(Debug, Clone, Default)]
pub struct SessionArgs {
    pub certs: PathBuf,
    pub daemon_pid: Option<i32>,
    pub cgroup: Option<PathBuf>,
}

impl SessionArgs {
    /// Parses `--certs DIR [--daemon-pid PID] [--cgroup PATH]`.
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Self, String> {
        let mut parsed = SessionArgs::default();
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let value = args.next().ok_or(format!("{arg} needs a value"))?;
            match arg.as_str() {
                "--certs" => parsed.certs = value.into(),
                "--daemon-pid" => {
                    parsed.daemon_pid =
                        Some(value.parse().map_err(|_| format!("bad pid {value:?}"))?)
                }
                "--cgroup" => parsed.cgroup = Some(value.into()),
                _ => return Err(format!("unknown argument {arg}")),
            }
        }
        if parsed.certs.as_os_str().is_empty() {
            return Err("--certs is required".into());
        }
        Ok(parsed)
    }
}

/// Runs a session over the connection on standard input; returns the exit status.
pub fn session_main(args: &SessionArgs) -> i32 {
    match run(args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("reflex-session: {e}");
            1
        }
    }
}

fn run(args: &SessionArgs) -> io::Result<()> {
    nix::sys::prctl::set_pdeathsig(Signal::SIGTERM)?;
    if let Some(daemon) = args.daemon_pid {
        if nix::unistd::getppid().as_raw() != daemon {
            return Err(io::Error::other(
                "reflexd exited before the session started",
            ));
        }
    }
    let group = args.cgroup.as_deref().map(JobGroup::at);
    if let Some(g) = &group {
        g.enter(std::process::id())?;
    }
    // A session of its own: the job gets its own scheduler autogroup (a fair CPU share against
    // other jobs and daemons, as each rank under Hydra has) and no controlling terminal.
    nix::unistd::setsid()?;
    let signals = route_signals()?;
    nix::sys::prctl::set_child_subreaper(true)?;
    let config = Credentials::load(&args.certs, "host")?.server_config()?;
    let sock = TcpStream::from(io::stdin().as_fd().try_clone_to_owned()?);
    sock.set_nonblocking(true)?;
    sock.set_nodelay(true)?;
    let peer = sock
        .peer_addr()
        .map_or_else(|_| "unknown peer".to_owned(), |a| a.to_string());
    let link = TlsLink::server(sock, config)?;
    let mut job = HostJob::new(link, signals, group, Instant::now());
    job.run()
        .map_err(|e| io::Error::new(e.kind(), format!("client {peer}: {e}")))
}

/// Blocks the signals the loop reads through a signalfd.
fn route_signals() -> io::Result<SignalFd> {
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
    Ok(SignalFd::with_flags(
        &mask,
        SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC,
    )?)
}

/// Sends `Error(text)` (best effort) before the session gives up.
pub(crate) fn send_error(link: &mut TlsLink, text: &str) {
    let _ = link.send(&Msg::Error(text.to_owned()));
    link.close();
}
