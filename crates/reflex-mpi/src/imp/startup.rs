//! The engine's life, shared by the two models of MPI-4.0: the World Model (`MPI_Init` ..
//! `MPI_Finalize`) and the Sessions Model (`MPI_Session_init` .. `MPI_Session_finalize`,
//! §11.3). The first of them to start starts the engine (launcher connection, transports,
//! the C layer's tables); the others join it, raising the thread level if they ask for more;
//! the last to end ends it. What is left is counted, not stored: the World Model's state
//! ([`state::world_model`]) and the open sessions ([`crate::sessions::Sessions::open`]).
//! Once ended, the engine cannot start again in this process: the launcher's connection is
//! closed with it.

use crate::kinds::TAG_UB;
use crate::state::{self, Mpi, Phase, WorldModel};
use reflex_engine::world::World;
use reflex_engine::{ErrorClass, MpiError, Result};
use std::ffi::c_int;

const PROC_NULL: c_int = -1;
/// `MPI_IO`: every rank can do I/O, which MPI spells `MPI_ANY_SOURCE`.
const ANY_SOURCE_IO: c_int = -2;

/// The running state for a model that starts at thread level `required` (in the call `caller`):
/// the engine is started if it is not running yet; a running one provides `required` from now on
/// if it provided less.
pub(crate) fn engine_join(caller: &str, required: c_int) -> Result<&'static mut Mpi> {
    // Every level is provided, MPI_THREAD_MULTIPLE included (crate::threads); below it nothing
    // is locked.
    let required = required.clamp(0, crate::threads::THREAD_MULTIPLE);
    // SAFETY: inside an MPI call (an anytime frame, which holds the process lock under
    // MPI_THREAD_MULTIPLE); no other reference to the state is alive in an anytime call.
    let phase = unsafe { state::phase() };
    match phase {
        Phase::Running(mpi) => {
            if required > mpi.thread_level {
                mpi.thread_level = required;
                crate::threads::set_level(required);
            }
        }
        Phase::Uninitialised => engine_start(caller, phase, required)?,
        Phase::Finalised => {
            return Err(MpiError::new(
                ErrorClass::Other,
                "MPI cannot start again in this process: MPI_Finalize and the last \
                 MPI_Session_finalize have ended it",
            ))
        }
    }
    match phase {
        Phase::Running(mpi) => Ok(mpi),
        _ => Err(MpiError::new(
            ErrorClass::Intern,
            "the engine did not start",
        )),
    }
}

fn engine_start(caller: &str, phase: &mut Phase, provided: c_int) -> Result<()> {
    crate::lifeline::die_with_launcher();
    let world = World::init().unwrap_or_else(|e| start_failed(caller, &e));
    let progress = (world.config.progress_thread.is_on())
        .then(|| std::time::Duration::from_micros(u64::from(world.config.progress_us)));
    let universe = world
        .universe_size()
        .map_or(world.engine.world_size() as i32, |u| u as i32);
    let appnum = world.appnum().map_or(-1, |a| a as i32);
    // Slots: TAG_UB, HOST, IO, WTIME_IS_GLOBAL, UNIVERSE_SIZE, LASTUSEDCODE, APPNUM.
    let attr_values = Box::new([TAG_UB, PROC_NULL, ANY_SOURCE_IO, 0, universe, 0, appnum, 0]);
    let objects = super::info::objects_at_init();
    *phase = Phase::Running(Box::new(Mpi {
        world,
        thread_level: provided,
        errhandlers: Vec::new(),
        attr_values,
        main_thread: std::thread::current().id(),
        objects,
    }));
    crate::threads::set_level(provided);
    super::env::clock_origin();
    if let Some(pause) = progress {
        crate::progress::start(pause).map_err(|e| {
            MpiError::new(
                ErrorClass::Other,
                format!("cannot start the progress thread (REFLEX_PROGRESS_THREAD=on): {e}"),
            )
        })?;
    }
    Ok(())
}

/// A process that cannot join its job (launcher, transport or configuration failure) has no
/// communicator whose handler could report it: the initial handler is `MPI_ERRORS_ARE_FATAL`
/// (MPI-4.0 §9.3), so the reason is printed and the process ends; its launcher ends the job.
#[cold]
fn start_failed(caller: &str, e: &MpiError) -> ! {
    eprintln!("reflex: fatal error in {caller}: {e}");
    std::process::exit(1)
}

/// Ends the engine if neither the World Model nor a session still uses it (after
/// `MPI_Finalize` and after each `MPI_Session_finalize`). Ending it synchronises with every
/// process of the job, as `MPI_Finalize` does.
pub(crate) fn engine_leave() -> Result<()> {
    // SAFETY: inside an MPI call (an anytime frame, which holds the process lock under
    // MPI_THREAD_MULTIPLE); no other reference to the state is alive in an anytime call.
    let phase = unsafe { state::phase() };
    let in_use = match phase {
        Phase::Running(mpi) => {
            state::world_model() == WorldModel::Active || mpi.objects.sessions.open() > 0
        }
        _ => true,
    };
    if in_use {
        return Ok(());
    }
    state::withdraw_fast();
    if let Phase::Running(mpi) = phase {
        crate::mpit::live::engine_ending(mpi);
        super::info::give_back(mpi);
    }
    match std::mem::replace(phase, Phase::Finalised) {
        Phase::Running(mpi) => mpi.world.finalize(),
        _ => Ok(()),
    }
}
