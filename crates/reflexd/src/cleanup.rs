//! All-or-nothing cleanup of a job's processes on one host.
//!
//! Each connection's session process runs in its own cgroup v2 group, which it joins before it
//! starts anything, so every process of the job (double-forked, `setsid`, re-parented) is a
//! member, as REXEC's kernel-made "logical process set" was (`seed000a.md` §1.2). Cleanup
//! writes `1` to `cgroup.kill` and waits until `cgroup.events` says `populated 0`, then removes
//! the group. Where cgroup v2 with `cgroup.kill` (Linux 5.14+) is not available, the fallback is
//! the session's process group plus child-subreaper cleanup (the session kills what it can see;
//! `reflexd`, a subreaper too, kills processes re-parented to it).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// Directory under the cgroup v2 mount holding the jobs' groups.
pub const CGROUP_DIR: &str = "reflex";
/// How long [`JobGroup::kill_and_remove`] waits for the group to empty.
pub const KILL_WAIT: Duration = Duration::from_secs(5);

/// Where cgroup v2 is mounted (`/sys/fs/cgroup` or `/sys/fs/cgroup/unified` on hybrid hosts).
pub fn cgroup2_mount() -> Option<PathBuf> {
    let info = fs::read_to_string("/proc/self/mountinfo").ok()?;
    info.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let fstype = right.split_whitespace().next()?;
        let mount_point = left.split_whitespace().nth(4)?;
        (fstype == "cgroup2").then(|| PathBuf::from(mount_point))
    })
}

/// One job's cgroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobGroup {
    path: PathBuf,
}

impl JobGroup {
    /// Creates the group `name` under `<cgroup2>/reflex/`; `None` when cgroup v2 with
    /// `cgroup.kill` is not usable here (then the fallback applies).
    pub fn create(name: &str) -> Option<JobGroup> {
        let base = cgroup2_mount()?.join(CGROUP_DIR);
        let path = base.join(name);
        fs::create_dir_all(&path).ok()?;
        let group = JobGroup { path };
        if group.path.join("cgroup.kill").exists() {
            Some(group)
        } else {
            let _ = fs::remove_dir(&group.path);
            None
        }
    }

    /// An existing group, by path (as passed to the session process).
    pub fn at(path: &Path) -> JobGroup {
        JobGroup {
            path: path.to_owned(),
        }
    }

    /// Creates (or opens) the sub-group `name` (the session keeps the job's ranks in one, so
    /// that killing them does not kill the session itself), owned by `owner` when given, so
    /// that a session that dropped root can still move processes into it.
    pub fn child(&self, name: &str, owner: Option<(u32, u32)>) -> io::Result<JobGroup> {
        let path = self.path.join(name);
        fs::create_dir_all(&path)?;
        if let Some((uid, gid)) = owner {
            let ids = (
                Some(nix::unistd::Uid::from_raw(uid)),
                Some(nix::unistd::Gid::from_raw(gid)),
            );
            for p in [
                &self.path,
                &self.path.join("cgroup.procs"),
                &path,
                &path.join("cgroup.procs"),
            ] {
                nix::unistd::chown(p.as_path(), ids.0, ids.1)?;
            }
        }
        Ok(JobGroup { path })
    }

    /// Kills every process of the group and its sub-groups (the caller must not be in it).
    pub fn kill(&self) -> io::Result<()> {
        fs::write(self.path.join("cgroup.kill"), "1")
    }

    /// The group's directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Moves process `pid` (0: the caller) into the group.
    pub fn enter(&self, pid: u32) -> io::Result<()> {
        fs::write(self.path.join("cgroup.procs"), pid.to_string()).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot join cgroup {}: {e}", self.path.display()),
            )
        })
    }

    /// Whether any process is left in the group.
    pub fn is_populated(&self) -> bool {
        fs::read_to_string(self.path.join("cgroup.events"))
            .map(|events| events.lines().any(|l| l.trim() == "populated 1"))
            .unwrap_or(false)
    }

    /// Kills every process of the group, waits (bounded) until it is empty and removes it.
    pub fn kill_and_remove(&self) -> io::Result<()> {
        if self.is_populated() {
            fs::write(self.path.join("cgroup.kill"), "1")?;
        }
        let deadline = Instant::now() + KILL_WAIT;
        while self.is_populated() && Instant::now() < deadline {
            // cgroup.events can be watched with inotify; a short poll is enough for cleanup.
            std::thread::sleep(Duration::from_millis(5));
        }
        if let Ok(entries) = fs::read_dir(&self.path) {
            for sub in entries.flatten().filter(|e| e.path().is_dir()) {
                JobGroup::at(&sub.path()).kill_and_remove()?;
            }
        }
        fs::remove_dir(&self.path).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot remove cgroup {}: {e}", self.path.display()),
            )
        })
    }
}

/// Children of the calling process (from `/proc/self/task/*/children`).
pub fn own_children() -> Vec<Pid> {
    let Ok(tasks) = fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    let mut pids: Vec<Pid> = tasks
        .filter_map(|t| fs::read_to_string(t.ok()?.path().join("children")).ok())
        .flat_map(|text| {
            text.split_whitespace()
                .filter_map(|p| p.parse::<i32>().ok())
                .collect::<Vec<_>>()
        })
        .map(Pid::from_raw)
        .collect();
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// SIGKILLs every child of the caller that is not in `keep`.
pub fn kill_children_except(keep: &[Pid]) {
    for pid in own_children() {
        if !keep.contains(&pid) {
            let _ = kill(pid, Signal::SIGKILL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_kills_everything_in_it() {
        let Some(group) = JobGroup::create(&format!("unit-{}", std::process::id())) else {
            eprintln!("cgroup v2 with cgroup.kill is not available here; skipped");
            return;
        };
        // A shell that double-forks a sleeper and exits: the sleeper is still in the group.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "read x; (sleep 1000 &) ; exit 0"])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        group.enter(child.id()).unwrap();
        drop(child.stdin.take()); // let it go on
        child.wait().unwrap();
        assert!(
            group.is_populated(),
            "the double-forked sleeper is in the group"
        );
        group.kill_and_remove().unwrap();
        assert!(!group.path().exists());
    }
}
