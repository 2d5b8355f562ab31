//! Completing requests: wait and test, for one request or a set (any / all / some).
//!
//! Completion is split in two steps so the C layer can implement every MPI variant exactly: finding
//! out that a request is complete (progressing as needed), then retiring it, which hands back its
//! status and either frees the request or, for a persistent one, makes it inactive again. Inactive
//! persistent requests and null entries count as "nothing to wait for", as the standard says.

use crate::engine::Engine;
use crate::error::Result;
use crate::p2p::bad_request;
use crate::request::{RequestId, Status};
use reflex_base::transport::Transport;

/// What retiring a request gives back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    /// The operation's status.
    pub status: Status,
    /// The request is gone (the handle becomes `MPI_REQUEST_NULL`); false for persistent requests.
    pub freed: bool,
}

impl<T: Transport> Engine<T> {
    /// True when `id` is complete (no progress made).
    pub fn is_complete(&self, id: RequestId) -> Result<bool> {
        Ok(self
            .core
            .requests
            .get(id)
            .ok_or_else(|| bad_request(id))?
            .complete)
    }

    /// True when `id` has an operation in flight or a result to collect; false for an inactive
    /// persistent request.
    pub fn is_active(&self, id: RequestId) -> Result<bool> {
        let req = self.core.requests.get(id).ok_or_else(|| bad_request(id))?;
        Ok(req.persistent.is_none() || req.active)
    }

    /// Hands back the status of complete request `id` and frees it (or deactivates a persistent one).
    pub fn retire(&mut self, id: RequestId) -> Result<Completion> {
        let req = self.core.requests.get(id).ok_or_else(|| bad_request(id))?;
        let status = req.status.clone();
        let freed = req.persistent.is_none();
        self.core.release(id);
        Ok(Completion { status, freed })
    }

    /// `MPI_Wait` on one request: its status (the request is retired).
    pub fn wait(&mut self, id: RequestId) -> Result<Status> {
        self.wait_until(|e| e.core.requests.get(id).is_none_or(|r| r.complete))?;
        Ok(self.retire(id)?.status)
    }

    /// `MPI_Wait`, telling whether the handle was freed.
    pub fn wait_retire(&mut self, id: RequestId) -> Result<Completion> {
        self.core.requests.get(id).ok_or_else(|| bad_request(id))?;
        self.wait_until(|e| e.core.requests.get(id).is_none_or(|r| r.complete))?;
        self.retire(id)
    }

    /// Progresses once and reports a protocol error found meanwhile; returns the event count. For
    /// callers that wait outside the engine (the C layer's `MPI_THREAD_MULTIPLE` waits).
    pub fn poll(&mut self) -> Result<usize> {
        let events = self.progress();
        self.check_fatal()?;
        Ok(events)
    }

    /// `MPI_Test`: progresses once; retires and returns the request if it is complete.
    pub fn test(&mut self, id: RequestId) -> Result<Option<Completion>> {
        self.core.requests.get(id).ok_or_else(|| bad_request(id))?;
        if !self.is_complete(id)? {
            self.progress();
            self.check_fatal()?;
        }
        if self.is_complete(id)? {
            return self.retire(id).map(Some);
        }
        Ok(None)
    }

    /// `MPI_Request_get_status`: like test, but the request is not retired.
    pub fn request_status(&mut self, id: RequestId) -> Result<Option<Status>> {
        if !self.is_complete(id)? {
            self.progress();
            self.check_fatal()?;
        }
        let req = self.core.requests.get(id).ok_or_else(|| bad_request(id))?;
        Ok(req.complete.then(|| req.status.clone()))
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
        self.progress();
        self.check_fatal()?;
        self.completed_among(ids)
    }
}
