//! Starting a spawned job inside the running supervisor (PMI `mcmd=spawn`).
//!
//! The new job gets its own key-value space (a fresh kvsname, the preput pairs, `appnum` per
//! command, the first job's universe size, the shared name service: [`Server::child`]), ranks
//! `0..n` in command order, `PMI_SPAWNED=1`, and the first job's environment plus the `env`
//! info entries. Each process leads a session of its own, as every rank does, and is supervised
//! like the first job's: one failure ends everything, mpiexec ends when every process of every
//! job has. Every process starts or none does ([`crate::dynamic::plan`] checks first; a start
//! that still fails kills the processes already started, which are then reaped quietly).

use std::ffi::OsString;
use std::path::Path;

use nix::sys::signal::{kill, Signal};
use reflex_pmi::{SpawnRequest, SpawnResult};

use super::{Job, Phase, Supervisor};
use crate::args::{EnvPolicy, JobSpec};
use crate::dynamic::{plan, Lookup, Planned};
use crate::spawn::{self, Place, Spawned};

impl Supervisor {
    /// Starts the job that `request` (from job `parent`) describes; the answer for the rank.
    pub(super) fn spawn_job(&mut self, parent: usize, request: &SpawnRequest) -> SpawnResult {
        let procs = request.total_procs() as usize;
        let Some(vars) = self.spawn_env.clone() else {
            return SpawnResult::refused("this mpiexec does not spawn processes", procs);
        };
        if self.phase != Phase::Running {
            return SpawnResult::refused("the job is being terminated", procs);
        }
        let planned = match Lookup::current().and_then(|lookup| plan(request, &lookup)) {
            Ok(planned) => planned,
            Err(message) => return SpawnResult::refused(&message, procs),
        };
        let kvsname = reflex_pmi::new_kvsname("reflex");
        let appnums: Vec<i32> = planned
            .iter()
            .enumerate()
            .flat_map(|(appnum, p)| std::iter::repeat_n(appnum as i32, p.procs as usize))
            .collect();
        let server = self.jobs[parent]
            .server
            .child(&kvsname, appnums, &request.preput);
        match self.start_all(&planned, &kvsname, vars) {
            Ok(started) => {
                let job = self.jobs.len();
                self.jobs.push(Job {
                    server,
                    first: self.ranks.len(),
                });
                for (rank, spawned) in started.into_iter().enumerate() {
                    self.add_process(job, rank as u32, spawned);
                }
                SpawnResult::success(procs)
            }
            Err(message) => SpawnResult::refused(&message, procs),
        }
    }

    /// Starts every process of the planned commands, or none: after a failure the processes
    /// already started are killed (and later reaped as strangers).
    fn start_all(
        &self,
        planned: &[Planned],
        kvsname: &str,
        mut vars: Vec<(OsString, OsString)>,
    ) -> Result<Vec<Spawned>, String> {
        vars.retain(|(name, _)| name != "PMI_SPAWNED");
        vars.push(("PMI_SPAWNED".into(), "1".into()));
        let size: u32 = planned.iter().map(|p| p.procs).sum();
        let mut started: Vec<Spawned> = Vec::with_capacity(size as usize);
        for command in planned {
            let result = in_dir(&command.wdir, || {
                self.start_command(command, kvsname, &vars, size, &mut started)
            });
            if let Err(message) = result {
                for process in &started {
                    let _ = kill(process.pid, Signal::SIGKILL);
                }
                return Err(message);
            }
        }
        Ok(started)
    }

    /// Starts the `procs` processes of one command as the next ranks of the new job.
    fn start_command(
        &self,
        command: &Planned,
        kvsname: &str,
        vars: &[(OsString, OsString)],
        size: u32,
        started: &mut Vec<Spawned>,
    ) -> Result<(), String> {
        let mut job_vars = vars.to_vec();
        for (name, value) in &command.env {
            job_vars.retain(|(n, _)| n != name);
            job_vars.push((name.clone(), value.clone()));
        }
        let spec = JobSpec {
            ranks: size,
            env: Vec::new(),
            env_policy: EnvPolicy::None,
            wdir: None,
            label: self.label,
            universe: None,
            program: command.program.clone().into_os_string(),
            args: command.args.clone(),
            remote: Default::default(),
        };
        let job = spawn::Job {
            spec: &spec,
            kvsname,
            vars: job_vars,
        };
        for _ in 0..command.procs {
            let place = Place::single_host(started.len() as u32, size);
            let mut spawned = spawn::spawn_rank(&job, place).map_err(|e| e.to_string())?;
            // A spawned job reads no stdin: closing the pipe's write end gives rank 0 EOF.
            spawned.stdin = None;
            started.push(spawned);
        }
        Ok(())
    }
}

/// Runs `f` with `dir` as the working directory (posix_spawn has no chdir; mpiexec is
/// single-threaded), then returns to the previous one.
fn in_dir<T>(dir: &Path, f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    let back = std::env::current_dir().map_err(|e| format!("cannot read the directory: {e}"))?;
    if dir == back {
        return f();
    }
    std::env::set_current_dir(dir)
        .map_err(|e| format!("cannot enter working directory {}: {e}", dir.display()))?;
    let result = f();
    if let Err(e) = std::env::set_current_dir(&back) {
        return Err(format!("cannot return to {}: {e}", back.display()));
    }
    result
}
