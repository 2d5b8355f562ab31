//! Making a window (`MPI_Win_create`, `_allocate`, `_allocate_shared`, `_create_dynamic`) as a
//! sequence of polled steps, so that under `MPI_THREAD_MULTIPLE` the caller waits between them
//! without the library lock (threads of one process may make windows on different communicators
//! at once); the blocking calls run the same steps through [`Engine::wait_for`].
//!
//! The steps: (1) duplicate the user's communicator ([`Engine::comm_idup`]: the window's private
//! one, whose context no other call uses); (2) gather every rank's size and displacement unit;
//! for a shared segment, (3) rank 0 creates it and everyone learns its name, (4) everyone maps
//! it and tells whether that worked; rank 0 then unlinks the name (the mappings keep it alive,
//! and nothing is left behind if the job dies). Every rank sees the same outcome of (4): one
//! segment for all, or none.

use super::{pscw, Flavor, Memory, Reach, WinId, NAME_BYTES, SEGMENTS_MADE};
use crate::coll::exchange::Gathering;
use crate::comm::CommId;
use crate::engine::Engine;
use crate::error::{ErrorClass, MpiError, Result};
use crate::request::RequestId;
use reflex_base::buf::RecvBuf;
use reflex_base::transport::Transport;
use reflex_shm::window::WinSegment;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A window being made; advanced by [`Engine::win_build_step`].
#[derive(Debug)]
pub struct WinBuild {
    flavor: Flavor,
    size: usize,
    unit: usize,
    /// The caller's memory, or `None` to share a segment.
    given: Option<RecvBuf>,
    stage: Stage,
}

/// Where a [`WinBuild`] stands: what it waits for.
#[derive(Debug)]
enum Stage {
    /// (1): the private duplicate.
    Dup { private: CommId, request: RequestId },
    /// (2): every rank's size and unit.
    Sizes {
        private: CommId,
        gathering: Gathering,
    },
    /// (3): the segment's name, from rank 0 (which holds the segment it made, if any).
    Name {
        layout: Layout,
        made: Option<(String, WinSegment)>,
        gathering: Gathering,
    },
    /// (4): whether every rank mapped the segment.
    Mapped {
        layout: Layout,
        made_name: Option<String>,
        mine: Option<WinSegment>,
        gathering: Gathering,
    },
    /// Finished, or failed part-way.
    Over,
}

/// The window's communicator and every rank's size and displacement unit.
#[derive(Debug)]
pub struct Layout {
    private: CommId,
    sizes: Vec<usize>,
    units: Vec<usize>,
}

/// How a build ended.
#[derive(Debug)]
pub enum Built {
    /// The window and this rank's base address in it.
    Window(WinId, usize),
    /// No segment could be shared (every rank learns it alike; never for
    /// [`Flavor::Shared`], which fails): `MPI_Win_allocate` hands
    /// [`Engine::win_install_private`] memory of its own.
    Unshared(Layout),
}

/// What a stage whose messages arrived leads to.
enum Next {
    Go(Stage),
    Done(Built),
}

impl<T: Transport> Engine<T> {
    /// Starts making a window over `comm`: over `given` memory (`MPI_Win_create`, an empty buffer
    /// for `MPI_Win_create_dynamic`), or over a segment every rank maps (`given` is `None`:
    /// `MPI_Win_allocate(_shared)`, `size` bytes here).
    pub fn win_build_start(
        &mut self,
        comm: CommId,
        (size, unit): (usize, usize),
        given: Option<RecvBuf>,
        flavor: Flavor,
    ) -> Result<WinBuild> {
        if self.comms.get(comm)?.is_inter() {
            return Err(MpiError::new(
                ErrorClass::Comm,
                "windows are created over intracommunicators only",
            ));
        }
        let (private, request) = self.comm_idup(comm)?;
        Ok(WinBuild {
            flavor,
            size: given.as_ref().map_or(size, RecvBuf::len),
            unit,
            given,
            stage: Stage::Dup { private, request },
        })
    }

    /// Advances `b` without waiting; its outcome once it has one.
    pub fn win_build_step(&mut self, b: &mut WinBuild) -> Result<Option<Built>> {
        loop {
            if !self.build_ready(&b.stage)? {
                return Ok(None);
            }
            let stage = std::mem::replace(&mut b.stage, Stage::Over);
            let private = stage.private();
            match self.build_stage(b, stage) {
                Ok(Next::Go(s)) => b.stage = s,
                Ok(Next::Done(built)) => return Ok(Some(built)),
                Err(e) => {
                    if let Some(c) = private {
                        let _ = self.comm_free(c);
                    }
                    return Err(e);
                }
            }
        }
    }

    /// The blocking build: [`Self::win_build_start`], then steps until the outcome.
    pub fn win_build(
        &mut self,
        comm: CommId,
        size_unit: (usize, usize),
        given: Option<RecvBuf>,
        flavor: Flavor,
    ) -> Result<Built> {
        let mut b = self.win_build_start(comm, size_unit, given, flavor)?;
        self.wait_for(|e| e.win_build_step(&mut b))
    }

    /// `MPI_Win_create` (and `MPI_Win_create_dynamic`, over an empty buffer): a window over
    /// `mem` on every rank of `comm`.
    pub fn win_create(
        &mut self,
        comm: CommId,
        mem: RecvBuf,
        disp_unit: usize,
        flavor: Flavor,
    ) -> Result<WinId> {
        match self.win_build(comm, (0, disp_unit), Some(mem), flavor)? {
            Built::Window(id, _) => Ok(id),
            Built::Unshared(_) => Err(MpiError::new(
                ErrorClass::Intern,
                "a window over given memory asked for a segment",
            )),
        }
    }

    /// `MPI_Win_allocate_shared`, or `MPI_Win_allocate` trying shared memory first: `size` bytes
    /// per rank in one segment every rank maps. `Ok(None)` (on every rank alike) when no segment
    /// could be shared (the private communicator is freed).
    pub fn win_allocate_shared(
        &mut self,
        comm: CommId,
        size: usize,
        disp_unit: usize,
        flavor: Flavor,
    ) -> Result<Option<(WinId, usize)>> {
        match self.win_build(comm, (size, disp_unit), None, flavor)? {
            Built::Window(id, base) => Ok(Some((id, base))),
            Built::Unshared(layout) => {
                self.comm_free(layout.private)?;
                Ok(None)
            }
        }
    }

    /// The window of an [`Built::Unshared`] build over `mem`, this rank's memory of the size it
    /// announced (nothing is exchanged again).
    pub fn win_install_private(&mut self, layout: Layout, mem: RecvBuf) -> WinId {
        let Layout {
            private,
            sizes,
            units,
        } = layout;
        self.install_window(
            private,
            Flavor::Allocate,
            sizes,
            units,
            Memory::Private(mem),
        )
    }

    /// Gives up an [`Built::Unshared`] build (its memory could not be allocated).
    pub fn win_abandon(&mut self, layout: Layout) {
        let _ = self.comm_free(layout.private);
    }

    /// Whether what `stage` waits for has arrived.
    fn build_ready(&self, stage: &Stage) -> Result<bool> {
        Ok(match stage {
            Stage::Dup { request, .. } => self.is_complete(*request)?,
            Stage::Sizes { gathering, .. }
            | Stage::Name { gathering, .. }
            | Stage::Mapped { gathering, .. } => gathering.arrived(self),
            Stage::Over => true,
        })
    }

    /// Finishes `stage`, whose messages arrived, and starts the next.
    fn build_stage(&mut self, b: &mut WinBuild, stage: Stage) -> Result<Next> {
        match stage {
            Stage::Dup { private, request } => {
                if let Some(e) = self.retire(request)?.status.error {
                    return Err(*e);
                }
                let mut mine = (b.size as u64).to_le_bytes().to_vec();
                mine.extend_from_slice(&(b.unit as u64).to_le_bytes());
                let gathering = self.post_allgather_bytes(private, mine)?;
                Ok(Next::Go(Stage::Sizes { private, gathering }))
            }
            Stage::Sizes { private, gathering } => {
                let all = self.collect(gathering)?;
                let word = |b: &[u8], at: usize| {
                    b.get(at..at + 8).map_or(0, |w| {
                        u64::from_le_bytes(w.try_into().expect("8 bytes")) as usize
                    })
                };
                let layout = Layout {
                    private,
                    sizes: all.iter().map(|b| word(b, 0)).collect(),
                    units: all.iter().map(|b| word(b, 8)).collect(),
                };
                match b.given.take() {
                    Some(mem) => Ok(Next::Done(self.install_given(b.flavor, layout, mem))),
                    None => self.announce_segment(layout).map(Next::Go),
                }
            }
            Stage::Name {
                layout,
                made,
                gathering,
            } => {
                let said = self.collect(gathering)?.swap_remove(0);
                let said: Vec<u8> = said.into_iter().take_while(|&b| b != 0).collect();
                let (made_name, mine) = match made {
                    Some((name, seg)) => (Some(name), Some(seg)),
                    None if !said.is_empty() => {
                        let opened = String::from_utf8(said)
                            .ok()
                            .and_then(|n| WinSegment::open(&n, &layout.sizes).ok());
                        (None, opened)
                    }
                    None => (None, None),
                };
                let ok = vec![u8::from(mine.is_some())];
                let gathering = self.post_allgather_bytes(layout.private, ok)?;
                Ok(Next::Go(Stage::Mapped {
                    layout,
                    made_name,
                    mine,
                    gathering,
                }))
            }
            Stage::Mapped {
                layout,
                made_name,
                mine,
                gathering,
            } => {
                let all = self.collect(gathering)?;
                if let Some(n) = &made_name {
                    let _ = WinSegment::unlink(n);
                }
                match mine.filter(|_| all.iter().all(|v| v == &[1])) {
                    Some(seg) => Ok(Next::Done(self.install_shared(b.flavor, layout, seg))),
                    None if b.flavor == Flavor::Shared => Err(MpiError::new(
                        ErrorClass::RmaShared,
                        "the ranks of this communicator cannot map one shared-memory segment \
                         (are they on different nodes?)",
                    )),
                    None => Ok(Next::Done(Built::Unshared(layout))),
                }
            }
            Stage::Over => Err(MpiError::new(
                ErrorClass::Intern,
                "a window build was stepped after it ended",
            )),
        }
    }

    /// Step (3): rank 0 creates the segment; every rank sends the same number of bytes, rank
    /// 0's holding the name ("" if its creation failed).
    fn announce_segment(&mut self, layout: Layout) -> Result<Stage> {
        let c = self.comms.get(layout.private)?;
        let (me, ctx) = (c.rank as usize, c.ctx);
        let made = match me {
            0 => {
                let n = SEGMENTS_MADE.fetch_add(1, Ordering::Relaxed);
                let name = format!("{}.w{ctx}.{}.{n}", self.segment_base(), self.core.pid);
                WinSegment::create(&name, &layout.sizes)
                    .ok()
                    .map(|seg| (name, seg))
            }
            _ => None,
        };
        let mut said = vec![0u8; NAME_BYTES];
        if let Some((n, _)) = &made {
            let n = &n.as_bytes()[..n.len().min(NAME_BYTES)];
            said[..n.len()].copy_from_slice(n);
        }
        let gathering = self.post_allgather_bytes(layout.private, said)?;
        Ok(Stage::Name {
            layout,
            made,
            gathering,
        })
    }

    fn install_given(&mut self, flavor: Flavor, layout: Layout, mem: RecvBuf) -> Built {
        let mem = match flavor {
            Flavor::Dynamic => Memory::Dynamic(Vec::new()),
            _ => Memory::Private(mem),
        };
        let Layout {
            private,
            sizes,
            units,
        } = layout;
        let base = match &mem {
            Memory::Private(b) => b.addr(),
            _ => 0,
        };
        Built::Window(
            self.install_window(private, flavor, sizes, units, mem),
            base,
        )
    }

    fn install_shared(&mut self, flavor: Flavor, layout: Layout, seg: WinSegment) -> Built {
        let seg = Arc::new(seg);
        let regions = (0..layout.sizes.len())
            .map(|r| Reach {
                mem: seg.region(r),
                unit: isize::try_from(layout.units[r]).unwrap_or(isize::MAX),
            })
            .collect();
        let me = self
            .comms
            .get(layout.private)
            .map_or(0, |c| c.rank as usize);
        let base = seg.region_addr(me);
        let taken = pscw::Taken::new(layout.sizes.len());
        let mem = Memory::Shared {
            seg,
            regions,
            taken,
        };
        let Layout {
            private,
            sizes,
            units,
        } = layout;
        Built::Window(
            self.install_window(private, flavor, sizes, units, mem),
            base,
        )
    }
}

impl Stage {
    /// The private communicator a failure must free (once the duplicate exists).
    fn private(&self) -> Option<CommId> {
        match self {
            Stage::Over => None,
            Stage::Dup { private, .. } | Stage::Sizes { private, .. } => Some(*private),
            Stage::Name { layout, .. } | Stage::Mapped { layout, .. } => Some(layout.private),
        }
    }
}
