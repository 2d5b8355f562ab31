//! The job side of a session: becoming the user, starting the ranks, reaping them, relaying
//! their PMI lines and output, and terminating them.

use super::*;

/// This host's name (for the welcome message).
pub(super) fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| "localhost".into())
}

/// Read budgets spent on a rank's PMI socket after it exited (as mpiexec does).
const EXIT_DRAIN_ROUNDS: usize = 16;

impl HostJob {
    /// Drops root privileges to the authenticated user (a daemon not running as root can only
    /// start jobs for its own user). The cgroup for the ranks is created before, as root.
    pub(super) fn become_user(&mut self, uid: u32) -> Result<(), String> {
        use nix::unistd::{getuid, initgroups, setgid, setuid, Uid, User};
        let user = User::from_uid(Uid::from_raw(uid))
            .ok()
            .flatten()
            .ok_or_else(|| format!("uid {uid} has no account on this host"))?;
        let gid = user.gid.as_raw();
        if let Some(g) = &self.group {
            let owner = (!getuid().is_root() || uid != 0).then_some((uid, gid));
            self.ranks_group = Some(
                g.child("ranks", owner)
                    .map_err(|e| format!("cannot create the job's cgroup: {e}"))?,
            );
        }
        self.user = Some((uid, gid));
        if getuid().as_raw() == uid {
            return Ok(());
        }
        if !getuid().is_root() {
            return Err(format!(
                "this reflexd runs as uid {} and cannot start jobs for uid {uid}",
                getuid()
            ));
        }
        let name = std::ffi::CString::new(user.name.clone())
            .map_err(|_| "user name with a nul byte".to_owned())?;
        initgroups(&name, user.gid)
            .and_then(|()| setgid(user.gid))
            .and_then(|()| setuid(user.uid))
            .map_err(|e| format!("cannot become user {}: {e}", user.name))
    }

    /// Starts the ranks of `spec` in the job's directory, each in the ranks' cgroup.
    pub(super) fn launch(&mut self, spec: &LaunchSpec) {
        self.launched = Some(spec.kvsname.clone());
        let cwd = std::path::PathBuf::from(OsString::from_vec(spec.cwd.clone()));
        if let Err(e) = std::env::set_current_dir(&cwd) {
            let text = format!("cannot use working directory {}: {e}", cwd.display());
            self.fail_start(spec.ranks[0], 1, text);
            return;
        }
        let os = |b: &Vec<u8>| OsString::from_vec(b.clone());
        let job_spec = JobSpec {
            ranks: spec.size,
            env: Vec::new(),
            env_policy: EnvPolicy::None,
            wdir: None,
            label: false,
            universe: None,
            program: os(&spec.argv[0]),
            args: spec.argv[1..].iter().map(os).collect(),
            remote: Default::default(),
        };
        let job = Job {
            spec: &job_spec,
            kvsname: &spec.kvsname,
            vars: spec.env.iter().map(|(k, v)| (os(k), os(v))).collect(),
        };
        let me = std::process::id();
        if let Some(g) = &self.ranks_group {
            if let Err(e) = g.enter(me) {
                self.fail_start(spec.ranks[0], 1, e.to_string());
                return;
            }
        }
        let local_size = spec.ranks.len() as u32;
        for (i, &rank) in spec.ranks.iter().enumerate() {
            let place = Place {
                rank,
                size: spec.size,
                local_rank: i as u32,
                local_size,
            };
            match spawn_rank(&job, place) {
                Ok(spawned) => self.add_rank(rank, spawned),
                Err(e) => {
                    self.fail_start(rank, e.status_code(), e.to_string());
                    break;
                }
            }
        }
        if let Some(g) = &self.group {
            let _ = g.enter(me);
        }
        if self.ranks.len() == spec.ranks.len() {
            let pids = self.ranks.iter().map(|r| r.pid.as_raw() as u32).collect();
            self.send(&Msg::Started { pids });
        }
    }

    fn fail_start(&mut self, rank: u32, status: i32, how: String) {
        self.send(&Msg::Exit { rank, status, how });
        self.terminate();
    }

    fn add_rank(&mut self, rank: u32, spawned: Spawned) {
        if let Some(pipe) = spawned.stdin {
            self.stdin = Some(pipe);
        }
        self.outputs.push(RawPipe {
            fd: Some(spawned.stdout),
            rank,
            err: false,
        });
        self.outputs.push(RawPipe {
            fd: Some(spawned.stderr),
            rank,
            err: true,
        });
        self.ranks.push(HostRank {
            rank,
            pid: spawned.pid,
            ending: None,
            pmi: Some(PmiConn::new(spawned.pmi)),
        });
    }

    pub(super) fn all_ranks_ended(&self) -> bool {
        self.ranks.iter().all(|r| r.ending.is_some())
    }

    /// Whether the job on this host is over: ranks reaped, nothing left, output drained.
    pub(super) fn finished(&mut self, now: Instant) -> bool {
        if self.launched.is_none() || !self.all_ranks_ended() || !live_children(self.me).is_empty()
        {
            return false;
        }
        if self
            .ranks_group
            .as_ref()
            .is_some_and(JobGroup::is_populated)
        {
            return false;
        }
        if self.outputs.iter().all(|o| o.fd.is_none()) {
            return true;
        }
        now >= *self.drain_until.get_or_insert(now + DRAIN_GRACE)
    }

    pub(super) fn reap(&mut self) {
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
        let Some(i) = self
            .ranks
            .iter()
            .position(|r| r.pid == pid && r.ending.is_none())
        else {
            return;
        };
        // Whatever the rank wrote to PMI before it exited (an abort) goes out first.
        for _ in 0..EXIT_DRAIN_ROUNDS {
            if !self.receive_pmi(i) {
                break;
            }
        }
        self.ranks[i].pmi = None;
        self.ranks[i].ending = Some(ending);
        let rank = self.ranks[i].rank;
        if rank == 0 {
            self.stdin = None;
        }
        let (status, how) = (ending.status_code(), ending.describe());
        self.send(&Msg::Exit { rank, status, how });
    }

    /// Relays what rank index `i` sent on PMI; returns whether more may be waiting.
    pub(super) fn receive_pmi(&mut self, i: usize) -> bool {
        let rank = self.ranks[i].rank;
        let Some(conn) = self.ranks[i].pmi.as_mut() else {
            return false;
        };
        let received = conn.receive();
        let more = received.more;
        for line in received.lines {
            self.send(&Msg::PmiRequest { rank, line });
        }
        if let Some(e) = received.error {
            // The line cannot be relayed: the job fails, with the reason.
            let text = format!("rank {rank} broke the pmi protocol: {e}; terminating the job");
            if self.link_open {
                send_error(&mut self.link, &text);
            }
            self.lose_link();
            return false;
        }
        if received.closed {
            self.ranks[i].pmi = None;
            return false;
        }
        more
    }

    pub(super) fn pump_output(&mut self, i: usize) {
        let mut chunk = vec![0u8; OUTPUT_CHUNK];
        let Some(fd) = self.outputs[i].fd.as_ref() else {
            return;
        };
        match nix::unistd::read(fd, &mut chunk) {
            Ok(0) | Err(Errno::EIO | Errno::EBADF) => self.outputs[i].fd = None,
            Ok(n) => {
                chunk.truncate(n);
                let (rank, err) = (self.outputs[i].rank, self.outputs[i].err);
                self.send(&Msg::Output {
                    rank,
                    err,
                    bytes: chunk,
                });
            }
            Err(_) => {}
        }
    }

    pub(super) fn write_stdin(&mut self) {
        let Some(pipe) = self.stdin.as_mut() else {
            return;
        };
        while !self.stdin_buf.is_empty() {
            match pipe.write(&self.stdin_buf) {
                Ok(n) => {
                    self.stdin_buf.drain(..n);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => {
                    self.stdin_buf.clear();
                    self.stdin = None;
                    return;
                }
            }
        }
        if self.stdin_eof {
            self.stdin = None;
        }
    }

    pub(super) fn read_signals(&mut self) {
        while let Ok(Some(info)) = self.signals.read_signal() {
            if info.ssi_signo != Signal::SIGCHLD as u32 {
                // reflexd is going away (or asks us to stop): end the job.
                if self.link_open {
                    send_error(&mut self.link, "reflexd is shutting down");
                    self.link_open = false;
                }
                self.terminate();
            }
        }
    }

    /// Sends `signal` to every process of the job on this host: the group of each unreaped
    /// rank, and every child of the session (a subreaper).
    pub(super) fn signal_job(&self, signal: Signal) {
        let unreaped = self.ranks.iter().filter(|r| r.ending.is_none());
        signal_rank_groups(unreaped.map(|r| r.pid), signal);
        signal_all(&live_children(self.me), signal);
    }

    pub(super) fn terminate(&mut self) {
        if self.phase != Phase::Running {
            return;
        }
        self.signal_job(Signal::SIGTERM);
        self.signal_job(Signal::SIGCONT);
        self.phase = Phase::Terminating {
            kill_at: Instant::now() + KILL_GRACE,
        };
    }

    pub(super) fn advance_phase(&mut self, now: Instant) {
        match self.phase {
            Phase::Running
                if self.launched.is_some()
                    && self.all_ranks_ended()
                    && !live_children(self.me).is_empty() =>
            {
                self.terminate()
            }
            Phase::Terminating { kill_at } if now >= kill_at => {
                self.kill_everything();
                self.phase = Phase::Killing;
            }
            Phase::Killing => self.kill_everything(),
            _ => {}
        }
    }

    fn kill_everything(&self) {
        if let Some(g) = &self.ranks_group {
            let _ = g.kill();
        }
        self.signal_job(Signal::SIGKILL);
    }
}
