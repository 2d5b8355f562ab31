//! Synchronisation of one-sided communication (MPI-3.1 §11.5): fence, post/start/complete/wait
//! (PSCW), lock/unlock, lock_all/unlock_all, flush and sync.
//!
//! Completing operations at a target means, for a private window, sending a flush (or unlock)
//! request and waiting for its reply: the target serves each origin's requests in order, so the
//! reply proves every earlier operation was applied. For a shared window operations are already
//! done when their call returns; a memory fence orders them before whatever comes next.
//! - fence: complete at every target touched, then a barrier;
//! - PSCW: `post` sends a notice to each origin, `start` waits for the notices of its targets,
//!   `complete` completes the operations and sends a notice to each target, `wait` (or `test`)
//!   takes the notices of its origins; on a shared window a notice is a counter in the segment
//!   instead of a message (`pscw.rs`);
//! - locks: a private window's target grants lock requests in order; a shared window's lock is a
//!   word in the segment (exclusive bit or a count of readers), taken with atomics, so the target
//!   process is never involved.

use super::pscw::{self, Notice};
use super::target::{next_reply_tag, take_owned, TAG_DONE, TAG_POST};
use super::wire::{Kind, Request};
use super::{LockKind, Memory, WinId};
use crate::engine::Engine;
use crate::error::{ErrorClass, MpiError, Result};
use crate::request::PROC_NULL;
use crate::request::{InBuf, OutBuf, RequestId};
use reflex_base::transport::Transport;
use reflex_shm::window::EXCLUSIVE;
use std::sync::atomic::{fence, AtomicU64, Ordering};

/// `MPI_MODE_NOCHECK`.
pub const MODE_NOCHECK: i32 = 1024;
/// `MPI_MODE_NOSTORE`.
pub const MODE_NOSTORE: i32 = 2048;
/// `MPI_MODE_NOPUT`.
pub const MODE_NOPUT: i32 = 4096;
/// `MPI_MODE_NOPRECEDE`.
pub const MODE_NOPRECEDE: i32 = 8192;
/// `MPI_MODE_NOSUCCEED`.
pub const MODE_NOSUCCEED: i32 = 16384;

/// Rejects assertion bits a call does not define (`MPI_ERR_ASSERT`).
fn check_assert(assert: i32, valid: i32, call: &str) -> Result<()> {
    if assert & !valid != 0 {
        return Err(MpiError::new(
            ErrorClass::Assert,
            format!("assertion {assert:#x} has bits {call} does not define"),
        ));
    }
    Ok(())
}

/// The tag of a PSCW notice sent as a message.
fn notice_tag(kind: Notice) -> i32 {
    match kind {
        Notice::Post => TAG_POST,
        Notice::Completion => TAG_DONE,
    }
}

fn sync_error(msg: impl Into<String>) -> MpiError {
    MpiError::new(ErrorClass::RmaSync, msg)
}

/// A passive-target epoch asked for inside the access epoch of `MPI_Win_start`.
fn in_start_epoch(call: &str) -> MpiError {
    sync_error(format!(
        "{call} inside the access epoch of MPI_Win_start (MPI_Win_complete first; MPI-3.1 \
         11.5: access epochs must be disjoint)"
    ))
}

/// Completes, at their targets, the operations this process did on a shared-memory window
/// (flush, unlock, the end of a fence or PSCW epoch): they are loads, stores and atomics already
/// executed, so what is left is to make the stores visible to every process before this one goes
/// on. Under x86-TSO (and MPI_WIN_UNIFIED) stores leave the store buffer in program order and
/// become visible to all at once, so every later store is ordered already; what is not is a later
/// *load* overtaking an earlier store. Without a full fence, an origin that Puts x, flushes and
/// then Gets y could run the Get before its store of x is visible, and a target doing the same
/// the other way round (Put y, flush, Get x) could do likewise: both Gets would return the old
/// values, although whichever flush returned first had completed its Put before the other's Get
/// began (MPI-3.1 §11.5.4: the operations are complete at the target when the flush returns).
/// `fence(SeqCst)` forbids that; on x86-64 it is one `lock or` on the stack (measured 1.5-2 ns
/// here, not an `mfence`), which drains the store buffer.
#[inline(always)]
pub(super) fn complete_shared() {
    fence(Ordering::SeqCst);
}

/// One attempt at taking a shared window's lock word `word` for `kind`.
#[inline]
pub(super) fn lock_try(word: &AtomicU64, kind: LockKind) -> bool {
    if kind == LockKind::Exclusive {
        return word
            .compare_exchange(0, EXCLUSIVE, Ordering::Acquire, Ordering::Relaxed)
            .is_ok();
    }
    let v = word.load(Ordering::Relaxed);
    v & EXCLUSIVE == 0
        && word
            .compare_exchange(v, v + 1, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
}

/// Completes this process's operations (see [`complete_shared`]) and gives back the lock word
/// `word` it holds for `kind`.
#[inline]
pub(super) fn lock_release(word: &AtomicU64, kind: LockKind) {
    complete_shared();
    match kind {
        LockKind::Exclusive => word.store(0, Ordering::Release),
        LockKind::Shared => {
            word.fetch_sub(1, Ordering::Release);
        }
    }
}

impl<T: Transport> Engine<T> {
    /// `MPI_Win_fence`.
    pub fn win_fence(&mut self, id: WinId, assert: i32) -> Result<()> {
        let comm = self.fence_quiesce(id, assert)?;
        self.barrier(comm)?;
        self.win_fence_finish(id, assert)
    }

    /// The first half of `MPI_Win_fence` for a caller that waits elsewhere (under
    /// `MPI_THREAD_MULTIPLE`, without the library lock): checks, completes this rank's
    /// operations at every target and starts the barrier of the window's communicator as a
    /// schedule, whose request is returned; once it completes, [`Self::win_fence_finish`].
    pub fn win_fence_start(&mut self, id: WinId, assert: i32) -> Result<RequestId> {
        let comm = self.fence_quiesce(id, assert)?;
        self.coll_start(comm, crate::coll::Coll::Barrier)
    }

    /// A fence's checks, and every operation of this rank completed at its target; returns the
    /// window's communicator.
    fn fence_quiesce(&mut self, id: WinId, assert: i32) -> Result<crate::comm::CommId> {
        let w = self.wins.get(id)?;
        let valid = MODE_NOSTORE | MODE_NOPUT | MODE_NOPRECEDE | MODE_NOSUCCEED;
        check_assert(assert, valid, "MPI_Win_fence")?;
        if w.epoch.open() {
            return Err(sync_error(
                "MPI_Win_fence inside a PSCW or lock epoch (complete, wait or unlock first)",
            ));
        }
        let comm = w.comm;
        self.win_quiesce(id)?;
        Ok(comm)
    }

    /// The second half of `MPI_Win_fence`, after its barrier: the next epoch.
    pub fn win_fence_finish(&mut self, id: WinId, assert: i32) -> Result<()> {
        self.wins
            .get_mut(id)?
            .epoch
            .fence(assert & MODE_NOSUCCEED == 0);
        Ok(())
    }

    /// Completes every operation this rank issued on the window, at every target.
    pub(crate) fn win_quiesce(&mut self, id: WinId) -> Result<()> {
        let w = self.wins.get(id)?;
        let targets: Vec<usize> = w.origin.touched.iter().copied().collect();
        self.complete_at(id, &targets)
    }

    /// Completes this rank's operations at `targets` (remote completion).
    fn complete_at(&mut self, id: WinId, targets: &[usize]) -> Result<()> {
        if self.wins.get(id)?.is_shared() {
            complete_shared();
            return Ok(());
        }
        let touched: Vec<usize> = {
            let w = self.wins.get(id)?;
            targets
                .iter()
                .copied()
                .filter(|t| w.origin.touched.contains(t))
                .collect()
        };
        let mut replies = Vec::with_capacity(touched.len());
        for &t in &touched {
            replies.push(self.ask(id, t, Kind::Flush, false)?);
        }
        let outcome = self.await_replies(id, &replies, targets);
        let w = self.wins.get_mut(id)?;
        for t in touched {
            w.origin.touched.remove(&t);
        }
        outcome
    }

    /// Sends a control request of `kind` to `target` and posts the receive of its reply.
    fn ask(&mut self, id: WinId, target: usize, kind: Kind, exclusive: bool) -> Result<RequestId> {
        let w = self.wins.get_mut(id)?;
        let tag = w.origin.next_tag;
        w.origin.next_tag = next_reply_tag(tag);
        let ctx = w.ctx;
        let rid = self
            .core
            .new_recv(InBuf::Owned(vec![0; 4]), target as i32, tag, None);
        self.core.post_recv(rid, ctx, target as i32, tag);
        let mut req = Request::control(kind, tag);
        req.exclusive = exclusive;
        self.post_request(id, target, req.encode(&[], &[]))?;
        Ok(rid)
    }

    /// Waits for control replies and for the transfers in flight to `targets`; returns the first
    /// error a target reported.
    fn await_replies(&mut self, id: WinId, replies: &[RequestId], targets: &[usize]) -> Result<()> {
        let transfers: Vec<RequestId> = {
            let w = self.wins.get(id)?;
            w.origin
                .pending
                .iter()
                .filter(|(t, _)| targets.contains(t))
                .map(|&(_, r)| r)
                .collect()
        };
        let done = |e: &Self, r: &RequestId| e.core.requests.get(*r).is_none_or(|q| q.complete);
        self.wait_until(|e| replies.iter().chain(&transfers).all(|r| done(e, r)))?;
        self.settle_links(id);
        let w = self.wins.get_mut(id)?;
        w.origin.pending.retain(|(t, _)| !targets.contains(t));
        for r in transfers {
            self.core.release(r);
        }
        let mut first = None;
        for r in replies {
            let code = take_owned(self, *r)
                .filter(|b| b.len() == 4)
                .map_or(0, |b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]));
            if code != 0 && first.is_none() {
                let class = ErrorClass::from_i32(code).unwrap_or(ErrorClass::Other);
                first = Some(MpiError::new(
                    class,
                    format!(
                        "a one-sided operation failed at its target: {}",
                        class.description()
                    ),
                ));
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// The window ranks of the members of `group`.
    fn win_members(&self, id: WinId, group: crate::GroupId) -> Result<Vec<usize>> {
        let w = self.wins.get(id)?;
        let g = self.group(group)?;
        g.members
            .iter()
            .map(|m| {
                w.members.iter().position(|x| x == m).ok_or_else(|| {
                    MpiError::new(
                        ErrorClass::Group,
                        format!("process {m} of the group is not in the window"),
                    )
                })
            })
            .collect()
    }

    /// `MPI_Win_post`: exposes this rank's memory to the ranks of `group`.
    pub fn win_post(&mut self, id: WinId, group: crate::GroupId, assert: i32) -> Result<()> {
        check_assert(
            assert,
            MODE_NOCHECK | MODE_NOSTORE | MODE_NOPUT,
            "MPI_Win_post",
        )?;
        let group = self.win_members(id, group)?;
        let w = self.wins.get_mut(id)?;
        if w.epoch.posted().is_some() {
            return Err(sync_error(
                "MPI_Win_post while an exposure epoch is already open",
            ));
        }
        w.epoch.post(group.clone());
        fence(Ordering::SeqCst);
        if let Some((seg, me)) = self.pscw_segment(id)? {
            pscw::notify(&seg, me, &group, Notice::Post);
            return Ok(());
        }
        for g in group {
            let rid = self.win_send(id, g, TAG_POST, OutBuf::Owned(Vec::new()))?;
            self.detach(rid);
        }
        Ok(())
    }

    /// `MPI_Win_start`: waits until every rank of `group` posted, then opens the access epoch.
    pub fn win_start(&mut self, id: WinId, group: crate::GroupId, assert: i32) -> Result<()> {
        let group = self.start_checks(id, group, assert)?;
        self.await_pscw(id, &group, Notice::Post)?;
        self.wins.get_mut(id)?.epoch.start(group);
        Ok(())
    }

    /// `MPI_Win_start` without waiting: opens the access epoch and returns true once every rank
    /// of `group` has posted; false (nothing changed) while one has not.
    pub fn win_start_try(&mut self, id: WinId, group: crate::GroupId, assert: i32) -> Result<bool> {
        let group = self.start_checks(id, group, assert)?;
        if !self.pscw_arrived(id, &group, Notice::Post)? {
            return Ok(false);
        }
        self.await_pscw(id, &group, Notice::Post)?; // takes the notices, which are there
        self.wins.get_mut(id)?.epoch.start(group);
        Ok(true)
    }

    /// `MPI_Win_start`'s checks; the window ranks of `group`.
    fn start_checks(&self, id: WinId, group: crate::GroupId, assert: i32) -> Result<Vec<usize>> {
        check_assert(assert, MODE_NOCHECK, "MPI_Win_start")?;
        let group = self.win_members(id, group)?;
        let w = self.wins.get(id)?;
        if w.epoch.started() || w.epoch.holds_locks() {
            return Err(sync_error(
                "MPI_Win_start while an access epoch is already open (of MPI_Win_start, \
                 MPI_Win_lock or MPI_Win_lock_all; MPI-3.1 11.5: they must be disjoint)",
            ));
        }
        Ok(group)
    }

    /// `MPI_Win_complete`: completes the access epoch's operations and tells each target.
    pub fn win_complete(&mut self, id: WinId) -> Result<()> {
        let Some(group) = self.wins.get_mut(id)?.epoch.complete() else {
            return Err(sync_error(
                "MPI_Win_complete without a matching MPI_Win_start",
            ));
        };
        let outcome = self.complete_at(id, &group);
        if let Some((seg, me)) = self.pscw_segment(id)? {
            pscw::notify(&seg, me, &group, Notice::Completion);
            return outcome;
        }
        for g in group {
            let rid = self.win_send(id, g, TAG_DONE, OutBuf::Owned(Vec::new()))?;
            self.detach(rid);
        }
        outcome
    }

    /// `MPI_Win_wait`: waits until every origin of the exposure epoch completed.
    pub fn win_wait(&mut self, id: WinId) -> Result<()> {
        let Some(group) = self.wins.get(id)?.epoch.posted().map(<[_]>::to_vec) else {
            return Err(sync_error("MPI_Win_wait without a matching MPI_Win_post"));
        };
        self.await_pscw(id, &group, Notice::Completion)?;
        self.wins.get_mut(id)?.epoch.unpost();
        fence(Ordering::SeqCst);
        Ok(())
    }

    /// `MPI_Win_test`: whether every origin completed (the epoch ends if so).
    pub fn win_test(&mut self, id: WinId) -> Result<bool> {
        let Some(group) = self.wins.get(id)?.epoch.posted().map(<[_]>::to_vec) else {
            return Err(sync_error("MPI_Win_test without a matching MPI_Win_post"));
        };
        self.progress();
        let arrived = self.pscw_arrived(id, &group, Notice::Completion)?;
        if arrived {
            self.win_wait(id)?;
        }
        Ok(arrived)
    }

    /// Whether every rank of `from` sent its notice of `kind` (nothing taken): counters on a
    /// shared window, unexpected messages otherwise.
    fn pscw_arrived(&mut self, id: WinId, from: &[usize], kind: Notice) -> Result<bool> {
        if self.wins.get(id)?.is_shared() {
            return self.notices_arrived(id, from, kind);
        }
        let ctx = self.wins.get(id)?.ctx;
        let tag = notice_tag(kind);
        Ok(from.iter().all(|&g| {
            self.core
                .unexpected
                .iter()
                .any(|u| crate::core::pattern_matches(ctx, g as i32, tag, &u.env))
        }))
    }

    /// Waits for the post (`start`) or completion (`wait`) notice of every rank of `from` and
    /// takes them: counters on a shared window, messages otherwise.
    fn await_pscw(&mut self, id: WinId, from: &[usize], kind: Notice) -> Result<()> {
        if self.wins.get(id)?.is_shared() {
            return self.await_notices(id, from, kind);
        }
        let tag = notice_tag(kind);
        let notices: Vec<RequestId> = from
            .iter()
            .map(|&g| self.notice(id, g, tag))
            .collect::<Result<_>>()?;
        self.take_notices(&notices)
    }

    /// Posts the receive of a notice from window rank `from`.
    fn notice(&mut self, id: WinId, from: usize, tag: i32) -> Result<RequestId> {
        let ctx = self.wins.get(id)?.ctx;
        let rid = self
            .core
            .new_recv(InBuf::Owned(Vec::new()), from as i32, tag, None);
        self.core.post_recv(rid, ctx, from as i32, tag);
        Ok(rid)
    }

    fn take_notices(&mut self, notices: &[RequestId]) -> Result<()> {
        self.wait_until(|e| {
            notices
                .iter()
                .all(|r| e.core.requests.get(*r).is_none_or(|q| q.complete))
        })?;
        for r in notices {
            self.core.release(*r);
        }
        Ok(())
    }

    /// `MPI_Win_lock`.
    pub fn win_lock(&mut self, id: WinId, kind: LockKind, rank: i32, assert: i32) -> Result<()> {
        let locking = self.win_lock_begin(id, kind, rank, assert)?;
        self.take_locks(id, locking)
    }

    /// Starts `MPI_Win_lock` without waiting: its checks, then the locking to go on with
    /// [`Self::win_lock_step`], or `None` when there is nothing to take (`MPI_PROC_NULL`, or
    /// `MPI_MODE_NOCHECK`: the epoch is open already).
    pub fn win_lock_begin(
        &mut self,
        id: WinId,
        kind: LockKind,
        rank: i32,
        assert: i32,
    ) -> Result<Option<Locking>> {
        check_assert(assert, MODE_NOCHECK, "MPI_Win_lock")?;
        let w = self.wins.get(id)?;
        if rank == PROC_NULL {
            return Ok(None); // locking no process: nothing to do (as every RMA call on it)
        }
        let target = self.win_rank(w, rank)?;
        if w.epoch.started() {
            return Err(in_start_epoch("MPI_Win_lock"));
        }
        if w.epoch.passive(target) {
            return Err(sync_error(format!(
                "rank {target} is already locked by this process"
            )));
        }
        if assert & MODE_NOCHECK != 0 {
            self.wins.get_mut(id)?.epoch.lock(target, None);
            return Ok(None);
        }
        Ok(Some(Locking::new(target..target + 1, kind, false)))
    }

    /// `MPI_Win_unlock`.
    pub fn win_unlock(&mut self, id: WinId, rank: i32) -> Result<()> {
        if rank == PROC_NULL {
            self.wins.get(id)?;
            return Ok(());
        }
        let target = self.win_rank(self.wins.get(id)?, rank)?;
        let Some(kind) = self.wins.get_mut(id)?.epoch.unlock(target) else {
            return Err(sync_error(format!(
                "rank {target} is not locked by this process"
            )));
        };
        self.release(id, target, kind)
    }

    /// `MPI_Win_lock_all`: a shared lock on every rank.
    pub fn win_lock_all(&mut self, id: WinId, assert: i32) -> Result<()> {
        let locking = self.win_lock_all_begin(id, assert)?;
        self.take_locks(id, locking)
    }

    /// Waits until the locks `locking` begun are taken.
    fn take_locks(&mut self, id: WinId, locking: Option<Locking>) -> Result<()> {
        let Some(mut l) = locking else {
            return Ok(());
        };
        self.wait_for(|e| e.win_lock_step(id, &mut l).map(|taken| taken.then_some(())))
    }

    /// Starts `MPI_Win_lock_all` as [`Self::win_lock_begin`] starts `MPI_Win_lock`.
    pub fn win_lock_all_begin(&mut self, id: WinId, assert: i32) -> Result<Option<Locking>> {
        check_assert(assert, MODE_NOCHECK, "MPI_Win_lock_all")?;
        let w = self.wins.get(id)?;
        if w.epoch.started() {
            return Err(in_start_epoch("MPI_Win_lock_all"));
        }
        if w.epoch.holds_locks() {
            return Err(sync_error(
                "MPI_Win_lock_all while this process already holds locks",
            ));
        }
        if assert & MODE_NOCHECK != 0 {
            self.wins.get_mut(id)?.epoch.lock_all(false);
            return Ok(None);
        }
        Ok(Some(Locking::new(0..w.nranks(), LockKind::Shared, true)))
    }

    /// Takes what it can of `l`'s locks, in rank order, without waiting; true once all are
    /// taken and the epoch is open.
    pub fn win_lock_step(&mut self, id: WinId, l: &mut Locking) -> Result<bool> {
        while l.targets.start < l.targets.end {
            if !self.try_acquire(id, l.targets.start, l.kind, &mut l.asked)? {
                return Ok(false);
            }
            l.targets.start += 1;
            l.asked = None;
        }
        let epoch = &mut self.wins.get_mut(id)?.epoch;
        match l.all {
            true => epoch.lock_all(true),
            false => epoch.lock(l.targets.end - 1, Some(l.kind)),
        }
        Ok(true)
    }

    /// `MPI_Win_unlock_all`.
    pub fn win_unlock_all(&mut self, id: WinId) -> Result<()> {
        let w = self.wins.get_mut(id)?;
        let Some(taken) = w.epoch.unlock_all() else {
            return Err(sync_error("MPI_Win_unlock_all without MPI_Win_lock_all"));
        };
        let kind = taken.then_some(LockKind::Shared);
        let mut first = Ok(());
        for t in 0..w.nranks() {
            let r = self.release(id, t, kind);
            if first.is_ok() {
                first = r;
            }
        }
        first
    }

    /// Tries once to take the lock of `target`: a word of a shared window's segment, else a
    /// request to the target (`asked` keeps its reply between tries); true once taken.
    fn try_acquire(
        &mut self,
        id: WinId,
        target: usize,
        kind: LockKind,
        asked: &mut Option<RequestId>,
    ) -> Result<bool> {
        let w = self.wins.get(id)?;
        if let Memory::Shared { seg, .. } = &w.mem {
            return Ok(lock_try(seg.lock_word(target), kind));
        }
        let reply = match *asked {
            Some(reply) => reply,
            None => *asked.insert(self.ask(id, target, Kind::Lock, kind == LockKind::Exclusive)?),
        };
        if !self.core.requests.get(reply).is_none_or(|q| q.complete) {
            return Ok(false);
        }
        self.await_replies(id, &[reply], &[])?; // the reply is there: no waiting
        Ok(true)
    }

    /// Completes the operations at `target` and gives its lock back (`None`: a lock held under
    /// `MPI_MODE_NOCHECK`, nothing to give back).
    fn release(&mut self, id: WinId, target: usize, kind: Option<LockKind>) -> Result<()> {
        let Some(kind) = kind else {
            return self.complete_at(id, &[target]);
        };
        let w = self.wins.get(id)?;
        if let Memory::Shared { seg, .. } = &w.mem {
            lock_release(seg.lock_word(target), kind);
            return Ok(());
        }
        let reply = self.ask(id, target, Kind::Unlock, false)?;
        let outcome = self.await_replies(id, &[reply], &[target]);
        self.wins.get_mut(id)?.origin.touched.remove(&target);
        outcome
    }

    /// `MPI_Win_flush` (`rank`) or `MPI_Win_flush_all` (`None`): completes operations at targets.
    pub fn win_flush(&mut self, id: WinId, rank: Option<i32>) -> Result<()> {
        if rank == Some(PROC_NULL) {
            self.wins.get(id)?;
            return Ok(());
        }
        if self.win_flush_direct(id, rank) {
            return Ok(());
        }
        if self.wins.get(id)?.is_shared() {
            self.check_passive(id, rank)?;
            complete_shared();
            return Ok(());
        }
        let targets = self.passive_targets(id, rank)?;
        self.complete_at(id, &targets)
    }

    /// `MPI_Win_flush_local` (`rank`) or `_all` (`None`): the origin buffers may be reused.
    pub fn win_flush_local(&mut self, id: WinId, rank: Option<i32>) -> Result<()> {
        if rank == Some(PROC_NULL) {
            self.wins.get(id)?;
            return Ok(());
        }
        let targets = self.passive_targets(id, rank)?;
        if self.wins.get(id)?.is_shared() {
            return Ok(());
        }
        self.await_replies(id, &[], &targets)
    }

    /// The targets a flush applies to; it must be inside a passive-target epoch.
    fn passive_targets(&self, id: WinId, rank: Option<i32>) -> Result<Vec<usize>> {
        self.check_passive(id, rank)?;
        let w = self.wins.get(id)?;
        Ok(match rank {
            Some(r) => vec![r as usize],
            None => (0..w.nranks()).collect(),
        })
    }

    /// Checks that a flush of `rank` (all: `None`) is inside a passive-target epoch.
    fn check_passive(&self, id: WinId, rank: Option<i32>) -> Result<()> {
        let w = self.wins.get(id)?;
        let epoch = &w.epoch;
        let locked = match rank {
            Some(r) => {
                let t = self.win_rank(w, r)?;
                epoch.passive(t)
            }
            None => epoch.holds_locks(),
        };
        if !locked {
            return Err(sync_error(
                "a flush needs a passive-target epoch (MPI_Win_lock or MPI_Win_lock_all)",
            ));
        }
        Ok(())
    }

    /// `MPI_Win_sync`: orders this process's memory accesses to the window.
    pub fn win_sync(&mut self, id: WinId) -> Result<()> {
        self.wins.get(id)?;
        fence(Ordering::SeqCst);
        Ok(())
    }
}

/// Locks being taken by `MPI_Win_lock` or `MPI_Win_lock_all` ([`Engine::win_lock_step`]).
#[derive(Debug)]
pub struct Locking {
    /// The window ranks still to lock, in order (the first may have been asked already).
    targets: std::ops::Range<usize>,
    kind: LockKind,
    /// The reply awaited from the first of `targets` (windows whose locks are messages).
    asked: Option<RequestId>,
    /// `MPI_Win_lock_all` (else one target's lock).
    all: bool,
}

impl Locking {
    fn new(targets: std::ops::Range<usize>, kind: LockKind, all: bool) -> Self {
        Self {
            targets,
            kind,
            asked: None,
            all,
        }
    }
}
