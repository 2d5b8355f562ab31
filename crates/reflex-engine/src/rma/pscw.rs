//! General active-target synchronisation (`MPI_Win_post`, `start`, `complete`, `wait`, `test`)
//! on shared-memory windows, with no message: counters in the window's segment (`reflex-shm`'s
//! `window.rs`). A target's post adds one to its counter at each origin of the group, an
//! origin's complete adds one to its counter at each target; `start` and `wait` wait until each
//! rank of their group has one more than this rank has taken, then take it. At most one post
//! and one completion per pair is ever outstanding (a target posts again only after its `wait`,
//! which needs the origin's `complete`), so "one more than taken" is exact.
//!
//! Ordering: a post follows the target's full fence (its earlier stores to its window are
//! visible to an origin that sees the post); a completion follows [`complete_shared`]'s full
//! fence (the origin's puts are visible to the target that sees it); the counters are written
//! with Release and read with Acquire. Waiting spins and yields like the board collectives
//! (the counters have no doorbell), keeping progress running for other traffic.
//!
//! [`complete_shared`]: super::sync::complete_shared

use super::{Memory, WinId};
use crate::engine::Engine;
use crate::error::Result;
use reflex_base::transport::Transport;
use reflex_shm::window::WinSegment;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// Which of a pair's two counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Notice {
    /// `MPI_Win_post`, from a target to an origin.
    Post,
    /// `MPI_Win_complete`, from an origin to a target.
    Completion,
}

/// How many posts and completions of each window rank this rank has taken.
#[derive(Debug)]
pub(crate) struct Taken {
    posts: Vec<u32>,
    completions: Vec<u32>,
}

impl Taken {
    /// Nothing taken yet, in a window of `n` ranks.
    pub(crate) fn new(n: usize) -> Self {
        Self {
            posts: vec![0; n],
            completions: vec![0; n],
        }
    }

    fn of(&mut self, kind: Notice) -> &mut [u32] {
        match kind {
            Notice::Post => &mut self.posts,
            Notice::Completion => &mut self.completions,
        }
    }
}

/// The counter of `kind` that rank `from` writes for rank `at`.
fn counter(seg: &WinSegment, at: usize, from: usize, kind: Notice) -> &AtomicU32 {
    match kind {
        Notice::Post => seg.posts(at, from),
        Notice::Completion => seg.completions(at, from),
    }
}

/// Tells every rank of `to` of this rank's (`me`) post or completion.
pub(super) fn notify(seg: &WinSegment, me: usize, to: &[usize], kind: Notice) {
    for &t in to {
        counter(seg, t, me, kind).fetch_add(1, Ordering::Release);
    }
}

/// A shared window's segment, this rank's index in it, and the counts it has taken for `kind`
/// from each rank of `from`.
struct Pending {
    seg: Arc<WinSegment>,
    me: usize,
    taken: Vec<(usize, u32)>,
}

impl Pending {
    /// Whether every rank of the group has one more notice than was taken.
    fn arrived(&self, kind: Notice) -> bool {
        let seg = &*self.seg;
        self.taken
            .iter()
            .all(|&(r, n)| counter(seg, self.me, r, kind).load(Ordering::Acquire) != n)
    }
}

impl<T: Transport> Engine<T> {
    /// For a shared window: its segment and this rank's index in it; `None` for other windows
    /// (their PSCW goes by messages).
    pub(super) fn pscw_segment(&self, id: WinId) -> Result<Option<(Arc<WinSegment>, usize)>> {
        let w = self.wins.get(id)?;
        Ok(match &w.mem {
            Memory::Shared { seg, .. } => Some((seg.clone(), w.rank)),
            _ => None,
        })
    }

    fn pending(&mut self, id: WinId, from: &[usize], kind: Notice) -> Result<Option<Pending>> {
        let w = self.wins.get_mut(id)?;
        let me = w.rank;
        let Memory::Shared { seg, taken, .. } = &mut w.mem else {
            return Ok(None);
        };
        let counts = taken.of(kind);
        let taken = from.iter().map(|&r| (r, counts[r])).collect();
        let seg = seg.clone();
        Ok(Some(Pending { seg, me, taken }))
    }

    fn take(&mut self, id: WinId, from: &[usize], kind: Notice) -> Result<()> {
        if let Memory::Shared { taken, .. } = &mut self.wins.get_mut(id)?.mem {
            let counts = taken.of(kind);
            from.iter()
                .for_each(|&r| counts[r] = counts[r].wrapping_add(1));
        }
        Ok(())
    }

    /// Waits until every rank of `from` sent its notice of `kind`, then takes them; nothing for
    /// a window that is not shared.
    pub(super) fn await_notices(&mut self, id: WinId, from: &[usize], kind: Notice) -> Result<()> {
        let Some(p) = self.pending(id, from, kind)? else {
            return Ok(());
        };
        self.await_board(|| p.arrived(kind))?;
        self.take(id, from, kind)
    }

    /// Whether every rank of `from` sent its notice of `kind` (shared windows; nothing taken).
    pub(super) fn notices_arrived(
        &mut self,
        id: WinId,
        from: &[usize],
        kind: Notice,
    ) -> Result<bool> {
        Ok(self
            .pending(id, from, kind)?
            .is_some_and(|p| p.arrived(kind)))
    }
}
