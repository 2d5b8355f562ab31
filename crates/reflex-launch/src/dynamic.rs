//! Jobs that a running job asks for (`MPI_Comm_spawn`, PMI-1 `mcmd=spawn`): what to start.
//!
//! [`plan`] turns a [`SpawnRequest`] into commands ready to start, or refuses the whole spawn
//! with one message: a spawn starts every process or none (a partly started job would hang in
//! `MPI_Init` waiting for the missing ranks), so everything that can be checked is checked before
//! the first process starts: the program exists and is executable, the working directory exists,
//! the environment entries are well formed, the size is within [`MAX_SPAWN_PROCS`].
//!
//! Info keys (MPI-4.0 §11.3.4 reserves them; the launcher reads them per command):
//! - `wdir`: the working directory of the new processes (relative: to mpiexec's);
//! - `path`: `:`-separated directories searched for the program before `PATH`;
//! - `env`: space-separated `NAME=VALUE` entries added to the environment (Open MPI's key takes
//!   newlines, which a PMI-1 line cannot carry);
//! - anything else (`host`, `arch`, `file`, `soft`, ...) is ignored: every process starts on
//!   this host.
//!
//! The supervisor (module `supervise`) starts the planned processes and watches them with the
//! rest of the job.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use nix::unistd::{access, AccessFlags};
use reflex_pmi::{SpawnCommand, SpawnRequest};

/// Most processes one spawn may start (each costs mpiexec four descriptors, like a rank).
pub const MAX_SPAWN_PROCS: u64 = 1024;

/// One command of a spawn, checked and ready to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    /// The program, as an absolute path.
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub procs: u32,
    /// Where the processes start (absolute).
    pub wdir: PathBuf,
    /// Variables from the `env` info key, in order.
    pub env: Vec<(OsString, OsString)>,
    /// The `host` info key: where the processes run (only `mpiexec -hosts` reads it).
    pub host: Option<String>,
}

/// Where programs are looked for: mpiexec's working directory and `PATH`.
#[derive(Debug, Clone)]
pub struct Lookup {
    pub cwd: PathBuf,
    pub path: Option<OsString>,
}

impl Lookup {
    /// mpiexec's own directory and `PATH` (what `posix_spawnp` would search).
    pub fn current() -> Result<Self, String> {
        let cwd = std::env::current_dir()
            .map_err(|e| format!("cannot read mpiexec's working directory: {e}"))?;
        Ok(Self {
            cwd,
            path: std::env::var_os("PATH"),
        })
    }
}

/// Checks every command of `request` on this host; the first problem refuses the whole spawn.
pub fn plan(request: &SpawnRequest, lookup: &Lookup) -> Result<Vec<Planned>, String> {
    plan_with(request, |i, command| {
        let wdir = working_dir(info(command, "wdir"), &lookup.cwd)?;
        let program = find_program(&command.command, info(command, "path"), &wdir, lookup)
            .map_err(|e| format!("spawn command {i} ({:?}): {e}", command.command))?;
        Ok((program, wdir, Vec::new()))
    })
}

/// Plans `request` for other hosts, where mpiexec cannot look: the working directory is `cwd`
/// joined with `wdir`, a program name with a `/` is taken relative to it and a bare one is
/// searched on the host in the processes' `PATH`, to which the `path` info directories are
/// prepended (`path` is the `PATH` the processes would otherwise get). The host finds out
/// what does not exist, and the spawn fails then.
pub fn plan_remote(
    request: &SpawnRequest,
    cwd: &Path,
    path: Option<&OsStr>,
) -> Result<Vec<Planned>, String> {
    plan_with(request, |_, command| {
        let wdir = cwd.join(info(command, "wdir").unwrap_or(""));
        let program = if command.command.contains('/') {
            wdir.join(&command.command)
        } else {
            PathBuf::from(&command.command)
        };
        let mut env = Vec::new();
        if let Some(dirs) = info(command, "path") {
            let mut search = OsString::from(dirs);
            if let Some(rest) = path {
                search.push(":");
                search.push(rest);
            }
            env.push((OsString::from("PATH"), search));
        }
        Ok((program, wdir, env))
    })
}

/// The program, its working directory and variables set before the `env` info entries.
type Placed = (PathBuf, PathBuf, Vec<(OsString, OsString)>);

/// What every plan checks (the size, the `env` entries), around `place`, which decides where
/// command `i` runs from its info keys.
fn plan_with(
    request: &SpawnRequest,
    place: impl Fn(usize, &SpawnCommand) -> Result<Placed, String>,
) -> Result<Vec<Planned>, String> {
    let total = request.total_procs();
    if total == 0 || total > MAX_SPAWN_PROCS {
        return Err(format!(
            "a spawn starts 1 to {MAX_SPAWN_PROCS} processes, not {total}"
        ));
    }
    request
        .commands
        .iter()
        .enumerate()
        .map(|(i, command)| {
            let (program, wdir, mut env) = place(i, command)?;
            env.extend(env_entries(info(command, "env").unwrap_or(""))?);
            Ok(Planned {
                program,
                args: command.args.iter().map(OsString::from).collect(),
                procs: command.maxprocs,
                wdir,
                env,
                host: info(command, "host").map(str::to_owned),
            })
        })
        .collect()
}

/// The value of info key `key` of `command`.
fn info<'c>(command: &'c SpawnCommand, key: &str) -> Option<&'c str> {
    command
        .info
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

fn working_dir(wdir: Option<&str>, cwd: &Path) -> Result<PathBuf, String> {
    let Some(wdir) = wdir else {
        return Ok(cwd.to_path_buf());
    };
    let dir = cwd.join(wdir);
    if !dir.is_dir() {
        return Err(format!("info wdir={wdir:?} is not a directory"));
    }
    Ok(dir)
}

/// The program's absolute path: a name with a `/` is taken relative to `wdir`; a bare name is
/// searched in the `path` info directories, then in `PATH` (relative entries from `wdir`).
pub fn find_program(
    command: &str,
    path_info: Option<&str>,
    wdir: &Path,
    lookup: &Lookup,
) -> Result<PathBuf, String> {
    if command.contains('/') {
        let program = wdir.join(command);
        return check_executable(&program).map(|()| program);
    }
    let dirs: Vec<&OsStr> = path_info
        .map(OsStr::new)
        .into_iter()
        .chain(lookup.path.as_deref())
        .flat_map(|list| list.as_bytes().split(|&b| b == b':'))
        .map(OsStr::from_bytes)
        .collect();
    let mut reason = None;
    for dir in dirs {
        // An empty entry of PATH means the current directory.
        let dir = if dir.is_empty() { OsStr::new(".") } else { dir };
        let program = wdir.join(dir).join(command);
        match check_executable(&program) {
            Ok(()) => return Ok(program),
            Err(e) if program.exists() => reason = Some(e),
            Err(_) => {}
        }
    }
    Err(reason.unwrap_or_else(|| "not found in the path info key or PATH".to_owned()))
}

fn check_executable(program: &Path) -> Result<(), String> {
    let meta = std::fs::metadata(program).map_err(|e| format!("{}: {e}", program.display()))?;
    if !meta.is_file() {
        return Err(format!("{} is not a file", program.display()));
    }
    access(program, AccessFlags::X_OK)
        .map_err(|e| format!("{} is not executable: {}", program.display(), e.desc()))
}

/// `env` info value: space-separated `NAME=VALUE` entries.
fn env_entries(value: &str) -> Result<Vec<(OsString, OsString)>, String> {
    value
        .split_whitespace()
        .map(|entry| match entry.split_once('=') {
            Some((name, value)) if !name.is_empty() => Ok((name.into(), value.into())),
            _ => Err(format!("info env entry {entry:?} is not NAME=VALUE")),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(command: &str, maxprocs: u32, info: &[(&str, &str)]) -> SpawnRequest {
        SpawnRequest {
            commands: vec![SpawnCommand {
                command: command.to_owned(),
                args: vec!["a b".to_owned()],
                maxprocs,
                info: info
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            }],
            preput: Vec::new(),
        }
    }

    fn lookup(path: &str) -> Lookup {
        Lookup {
            cwd: PathBuf::from("/"),
            path: Some(path.into()),
        }
    }

    #[test]
    fn finds_programs_like_posix_spawnp_with_path_and_wdir() {
        let planned = plan(&request("sh", 2, &[]), &lookup("/nonexistent:/bin")).unwrap();
        assert_eq!(planned[0].program, Path::new("/bin/sh"));
        assert_eq!(planned[0].wdir, Path::new("/"));
        assert_eq!(planned[0].args, [OsString::from("a b")]);
        assert_eq!(planned[0].procs, 2);
        let info = [
            ("path", "/usr/bin"),
            ("wdir", "/tmp"),
            ("host", "elsewhere"),
        ];
        let planned = plan(&request("env", 1, &info), &lookup("")).unwrap();
        assert_eq!(planned[0].program, Path::new("/usr/bin/env"));
        assert_eq!(planned[0].wdir, Path::new("/tmp"));
        let planned = plan(&request("../bin/sh", 1, &[("wdir", "tmp")]), &lookup("")).unwrap();
        assert_eq!(planned[0].program, Path::new("/tmp/../bin/sh"));
    }

    #[test]
    fn refuses_what_cannot_start() {
        let refuse = |command, n, info: &[(&str, &str)]| {
            plan(&request(command, n, info), &lookup("/bin")).unwrap_err()
        };
        let e = refuse("no-such-program-xyz", 1, &[]);
        assert!(e.contains("not found in the path info key or PATH"), "{e}");
        assert!(
            e.contains("spawn command 0 (\"no-such-program-xyz\")"),
            "{e}"
        );
        let e = refuse("/etc/passwd", 1, &[]);
        assert!(e.contains("/etc/passwd is not executable"), "{e}");
        let e = refuse("/bin", 1, &[]);
        assert!(e.contains("/bin is not a file"), "{e}");
        let e = refuse("/no/such", 1, &[]);
        assert!(
            e.contains("/no/such: No such file or directory (os error 2)"),
            "{e}"
        );
        let e = refuse("sh", 1, &[("wdir", "/no/such/dir")]);
        assert!(
            e.contains("wdir=\"/no/such/dir\" is not a directory"),
            "{e}"
        );
        let e = refuse("sh", 1, &[("env", "A=1 B")]);
        assert!(e.contains("env entry \"B\" is not NAME=VALUE"), "{e}");
        let e = refuse("sh", 2000, &[]);
        assert!(e.contains("1 to 1024 processes, not 2000"), "{e}");
    }

    #[test]
    fn env_entries_are_name_value_pairs() {
        assert_eq!(
            env_entries(" A=1  B=x=y ").unwrap(),
            [("A".into(), "1".into()), ("B".into(), "x=y".into())]
        );
        assert!(env_entries("=1").is_err());
        assert!(env_entries("").unwrap().is_empty());
    }
}
