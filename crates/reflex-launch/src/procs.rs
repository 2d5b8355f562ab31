//! Processes of a job: exit statuses, signal names, and finding every process left to kill.
//!
//! mpiexec is a child subreaper (`prctl(PR_SET_CHILD_SUBREAPER)`), so a process that a rank
//! double-forks is re-parented to mpiexec when its parent dies, not to init. Every process of
//! the job is therefore, sooner or later, a child of mpiexec: killing all children repeatedly
//! (and reaping them) until none is left leaves no orphan, whatever the ranks did. A child's pid
//! cannot be reused before mpiexec reaps it, so signalling pids found in `/proc` is race-free.

use std::fs;

use nix::sys::signal::{kill, Signal};
use nix::sys::wait::WaitStatus;
use nix::unistd::Pid;

/// How a process ended, in the terms mpiexec reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    Exited(i32),
    Signaled(i32),
}

impl Ending {
    /// From a `waitpid` result; `None` for stops and continues.
    pub fn from_wait(status: WaitStatus) -> Option<(Pid, Ending)> {
        match status {
            WaitStatus::Exited(pid, code) => Some((pid, Ending::Exited(code))),
            WaitStatus::Signaled(pid, signal, _) => Some((pid, Ending::Signaled(signal as i32))),
            _ => None,
        }
    }

    /// The shell convention: the exit code, or 128+S for signal S.
    pub fn status_code(self) -> i32 {
        match self {
            Ending::Exited(code) => code,
            Ending::Signaled(signal) => 128 + signal,
        }
    }

    /// Whether this ending makes the job fail.
    pub fn is_failure(self) -> bool {
        self != Ending::Exited(0)
    }

    /// `exited with status 3` / `was killed by signal 9 (Killed)`.
    pub fn describe(self) -> String {
        match self {
            Ending::Exited(code) => format!("exited with status {code}"),
            Ending::Signaled(signal) => {
                format!(
                    "was killed by signal {signal} ({})",
                    signal_description(signal)
                )
            }
        }
    }
}

/// The description `strsignal` gives for the common signals (glibc wording).
pub fn signal_description(signal: i32) -> &'static str {
    let Ok(signal) = Signal::try_from(signal) else {
        return "unknown signal";
    };
    match signal {
        Signal::SIGHUP => "Hangup",
        Signal::SIGINT => "Interrupt",
        Signal::SIGQUIT => "Quit",
        Signal::SIGILL => "Illegal instruction",
        Signal::SIGTRAP => "Trace/breakpoint trap",
        Signal::SIGABRT => "Aborted",
        Signal::SIGBUS => "Bus error",
        Signal::SIGFPE => "Floating point exception",
        Signal::SIGKILL => "Killed",
        Signal::SIGUSR1 => "User defined signal 1",
        Signal::SIGSEGV => "Segmentation fault",
        Signal::SIGUSR2 => "User defined signal 2",
        Signal::SIGPIPE => "Broken pipe",
        Signal::SIGALRM => "Alarm clock",
        Signal::SIGTERM => "Terminated",
        Signal::SIGXCPU => "CPU time limit exceeded",
        Signal::SIGXFSZ => "File size limit exceeded",
        Signal::SIGSYS => "Bad system call",
        other => other.as_str(),
    }
}

/// What mpiexec says when SIGINT, SIGTERM or SIGHUP comes a second time (it kills the job).
pub fn repeated_signal_message(signal: i32) -> String {
    format!(
        "received signal {signal} ({}) again; killing the job",
        signal_description(signal)
    )
}

/// Live (non-zombie) children of the process `parent`: the pids listed in the `children`
/// file of each of its threads (`/proc/<pid>/task/<tid>/children`, one small read; a subreaper
/// adopts orphans there too), each checked in `/proc/<child>/stat`. Without that file
/// (`CONFIG_PROC_CHILDREN`), every process of `/proc` is read, which costs about 1 ms per 100
/// processes and used to be most of a null job's shutdown.
pub fn live_children(parent: Pid) -> Vec<Pid> {
    let listed = children_files(parent).unwrap_or_else(|| all_pids().collect());
    listed
        .into_iter()
        .filter(|&pid| {
            fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| parse_stat(&stat))
                .is_some_and(|(state, ppid)| ppid == parent.as_raw() && state != 'Z')
        })
        .map(Pid::from_raw)
        .collect()
}

/// The pids in the `children` files of every thread of `parent`; `None` if there are none.
fn children_files(parent: Pid) -> Option<Vec<i32>> {
    let mut pids = Vec::new();
    for task in fs::read_dir(format!("/proc/{parent}/task")).ok()? {
        let text = fs::read_to_string(task.ok()?.path().join("children")).ok()?;
        pids.extend(
            text.split_whitespace()
                .filter_map(|p| p.parse::<i32>().ok()),
        );
    }
    Some(pids)
}

fn all_pids() -> impl Iterator<Item = i32> {
    fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
}

/// (state, ppid) from the text of `/proc/<pid>/stat`; the command name may hold spaces and
/// parentheses, so fields are counted after the last `)`.
fn parse_stat(stat: &str) -> Option<(char, i32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((state, ppid))
}

/// Sends `signal` to each pid, ignoring processes that are already gone.
pub fn signal_all(pids: &[Pid], signal: Signal) {
    for &pid in pids {
        let _ = kill(pid, signal);
    }
}

/// Sends `signal` to the session (process group) of each rank not reaped yet: every rank leads
/// one ([`crate::spawn::spawn_rank`]), and an unreaped rank's id cannot have been reused.
pub fn signal_rank_groups(leaders: impl Iterator<Item = Pid>, signal: Signal) {
    for leader in leaders {
        let _ = nix::sys::signal::killpg(leader, signal);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endings_map_to_shell_statuses_and_messages() {
        assert_eq!(Ending::Exited(3).status_code(), 3);
        assert_eq!(Ending::Signaled(9).status_code(), 137);
        assert!(!Ending::Exited(0).is_failure());
        assert!(Ending::Signaled(15).is_failure());
        assert_eq!(
            Ending::Signaled(9).describe(),
            "was killed by signal 9 (Killed)"
        );
        assert_eq!(Ending::Exited(2).describe(), "exited with status 2");
        assert_eq!(signal_description(11), "Segmentation fault");
        assert_eq!(signal_description(999), "unknown signal");
    }

    #[test]
    fn stat_lines_with_odd_command_names() {
        assert_eq!(parse_stat("42 (a) b) S 7 42 42 0"), Some(('S', 7)));
        assert_eq!(parse_stat("42 (sleep) Z 1 42"), Some(('Z', 1)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn finds_own_children() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = Pid::from_raw(child.id() as i32);
        assert!(live_children(nix::unistd::getpid()).contains(&pid));
        // The slow path, for kernels without the children files, finds it too.
        assert!(all_pids().any(|p| p == pid.as_raw()));
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
