//! The direct path of the passive-target calls on shared-memory windows: `MPI_Win_lock` and
//! `MPI_Win_unlock` (one compare-and-swap on the target's lock word; one fence and one store),
//! `MPI_Win_lock_all` and `MPI_Win_unlock_all` (the same on every rank's word), all with no
//! assertion or `MPI_MODE_NOCHECK` (nothing taken), and `MPI_Win_flush` and `MPI_Win_flush_all`
//! (one fence, [`complete_shared`], which says why a fence is needed).
//!
//! Each does the common case at once, with one window lookup and the words of the segment
//! (`reflex-shm`'s `window.rs`), and otherwise does nothing and says so: a lock that is not free
//! at the first try (the general path of [`super::sync`] waits for it, driving progress), a
//! private window, and every error, which the general path finds again and reports.

use super::sync::{complete_shared, lock_release, lock_try, MODE_NOCHECK};
use super::{LockKind, Memory, WinId, Window};
use crate::engine::Engine;
use reflex_base::transport::Transport;
use reflex_shm::window::WinSegment;

/// The window `id` with its segment, when it is a shared-memory window.
#[inline]
fn shared(w: Option<&mut Window>) -> Option<(&mut super::Epoch, &WinSegment, usize)> {
    let w = w?;
    let n = w.nranks();
    match &w.mem {
        Memory::Shared { seg, .. } => Some((&mut w.epoch, seg, n)),
        _ => None,
    }
}

/// `rank` as a rank of a window of `n` ranks.
#[inline]
fn in_window(rank: i32, n: usize) -> Option<usize> {
    usize::try_from(rank).ok().filter(|&t| t < n)
}

impl<T: Transport> Engine<T> {
    /// `MPI_Win_lock(kind, rank, assert)` on a shared-memory window whose lock is free now;
    /// `false` (nothing done) when the general path must run.
    #[inline]
    pub fn win_lock_direct(&mut self, id: WinId, kind: LockKind, rank: i32, assert: i32) -> bool {
        let Some((epoch, seg, n)) = shared(self.wins.find_mut(id)) else {
            return false;
        };
        let Some(t) = in_window(rank, n) else {
            return false;
        };
        if epoch.passive(t) || epoch.started() || (assert != 0 && assert != MODE_NOCHECK) {
            return false;
        }
        let taken = (assert == 0).then_some(kind);
        if taken.is_some() && !lock_try(seg.lock_word(t), kind) {
            return false;
        }
        epoch.lock(t, taken);
        true
    }

    /// `MPI_Win_unlock(rank)` on a shared-memory window locked by this process; `false`
    /// (nothing done) when the general path must run.
    #[inline]
    pub fn win_unlock_direct(&mut self, id: WinId, rank: i32) -> bool {
        let Some((epoch, seg, n)) = shared(self.wins.find_mut(id)) else {
            return false;
        };
        let Some(t) = in_window(rank, n) else {
            return false;
        };
        let Some(taken) = epoch.unlock(t) else {
            return false;
        };
        match taken {
            Some(kind) => lock_release(seg.lock_word(t), kind),
            None => complete_shared(),
        }
        true
    }

    /// `MPI_Win_lock_all(assert)` on a shared-memory window whose ranks all grant a shared lock
    /// now; `false` (nothing done) when the general path must run.
    pub fn win_lock_all_direct(&mut self, id: WinId, assert: i32) -> bool {
        let Some((epoch, seg, n)) = shared(self.wins.find_mut(id)) else {
            return false;
        };
        if epoch.holds_locks() || epoch.started() || (assert != 0 && assert != MODE_NOCHECK) {
            return false;
        }
        let take = assert == 0;
        if take {
            let got = (0..n)
                .take_while(|&t| lock_try(seg.lock_word(t), LockKind::Shared))
                .count();
            if got < n {
                // Give back what was taken; the general path waits for the rest.
                (0..got).for_each(|t| lock_release(seg.lock_word(t), LockKind::Shared));
                return false;
            }
        }
        epoch.lock_all(take);
        true
    }

    /// `MPI_Win_unlock_all` on a shared-memory window inside `MPI_Win_lock_all`; `false`
    /// (nothing done) when the general path must run.
    pub fn win_unlock_all_direct(&mut self, id: WinId) -> bool {
        let Some((epoch, seg, n)) = shared(self.wins.find_mut(id)) else {
            return false;
        };
        let Some(taken) = epoch.unlock_all() else {
            return false;
        };
        if taken {
            (0..n).for_each(|t| lock_release(seg.lock_word(t), LockKind::Shared));
        } else {
            complete_shared();
        }
        true
    }

    /// `MPI_Win_flush(target)` (`Some`) or `MPI_Win_flush_all` (`None`) on a shared-memory window
    /// inside a passive-target epoch of the target(s): the operations are done, so completing
    /// them is [`complete_shared`]'s one fence; `false` when the general path must run.
    #[inline]
    pub fn win_flush_direct(&mut self, id: WinId, target: Option<i32>) -> bool {
        let Some((epoch, _, n)) = shared(self.wins.find_mut(id)) else {
            return false;
        };
        let passive = match target {
            Some(rank) => in_window(rank, n).is_some_and(|t| epoch.passive_now(t)),
            None => epoch.holds_locks(),
        };
        if passive {
            complete_shared();
        }
        passive
    }
}
