//! One-sided communication (MPI-3.1 chapter 11): windows, their operations and synchronisation.
//!
//! A window is a private duplicate of the user's communicator, every rank's size and
//! displacement unit, and the memory this process can reach directly:
//!
//! - **shared** ([`Memory::Shared`]): every rank's memory lives in one segment mapped by all
//!   (`MPI_Win_allocate_shared`, and `MPI_Win_allocate` whenever the ranks can map one segment).
//!   Operations are loads, stores and hardware atomics done by the origin itself
//!   (`shared/reference/seed002_003.md`: Memory Channel's remotely written regions); locks are
//!   words in the segment, so passive-target epochs need nothing from the target process.
//! - **private** ([`Memory::Private`], [`Memory::Dynamic`]): only this rank's memory is here
//!   (`MPI_Win_create`, `MPI_Win_create_dynamic`, `MPI_Win_allocate` across nodes). Operations
//!   travel as request messages on the window's communicator ([`wire`]); the target serves them
//!   from its progress loop ([`target`]), one origin's requests in the order they were issued,
//!   and answers flushes, locks and gets.
//!
//! [`origin`] issues operations, [`epoch`] keeps what this process may do now (the only place
//! that changes it), [`sync`] implements fence, post/start/complete/wait and the passive-target
//! calls, [`apply`] is what an operation does to target memory.

mod apply;
mod build;
mod direct;
mod direct_atomic;
mod direct_sync;
mod epoch;
pub mod origin;
mod pscw;
pub mod sync;
mod target;
mod wire;

use crate::comm::CommId;
use crate::engine::Engine;
use crate::error::{ErrorClass, MpiError, Result};
use crate::request::RequestId;
use reflex_base::buf::RecvBuf;
use reflex_base::slots::Slots;
use reflex_base::transport::Transport;
use reflex_shm::window::WinSegment;
use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;

pub use build::{Built, Layout, WinBuild};

pub(crate) use epoch::Epoch;

/// Index of a window in the engine's table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WinId(pub u32);

/// How a window's memory was obtained (`MPI_WIN_FLAVOR_*`, MPICH's values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum Flavor {
    /// `MPI_Win_create`: the application's memory.
    Create = 1,
    /// `MPI_Win_allocate`.
    Allocate = 2,
    /// `MPI_Win_create_dynamic`: memory attached later.
    Dynamic = 3,
    /// `MPI_Win_allocate_shared`.
    Shared = 4,
}

/// The memory of a window as this process reaches it.
#[derive(Debug)]
pub(crate) enum Memory {
    /// This rank's memory; the others are reached by messages.
    Private(RecvBuf),
    /// Regions attached to a dynamic window (absolute addresses).
    Dynamic(Vec<RecvBuf>),
    /// Every rank's memory, mapped here.
    Shared {
        seg: Arc<WinSegment>,
        regions: Vec<Reach>,
        /// The PSCW notices this rank has taken from each rank.
        taken: pscw::Taken,
    },
}

/// One rank's memory in a shared window as an origin reaches it: the bytes mapped here and the
/// displacement unit, side by side so that the direct path finds both with one bounds check.
/// Both are fixed when the window is created.
#[derive(Debug)]
pub(crate) struct Reach {
    pub(crate) mem: RecvBuf,
    /// The rank's displacement unit (`MPI_Aint` arithmetic; a unit past `isize::MAX` is
    /// `isize::MAX`, which overflows every non-zero displacement and so reaches nothing).
    pub(crate) unit: isize,
}

/// Lock type of a passive-target epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockKind {
    /// `MPI_LOCK_EXCLUSIVE`.
    Exclusive,
    /// `MPI_LOCK_SHARED`.
    Shared,
}

/// Operations this process issued that are not known complete (private windows).
#[derive(Debug, Default)]
pub(crate) struct OriginState {
    /// Transfers in flight (data sends, reply receives), with their target.
    pub(crate) pending: Vec<(usize, crate::request::RequestId)>,
    /// Targets sent requests since they were last flushed.
    pub(crate) touched: BTreeSet<usize>,
    /// Next reply tag.
    pub(crate) next_tag: i32,
    /// Request-based operations: (transfer, the application's request) completed together.
    pub(crate) linked: Vec<(crate::request::RequestId, crate::request::RequestId)>,
}

/// A request waiting to be served, in its origin's queue.
#[derive(Debug)]
pub(crate) struct Incoming {
    pub(crate) msg: target::Msg,
    /// The separate data message being received, when the data did not fit the request.
    pub(crate) data: Option<crate::request::RequestId>,
}

/// The lock of this rank's memory in a private window.
#[derive(Debug, Default)]
pub(crate) struct LockState {
    pub(crate) exclusive: Option<usize>,
    pub(crate) shared: usize,
    /// Lock requests not granted yet: (origin, exclusive, reply tag).
    pub(crate) waiting: VecDeque<(usize, bool, i32)>,
}

/// What this rank serves as a target (private windows).
#[derive(Debug, Default)]
pub(crate) struct TargetState {
    /// Requests of each origin, in issue order.
    pub(crate) queues: Vec<VecDeque<Incoming>>,
    pub(crate) lock: LockState,
    /// First error found serving each origin's requests, reported at its next flush.
    pub(crate) errors: Vec<Option<ErrorClass>>,
}

/// One window.
#[derive(Debug)]
pub(crate) struct Window {
    pub(crate) comm: CommId,
    pub(crate) ctx: u32,
    pub(crate) rank: usize,
    pub(crate) members: Arc<[u32]>,
    pub(crate) flavor: Flavor,
    pub(crate) sizes: Vec<usize>,
    pub(crate) units: Vec<usize>,
    pub(crate) mem: Memory,
    pub(crate) epoch: Epoch,
    pub(crate) origin: OriginState,
    pub(crate) target: TargetState,
}

impl Window {
    pub(crate) fn nranks(&self) -> usize {
        self.members.len()
    }

    pub(crate) fn is_shared(&self) -> bool {
        matches!(self.mem, Memory::Shared { .. })
    }
}

/// The engine's windows.
#[derive(Debug, Default)]
pub(crate) struct Windows {
    slots: Slots<Window>,
    /// Set while requests are being served (sends they post must not re-enter).
    pub(crate) serving: bool,
    /// Private windows (requests to serve while non-zero).
    private: usize,
}

impl Windows {
    pub(crate) fn get(&self, id: WinId) -> Result<&Window> {
        self.find(id).ok_or_else(|| invalid(id))
    }

    /// The window `id`, if it exists.
    #[inline]
    pub(crate) fn find(&self, id: WinId) -> Option<&Window> {
        self.slots.get(id.0 as usize)
    }

    /// The window `id`, if it exists, writable.
    #[inline]
    pub(crate) fn find_mut(&mut self, id: WinId) -> Option<&mut Window> {
        self.slots.get_mut(id.0 as usize)
    }

    pub(crate) fn get_mut(&mut self, id: WinId) -> Result<&mut Window> {
        self.slots.get_mut(id.0 as usize).ok_or_else(|| invalid(id))
    }

    fn insert(&mut self, w: Window) -> WinId {
        self.private += usize::from(!w.is_shared());
        WinId(self.slots.insert(w) as u32)
    }

    /// Number of window slots (ids run below it).
    pub(crate) fn slots(&self) -> usize {
        self.slots.bound()
    }

    /// Whether slot `i` holds a private window (one with requests to serve).
    pub(crate) fn is_private(&self, i: usize) -> bool {
        self.slots.get(i).is_some_and(|w| !w.is_shared())
    }

    pub(crate) fn any_private(&self) -> bool {
        self.private > 0
    }

    fn remove(&mut self, id: WinId) {
        if let Some(w) = self.slots.remove(id.0 as usize) {
            self.private -= usize::from(!w.is_shared());
        }
    }
}

/// Window segments this process created so far (their names must be unique).
static SEGMENTS_MADE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Room for a segment name in the creation exchange (names are far shorter).
const NAME_BYTES: usize = 240;

#[cold]
fn invalid(id: WinId) -> MpiError {
    MpiError::new(
        ErrorClass::Win,
        format!("window {} does not exist (freed or never created)", id.0),
    )
}

/// What the application learns about a window (`MPI_Win_get_attr`, `MPI_Win_shared_query`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WinInfo {
    /// How the memory was obtained.
    pub flavor: Flavor,
    /// This rank's size in bytes.
    pub size: usize,
    /// This rank's displacement unit.
    pub disp_unit: usize,
    /// This rank's base address (0 for a dynamic window).
    pub base: usize,
}

impl<T: Transport> Engine<T> {
    pub(super) fn install_window(
        &mut self,
        comm: CommId,
        flavor: Flavor,
        sizes: Vec<usize>,
        units: Vec<usize>,
        mem: Memory,
    ) -> WinId {
        let c = self.comms.get(comm).expect("the window's own communicator");
        let n = c.size();
        let w = Window {
            comm,
            ctx: c.ctx,
            rank: c.rank as usize,
            members: c.group.members.clone(),
            flavor,
            sizes,
            units,
            mem,
            epoch: Epoch::default(),
            origin: OriginState {
                next_tag: target::FIRST_REPLY_TAG,
                ..Default::default()
            },
            target: TargetState {
                queues: (0..n).map(|_| VecDeque::new()).collect(),
                errors: vec![None; n],
                ..Default::default()
            },
        };
        self.wins.insert(w)
    }

    /// `MPI_Win_free`: waits until every rank is done with the window, then releases it.
    pub fn win_free(&mut self, id: WinId) -> Result<()> {
        let barrier = self.win_free_start(id)?;
        if let Some(e) = self.wait(barrier)?.error {
            return Err(*e);
        }
        self.win_free_finish(id)
    }

    /// The first half of `MPI_Win_free` for a caller that waits elsewhere (under
    /// `MPI_THREAD_MULTIPLE`, without the library lock): checks, completes this rank's
    /// operations and starts the barrier of the window's communicator, whose request is
    /// returned; once it completes, [`Self::win_free_finish`].
    pub fn win_free_start(&mut self, id: WinId) -> Result<RequestId> {
        let w = self.wins.get(id)?;
        if w.epoch.open() {
            return Err(MpiError::new(
                ErrorClass::RmaSync,
                "MPI_Win_free inside an access or exposure epoch (complete, wait or unlock first)",
            ));
        }
        let comm = w.comm;
        self.win_quiesce(id)?;
        self.coll_start(comm, crate::coll::Coll::Barrier)
    }

    /// Releases the window once every rank reached `MPI_Win_free`.
    pub fn win_free_finish(&mut self, id: WinId) -> Result<()> {
        let comm = self.wins.get(id)?.comm;
        self.wins.remove(id);
        self.comm_free(comm)
    }

    /// This rank's flavor, size, unit and base address.
    pub fn win_info(&self, id: WinId) -> Result<WinInfo> {
        let w = self.wins.get(id)?;
        let base = match &w.mem {
            Memory::Private(b) => b.addr(),
            Memory::Dynamic(_) => 0,
            Memory::Shared { seg, .. } => seg.region_addr(w.rank),
        };
        Ok(WinInfo {
            flavor: w.flavor,
            size: w.sizes[w.rank],
            disp_unit: w.units[w.rank],
            base,
        })
    }

    /// `MPI_Win_shared_query`: size, unit and address here of `rank`'s memory (`MPI_PROC_NULL`:
    /// the first rank with a non-zero size).
    pub fn win_shared_query(&self, id: WinId, rank: i32) -> Result<(usize, usize, usize)> {
        let w = self.wins.get(id)?;
        let (Memory::Shared { seg, .. }, Flavor::Shared) = (&w.mem, w.flavor) else {
            return Err(MpiError::new(
                ErrorClass::RmaFlavor,
                "MPI_Win_shared_query needs a window made by MPI_Win_allocate_shared",
            ));
        };
        let r = if rank == crate::request::PROC_NULL {
            (0..w.nranks()).find(|&r| w.sizes[r] > 0).unwrap_or(0)
        } else {
            self.win_rank(w, rank)?
        };
        // A segment of no bytes has no address: NULL, as MPICH answers.
        let addr = if w.sizes[r] == 0 {
            0
        } else {
            seg.region_addr(r)
        };
        Ok((w.sizes[r], w.units[r], addr))
    }

    /// Whether window `id` exists.
    #[inline]
    pub fn win_exists(&self, id: WinId) -> bool {
        self.wins.get(id).is_ok()
    }

    /// The window's communicator (for `MPI_Win_get_group`).
    pub fn win_comm(&self, id: WinId) -> Result<CommId> {
        Ok(self.wins.get(id)?.comm)
    }

    /// `MPI_Win_attach`: makes `mem` reachable through a dynamic window.
    pub fn win_attach(&mut self, id: WinId, mem: RecvBuf) -> Result<()> {
        let w = self.wins.get_mut(id)?;
        let Memory::Dynamic(regions) = &mut w.mem else {
            return Err(MpiError::new(
                ErrorClass::RmaFlavor,
                "MPI_Win_attach needs a window made by MPI_Win_create_dynamic",
            ));
        };
        let (lo, hi) = (mem.addr(), mem.addr() + mem.len());
        if regions
            .iter()
            .any(|r| lo < r.addr() + r.len() && r.addr() < hi)
        {
            return Err(MpiError::new(
                ErrorClass::RmaAttach,
                format!("memory at {lo:#x} overlaps memory already attached to the window"),
            ));
        }
        regions.push(mem);
        Ok(())
    }

    /// `MPI_Win_detach`: removes the region attached at `addr`.
    pub fn win_detach(&mut self, id: WinId, addr: usize) -> Result<()> {
        let w = self.wins.get_mut(id)?;
        let Memory::Dynamic(regions) = &mut w.mem else {
            return Err(MpiError::new(
                ErrorClass::RmaFlavor,
                "MPI_Win_detach needs a window made by MPI_Win_create_dynamic",
            ));
        };
        match regions.iter().position(|r| r.addr() == addr) {
            Some(i) => {
                regions.swap_remove(i);
                Ok(())
            }
            None => Err(MpiError::new(
                ErrorClass::RmaAttach,
                format!("no memory is attached to the window at {addr:#x}"),
            )),
        }
    }

    /// Window rank `rank`, checked.
    pub(crate) fn win_rank(&self, w: &Window, rank: i32) -> Result<usize> {
        if rank < 0 || rank as usize >= w.nranks() {
            return Err(MpiError::new(
                ErrorClass::Rank,
                format!(
                    "rank {rank} is out of range for a window of {} ranks",
                    w.nranks()
                ),
            ));
        }
        Ok(rank as usize)
    }
}
