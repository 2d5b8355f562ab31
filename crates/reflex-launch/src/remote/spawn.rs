//! `MPI_Comm_spawn` under `mpiexec -hosts`: a spawned job runs on the job's hosts, through their
//! reflexd, like the first one.
//!
//! The request is planned without looking at this host's files ([`plan_remote`]: the hosts
//! check the program and the directory), its processes are placed ([`place_spawn`]: a command's
//! `host` info key puts all its processes on that host, the others go to the slots the running
//! processes leave free, then are dealt over the job's host list as its ranks were), and every host that gets processes of a command gets its own
//! connection and launch, as a host of the first job does: a fresh KVS name, the parent's
//! environment plus `PMI_SPAWNED=1` and the command's `env`, the node layout of the new job as
//! its `PMI_process_mapping`, a PMI server that shares the first job's name service. The rank
//! that asked gets its answer once every host has started its processes; if one cannot (a
//! missing program, an unreachable or refusing daemon), the others are told to kill what they
//! started and the spawn fails with that host's message (`MPI_ERR_SPAWN`), while the job goes
//! on. The daemons are connected to on a thread, so that the event loop keeps serving the
//! running jobs meanwhile (an unreachable host takes the whole connect timeout). Once started,
//! a spawned job is part of the run: one failure ends everything, and mpiexec ends when every
//! host of every job is done. A spawned job reads no stdin.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;
use std::sync::{mpsc, Arc};

use reflex_pmi::{SpawnRequest, SpawnResult};
use reflexd::proto::client::HostPhase;
use reflexd::proto::codec::{LaunchSpec, Msg};
use reflexd::tls::ClientConfig;
use reflexd::tls::TlsLink;

use super::job::{Host, PendingSpawn, PmiJob, RemoteJob};
use super::{assign_owners, connect_all, Assignment};
use crate::dynamic::{plan_remote, Planned};
use crate::hosts::{place_ranks, HostEntry};
use crate::spawn::{set_var, var};

/// What starting a spawned job needs from the first job.
#[derive(Debug, Clone)]
pub struct SpawnContext {
    pub config: Arc<ClientConfig>,
    /// `-reflexd-port`.
    pub port: Option<u16>,
    pub layout: JobLayout,
}

/// Where the first job runs and with what: what spawned jobs start from.
#[derive(Debug, Clone)]
pub struct JobLayout {
    /// The job's host list and `-ppn`.
    pub hosts: Vec<HostEntry>,
    pub ppn: Option<u32>,
    /// Processes running on each host of `hosts` (the first job's, and the spawned jobs' until
    /// their hosts are done).
    pub used: Vec<u32>,
    /// The environment of the first job's ranks (before the PMI variables).
    pub vars: Vec<(OsString, OsString)>,
    /// The first job's working directory.
    pub cwd: PathBuf,
}

impl JobLayout {
    /// Counts the ranks of the first job, placed by `assignments`.
    pub fn record_job(&mut self, assignments: &[Assignment]) {
        for a in assignments {
            self.add_used(&a.host, a.ranks.len() as u32);
        }
    }

    fn record(&mut self, parts: &[Part]) {
        for part in parts {
            self.add_used(&part.assignment.host, part.assignment.ranks.len() as u32);
        }
    }

    /// `procs` processes on `host` have ended: their slots are free again.
    pub(super) fn release(&mut self, host: &str, procs: u32) {
        if let Some(h) = self.hosts.iter().position(|e| e.name == host) {
            self.used[h] = self.used[h].saturating_sub(procs);
        }
    }

    fn add_used(&mut self, host: &str, procs: u32) {
        self.used.resize(self.hosts.len(), 0);
        if let Some(h) = self.hosts.iter().position(|e| e.name == host) {
            self.used[h] += procs;
        }
    }
}

/// The part of a spawned job one connection starts: some ranks of one command on one host.
#[derive(Debug)]
struct Part {
    assignment: Assignment,
    launch: LaunchSpec,
}

/// A spawn whose daemons are being connected to, by a thread that sends the links (or why
/// there are none) on `links` and then wakes the event loop.
#[derive(Debug)]
pub(super) struct Connecting {
    /// The job and rank that asked.
    parent: (usize, u32),
    kvsname: String,
    parts: Vec<Part>,
    mapping: String,
    appnums: Vec<i32>,
    preput: Vec<(String, String)>,
    procs: usize,
    links: mpsc::Receiver<Result<Vec<TlsLink>, String>>,
}

impl RemoteJob {
    /// Starts the job that rank `rank` of job `parent` asks for; the answer when it is known
    /// now (a refusal), `None` while the daemons are connected to and the hosts start the
    /// processes. The connections are made on a thread of their own ([`Connecting`]): an
    /// unreachable host takes up to the connect timeout, which the running jobs must not wait
    /// out.
    pub(super) fn spawn_job(
        &mut self,
        parent: usize,
        rank: u32,
        request: &SpawnRequest,
    ) -> Option<SpawnResult> {
        let procs = request.total_procs() as usize;
        let (Some(context), Some(wake)) = (self.spawner.as_mut(), self.wake.as_ref()) else {
            return Some(SpawnResult::refused(
                "this mpiexec does not spawn processes",
                procs,
            ));
        };
        if self.status.is_some_and(|s| s != 0) {
            return Some(SpawnResult::refused("the job is being terminated", procs));
        }
        let kvsname = reflex_pmi::new_kvsname("reflex");
        let (parts, mapping, appnums) = match plan_parts(request, &context.layout, &kvsname) {
            Ok(planned) => planned,
            Err(message) => return Some(SpawnResult::refused(&message, procs)),
        };
        // The slots are taken now, so that a spawn asked for meanwhile goes elsewhere.
        context.layout.record(&parts);
        let (tx, links) = mpsc::channel();
        let assignments: Vec<Assignment> = parts.iter().map(|p| p.assignment.clone()).collect();
        let (config, port) = (context.config.clone(), context.port);
        let waker = wake.sender();
        std::thread::spawn(move || {
            let _ = tx.send(connect_parts(&assignments, config, port));
            if let Some(waker) = waker {
                waker.wake();
            }
        });
        self.connecting.push(Connecting {
            parent: (parent, rank),
            kvsname,
            parts,
            mapping,
            appnums,
            preput: request.preput.clone(),
            procs,
            links,
        });
        None
    }

    /// The connect threads that are done: their spawns go on (or fail).
    pub(super) fn connected(&mut self) {
        if let Some(wake) = &self.wake {
            wake.drain();
        }
        let mut i = 0;
        while i < self.connecting.len() {
            match self.connecting[i].links.try_recv() {
                Ok(links) => {
                    let c = self.connecting.swap_remove(i);
                    self.start_spawned(c, links);
                }
                Err(mpsc::TryRecvError::Empty) => i += 1,
                Err(mpsc::TryRecvError::Disconnected) => {
                    let c = self.connecting.swap_remove(i);
                    self.start_spawned(c, Err("the connect thread failed".into()));
                }
            }
        }
    }

    /// Starts the processes of spawn `c` over `links` (one per part), or refuses it.
    fn start_spawned(&mut self, c: Connecting, links: Result<Vec<TlsLink>, String>) {
        let links = match links {
            Ok(_) if self.status.is_some_and(|s| s != 0) => {
                Err("the job is being terminated".to_owned())
            }
            other => other,
        };
        let links = match links {
            Ok(links) => links,
            Err(message) => {
                if let Some(spawner) = self.spawner.as_mut() {
                    for part in &c.parts {
                        let a = &part.assignment;
                        spawner.layout.release(&a.host, a.ranks.len() as u32);
                    }
                }
                let (parent, procs) = (c.parent, c.procs);
                return self.answer_spawn(parent, &SpawnResult::refused(&message, procs));
            }
        };
        let parent_job = c.parent.0;
        let mut server = self.jobs[parent_job]
            .server
            .child(&c.kvsname, c.appnums, &c.preput);
        server.set_process_mapping(&c.mapping);
        let job = self.jobs.len();
        let first = self.hosts.len();
        let mut owner = vec![0; c.procs];
        for (i, (part, link)) in c.parts.into_iter().zip(links).enumerate() {
            for &r in &part.assignment.ranks {
                owner[r as usize] = first + i;
            }
            self.hosts
                .push(Host::new(part.assignment, link, part.launch, job));
        }
        let mut pmi_job = PmiJob::new(server, owner);
        pmi_job.pending = Some(PendingSpawn {
            parent: c.parent,
            waiting: (first..self.hosts.len()).collect(),
            procs: c.procs,
        });
        self.jobs.push(pmi_job);
        for h in first..self.hosts.len() {
            self.hello(h);
        }
    }

    /// Host `h` started its processes: a spawned job's rank 0 gets end-of-file on stdin, and
    /// the spawn is answered once its last host has started.
    pub(super) fn started(&mut self, h: usize) {
        let job = self.hosts[h].job;
        if job > 0 && self.jobs[job].owner.first() == Some(&h) {
            self.send(h, &Msg::StdinEof);
        }
        let Some(pending) = self.jobs[job].pending.as_mut() else {
            return;
        };
        pending.waiting.retain(|&w| w != h);
        if let Some(done) = self.jobs[job].pending.take_if(|p| p.waiting.is_empty()) {
            self.answer_spawn(done.parent, &SpawnResult::success(done.procs));
        }
    }

    /// A host of spawned job `job` failed before all its processes started: the spawn fails
    /// with `what`, and what its other hosts started is killed.
    pub(super) fn abandon_spawn(&mut self, job: usize, what: &str) {
        let Some(pending) = self.jobs[job].pending.take() else {
            return;
        };
        self.jobs[job].abandoned = true;
        for h in 0..self.hosts.len() {
            if self.hosts[h].job != job {
                continue;
            }
            if self.hosts[h].proto_phase() == HostPhase::AwaitWelcome {
                // Nothing was launched there yet: hanging up is all it takes.
                self.close_link(h);
            } else {
                self.send(h, &Msg::Kill);
            }
        }
        self.answer_spawn(pending.parent, &SpawnResult::refused(what, pending.procs));
    }

    /// Sends the answer of a spawn to the rank (job, rank) that asked.
    pub(super) fn answer_spawn(&mut self, (job, rank): (usize, u32), result: &SpawnResult) {
        let reply = self.jobs[job].server.spawn_reply(rank, result);
        self.apply(
            job,
            reflex_pmi::Outcome {
                replies: vec![reply],
                event: None,
            },
        );
    }
}

/// The parts of the spawned job, its `PMI_process_mapping` and the `appnum` of every rank.
fn plan_parts(
    request: &SpawnRequest,
    context: &JobLayout,
    kvsname: &str,
) -> Result<(Vec<Part>, String, Vec<i32>), String> {
    let planned = plan_remote(request, &context.cwd, var(&context.vars, "PATH"))?;
    let (hosts, owner, command_of) = place_spawn(&planned, context);
    let (assignments, mapping) = assign_owners(&hosts, &owner);
    let size = owner.len() as u32;
    let mut parts = Vec::new();
    for (i, command) in planned.iter().enumerate() {
        for a in &assignments {
            let ranks: Vec<u32> = a
                .ranks
                .iter()
                .copied()
                .filter(|&r| command_of[r as usize] == i)
                .collect();
            if ranks.is_empty() {
                continue;
            }
            let assignment = Assignment { ranks, ..a.clone() };
            let launch = launch_command(command, kvsname, size, &assignment, &context.vars);
            parts.push(Part { assignment, launch });
        }
    }
    let appnums = command_of.iter().map(|&c| c as i32).collect();
    Ok((parts, mapping, appnums))
}

/// The host of every process of the spawned job (an index into the returned host list: the
/// job's hosts, then those that `host` info keys name and the list lacks) and the command
/// each runs. Processes without a `host` go to [`deal`].
fn place_spawn(
    planned: &[Planned],
    context: &JobLayout,
) -> (Vec<HostEntry>, Vec<usize>, Vec<usize>) {
    let mut hosts = context.hosts.clone();
    let unnamed: u32 = planned
        .iter()
        .filter(|p| p.host.is_none())
        .map(|p| p.procs)
        .sum();
    let mut dealt = deal(&hosts, &context.used, unnamed, context.ppn).into_iter();
    let (mut owner, mut command_of) = (Vec::new(), Vec::new());
    for (i, command) in planned.iter().enumerate() {
        let named = command.host.as_ref().map(|name| {
            hosts
                .iter()
                .position(|h| &h.name == name)
                .unwrap_or_else(|| {
                    hosts.push(HostEntry {
                        name: name.clone(),
                        slots: 1,
                        port: None,
                    });
                    hosts.len() - 1
                })
        });
        for _ in 0..command.procs {
            owner.push(named.or_else(|| dealt.next()).unwrap_or(0));
            command_of.push(i);
        }
    }
    (hosts, owner, command_of)
}

/// Places `n` processes on `hosts` as Open MPI places spawned ones: first in the slots that
/// earlier processes (`used`, per host) left free, host by host; then, every slot being taken,
/// dealt over the hosts as the job's ranks were (`-ppn` or the slots at a time).
fn deal(hosts: &[HostEntry], used: &[u32], n: u32, ppn: Option<u32>) -> Vec<usize> {
    let mut owner = Vec::with_capacity(n as usize);
    for (h, host) in hosts.iter().enumerate() {
        let free = host.slots.saturating_sub(used.get(h).copied().unwrap_or(0));
        let take = free.min(n - owner.len() as u32);
        owner.extend(std::iter::repeat_n(h, take as usize));
    }
    let rest = n - owner.len() as u32;
    owner.extend(place_ranks(hosts, rest, ppn));
    owner
}

/// The launch of `command`'s ranks on one host.
fn launch_command(
    command: &Planned,
    kvsname: &str,
    size: u32,
    a: &Assignment,
    job_vars: &[(OsString, OsString)],
) -> LaunchSpec {
    let mut vars = job_vars.to_vec();
    set_var(&mut vars, "PMI_SPAWNED".into(), "1".into());
    for (name, value) in &command.env {
        set_var(&mut vars, name.clone(), value.clone());
    }
    let mut argv = vec![command.program.clone().into_os_string().into_vec()];
    argv.extend(command.args.iter().map(|a| a.clone().into_vec()));
    LaunchSpec {
        kvsname: kvsname.to_owned(),
        size,
        ranks: a.ranks.clone(),
        node: a.node,
        argv,
        env: vars
            .into_iter()
            .map(|(k, v)| (k.into_vec(), v.into_vec()))
            .collect(),
        cwd: command.wdir.clone().into_os_string().into_vec(),
    }
}

/// Connects to the daemon of every assignment (in parallel); the first failure refuses the
/// spawn.
fn connect_parts(
    assignments: &[Assignment],
    config: Arc<ClientConfig>,
    port: Option<u16>,
) -> Result<Vec<TlsLink>, String> {
    let socks = connect_all(assignments, port)?;
    assignments
        .iter()
        .zip(socks)
        .map(|(a, sock)| {
            TlsLink::client(sock, config.clone(), &a.host)
                .map_err(|e| format!("host {}: {e}", a.host))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use reflex_pmi::SpawnCommand;

    fn host(name: &str, slots: u32) -> HostEntry {
        HostEntry {
            name: name.into(),
            slots,
            port: None,
        }
    }

    fn command(procs: u32, host: Option<&str>) -> Planned {
        Planned {
            program: "prog".into(),
            args: Vec::new(),
            procs,
            wdir: "/".into(),
            env: Vec::new(),
            host: host.map(str::to_owned),
        }
    }

    fn context(hosts: Vec<HostEntry>, used: Vec<u32>, ppn: Option<u32>) -> JobLayout {
        JobLayout {
            hosts,
            ppn,
            used,
            vars: vec![("PATH".into(), "/bin".into()), ("X".into(), "1".into())],
            cwd: "/work".into(),
        }
    }

    #[test]
    fn spawned_processes_take_free_slots_first_then_are_dealt_like_ranks() {
        let hosts = vec![host("a", 2), host("b", 2)];
        assert_eq!(deal(&hosts, &[2, 0], 3, None), [1, 1, 0]);
        assert_eq!(deal(&hosts, &[1, 1], 3, None), [0, 1, 0]);
        assert_eq!(deal(&hosts, &[2, 2], 5, None), [0, 0, 1, 1, 0]);
        assert_eq!(deal(&hosts, &[2, 2], 3, Some(1)), [0, 1, 0]);
        assert_eq!(deal(&hosts, &[], 1, None), [0]);

        let ctx = context(hosts.clone(), vec![2, 0], Some(1));
        let planned = [
            command(1, None),
            command(2, Some("a")),
            command(1, Some("c")),
        ];
        let (all, owner, command_of) = place_spawn(&planned, &ctx);
        assert_eq!(all.len(), 3, "c is added to the list");
        assert_eq!(all[2].name, "c");
        assert_eq!(owner, [1, 0, 0, 2]);
        assert_eq!(command_of, [0, 1, 1, 2]);
    }

    #[test]
    fn every_host_and_command_gets_its_own_launch() {
        let mut ctx = context(vec![host("a", 1), host("b", 2)], vec![1, 0], None);
        let commands = vec![
            SpawnCommand {
                command: "child".into(),
                args: vec!["x".into()],
                maxprocs: 3,
                info: vec![("env".into(), "X=2 Y=3".into())],
            },
            SpawnCommand {
                command: "./other".into(),
                args: Vec::new(),
                maxprocs: 1,
                info: vec![
                    ("wdir".into(), "sub".into()),
                    ("path".into(), "/opt".into()),
                ],
            },
        ];
        let request = SpawnRequest {
            commands,
            preput: Vec::new(),
        };
        let (parts, mapping, appnums) = plan_parts(&request, &ctx, "kvs-9").unwrap();
        // Ranks 0-1 fill b's free slots; with every slot taken, 2 and 3 are dealt from the
        // start of the list: one to a (its one slot), then b.
        assert_eq!(appnums, [0, 0, 0, 1]);
        assert_eq!(mapping, "(vector,(0,1,2),(1,1,1),(0,1,1))");
        let summary: Vec<(&str, Vec<u32>, u32)> = parts
            .iter()
            .map(|p| {
                (
                    p.assignment.host.as_str(),
                    p.launch.ranks.clone(),
                    p.launch.node,
                )
            })
            .collect();
        assert_eq!(
            summary,
            [("b", vec![0, 1], 0), ("a", vec![2], 1), ("b", vec![3], 0)]
        );
        let env = |p: &Part, name: &str| {
            p.launch
                .env
                .iter()
                .filter(|(k, _)| k == name.as_bytes())
                .map(|(_, v)| String::from_utf8(v.clone()).unwrap())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            env(&parts[0], "X"),
            ["2"],
            "the command's env replaces the job's"
        );
        assert_eq!(env(&parts[0], "Y"), ["3"]);
        assert_eq!(env(&parts[0], "PMI_SPAWNED"), ["1"]);
        assert_eq!(env(&parts[0], "PATH"), ["/bin"]);
        assert_eq!(env(&parts[2], "PATH"), ["/opt:/bin"]);
        assert_eq!(env(&parts[2], "X"), ["1"]);
        assert_eq!(parts[0].launch.argv, [b"child".to_vec(), b"x".to_vec()]);
        assert_eq!(parts[2].launch.argv, [b"/work/sub/./other".to_vec()]);
        assert_eq!(parts[2].launch.cwd, b"/work/sub");
        assert_eq!(parts[0].launch.size, 4);
        ctx.record(&parts);
        assert_eq!(ctx.used, [2, 3]);
        ctx.release("b", 2);
        ctx.release("c", 5);
        assert_eq!(ctx.used, [2, 1], "c is not one of the job's hosts");
    }
}
