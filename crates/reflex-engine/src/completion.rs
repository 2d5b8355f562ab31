//! Completing requests: wait and test, for one request or a set (any / all / some).
//!
//! Completion is split in two steps so the C layer can implement every MPI variant exactly: finding
//! out that a request is complete (progressing as needed), then retiring it, which hands back its
//! status and either frees the request or, for a persistent one, makes it inactive again. Inactive
//! persistent requests and null entries count as "nothing to wait for", as the standard says.
//!
//! Two kinds of request complete without a transfer of their own. A generalized request
//! (MPI-3.1 §12.2) is completed by the application (`MPI_Grequest_complete`); retiring it hands
//! back its callbacks, which the C layer runs with no engine borrow held ([`Completion::settle`]).
//! A pair (`MPI_Isendrecv`) joins a send and a receive: it is complete when both are, and
//! retiring it releases both and reports the receive's status.

use crate::engine::Engine;
use crate::error::Result;
use crate::error::{ErrorClass, MpiError};
use crate::p2p::bad_request;
use crate::request::{Hooks, Op, Request, RequestId, Status};
use reflex_base::transport::Transport;

/// What retiring a request gives back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    /// The operation's status.
    pub status: Status,
    /// The request is gone (the handle becomes `MPI_REQUEST_NULL`); false for persistent requests.
    pub freed: bool,
    /// The callbacks of a generalized request, due now ([`Completion::settle`] runs them).
    pub generalized: Option<Hooks>,
}

impl Completion {
    /// Runs the callbacks a retired generalized request is due (MPI-3.1 §12.2): `query_fn` fills
    /// the status, then `free_fn` releases the application's state. A callback's error becomes the
    /// status error (so the call returns it, or `MPI_ERR_IN_STATUS` for a multi-request call);
    /// when both fail, `free_fn`'s wins, "the error code returned by the last callback".
    /// Nothing happens for other requests. Call it with no borrow of the engine held: the
    /// callbacks are application code and may call MPI.
    #[inline]
    pub fn settle(&mut self) {
        if self.generalized.is_some() {
            self.settle_generalized();
        }
    }

    /// [`Completion::settle`] of a generalized request.
    #[inline(never)]
    fn settle_generalized(&mut self) {
        let Some(hooks) = self.generalized.take() else {
            return;
        };
        let queried = hooks.0.query(&mut self.status);
        if let Err(e) = hooks.0.free().and(queried) {
            self.status.error = Some(Box::new(e));
        }
    }
}

impl<T: Transport> Engine<T> {
    /// True when `id` is complete (no progress made).
    pub fn is_complete(&self, id: RequestId) -> Result<bool> {
        let req = self.core.requests.get(id).ok_or_else(|| bad_request(id))?;
        Ok(self.done(req))
    }

    /// True when `req` is complete; a pair when both its parts are.
    fn done(&self, req: &Request) -> bool {
        let part_done = |id| self.core.requests.get(id).is_none_or(|r| r.complete);
        match req.op {
            Op::Pair { send, recv } => part_done(send) && part_done(recv),
            _ => req.complete,
        }
    }

    /// True when `id` is complete or gone (what a wait waits for).
    fn finished(&self, id: RequestId) -> bool {
        self.core.requests.get(id).is_none_or(|r| self.done(r))
    }

    /// The status `req` reports: a pair's is its receive's (with its send's error, if only the
    /// send failed).
    fn status_of(&self, req: &Request) -> Status {
        let Op::Pair { send, recv } = req.op else {
            return req.status.clone();
        };
        let part = |id| self.core.requests.get(id).map(|r: &Request| &r.status);
        let mut status = part(recv).cloned().unwrap_or_else(Status::empty);
        if status.error.is_none() {
            status.error = part(send).and_then(|s| s.error.clone());
        }
        status
    }

    /// True when `id` has an operation in flight or a result to collect; false for an inactive
    /// persistent request.
    pub fn is_active(&self, id: RequestId) -> Result<bool> {
        let req = self.core.requests.get(id).ok_or_else(|| bad_request(id))?;
        Ok(req.persistent.is_none() || req.active)
    }

    /// Hands back the status of complete request `id` and frees it (or deactivates a persistent one).
    pub fn retire(&mut self, id: RequestId) -> Result<Completion> {
        let req = self
            .core
            .requests
            .get_mut(id)
            .ok_or_else(|| bad_request(id))?;
        if req.is_plain() {
            // Nothing to give back: take the status and drop the request where it lies.
            let status = std::mem::replace(&mut req.status, Status::empty());
            self.core.requests.discard_plain(id);
            return Ok(Completion {
                status,
                freed: true,
                generalized: None,
            });
        }
        if req.persistent.is_none() && matches!(req.op, Op::Send(_) | Op::Recv(_) | Op::Null) {
            // A plain request: its status is handed out as it is, and the request dropped.
            let status = std::mem::replace(&mut req.status, Status::empty());
            self.core.release(id);
            return Ok(Completion {
                status,
                freed: true,
                generalized: None,
            });
        }
        let req = self.core.requests.get(id).ok_or_else(|| bad_request(id))?;
        let status = self.status_of(req);
        let freed = req.persistent.is_none();
        let generalized = match &req.op {
            Op::Generalized(hooks) => Some(hooks.clone()),
            _ => None,
        };
        self.release_parts(id);
        self.core.release(id);
        Ok(Completion {
            status,
            freed,
            generalized,
        })
    }

    /// Releases the parts of pair `id` (nothing for other requests); a part still in flight is
    /// left to finish on its own.
    pub(crate) fn release_parts(&mut self, id: RequestId) {
        let Some(Op::Pair { send, recv }) = self.core.requests.get(id).map(|r| &r.op) else {
            return;
        };
        for part in [*send, *recv] {
            if let Some(req) = self.core.requests.get_mut(part) {
                req.detached = true;
                if req.complete {
                    self.core.release(part);
                }
            }
        }
    }

    /// `MPI_Wait` on one request: its status (the request is retired).
    pub fn wait(&mut self, id: RequestId) -> Result<Status> {
        self.wait_until(|e| e.finished(id))?;
        Ok(self.retire(id)?.status)
    }

    /// `MPI_Wait`, telling whether the handle was freed.
    pub fn wait_retire(&mut self, id: RequestId) -> Result<Completion> {
        let req = self.core.requests.get(id).ok_or_else(|| bad_request(id))?;
        if !self.done(req) {
            self.wait_until(|e| e.finished(id))?;
        }
        self.retire(id)
    }

    /// Progresses once and reports a protocol error found meanwhile, or, when nothing happened,
    /// a failed link; returns the event count. For the tests and probes, and callers that wait
    /// outside the engine (the C layer's `MPI_THREAD_MULTIPLE` waits).
    pub fn poll(&mut self) -> Result<usize> {
        let events = self.progress();
        self.check_fatal()?;
        if events == 0 {
            self.check_links()?;
        }
        Ok(events)
    }

    /// Whether progress has something to advance: a collective schedule, queued packets or
    /// posted receives (the progress thread polls often only then).
    pub fn busy(&self) -> bool {
        !self.colls.is_empty()
            || self.core.outbox_len > 0
            || !self.core.posted.is_empty()
            || self.core.coop.busy()
    }

    /// `MPI_Test`: progresses once; retires and returns the request if it is complete.
    pub fn test(&mut self, id: RequestId) -> Result<Option<Completion>> {
        self.core.requests.get(id).ok_or_else(|| bad_request(id))?;
        if !self.is_complete(id)? {
            self.poll()?;
        }
        if self.is_complete(id)? {
            return self.retire(id).map(Some);
        }
        Ok(None)
    }

    /// `MPI_Request_get_status`: like test, but the request is not retired.
    pub fn request_status(&mut self, id: RequestId) -> Result<Option<Status>> {
        if !self.is_complete(id)? {
            self.poll()?;
        }
        let req = self.core.requests.get(id).ok_or_else(|| bad_request(id))?;
        Ok(self.done(req).then(|| self.status_of(req)))
    }

    /// The positions in `ids` of the active requests that are complete now.
    pub fn completed_among(&self, ids: &[Option<RequestId>]) -> Result<Vec<usize>> {
        let mut done = Vec::new();
        for (i, id) in ids.iter().enumerate() {
            if let Some(id) = *id {
                if self.is_active(id)? && self.is_complete(id)? {
                    done.push(i);
                }
            }
        }
        Ok(done)
    }

    /// Number of active requests in `ids`.
    pub fn active_among(&self, ids: &[Option<RequestId>]) -> Result<usize> {
        let mut n = 0;
        for id in ids.iter().flatten() {
            n += usize::from(self.is_active(*id)?);
        }
        Ok(n)
    }

    /// Waits until at least one active request of `ids` completes; returns the positions of all that
    /// are complete (empty when none is active). Nothing is retired.
    pub fn wait_some_ready(&mut self, ids: &[Option<RequestId>]) -> Result<Vec<usize>> {
        if self.active_among(ids)? == 0 {
            return Ok(Vec::new());
        }
        let mut failure = None;
        self.wait_until(|e| match e.completed_among(ids) {
            Ok(done) => !done.is_empty(),
            Err(err) => {
                failure = Some(err);
                true
            }
        })?;
        if let Some(err) = failure {
            return Err(err);
        }
        self.completed_among(ids)
    }

    /// Progresses once and returns the positions of complete active requests (nothing retired).
    pub fn test_some_ready(&mut self, ids: &[Option<RequestId>]) -> Result<Vec<usize>> {
        self.poll()?;
        self.completed_among(ids)
    }

    /// `MPI_Isendrecv`: joins send `send` and receive `recv` (started by the caller) into one
    /// request, complete when both are, whose status is the receive's.
    pub fn pair(&mut self, send: RequestId, recv: RequestId) -> RequestId {
        self.core
            .requests
            .insert(Request::new(Op::Pair { send, recv }))
    }

    /// `MPI_Grequest_start`: a request the application completes, with its callbacks.
    pub fn grequest_start(&mut self, hooks: Hooks) -> RequestId {
        self.core
            .requests
            .insert(Request::new(Op::Generalized(hooks)))
    }

    /// `MPI_Grequest_complete`. Returns the callbacks when the application freed the request
    /// already: its `free_fn` is due now (MPI-3.1 §12.2, "whichever happens last").
    pub fn grequest_complete(&mut self, id: RequestId) -> Result<Option<Hooks>> {
        let (hooks, complete) = self.generalized(id)?.ok_or_else(|| {
            MpiError::new(
                ErrorClass::Request,
                format!("request {} is not a generalized request", id.0),
            )
        })?;
        if complete {
            return Err(MpiError::new(
                ErrorClass::Request,
                format!("generalized request {} is already complete", id.0),
            ));
        }
        let freed = self.core.requests.get(id).is_some_and(|r| r.detached);
        self.core.complete(id, Status::empty());
        Ok(freed.then_some(hooks))
    }

    /// The callbacks of generalized request `id` and whether it is complete; `None` for any other
    /// request.
    pub fn generalized(&self, id: RequestId) -> Result<Option<(Hooks, bool)>> {
        let req = self.core.requests.get(id).ok_or_else(|| bad_request(id))?;
        Ok(match &req.op {
            Op::Generalized(hooks) => Some((hooks.clone(), req.complete)),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::{Generalized, SendMode};
    use crate::testing::{run_ranks, small_tuning, MemTransport};
    use crate::{Basic, Datatype, ValueKind, COMM_WORLD};
    use reflex_base::buf::{RecvBuf, SendBuf};
    use std::sync::{Arc, Mutex};

    /// Records the callbacks called; `query` reports source 5, tag 6 and may fail.
    #[derive(Default)]
    struct Log {
        calls: Mutex<Vec<&'static str>>,
        query_fails: bool,
    }

    impl Generalized for Log {
        fn query(&self, status: &mut Status) -> Result<()> {
            self.calls.lock().unwrap().push("query");
            status.source = 5;
            status.tag = 6;
            if self.query_fails {
                return Err(MpiError::new(ErrorClass::Other, "query failed"));
            }
            Ok(())
        }
        fn free(&self) -> Result<()> {
            self.calls.lock().unwrap().push("free");
            Ok(())
        }
        fn cancel(&self, _complete: bool) -> Result<()> {
            self.calls.lock().unwrap().push("cancel");
            Ok(())
        }
    }

    fn calls(log: &Log) -> Vec<&'static str> {
        log.calls.lock().unwrap().clone()
    }

    fn on_one_rank(body: impl Fn(&mut Engine<MemTransport>) + Send + Sync + Copy + 'static) {
        run_ranks(1, 4, 4096, small_tuning(), body);
    }

    #[test]
    fn a_generalized_request_completes_when_the_application_says_so() {
        on_one_rank(|e| {
            let log = Arc::new(Log::default());
            let id = e.grequest_start(Hooks(log.clone()));
            assert_eq!(e.test(id).unwrap(), None);
            assert_eq!(e.grequest_complete(id).unwrap(), None);
            assert!(
                e.grequest_complete(id).is_err(),
                "completing twice is an error"
            );
            let mut c = e.test(id).unwrap().expect("complete");
            assert!(calls(&log).is_empty(), "the engine never calls back");
            c.settle();
            assert_eq!(calls(&log), ["query", "free"]);
            assert_eq!((c.status.source, c.status.tag, c.freed), (5, 6, true));
            assert!(c.status.error.is_none());
        });
    }

    #[test]
    fn a_freed_generalized_request_hands_back_its_hooks_when_both_calls_happened() {
        on_one_rank(|e| {
            let log = Arc::new(Log::default());
            let early = e.grequest_start(Hooks(log.clone()));
            assert_eq!(e.request_free(early).unwrap(), None);
            assert!(e.grequest_complete(early).unwrap().is_some());
            let late = e.grequest_start(Hooks(log.clone()));
            assert_eq!(e.grequest_complete(late).unwrap(), None);
            assert!(e.request_free(late).unwrap().is_some());
        });
    }

    #[test]
    fn a_failing_query_becomes_the_status_error() {
        on_one_rank(|e| {
            let log = Arc::new(Log {
                query_fails: true,
                ..Log::default()
            });
            let id = e.grequest_start(Hooks(log.clone()));
            e.grequest_complete(id).unwrap();
            let mut c = e.wait_retire(id).unwrap();
            c.settle();
            assert_eq!(calls(&log), ["query", "free"]);
            assert_eq!(c.status.error.map(|e| e.class), Some(ErrorClass::Other));
        });
    }

    fn byte() -> Datatype {
        Datatype::Basic(Basic::plain(ValueKind::Byte, 1))
    }

    fn leak(v: Vec<u8>) -> &'static mut [u8] {
        Box::leak(v.into_boxed_slice())
    }

    #[test]
    fn a_pair_completes_once_its_send_and_receive_have() {
        run_ranks(2, 4, 4096, small_tuning(), |e| {
            let me = e.world_rank() as i32;
            let peer = 1 - me;
            // 600 bytes: past the test eager limit, so both sides take the rendezvous.
            let out = SendBuf::from_slice(leak(vec![me as u8 + 1; 600]));
            let into = RecvBuf::from_slice(leak(vec![0; 600]));
            let r = e.irecv(into, 600, byte(), peer, 3, COMM_WORLD).unwrap();
            let s = e
                .isend(out, 600, byte(), peer, 3, COMM_WORLD, SendMode::Standard)
                .unwrap();
            let pair = e.pair(s, r);
            let c = e.wait_retire(pair).unwrap();
            assert_eq!(
                (c.status.source, c.status.tag, c.status.bytes),
                (peer, 3, 600)
            );
            assert!(
                e.is_complete(s).is_err() && e.is_complete(r).is_err(),
                "parts released"
            );
            assert!(into.as_slice().iter().all(|&b| b == peer as u8 + 1));
        });
    }

    #[test]
    fn sends_complete_at_start_share_one_request_that_is_never_released() {
        run_ranks(2, 4, 4096, small_tuning(), |e| {
            let me = e.world_rank() as i32;
            let peer = 1 - me;
            let send = |e: &mut Engine<MemTransport>, v: u8| {
                let out = SendBuf::from_slice(leak(vec![v; 8]));
                e.isend_bytes_eager(out, peer, 5, COMM_WORLD)
                    .expect("an 8-byte send goes out at once")
            };
            let (a, b, c) = (send(e, 1), send(e, 2), send(e, 3));
            assert_eq!([a, b, c], [RequestId::SENT; 3]);
            assert_eq!(e.request_free(a).unwrap(), None);
            e.cancel(b).unwrap();
            let done = e.wait_retire(b).unwrap();
            assert!(done.freed && done.status == Status::empty() && !done.status.cancelled);
            let again = e.test(c).unwrap().expect("complete");
            assert_eq!(
                again.status,
                Status::empty(),
                "the shared status stays empty"
            );
            for v in 1..=3 {
                let into = RecvBuf::from_slice(leak(vec![0; 8]));
                let r = e.irecv(into, 8, byte(), peer, 5, COMM_WORLD).unwrap();
                assert_ne!(
                    r,
                    RequestId::SENT,
                    "a new request never takes the shared slot"
                );
                assert_eq!(e.wait(r).unwrap().bytes, 8);
                assert!(into.as_slice().iter().all(|&x| x == v), "in order");
            }
        });
    }

    #[test]
    fn copied_sends_pair_with_receives_across_protocols() {
        run_ranks(2, 4, 4096, small_tuning(), |e| {
            let me = e.world_rank() as i32;
            let peer = 1 - me;
            for n in [8usize, 600, 5000] {
                let buf = RecvBuf::from_slice(leak(vec![0; n]));
                let out = SendBuf::from_slice(leak(vec![me as u8 + 1; n]));
                let s = e
                    .isend_copied(out, n, byte(), (peer, 4), COMM_WORLD)
                    .unwrap();
                let r = e.irecv(buf, n, byte(), peer, 4, COMM_WORLD).unwrap();
                let pair = e.pair(s, r);
                let c = e.wait_retire(pair).unwrap();
                assert_eq!(c.status.bytes, n);
                assert!(buf.as_slice().iter().all(|&b| b == peer as u8 + 1), "n={n}");
            }
        });
    }
}
