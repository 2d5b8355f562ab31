//! This process's epochs on one window (MPI-3.1 §11.5) and the bits the direct path tests.
//!
//! [`Epoch`] owns everything that says what the process may do now: the fence epoch, the PSCW
//! groups, the locks of `MPI_Win_lock` and `MPI_Win_lock_all`, and two masks derived from them
//! (bit `t`: operations on target `t` are allowed now; `t` is in a passive-target epoch, so a
//! flush of it is allowed), so that the direct path's epoch test is one bit. The fields are
//! private and every method that changes them ends by bringing the masks up to date, so the
//! masks cannot go stale whatever calls them: they always equal [`Bits::of`] of the fields
//! (checked again in debug builds after every change, and by the tests below for every
//! transition). Targets from 64 on have no bit and always take the general path.

use super::LockKind;

/// This process's epochs on a window (what it may do now).
#[derive(Debug, Default)]
pub(crate) struct Epoch {
    /// Inside a fence epoch (a fence without `MPI_MODE_NOSUCCEED` ran last).
    fence: bool,
    /// Targets of the access epoch opened by `MPI_Win_start`.
    start: Option<Vec<usize>>,
    /// Origins of the exposure epoch opened by `MPI_Win_post`.
    post: Option<Vec<usize>>,
    /// Targets locked by `MPI_Win_lock`, with the lock taken (`None`: `MPI_MODE_NOCHECK`, held
    /// without taking anything).
    locks: Vec<(usize, Option<LockKind>)>,
    /// Inside `MPI_Win_lock_all`: whether its shared locks were taken (`false`:
    /// `MPI_MODE_NOCHECK`).
    lock_all: Option<bool>,
    /// [`Bits::of`] the fields above.
    bits: Bits,
}

/// The masks of an epoch: bit `t` of `access` is [`Epoch::allows`]`(t)`, of `passive`
/// [`Epoch::passive`]`(t)`, for `t` below 64.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Bits {
    access: u64,
    passive: u64,
}

impl Bits {
    /// The masks of `e`'s fields (plain loops over the short lists: this runs in every lock,
    /// unlock, fence and PSCW call).
    fn of(e: &Epoch) -> Self {
        let mut passive = 0;
        for &(t, _) in &e.locks {
            passive |= target_bit(t);
        }
        if e.lock_all.is_some() {
            passive = u64::MAX;
        }
        let mut access = passive;
        for &t in e.start.as_deref().unwrap_or_default() {
            access |= target_bit(t);
        }
        if e.fence {
            access = u64::MAX;
        }
        Self { access, passive }
    }
}

/// Bit `t` of a mask; none for targets from 64 on.
#[inline(always)]
fn target_bit(t: usize) -> u64 {
    if t < 64 {
        1 << t
    } else {
        0
    }
}

impl Epoch {
    /// Inside a PSCW or passive-target epoch (where fence and free are erroneous).
    pub(crate) fn open(&self) -> bool {
        self.start.is_some() || self.post.is_some() || self.holds_locks()
    }

    /// Inside `MPI_Win_lock` of any target or `MPI_Win_lock_all`.
    #[inline]
    pub(crate) fn holds_locks(&self) -> bool {
        self.lock_all.is_some() || !self.locks.is_empty()
    }

    /// Inside a passive-target epoch of `target` (where a flush of it is allowed and a lock of
    /// it erroneous).
    #[inline]
    pub(crate) fn passive(&self, target: usize) -> bool {
        self.lock_all.is_some() || self.locks.iter().any(|(t, _)| *t == target)
    }

    /// Whether operations on `target` are allowed now.
    #[inline]
    pub(crate) fn allows(&self, target: usize) -> bool {
        self.fence
            || self.passive(target)
            || self.start.as_ref().is_some_and(|g| g.contains(&target))
    }

    /// [`Self::allows`] as the direct path asks it: one bit, `false` for targets from 64 on.
    #[inline(always)]
    pub(crate) fn allows_now(&self, target: usize) -> bool {
        let yes = target < 64 && self.bits.access >> target & 1 != 0;
        debug_assert!(!yes || self.allows(target), "stale epoch bits for {target}");
        yes
    }

    /// [`Self::passive`] as the direct flush asks it (see [`Self::allows_now`]).
    #[inline(always)]
    pub(crate) fn passive_now(&self, target: usize) -> bool {
        let yes = target < 64 && self.bits.passive >> target & 1 != 0;
        debug_assert!(
            !yes || self.passive(target),
            "stale epoch bits for {target}"
        );
        yes
    }

    /// Whether an access epoch of `MPI_Win_start` is open.
    #[inline]
    pub(crate) fn started(&self) -> bool {
        self.start.is_some()
    }

    /// The origins of the exposure epoch of `MPI_Win_post`, if one is open.
    pub(crate) fn posted(&self) -> Option<&[usize]> {
        self.post.as_deref()
    }

    /// Brings the masks up to date with a full recomputation.
    #[inline]
    fn changed(&mut self) {
        self.bits = Bits::of(self);
    }

    /// In debug builds, checks that the masks equal the full recomputation.
    #[inline(always)]
    fn check(&self) {
        debug_assert_eq!(self.bits, Bits::of(self), "stale epoch bits");
    }

    /// A fence: a fence epoch follows unless `MPI_MODE_NOSUCCEED` (`on` false).
    pub(crate) fn fence(&mut self, on: bool) {
        self.fence = on;
        self.changed();
    }

    /// `MPI_Win_post` to `group` (ends a fence epoch).
    pub(crate) fn post(&mut self, group: Vec<usize>) {
        self.post = Some(group);
        self.fence = false;
        self.changed();
    }

    /// The end of the exposure epoch (`MPI_Win_wait`): the masks stay, as an exposure epoch
    /// grants this process no access of its own.
    pub(crate) fn unpost(&mut self) -> Option<Vec<usize>> {
        self.post.take()
    }

    /// `MPI_Win_start` to `group` (ends a fence epoch).
    pub(crate) fn start(&mut self, group: Vec<usize>) {
        self.start = Some(group);
        self.fence = false;
        self.changed();
    }

    /// The end of the access epoch (`MPI_Win_complete`): its targets, if one was open.
    pub(crate) fn complete(&mut self) -> Option<Vec<usize>> {
        let group = self.start.take();
        self.changed();
        group
    }

    /// `MPI_Win_lock` of `target` (not locked yet) with the lock `taken` (ends a fence epoch).
    /// Without a fence epoch to end, only `target`'s bits change: one `or` each.
    #[inline]
    pub(crate) fn lock(&mut self, target: usize, taken: Option<LockKind>) {
        self.locks.push((target, taken));
        if std::mem::replace(&mut self.fence, false) {
            self.changed();
        } else {
            self.bits.access |= target_bit(target);
            self.bits.passive |= target_bit(target);
        }
        self.check();
    }

    /// `MPI_Win_unlock` of `target`: the lock it held, or `None` when it is not locked. Unless a
    /// PSCW access epoch is open too (which may grant `target` still: then a full
    /// recomputation), only `target`'s bits change.
    #[inline]
    pub(crate) fn unlock(&mut self, target: usize) -> Option<Option<LockKind>> {
        let i = self.locks.iter().position(|&(t, _)| t == target)?;
        let (_, taken) = self.locks.swap_remove(i);
        if self.start.is_some() {
            self.changed();
        } else {
            // Locks exclude a fence epoch and lock_all (both refused while locks are held), so
            // the other locks, untouched, are all that grant bits now.
            self.bits.access &= !target_bit(target);
            self.bits.passive &= !target_bit(target);
        }
        self.check();
        Some(taken)
    }

    /// `MPI_Win_lock_all`, its shared locks `taken` or not (ends a fence epoch).
    pub(crate) fn lock_all(&mut self, taken: bool) {
        self.lock_all = Some(taken);
        self.fence = false;
        self.changed();
    }

    /// `MPI_Win_unlock_all`: whether the shared locks were taken, or `None` outside
    /// `MPI_Win_lock_all`.
    pub(crate) fn unlock_all(&mut self) -> Option<bool> {
        let taken = self.lock_all.take();
        self.changed();
        taken
    }
}

#[cfg(test)]
mod tests {
    use super::{Bits, Epoch, LockKind};

    const TARGETS: [usize; 7] = [0, 1, 5, 62, 63, 64, 200];

    /// Checks the invariant (the masks equal the full recomputation, and the one-bit tests
    /// agree with the full tests below 64 and say no from 64 on); returns the one-bit answers.
    fn agree(e: &Epoch) -> Vec<(bool, bool)> {
        assert_eq!(e.bits, Bits::of(e), "stale bits: {e:?}");
        TARGETS
            .iter()
            .map(|&t| {
                let now = (e.allows_now(t), e.passive_now(t));
                let full = (e.allows(t), e.passive(t));
                assert_eq!(now, if t < 64 { full } else { (false, false) }, "{t}");
                now
            })
            .collect()
    }

    fn none(e: &Epoch) -> bool {
        agree(e).iter().all(|&b| b == (false, false))
    }

    #[test]
    fn fence_grants_access_to_all_and_passive_to_none() {
        let mut e = Epoch::default();
        assert!(none(&e));
        e.fence(true);
        assert_eq!(agree(&e)[..5], [(true, false); 5]);
        e.fence(false);
        assert!(none(&e));
    }

    #[test]
    fn lock_and_unlock_change_one_target() {
        let mut e = Epoch::default();
        e.fence(true);
        e.lock(5, Some(LockKind::Shared)); // ends the fence epoch
        e.lock(64, None);
        e.lock(63, Some(LockKind::Exclusive));
        assert_eq!(
            agree(&e)[2..5],
            [(true, true), (false, false), (true, true)]
        );
        assert_eq!(e.unlock(5), Some(Some(LockKind::Shared)));
        assert_eq!(e.unlock(5), None);
        assert_eq!(agree(&e)[2], (false, false));
        assert_eq!(e.unlock(64), Some(None));
        assert_eq!(e.unlock(63), Some(Some(LockKind::Exclusive)));
        assert!(none(&e) && !e.open());
    }

    #[test]
    fn unlock_keeps_a_target_of_an_open_start() {
        let mut e = Epoch::default();
        e.start(vec![1, 63, 200]);
        assert_eq!(agree(&e)[1], (true, false));
        e.lock(1, None);
        e.lock(0, None);
        assert_eq!(agree(&e)[..2], [(true, true), (true, true)]);
        e.unlock(1);
        e.unlock(0);
        assert_eq!(agree(&e)[..2], [(false, false), (true, false)]);
        assert_eq!(e.complete(), Some(vec![1, 63, 200]));
        assert!(none(&e));
    }

    #[test]
    fn post_and_lock_all_transitions() {
        let mut e = Epoch::default();
        e.fence(true);
        e.post(vec![2]);
        assert!(none(&e) && e.open());
        assert_eq!(e.unpost(), Some(vec![2]));
        e.lock_all(false);
        assert_eq!(agree(&e)[..5], [(true, true); 5]);
        assert!(e.holds_locks() && e.passive(200));
        assert_eq!(e.unlock_all(), Some(false));
        assert_eq!(e.unlock_all(), None);
        assert!(none(&e) && !e.open());
    }
}
