//! Start-up and shutdown of a process's MPI world: PMI, the node's shared-memory segment, the engine.
//!
//! Wire-up (as DESIGN.md describes): the process learns its rank and the job size from the PMI
//! launcher (Reflex's `mpiexec`, Hydra, Slurm) or runs as a singleton. Every rank publishes its host
//! name; the ranks of a node share one segment that the node's first rank creates and publishes by
//! name, the others open after a PMI barrier, and the creator unlinks after a second barrier, so no
//! file is left in `/dev/shm` once start-up is over, whatever happens to the job later.

use crate::engine::{Engine, Tuning};
use crate::error::{ErrorClass, MpiError, Result};
use crate::fabric::Fabric;
use reflex_base::config::{Config, SingleCopy};
use reflex_pmi::client::PmiClient;
use reflex_shm::{ShmParams, ShmSegment, ShmTransport};
use std::time::Duration;

/// The process's MPI world: launcher connection, configuration and the engine.
#[derive(Debug)]
pub struct World {
    /// The engine (everything MPI).
    pub engine: Engine<Fabric>,
    /// Effective configuration.
    pub config: Config,
    pmi: PmiClient,
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
        let tuning = tuning_of(&config, size);
        let fabric = if size == 1 {
            Fabric::Alone
        } else {
            Fabric::Shm(wire_up_shm(&mut pmi, &config, rank, size)?)
        };
        let single_copy = config.single_copy != SingleCopy::Off;
        let engine = Engine::new(fabric, rank, (0..size).collect(), tuning, single_copy);
        Ok(World {
            engine,
            config,
            pmi,
        })
    }

    /// `MPI_APPNUM` from the launcher, if it set one.
    pub fn appnum(&self) -> Option<u32> {
        self.pmi.appnum()
    }

    /// `MPI_UNIVERSE_SIZE` from the launcher, if it set one.
    pub fn universe_size(&self) -> Option<u32> {
        self.pmi.universe_size()
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

/// The engine's tuning from the configuration; with more ranks than cores, spinning is cut short.
fn tuning_of(config: &Config, nranks: usize) -> Tuning {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let oversubscribed = nranks > cores;
    Tuning {
        eager_limit: config.eager_limit.get(),
        chunk: config.pipeline_chunk.get(),
        spin_polls: if oversubscribed {
            config.spin_polls.min(50)
        } else {
            config.spin_polls
        },
        yield_polls: config.yield_polls,
        sleep: Duration::from_micros(u64::from(config.sleep_us)),
    }
}

/// Creates or joins the node's shared-memory segment and returns this rank's transport.
fn wire_up_shm(
    pmi: &mut PmiClient,
    config: &Config,
    rank: usize,
    size: usize,
) -> Result<ShmTransport> {
    let host = host_name();
    pmi.put(&format!("reflex-host-{rank}"), &host)
        .map_err(|e| pmi_error("publishing the host name", e))?;
    let name = reflex_base::segment::segment_name(pmi.kvsname(), 0);
    let params = ShmParams {
        ring_bytes: config.shm_ring_bytes.get(),
    };
    let created = if rank == 0 {
        Some(
            ShmSegment::create(&name, size, &params)
                .map_err(|e| pmi_error(&format!("cannot create shared segment {name}"), e))?,
        )
    } else {
        None
    };
    pmi.barrier()
        .map_err(|e| pmi_error("start-up barrier", e))?;
    for r in 0..size {
        let theirs = pmi
            .get(&format!("reflex-host-{r}"))
            .map_err(|e| pmi_error("reading host names", e))?;
        if theirs != host {
            return Err(MpiError::new(
                ErrorClass::UnsupportedOperation,
                format!("rank {r} runs on host {theirs} and rank {rank} on {host}: jobs across hosts need the TCP transport, which this build does not have yet"),
            ));
        }
    }
    let segment = match created {
        Some(seg) => seg,
        None => ShmSegment::open(&name)
            .map_err(|e| pmi_error(&format!("cannot open shared segment {name}"), e))?,
    };
    pmi.barrier()
        .map_err(|e| pmi_error("start-up barrier", e))?;
    if rank == 0 {
        reflex_base::segment::unlink(&name)
            .map_err(|e| pmi_error(&format!("cannot unlink shared segment {name}"), e))?;
    }
    ShmTransport::new(segment, rank)
        .map_err(|e| pmi_error("cannot attach to the shared segment", e))
}
