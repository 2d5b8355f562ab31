//! Start-up and shutdown of a process's MPI world: PMI, the node's shared-memory segment, the engine.
//!
//! Wire-up (as DESIGN.md describes): the process learns its rank and the job size from the PMI
//! launcher (Reflex's `mpiexec`, Hydra, Slurm) or runs as a singleton; [`crate::fabric::wire_up`]
//! then groups the ranks into nodes and connects them: shared memory within a node (one segment
//! per node, named by job and node index, unlinked once every local rank has opened it), TCP
//! between nodes.

use crate::engine::{Engine, Tuning};
use crate::error::{ErrorClass, MpiError, Result};
use crate::fabric::Fabric;
use reflex_base::config::{Config, SingleCopy};
use reflex_pmi::client::PmiClient;
use reflex_pmi::PmiError;
use std::time::Duration;

/// The process's MPI world: launcher connection, configuration and the engine.
#[derive(Debug)]
pub struct World {
    /// The engine (everything MPI).
    pub engine: Engine<Fabric>,
    /// Effective configuration.
    pub config: Config,
    pub(crate) pmi: PmiClient,
    /// The intercommunicator to the job that spawned this one (`MPI_Comm_get_parent`); `None`
    /// when it was not spawned or the application freed or disconnected it.
    pub parent: Option<crate::CommId>,
}

fn pmi_error(what: &str, e: impl std::fmt::Display) -> MpiError {
    MpiError::new(ErrorClass::Other, format!("{what}: {e}"))
}

/// Host name of this machine (`MPI_Get_processor_name`).
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "localhost".into())
}

impl World {
    /// Connects to the launcher, sets up the transports and builds the engine.
    pub fn init() -> Result<World> {
        let loaded =
            Config::from_env().map_err(|e| MpiError::new(ErrorClass::Arg, e.to_string()))?;
        let config = loaded.config;
        for w in loaded.warnings {
            eprintln!("reflex: warning: {w}");
        }
        let mut pmi = PmiClient::from_env()
            .map_err(|e| pmi_error("cannot connect to the process manager", e))?;
        let (rank, size) = (pmi.rank() as usize, pmi.size() as usize);
        let (fabric, node_ranks) = if size == 1 {
            (Fabric::Alone, 1)
        } else {
            crate::fabric::wire_up(&mut pmi, &config, rank, size)?
        };
        let tuning = tuning_of(&config, node_ranks);
        // Single-copy reads a peer's memory by pid: only valid when every peer is on this node.
        let single_copy = config.single_copy != SingleCopy::Off && fabric.shares_memory_with_all();
        let board_base = match &fabric {
            Fabric::Shm(t) if config.coll_shm.is_on() => Some(t.segment().name().to_owned()),
            _ => None,
        };
        let segment_base = fabric.node_segment_name().map(str::to_owned);
        let mut engine = Engine::new(fabric, rank, (0..size).collect(), tuning, single_copy);
        engine.set_job(crate::procs::job_id(pmi.kvsname()));
        if let Some(base) = segment_base {
            engine.set_segment_base(base);
        }
        if let Some(base) = board_base {
            engine.enable_boards(base);
        }
        let mut world = World {
            engine,
            config,
            pmi,
            parent: None,
        };
        world.parent = world.connect_parent()?;
        Ok(world)
    }

    /// `MPI_APPNUM` from the launcher, if it set one.
    pub fn appnum(&self) -> Option<u32> {
        self.pmi.appnum()
    }

    /// `MPI_UNIVERSE_SIZE` from the launcher, if it set one.
    pub fn universe_size(&self) -> Option<u32> {
        self.pmi.universe_size()
    }

    /// `MPI_Publish_name`: `port` under `service` in the launcher's name service.
    pub fn publish_name(&mut self, service: &str, port: &str) -> Result<()> {
        self.pmi.publish_name(service, port).map_err(|e| {
            MpiError::new(
                ErrorClass::Service,
                format!("cannot publish service {service:?}: {e}"),
            )
        })
    }

    /// `MPI_Lookup_name`: the port published under `service` (`MPI_ERR_NAME` when none is).
    pub fn lookup_name(&mut self, service: &str) -> Result<String> {
        self.pmi.lookup_name(service).map_err(|e| match e {
            PmiError::NameNotFound { .. } => MpiError::new(
                ErrorClass::Name,
                format!("no port is published under service {service:?}"),
            ),
            e => MpiError::new(
                ErrorClass::Name,
                format!("cannot look up service {service:?}: {e}"),
            ),
        })
    }

    /// `MPI_Unpublish_name` (`MPI_ERR_SERVICE` when `service` is not published).
    pub fn unpublish_name(&mut self, service: &str) -> Result<()> {
        self.pmi.unpublish_name(service).map_err(|e| match e {
            PmiError::NameNotFound { .. } => MpiError::new(
                ErrorClass::Service,
                format!("service {service:?} is not published"),
            ),
            e => MpiError::new(
                ErrorClass::Service,
                format!("cannot unpublish service {service:?}: {e}"),
            ),
        })
    }

    /// `MPI_Finalize`: waits for every rank, then says goodbye to the launcher.
    pub fn finalize(mut self) -> Result<()> {
        self.engine.barrier(crate::COMM_WORLD)?;
        self.pmi
            .finalize()
            .map_err(|e| pmi_error("finalize with the process manager failed", e))
    }

    /// `MPI_Abort`: asks the launcher to end the job with `code`, then exits.
    pub fn abort(&mut self, code: i32, message: &str) -> ! {
        let _ = self.pmi.abort(code, message);
        std::process::exit(code)
    }
}

/// The cores the job may use on this node: those of this process's cgroup (cgroup v2
/// `cpuset.cpus.effective`), else those online. Not this process's affinity mask: a rank pinned
/// to one core (as benchmarks do) shares the node with ranks pinned to the others.
fn node_cores() -> usize {
    let cgroup_cpus = std::fs::read_to_string("/proc/self/cgroup")
        .ok()
        .and_then(|c| {
            c.lines()
                .find_map(|l| l.strip_prefix("0::").map(str::to_owned))
        })
        .and_then(|path| {
            std::fs::read_to_string(format!("/sys/fs/cgroup{path}/cpuset.cpus.effective")).ok()
        });
    cgroup_cpus
        .or_else(|| std::fs::read_to_string("/sys/devices/system/cpu/online").ok())
        .and_then(|list| cpu_list_len(list.trim()))
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The number of CPUs in a kernel CPU list (`0-3,8,10-11`); `None` when it is empty or malformed.
fn cpu_list_len(list: &str) -> Option<usize> {
    let mut n = 0;
    for part in list.split(',') {
        n += match part.split_once('-') {
            Some((lo, hi)) => hi.parse::<usize>().ok()?.checked_sub(lo.parse().ok()?)? + 1,
            None => {
                part.parse::<usize>().ok()?;
                1
            }
        };
    }
    (n > 0).then_some(n)
}

/// Most empty polls before a rank on an oversubscribed node yields. The answer a rank waits for
/// seldom comes while it spins there (the peer usually waits for this very core), and every
/// poll delays the hand-over: on the 2-core VM (2026-11-27, `REFLEX_SPIN_POLLS` swept, loops of
/// 4-byte collectives and `pt2pt -t ring`), 8 ranks took 8.0-9.6 µs per allreduce with 16-50
/// polls and 7.1-7.3 with 2-4; 4 ranks 3.2-3.7 against 2.2-2.9, the 8-byte ring of 4 ranks
/// 1.9-2.4 µs a step against 1.2-1.7.
const OVERSUBSCRIBED_SPIN: u32 = 4;

/// The engine's tuning from the configuration; with more ranks on this node than it has cores,
/// spinning is cut short.
fn tuning_of(config: &Config, node_ranks: usize) -> Tuning {
    let cores = node_cores();
    let oversubscribed = node_ranks > cores;
    Tuning {
        eager_limit: config.eager_limit.get(),
        chunk: config.pipeline_chunk.get(),
        stream_eager_limit: config.tcp_eager_limit.get(),
        stream_chunk: config.tcp_chunk.get(),
        spin_polls: if oversubscribed {
            config.spin_polls.min(OVERSUBSCRIBED_SPIN)
        } else {
            config.spin_polls
        },
        yield_polls: config.yield_polls,
        sleep: Duration::from_micros(u64::from(config.sleep_us)),
        direct_send: config.direct_send.is_on(),
        direct_recv: config.direct_recv.is_on(),
        iov_min: config.iov_min_block.get(),
        coop_chunk: matches!(config.single_copy, SingleCopy::Auto | SingleCopy::Coop)
            .then(|| config.coop_chunk.get()),
        coll: crate::coll::select::CollTuning {
            oversubscribed,
            cores,
            ..crate::coll::select::CollTuning::from_config(config)
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_are_counted() {
        assert_eq!(cpu_list_len("0-1"), Some(2));
        assert_eq!(cpu_list_len("0-3,8,10-11"), Some(7));
        assert_eq!(cpu_list_len("5"), Some(1));
        assert_eq!(cpu_list_len(""), None);
        assert_eq!(cpu_list_len("3-1"), None);
        assert_eq!(cpu_list_len("x"), None);
        assert!(node_cores() >= 1);
    }
}
