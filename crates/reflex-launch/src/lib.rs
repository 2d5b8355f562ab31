//! Reflex's launcher: `mpiexec` (one host, or many through `reflexd`), the daemon's session
//! program `reflex-session`, and `reflex-info`.
//!
//! `mpiexec` forks the ranks itself and serves PMI-1 in-process (DESIGN.md "Wire-up and
//! launch"), with the I/O-free [`reflex_pmi::Server`] inside a `poll(2)` loop. Modules:
//! - [`args`]: the Hydra-compatible command line;
//! - [`spawn`]: one rank's environment, PMI socket, pipes and session;
//! - [`supervise`]: the event loop (PMI, stdio, signals, reaping, termination, cleanup), which
//!   also starts the jobs a job spawns (`MPI_Comm_spawn`, checked by [`dynamic`]);
//! - [`jobctl`]: Ctrl-Z and `fg` for the whole job (one host or many);
//! - [`pmi_conn`], [`output`], [`stdin`]: the byte plumbing of that loop;
//! - [`procs`]: exit statuses, signal names, finding leftover processes;
//! - [`info`]: what `reflex-info` prints;
//! - [`hosts`], [`remote`]: `mpiexec -hosts` (placement, the client of every host's reflexd);
//! - [`select`]: hosts chosen by a selector when none are given (discovery);
//! - [`session`]: `reflex-session`, the daemon side of one connection (runs a host's ranks).

#![forbid(unsafe_code)]

pub mod args;
pub mod dynamic;
pub mod hosts;
pub mod info;
pub mod jobctl;
pub mod output;
pub mod pmi_conn;
pub mod procs;
pub mod remote;
pub mod select;
pub mod session;
pub mod spawn;
pub mod stdin;
pub mod supervise;

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsFd, IntoRawFd};

use nix::fcntl::{fcntl, FcntlArg};
use nix::sys::resource::{getrlimit, setrlimit, Resource};
use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};

use args::{Invocation, JobSpec, HELP};
use reflex_base::config::Config;
use supervise::Supervisor;

/// Exit status for a command line that cannot be run.
const USAGE_STATUS: i32 = 2;

/// `mpiexec` with the given arguments (without the program name); returns the exit status.
pub fn mpiexec_main(args: impl IntoIterator<Item = OsString>) -> i32 {
    match args::parse_args(args) {
        Ok(Invocation::Help) => {
            print!("{HELP}");
            0
        }
        Ok(Invocation::Version) => {
            println!("mpiexec (Reflex) {}", env!("CARGO_PKG_VERSION"));
            0
        }
        Ok(Invocation::Run(spec)) => run_job(&spec),
        Err(e) => {
            eprintln!("mpiexec: {e}");
            USAGE_STATUS
        }
    }
}

/// Runs one job to its end, then removes its shared-memory segments whatever happened.
fn run_job(spec: &JobSpec) -> i32 {
    let spec = match select::resolve(spec) {
        Ok(spec) => spec,
        Err(message) => {
            eprintln!("mpiexec: {message}");
            return 1;
        }
    };
    let spec = spec.as_ref();
    if spec.remote.is_remote() {
        return run_remote(spec);
    }
    let kvsname = reflex_pmi::new_kvsname("reflex");
    let status = match prepare_and_launch(spec, &kvsname) {
        Ok(supervisor) => supervisor.run(),
        Err(message) => {
            eprintln!("mpiexec: {message}");
            1
        }
    };
    if let Err(e) = reflex_base::segment::remove_job_segments(&kvsname) {
        eprintln!("mpiexec: cannot remove the shared-memory segments of job {kvsname}: {e}");
    }
    status
}

/// Sets mpiexec up (descriptors, signals, subreaper) and starts every rank. A rank that cannot
/// start makes the job fail; the supervisor then cleans up the ranks already started.
fn prepare_and_launch(spec: &JobSpec, kvsname: &str) -> Result<Supervisor, String> {
    if let Some(dir) = &spec.wdir {
        // The ranks start in mpiexec's directory (posix_spawn has no chdir), and a relative
        // program is found from there, as under Hydra's proxy.
        std::env::set_current_dir(dir)
            .map_err(|e| format!("cannot use working directory {}: {e}", dir.display()))?;
    }
    ensure_standard_fds()
        .map_err(|e| format!("cannot open /dev/null for a closed standard descriptor: {e}"))?;
    raise_fd_limit();
    let signals = route_signals().map_err(|e| format!("cannot set up signal handling: {e}"))?;
    nix::sys::prctl::set_child_subreaper(true)
        .map_err(|e| format!("cannot become a child subreaper: {e}"))?;

    let job = spawn::Job {
        spec,
        kvsname,
        vars: spawn::job_variables(spec),
    };
    check_settings(&job.vars)?;
    let server = reflex_pmi::Server::new(kvsname, spec.ranks, 0, universe_size(spec));
    let mut supervisor = Supervisor::new(signals, server, spec.label);
    supervisor.allow_spawn(job.vars.clone());
    if let Some(limit) = time_limit(std::env::var_os("MPIEXEC_TIMEOUT"))? {
        supervisor.limit_time(limit);
    }
    for rank in 0..spec.ranks {
        match spawn::spawn_rank(&job, spawn::Place::single_host(rank, spec.ranks)) {
            Ok(spawned) => supervisor.add_rank(spawned),
            Err(e) => {
                supervisor.fail(&e.to_string(), e.status_code());
                break;
            }
        }
    }
    Ok(supervisor)
}

/// Runs a job on other hosts through their reflexd (see [`remote`]).
fn run_remote(spec: &JobSpec) -> i32 {
    let kvsname = reflex_pmi::new_kvsname("reflex");
    match prepare_remote(spec, &kvsname) {
        Ok(job) => job.run(),
        Err(message) => {
            eprintln!("mpiexec: {message}");
            1
        }
    }
}

fn prepare_remote(spec: &JobSpec, kvsname: &str) -> Result<remote::RemoteJob, String> {
    let (hosts, assignments, mapping) = remote::assign(spec)?;
    let config = remote::credentials(spec)?
        .client_config()
        .map_err(|e| e.to_string())?;
    let vars = spawn::job_variables(spec);
    check_settings(&vars)?;
    let here =
        std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?;
    let cwd = spec.wdir.as_ref().map_or(here.clone(), |w| here.join(w));
    let signals = route_signals().map_err(|e| format!("cannot set up signal handling: {e}"))?;
    let socks = remote::connect_all(&assignments, spec.remote.port)?;
    let mut server = reflex_pmi::Server::new(kvsname, spec.ranks, 0, universe_size(spec));
    server.set_process_mapping(&mapping);
    let mut layout = remote::JobLayout {
        hosts,
        ppn: spec.remote.ppn,
        used: Vec::new(),
        vars: vars.clone(),
        cwd: cwd.clone(),
    };
    layout.record_job(&assignments);
    let mut parts = Vec::with_capacity(assignments.len());
    for (a, sock) in assignments.into_iter().zip(socks) {
        let link = reflexd::tls::TlsLink::client(sock, config.clone(), &a.host)
            .map_err(|e| format!("host {}: {e}", a.host))?;
        let launch = remote::launch_spec(spec, kvsname, &a, &vars, &cwd);
        parts.push((a, link, launch));
    }
    let mut job = remote::RemoteJob::new(parts, server, signals, spec.label);
    job.allow_spawn(remote::SpawnContext {
        config,
        port: spec.remote.port,
        layout,
    });
    Ok(job)
}

/// The job's time limit from `MPIEXEC_TIMEOUT` (whole seconds, as Hydra reads it; unset, empty
/// or 0: none).
fn time_limit(value: Option<OsString>) -> Result<Option<std::time::Duration>, String> {
    let Some(value) = value.filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    let text = value.to_string_lossy();
    match text.trim().parse::<u64>() {
        Ok(0) => Ok(None),
        Ok(secs) => Ok(Some(std::time::Duration::from_secs(secs))),
        Err(_) => Err(format!(
            "MPIEXEC_TIMEOUT must be a whole number of seconds, not '{text}'"
        )),
    }
}

/// `get_universe_size`: `-usize`, else the number of ranks.
fn universe_size(spec: &JobSpec) -> i32 {
    spec.universe.unwrap_or(spec.ranks) as i32
}

/// Checks the `REFLEX_*` settings the ranks will see, once for the whole job: an invalid value
/// stops the launch (every rank would fail the same way), an unknown name is a warning.
fn check_settings(vars: &[(OsString, OsString)]) -> Result<(), String> {
    let loaded = Config::from_vars(vars.iter().map(|(k, v)| (k, v))).map_err(|e| e.to_string())?;
    for warning in loaded.warnings {
        eprintln!("mpiexec: warning: {warning}");
    }
    Ok(())
}

/// Blocks SIGCHLD, SIGINT, SIGTERM, SIGHUP and the job-control signals ([`jobctl::SIGNALS`])
/// and returns a signalfd that receives them (the ranks start with an empty signal mask).
fn route_signals() -> nix::Result<SignalFd> {
    let mut mask = SigSet::empty();
    for signal in [
        Signal::SIGCHLD,
        Signal::SIGINT,
        Signal::SIGTERM,
        Signal::SIGHUP,
    ]
    .into_iter()
    .chain(jobctl::SIGNALS)
    {
        mask.add(signal);
    }
    mask.thread_block()?;
    SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
}

/// Opens `/dev/null` on any of fds 0-2 that is closed, so that no socket or pipe of the job
/// lands on a standard descriptor number.
fn ensure_standard_fds() -> io::Result<()> {
    let (stdin, stdout, stderr) = (io::stdin(), io::stdout(), io::stderr());
    for fd in [stdin.as_fd(), stdout.as_fd(), stderr.as_fd()] {
        if fcntl(fd, FcntlArg::F_GETFD).is_err() {
            // open() takes the lowest free number, which is this one: keep it open for good.
            let null: File = OpenOptions::new()
                .read(true)
                .write(true)
                .open("/dev/null")?;
            let _ = null.into_raw_fd();
        }
    }
    Ok(())
}

/// Each rank costs four descriptors: use the hard limit.
fn raise_fd_limit() {
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        if soft < hard {
            let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
        }
    }
}
