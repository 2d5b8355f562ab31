//! Starting one rank: environment, PMI socket, stdio pipes, session, signal state.
//!
//! Each rank gets one end of an AF_UNIX socketpair as `PMI_FD` (inheritable, like Hydra's, so
//! wrapper scripts work), plus `PMI_RANK`, `PMI_SIZE`, `PMI_JOBID` (the job's unique KVS name),
//! `MPI_LOCALNRANKS` and `MPI_LOCALRANKID` (launchers.md §2.1), and `REFLEX_LAUNCHER_PID` (the
//! library arms a parent-death signal with it, so a rank dies with a killed launcher). Each rank
//! leads a session and process group of its own, so a signal reaches its children too. Ranks
//! are started with `posix_spawnp`, which also gives each an empty signal mask (mpiexec blocks
//! the signals it reads through a signalfd) and default SIGPIPE handling (the Rust runtime
//! ignores SIGPIPE in mpiexec, and an ignored signal would survive `exec`); std's `Command` does
//! neither without `unsafe`. Ranks are started one after another from one thread, so the only
//! inheritable socket at each spawn is that rank's own.

use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;

use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, FdFlag, OFlag};
use nix::spawn::{posix_spawnp, PosixSpawnAttr, PosixSpawnFileActions, PosixSpawnFlags};
use nix::sys::signal::{SigSet, Signal};
use nix::unistd::{pipe2, Pid};

use crate::args::{EnvPolicy, JobSpec};
use crate::dynamic::{find_program, Lookup};

/// What every rank of one job shares.
#[derive(Debug)]
pub struct Job<'a> {
    pub spec: &'a JobSpec,
    /// The job's KVS name (`PMI_JOBID`).
    pub kvsname: &'a str,
    /// The environment common to every rank ([`job_variables`]).
    pub vars: Vec<(OsString, OsString)>,
}

/// A started rank and mpiexec's ends of its connections.
#[derive(Debug)]
pub struct Spawned {
    pub pid: Pid,
    pub pmi: UnixStream,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
    /// Rank 0's stdin pipe (non-blocking); `None` for the others, which read `/dev/null`.
    pub stdin: Option<File>,
}

/// Why a rank could not be started.
#[derive(Debug)]
pub struct SpawnError {
    pub rank: u32,
    pub program: OsString,
    pub source: io::Error,
}

impl std::fmt::Display for SpawnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cannot start rank {} ({:?}): {}",
            self.rank, self.program, self.source
        )
    }
}

impl SpawnError {
    /// The shell's convention: 127 when the program is not found, 126 when it cannot run.
    pub fn status_code(&self) -> i32 {
        if self.source.kind() == io::ErrorKind::NotFound {
            127
        } else {
            126
        }
    }
}

/// Where a rank is in the job: its rank and the job size, and its index among the ranks of
/// its host (`MPI_LOCALRANKID`) and their number (`MPI_LOCALNRANKS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    pub rank: u32,
    pub size: u32,
    pub local_rank: u32,
    pub local_size: u32,
}

impl Place {
    /// Rank `rank` of a job whose ranks all run on this host.
    pub fn single_host(rank: u32, size: u32) -> Self {
        Self {
            rank,
            size,
            local_rank: rank,
            local_size: size,
        }
    }
}

/// Starts the rank at `place` in a session (and process group) of its own, as Hydra does: one
/// signal to the group reaches the rank's children too, and the scheduler's autogroups share
/// the CPU among ranks rather than among all the threads of a job (an oversubscribed job of
/// multithreaded ranks ran MPICH's `threads/pt2pt/multisend4` in 59 s with one group for the
/// job, 30 s with one per rank). Rank 0 gets a stdin pipe, the others `/dev/null`. The working
/// directory is the launcher's own (it moves to `-wdir` before spawning).
pub fn spawn_rank(job: &Job<'_>, place: Place) -> Result<Spawned, SpawnError> {
    let spec = job.spec;
    let rank = place.rank;
    let error = |source: io::Error| SpawnError {
        rank,
        program: spec.program.clone(),
        source,
    };
    let errno = |e: Errno| error(e.into());
    let (ours, theirs) = UnixStream::pair().map_err(error)?;
    ours.set_nonblocking(true).map_err(error)?;
    fcntl(&theirs, FcntlArg::F_SETFD(FdFlag::empty())).map_err(errno)?;
    let (stdout_read, stdout_write) = pipe2(OFlag::O_CLOEXEC).map_err(errno)?;
    let (stderr_read, stderr_write) = pipe2(OFlag::O_CLOEXEC).map_err(errno)?;
    let (stdin_read, stdin_write) = if rank == 0 {
        let (read, write) = pipe2(OFlag::O_CLOEXEC).map_err(errno)?;
        (read, Some(write))
    } else {
        (OwnedFd::from(File::open("/dev/null").map_err(error)?), None)
    };

    let mut actions = PosixSpawnFileActions::init().map_err(errno)?;
    actions.add_dup2(stdin_read.as_raw_fd(), 0).map_err(errno)?;
    actions
        .add_dup2(stdout_write.as_raw_fd(), 1)
        .map_err(errno)?;
    actions
        .add_dup2(stderr_write.as_raw_fd(), 2)
        .map_err(errno)?;

    let mut attr = PosixSpawnAttr::init().map_err(errno)?;
    attr.set_sigmask(&SigSet::empty()).map_err(errno)?;
    attr.set_sigdefault(&SigSet::from(Signal::SIGPIPE))
        .map_err(errno)?;
    // glibc's POSIX_SPAWN_SETSID (2.26 and later), which nix does not name.
    let new_session = PosixSpawnFlags::from_bits_retain(libc::POSIX_SPAWN_SETSID as libc::c_int);
    let flags = PosixSpawnFlags::POSIX_SPAWN_SETSIGMASK
        | PosixSpawnFlags::POSIX_SPAWN_SETSIGDEF
        | new_session;
    attr.set_flags(flags).map_err(errno)?;

    let program = c_string(program_path(&spec.program, &job.vars).as_os_str()).map_err(error)?;
    let mut argv = vec![c_string(&spec.program).map_err(error)?];
    for arg in &spec.args {
        argv.push(c_string(arg).map_err(error)?);
    }
    let envp = rank_environment(job, place, theirs.as_raw_fd()).map_err(error)?;
    let pid = posix_spawnp(&program, &actions, &attr, &argv, &envp).map_err(errno)?;

    let stdin = match stdin_write {
        Some(write) => {
            fcntl(&write, FcntlArg::F_SETFL(OFlag::O_NONBLOCK)).map_err(errno)?;
            Some(File::from(write))
        }
        None => None,
    };
    Ok(Spawned {
        pid,
        pmi: ours,
        stdout: stdout_read,
        stderr: stderr_read,
        stdin,
    })
}

/// The program to start: a bare name is looked up in the ranks' own `PATH` when they have one
/// (as Hydra's proxy does, setting the environment before `execvp`; under `reflexd` the
/// session's `PATH` is not the user's); a name not found there is left to `posix_spawnp`,
/// which searches mpiexec's.
fn program_path(program: &OsStr, vars: &[(OsString, OsString)]) -> PathBuf {
    let path = var(vars, "PATH");
    let (Some(path), Some(name), Ok(cwd)) = (path, program.to_str(), std::env::current_dir())
    else {
        return PathBuf::from(program);
    };
    if name.contains('/') {
        return PathBuf::from(program);
    }
    let lookup = Lookup {
        cwd: cwd.clone(),
        path: Some(path.to_owned()),
    };
    find_program(name, None, &cwd, &lookup).unwrap_or_else(|_| PathBuf::from(program))
}

/// The environment common to every rank: mpiexec's own (as `-genvall/-genvnone/-genvlist`
/// say, without a surrounding launcher's `PMI_PORT`/`PMI_ID` or `PMIX_*`, which would make the
/// ranks join the outer job instead of this one), then `-env`/`-genv`.
pub fn job_variables(spec: &JobSpec) -> Vec<(OsString, OsString)> {
    let mut vars: Vec<(OsString, OsString)> = match &spec.env_policy {
        EnvPolicy::All => std::env::vars_os().collect(),
        EnvPolicy::None => Vec::new(),
        EnvPolicy::List(names) => names
            .iter()
            .filter_map(|n| std::env::var_os(n).map(|v| (n.into(), v)))
            .collect(),
    };
    vars.retain(|(name, _)| !is_outer_launcher_variable(name));
    for (name, value) in &spec.env {
        set_var(&mut vars, name.clone(), value.clone());
    }
    vars
}

/// A variable through which a surrounding launcher (Hydra `-pmi-port`, Slurm or Open MPI with
/// PMIx) would reach its own processes; the library looks for PMIx first.
fn is_outer_launcher_variable(name: &OsString) -> bool {
    name == "PMI_PORT" || name == "PMI_ID" || name.as_encoded_bytes().starts_with(b"PMIX_")
}

/// The value of variable `name` in `vars`.
pub(crate) fn var<'v>(vars: &'v [(OsString, OsString)], name: &str) -> Option<&'v OsStr> {
    vars.iter()
        .find(|(n, _)| n == name)
        .map(|(_, value)| value.as_os_str())
}

pub(crate) fn set_var(vars: &mut Vec<(OsString, OsString)>, name: OsString, value: OsString) {
    vars.retain(|(existing, _)| *existing != name);
    vars.push((name, value));
}

/// One rank's environment: the job's variables plus the PMI ones.
fn rank_environment(job: &Job<'_>, place: Place, pmi_fd: i32) -> io::Result<Vec<CString>> {
    let mut vars = job.vars.clone();
    let pmi = [
        ("PMI_FD", pmi_fd.to_string()),
        ("PMI_RANK", place.rank.to_string()),
        ("PMI_SIZE", place.size.to_string()),
        ("PMI_JOBID", job.kvsname.to_owned()),
        ("MPI_LOCALNRANKS", place.local_size.to_string()),
        ("MPI_LOCALRANKID", place.local_rank.to_string()),
        (
            reflex_base::config::LAUNCHER_PID,
            std::process::id().to_string(),
        ),
    ];
    for (name, value) in pmi {
        set_var(&mut vars, name.into(), value.into());
    }
    vars.iter()
        .map(|(name, value)| {
            let mut entry = name.clone();
            entry.push("=");
            entry.push(value);
            c_string(&entry)
        })
        .collect()
}

fn c_string(text: &OsStr) -> io::Result<CString> {
    CString::new(text.as_bytes()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{text:?} contains a NUL byte"),
        )
    })
}
