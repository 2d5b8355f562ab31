//! Collective calls: every collective of MPI-3.1 chapter 5 and the neighbourhood collectives of
//! chapter 7, each in its blocking, nonblocking (`MPI_I…`) and persistent (MPI-4 `…_init`) form.
//!
//! One function per collective turns the C arguments into the engine's description
//! ([`reflex_engine::coll::Coll`]): buffers cut into per-rank blocks of any datatype
//! ([`blocks`]), `MPI_IN_PLACE` where the standard allows it, the operation of a reduction
//! ([`reducing`]). The [`forms!`] macro derives the three entry points from it, which differ only
//! in how the engine runs the schedule: to completion, started with a request handed out, or
//! kept inactive until `MPI_Start`. Info hints of the persistent forms are accepted and ignored.

mod blocks;
mod moving;
mod reducing;

pub use moving::*;
pub use reducing::*;

use super::util::write;
use crate::ffi::MPI_Request;
use crate::handles::request_handle;
use crate::state::Mpi;
use reflex_engine::coll::Coll;
use reflex_engine::{CommId, Result};

/// Whether this process is the root of a rooted collective (`MPI_ROOT` on an
/// intercommunicator).
fn is_root(w: &Mpi, comm: CommId, root: std::ffi::c_int) -> Result<bool> {
    let c = w.world.engine.comm(comm)?;
    Ok(match c.is_inter() {
        true => root == reflex_engine::coll::inter::ROOT,
        false => c.rank as std::ffi::c_int == root,
    })
}

/// How a collective call runs.
#[derive(Debug, Clone, Copy)]
pub enum Mode {
    /// To completion (`MPI_Bcast`).
    Blocking,
    /// Started; the request is written to the pointer (`MPI_Ibcast`).
    Start(*mut MPI_Request),
    /// Inactive persistent request written to the pointer (`MPI_Bcast_init`).
    Init(*mut MPI_Request),
}

/// Runs `coll` on `comm` as `mode` says, once its buffers are known not to be aliased. Under
/// `MPI_THREAD_MULTIPLE` a blocking collective is started as a schedule and waited for without
/// the process lock (`threads::block_on`), so that other threads of this process can make the
/// progress it waits for.
pub fn run(w: &mut Mpi, comm: CommId, coll: Coll, mode: Mode) -> Result<()> {
    let c = w.world.engine.comm(comm)?;
    if !c.is_inter() {
        coll.check_aliasing(c.rank as usize)?;
    }
    if matches!(mode, Mode::Blocking) && crate::threads::deferring(w) {
        let start = move |w: &mut Mpi| w.world.engine.coll_start(comm, coll);
        return crate::threads::block_on(w, start, |_, done| {
            done.status.error.map_or(Ok(()), |e| Err(*e))
        });
    }
    let engine = &mut w.world.engine;
    match mode {
        Mode::Blocking => engine.collective(comm, coll),
        Mode::Start(request) => {
            write(request, request_handle(engine.coll_start(comm, coll)?));
            Ok(())
        }
        Mode::Init(request) => {
            write(request, request_handle(engine.coll_init(comm, coll)?));
            Ok(())
        }
    }
}

/// Defines the blocking, nonblocking and persistent entry points of one collective from the
/// function that builds its [`Coll`] (same arguments, the communicator last).
macro_rules! forms {
    ($blocking:ident, $start:ident, $init:ident $(<$($g:ident: $b:path),*>)?
        = $build:ident($($arg:ident: $ty:ty),*)) => {
        #[doc = concat!("`MPI_", stringify!($blocking), "` (first letter capitalised).")]
        pub fn $blocking$(<$($g: $b),*>)?(w: &mut Mpi, $($arg: $ty,)* comm: CommId) -> Result<()> {
            let coll = $build(w, $($arg,)* comm)?;
            super::run(w, comm, coll, super::Mode::Blocking)
        }

        #[doc = concat!("`MPI_", stringify!($start), "` (nonblocking).")]
        pub fn $start$(<$($g: $b),*>)?(
            w: &mut Mpi,
            $($arg: $ty,)*
            comm: CommId,
            request: *mut crate::ffi::MPI_Request,
        ) -> Result<()> {
            let coll = $build(w, $($arg,)* comm)?;
            super::run(w, comm, coll, super::Mode::Start(request))
        }

        #[doc = concat!("`MPI_", stringify!($init), "` (persistent; info hints ignored).")]
        pub fn $init$(<$($g: $b),*>)?(
            w: &mut Mpi,
            $($arg: $ty,)*
            comm: CommId,
            _info: Option<crate::info::InfoId>,
            request: *mut crate::ffi::MPI_Request,
        ) -> Result<()> {
            let coll = $build(w, $($arg,)* comm)?;
            super::run(w, comm, coll, super::Mode::Init(request))
        }
    };
}
pub(crate) use forms;
