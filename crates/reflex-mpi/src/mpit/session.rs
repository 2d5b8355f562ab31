//! Performance-variable sessions and handles: the start/stop/read/reset/write semantics of
//! MPI-4.0 §15.3.7, as plain state (the caller passes each variable's current raw value).
//!
//! A handle of a continuous variable shows the raw value; a handle of a non-continuous one
//! accumulates the raw value's growth while started (`total` plus, while started, the growth
//! since `base`), so handles in different sessions never disturb each other, and the engine's
//! counters are never reset. `MPI_T_PVAR_ALL_HANDLES` applies start and stop to the session's
//! handles that can be started or stopped (continuous ones are skipped) and reset to those that
//! can be reset (read-only ones are skipped).

use super::error;
use super::pvar::{Pvar, TABLE};
use reflex_engine::{ErrorClass, Result};
use std::collections::{BTreeMap, BTreeSet};

/// One performance-variable handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PvarHandle {
    pub session: u32,
    pub pvar: usize,
    started: bool,
    /// Growth counted before the last start (or the value written / reset to).
    total: u64,
    /// The raw value when last started, reset or written.
    base: u64,
}

impl PvarHandle {
    fn var(&self) -> &'static Pvar {
        &TABLE[self.pvar]
    }

    /// The value this handle shows when the variable's raw value is `now`.
    pub fn value(&self, now: u64) -> u64 {
        if self.var().continuous {
            return now;
        }
        let running = if self.started {
            now.saturating_sub(self.base)
        } else {
            0
        };
        self.total.wrapping_add(running)
    }

    fn check_startstop(&self) -> Result<()> {
        match self.var().continuous {
            true => Err(error(
                ErrorClass::TPvarNoStartstop,
                format!(
                    "{} is continuous: it cannot be started or stopped",
                    self.var().name
                ),
            )),
            false => Ok(()),
        }
    }

    fn check_writable(&self) -> Result<()> {
        match self.var().readonly {
            true => Err(error(
                ErrorClass::TPvarNoWrite,
                format!(
                    "{} is read-only: it cannot be written or reset",
                    self.var().name
                ),
            )),
            false => Ok(()),
        }
    }

    fn start(&mut self, now: u64) {
        if !self.started {
            self.started = true;
            self.base = now;
        }
    }

    fn stop(&mut self, now: u64) {
        if self.started {
            self.total = self.value(now);
            self.started = false;
        }
    }

    fn set(&mut self, value: u64, now: u64) {
        self.total = value;
        self.base = now;
    }
}

/// What an operation is applied to: one handle or all of a session's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    One(u32),
    All,
}

/// Every session and handle.
#[derive(Debug, Default)]
pub struct Sessions {
    open: BTreeSet<u32>,
    handles: BTreeMap<u32, PvarHandle>,
}

impl Sessions {
    /// No sessions.
    pub const fn new() -> Self {
        Self {
            open: BTreeSet::new(),
            handles: BTreeMap::new(),
        }
    }

    /// Forgets everything (the last `MPI_T_finalize`).
    pub fn clear(&mut self) {
        *self = Self::new();
    }

    /// `MPI_T_pvar_session_create`: session `id` (a fresh number).
    pub fn create(&mut self, id: u32) {
        self.open.insert(id);
    }

    fn check_session(&self, session: u32) -> Result<()> {
        match self.open.contains(&session) {
            true => Ok(()),
            false => Err(error(
                ErrorClass::TInvalidSession,
                "not a performance-variable session (freed, or never created)",
            )),
        }
    }

    /// `MPI_T_pvar_session_free`: the session and its handles.
    pub fn free(&mut self, session: u32) -> Result<()> {
        self.check_session(session)?;
        self.open.remove(&session);
        self.handles.retain(|_, h| h.session != session);
        Ok(())
    }

    /// `MPI_T_pvar_handle_alloc`: handle `id` of variable `pvar` in `session`; a continuous
    /// variable's handle is active at once.
    pub fn alloc(&mut self, session: u32, id: u32, pvar: usize, now: u64) -> Result<()> {
        self.check_session(session)?;
        let handle = PvarHandle {
            session,
            pvar,
            started: TABLE[pvar].continuous,
            total: 0,
            base: now,
        };
        self.handles.insert(id, handle);
        Ok(())
    }

    /// The handle `id` of `session` (`MPI_T_ERR_INVALID_SESSION` / `_INVALID_HANDLE`).
    pub fn handle(&mut self, session: u32, id: u32) -> Result<&mut PvarHandle> {
        self.check_session(session)?;
        self.handles
            .get_mut(&id)
            .filter(|h| h.session == session)
            .ok_or_else(|| {
                error(
                    ErrorClass::TInvalidHandle,
                    "not a performance-variable handle of this session",
                )
            })
    }

    /// `MPI_T_pvar_handle_free`.
    pub fn free_handle(&mut self, session: u32, id: u32) -> Result<()> {
        self.handle(session, id)?;
        self.handles.remove(&id);
        Ok(())
    }

    /// The handles `target` names in `session`.
    fn targets(&mut self, session: u32, target: Target) -> Result<Vec<&mut PvarHandle>> {
        match target {
            Target::One(id) => Ok(vec![self.handle(session, id)?]),
            Target::All => {
                self.check_session(session)?;
                Ok(self
                    .handles
                    .values_mut()
                    .filter(|h| h.session == session)
                    .collect())
            }
        }
    }

    /// Applies `act` to the handles `target` names that pass `check`: with one handle named,
    /// its failed check is the error; with `MPI_T_PVAR_ALL_HANDLES`, handles that fail are
    /// skipped (MPI-4.0 §15.3.7).
    fn each(
        &mut self,
        session: u32,
        target: Target,
        check: fn(&PvarHandle) -> Result<()>,
        mut act: impl FnMut(&mut PvarHandle),
    ) -> Result<()> {
        for h in self.targets(session, target)? {
            match (check(h), target) {
                (Err(_), Target::All) => continue,
                (Err(e), Target::One(_)) => return Err(e),
                (Ok(()), _) => act(h),
            }
        }
        Ok(())
    }

    /// `MPI_T_pvar_start` (`now(pvar)` is a variable's raw value).
    pub fn start(
        &mut self,
        session: u32,
        target: Target,
        now: impl Fn(usize) -> u64,
    ) -> Result<()> {
        self.each(session, target, PvarHandle::check_startstop, |h| {
            h.start(now(h.pvar))
        })
    }

    /// `MPI_T_pvar_stop`.
    pub fn stop(&mut self, session: u32, target: Target, now: impl Fn(usize) -> u64) -> Result<()> {
        self.each(session, target, PvarHandle::check_startstop, |h| {
            h.stop(now(h.pvar))
        })
    }

    /// `MPI_T_pvar_reset`: back to 0 (the starting value of every variable here).
    pub fn reset(
        &mut self,
        session: u32,
        target: Target,
        now: impl Fn(usize) -> u64,
    ) -> Result<()> {
        self.each(session, target, PvarHandle::check_writable, |h| {
            h.set(0, now(h.pvar))
        })
    }

    /// `MPI_T_pvar_read`.
    pub fn read(&mut self, session: u32, id: u32, now: impl Fn(usize) -> u64) -> Result<u64> {
        let h = self.handle(session, id)?;
        Ok(h.value(now(h.pvar)))
    }

    /// `MPI_T_pvar_write`.
    pub fn write(
        &mut self,
        session: u32,
        id: u32,
        value: u64,
        now: impl Fn(usize) -> u64,
    ) -> Result<()> {
        let h = self.handle(session, id)?;
        h.check_writable()?;
        h.set(value, now(h.pvar));
        Ok(())
    }

    /// `MPI_T_pvar_readreset`: the value, then back to 0, at one raw value (atomic).
    pub fn readreset(&mut self, session: u32, id: u32, now: impl Fn(usize) -> u64) -> Result<u64> {
        let h = self.handle(session, id)?;
        h.check_writable()?;
        let raw = now(h.pvar);
        let value = h.value(raw);
        h.set(0, raw);
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mpit::pvar::index_of;
    use crate::mpit::pvar::{CLASS_COUNTER, CLASS_LEVEL};
    use std::cell::Cell;

    fn class(e: reflex_engine::MpiError) -> ErrorClass {
        e.class
    }

    #[test]
    fn non_continuous_handles_count_only_while_started() {
        let sent = index_of("reflex_messages_sent", CLASS_COUNTER).unwrap();
        let raw = Cell::new(100u64);
        let now = |_| raw.get();
        let mut s = Sessions::new();
        s.create(1);
        s.alloc(1, 10, sent, raw.get()).unwrap();
        raw.set(105);
        assert_eq!(s.read(1, 10, now).unwrap(), 0, "not started");
        s.start(1, Target::One(10), now).unwrap();
        raw.set(112);
        assert_eq!(s.read(1, 10, now).unwrap(), 7);
        s.stop(1, Target::One(10), now).unwrap();
        raw.set(150);
        assert_eq!(s.read(1, 10, now).unwrap(), 7, "stopped: frozen");
        s.start(1, Target::All, now).unwrap();
        raw.set(151);
        assert_eq!(s.readreset(1, 10, now).unwrap(), 8);
        raw.set(153);
        assert_eq!(s.read(1, 10, now).unwrap(), 2);
        s.write(1, 10, 40, now).unwrap();
        raw.set(154);
        assert_eq!(s.read(1, 10, now).unwrap(), 41);
        s.reset(1, Target::All, now).unwrap();
        assert_eq!(s.read(1, 10, now).unwrap(), 0);
    }

    #[test]
    fn continuous_read_only_handles_refuse_start_stop_and_writes() {
        let level = index_of("reflex_unexpected_queue_length", CLASS_LEVEL).unwrap();
        let now = |_| 3;
        let mut s = Sessions::new();
        s.create(1);
        s.alloc(1, 20, level, 0).unwrap();
        assert_eq!(s.read(1, 20, now).unwrap(), 3);
        let one = Target::One(20);
        assert_eq!(
            class(s.start(1, one, now).unwrap_err()),
            ErrorClass::TPvarNoStartstop
        );
        assert_eq!(
            class(s.stop(1, one, now).unwrap_err()),
            ErrorClass::TPvarNoStartstop
        );
        assert_eq!(
            class(s.reset(1, one, now).unwrap_err()),
            ErrorClass::TPvarNoWrite
        );
        assert_eq!(
            class(s.write(1, 20, 1, now).unwrap_err()),
            ErrorClass::TPvarNoWrite
        );
        assert_eq!(
            class(s.readreset(1, 20, now).unwrap_err()),
            ErrorClass::TPvarNoWrite
        );
        s.start(1, Target::All, now).unwrap();
        s.reset(1, Target::All, now).unwrap();
    }

    #[test]
    fn handles_belong_to_their_session() {
        let mut s = Sessions::new();
        s.create(1);
        s.create(2);
        s.alloc(1, 30, 0, 0).unwrap();
        let now = |_| 0;
        assert_eq!(
            class(s.read(2, 30, now).unwrap_err()),
            ErrorClass::TInvalidHandle
        );
        assert_eq!(
            class(s.read(3, 30, now).unwrap_err()),
            ErrorClass::TInvalidSession
        );
        assert_eq!(
            class(s.alloc(3, 31, 0, 0).unwrap_err()),
            ErrorClass::TInvalidSession
        );
        s.free(1).unwrap();
        assert_eq!(
            class(s.read(1, 30, now).unwrap_err()),
            ErrorClass::TInvalidSession
        );
        assert_eq!(class(s.free(1).unwrap_err()), ErrorClass::TInvalidSession);
        s.alloc(2, 32, 0, 0).unwrap();
        s.free_handle(2, 32).unwrap();
        assert_eq!(
            class(s.free_handle(2, 32).unwrap_err()),
            ErrorClass::TInvalidHandle
        );
    }
}
