//! The target's side of a private window: requests are taken from the window's communicator as
//! they arrive, queued per origin, and served from the progress loop strictly in each origin's
//! issue order (so a flush or unlock reply means every earlier operation of that origin is done,
//! and accumulates from one origin are applied in order, MPI-3.1 §11.7.1).
//!
//! A request whose data came as a message of its own waits at the head of its queue until that
//! message is in; a dense put receives it straight into the window. Lock requests are granted
//! in arrival order (readers together, a writer alone). Errors found while serving (a request
//! outside the attached memory, a malformed message) are kept and reported to the origin in its
//! next flush or unlock reply; requests that expect data back always get an answer.

use super::apply::{self, Shape, Sharing};
use super::wire::{Decoded, Kind, Request};
use super::{Incoming, LockState, Memory, WinId, Window};
use crate::datatype::wire::RemoteLayout;
use crate::engine::Engine;
use crate::error::{ErrorClass, MpiError, Result};
use crate::request::{InBuf, Op, OutBuf, RequestId, ANY_SOURCE};
use reflex_base::buf::RecvBuf;
use reflex_base::transport::Transport;

/// Tag of request messages.
pub(crate) const TAG_REQ: i32 = 1;
/// Tag of data messages that follow their request.
pub(crate) const TAG_DATA: i32 = 2;
/// Tag of `MPI_Win_post` notices.
pub(crate) const TAG_POST: i32 = 3;
/// Tag of `MPI_Win_complete` notices.
pub(crate) const TAG_DONE: i32 = 4;
/// Replies use tags from here on, one per operation.
pub(crate) const FIRST_REPLY_TAG: i32 = 16;

/// The reply tag after `t`.
pub(crate) fn next_reply_tag(t: i32) -> i32 {
    if t == i32::MAX {
        FIRST_REPLY_TAG
    } else {
        t + 1
    }
}

/// A request message, whole or still arriving.
#[derive(Debug)]
pub(crate) enum Msg {
    Ready(Vec<u8>),
    Receiving(RequestId),
}

impl<T: Transport> Engine<T> {
    /// Takes new requests and serves what can be served on every private window.
    pub(crate) fn serve_windows(&mut self) -> usize {
        if self.wins.serving {
            return 0;
        }
        self.wins.serving = true;
        let mut events = 0;
        // Indexed, not collected: this runs in every progress call while a private window lives.
        for i in 0..self.wins.slots() {
            if !self.wins.is_private(i) {
                continue;
            }
            let id = WinId(i as u32);
            events += self.take_requests(id);
            events += self.serve_queues(id);
            self.settle_links(id);
        }
        self.wins.serving = false;
        events
    }

    /// Moves arrived request messages of window `id` into their origins' queues.
    fn take_requests(&mut self, id: WinId) -> usize {
        let Ok(w) = self.wins.get(id) else { return 0 };
        let ctx = w.ctx;
        let mut taken = 0;
        while let Some(i) = self
            .core
            .unexpected
            .iter()
            .position(|u| crate::core::pattern_matches(ctx, ANY_SOURCE, TAG_REQ, &u.env))
        {
            let msg = self
                .core
                .unexpected
                .remove(i)
                .expect("position is in range");
            let origin = msg.env.src as usize;
            let body = match msg.body {
                crate::core::Body::Eager(bytes) => Msg::Ready(bytes),
                crate::core::Body::Rts(_) => {
                    let buf = InBuf::Owned(vec![0; msg.env.len as usize]);
                    let rid = self.core.new_recv(buf, origin as i32, TAG_REQ, None);
                    self.core.deliver_unexpected(rid, msg);
                    Msg::Receiving(rid)
                }
            };
            let Ok(w) = self.wins.get_mut(id) else { break };
            if let Some(q) = w.target.queues.get_mut(origin) {
                q.push_back(Incoming {
                    msg: body,
                    data: None,
                });
            }
            taken += 1;
        }
        taken
    }

    /// Serves the head of every origin's queue while it is ready.
    fn serve_queues(&mut self, id: WinId) -> usize {
        let Ok(n) = self.wins.get(id).map(Window::nranks) else {
            return 0;
        };
        let mut served = 0;
        for origin in 0..n {
            while self.serve_head(id, origin) {
                served += 1;
            }
        }
        served
    }

    /// Serves the request at the head of `origin`'s queue if it is complete; false if none was.
    /// The head is taken out while it is looked at, and put back if it must wait.
    fn serve_head(&mut self, id: WinId, origin: usize) -> bool {
        let Some(mut head) = self.pop_head(id, origin) else {
            return false;
        };
        if !self.arrived(&mut head) {
            self.push_head(id, origin, head);
            return false;
        }
        let Msg::Ready(msg) = &head.msg else {
            return false;
        };
        let decoded = match Request::decode(msg) {
            Ok(d) => d,
            Err(e) => {
                self.note_error(id, origin, e.class);
                return true;
            }
        };
        let inline = &msg[decoded.data.clone()];
        let Some(data) = self.head_data(id, origin, &mut head.data, inline, &decoded) else {
            self.push_head(id, origin, head);
            return false;
        };
        let outcome = data.and_then(|own| {
            let bytes = own.as_deref().unwrap_or(inline);
            self.execute(id, origin, &decoded, bytes)
        });
        if let Err(e) = outcome {
            self.note_error(id, origin, e.class);
            self.answer_failed(id, origin, &decoded.req);
        }
        true
    }

    /// Whether the request message has arrived whole (a large one is received first).
    fn arrived(&mut self, head: &mut Incoming) -> bool {
        if let Msg::Receiving(rid) = head.msg {
            if !self.core.requests.get(rid).is_some_and(|r| r.complete) {
                return false;
            }
            head.msg = Msg::Ready(take_owned(self, rid).unwrap_or_default());
        }
        true
    }

    /// The data of a request: `Some(Ok(None))` when it is the inline data, `Some(Ok(Some(bytes)))`
    /// when it came as a message of its own (empty when received straight into the window),
    /// `None` while that message is still arriving (its receive is posted on the first call).
    fn head_data(
        &mut self,
        id: WinId,
        origin: usize,
        posted: &mut Option<RequestId>,
        inline: &[u8],
        d: &Decoded,
    ) -> Option<Result<Option<Vec<u8>>>> {
        let carries = matches!(d.req.kind, Kind::Put | Kind::Acc | Kind::GetAcc)
            && d.req.op != crate::op::ReduceOp::NoOp;
        if !carries || inline.len() as u64 == d.req.len {
            return Some(Ok(None));
        }
        let Some(rid) = *posted else {
            return match self.post_data_recv(id, origin, d) {
                Ok(rid) => {
                    *posted = Some(rid);
                    None
                }
                Err(e) => Some(Err(e)),
            };
        };
        if !self.core.requests.get(rid).is_some_and(|r| r.complete) {
            return None;
        }
        Some(Ok(Some(take_owned(self, rid).unwrap_or_default())))
    }

    /// Posts the receive of a request's data message: straight into the window for a dense put.
    fn post_data_recv(&mut self, id: WinId, origin: usize, d: &Decoded) -> Result<RequestId> {
        let ctx = self.wins.get(id)?.ctx;
        let buf = match (d.req.kind, &d.layout) {
            (Kind::Put, None) => InBuf::User(self.target_span(id, &d.req)?),
            _ => InBuf::Owned(vec![0; d.req.len as usize]),
        };
        let rid = self.core.new_recv(buf, origin as i32, TAG_DATA, None);
        self.core.post_recv(rid, ctx, origin as i32, TAG_DATA);
        Ok(rid)
    }

    fn pop_head(&mut self, id: WinId, origin: usize) -> Option<Incoming> {
        self.wins
            .get_mut(id)
            .ok()?
            .target
            .queues
            .get_mut(origin)?
            .pop_front()
    }

    fn push_head(&mut self, id: WinId, origin: usize, head: Incoming) {
        if let Ok(w) = self.wins.get_mut(id) {
            w.target.queues[origin].push_front(head);
        }
    }

    fn note_error(&mut self, id: WinId, origin: usize, class: ErrorClass) {
        if let Ok(w) = self.wins.get_mut(id) {
            w.target.errors[origin].get_or_insert(class);
        }
    }

    /// Answers a failed request that the origin waits on (with no data).
    fn answer_failed(&mut self, id: WinId, origin: usize, req: &Request) {
        if matches!(
            req.kind,
            Kind::Get | Kind::GetAcc | Kind::Cas | Kind::Flush | Kind::Unlock | Kind::Lock
        ) {
            let _ = self.reply(id, origin, req.reply, OutBuf::Owned(Vec::new()));
        }
    }

    /// The target memory a request addresses, checked against this rank's window memory.
    fn target_span(&self, id: WinId, req: &Request) -> Result<RecvBuf> {
        let w = self.wins.get(id)?;
        let (start, span) = (req.disp, req.span as usize);
        if span == 0 {
            return Ok(RecvBuf::empty());
        }
        let outside = || {
            MpiError::new(
                ErrorClass::RmaRange,
                format!("a request touches {span} bytes at {start:#x}, outside the window"),
            )
        };
        match &w.mem {
            Memory::Private(buf) => {
                let end = start.checked_add(span as u64).ok_or_else(outside)?;
                if end > buf.len() as u64 {
                    return Err(outside());
                }
                Ok(buf.slice(start as usize, span))
            }
            Memory::Dynamic(regions) => covering(regions, start, span).ok_or_else(outside),
            Memory::Shared { .. } => Err(outside()),
        }
    }

    /// Does what a request asks.
    fn execute(&mut self, id: WinId, origin: usize, d: &Decoded, data: &[u8]) -> Result<()> {
        let req = &d.req;
        match req.kind {
            Kind::Flush => self.answer_status(id, origin, req.reply),
            Kind::Lock => {
                self.lock_or_queue(id, origin, req.exclusive, req.reply);
                Ok(())
            }
            Kind::Unlock => {
                self.release_lock(id, origin);
                self.answer_status(id, origin, req.reply)?;
                self.grant_waiting(id);
                Ok(())
            }
            _ => self.execute_data(id, origin, d, data),
        }
    }

    /// Put, get, accumulate, get-accumulate and compare-and-swap on this rank's memory.
    fn execute_data(&mut self, id: WinId, origin: usize, d: &Decoded, data: &[u8]) -> Result<()> {
        let req = &d.req;
        let mut span = self.target_span(id, req)?;
        let layout = d.layout.as_ref();
        let len = req.len as usize;
        let op = (req.op, &req.basic);
        let out = with_remote_shape(layout, req.lo, |shape| -> Result<Option<Vec<u8>>> {
            Ok(match req.kind {
                // Empty: a dense put's data message was received straight into the window.
                Kind::Put => {
                    if !data.is_empty() {
                        apply::write(&mut span, shape, data);
                    }
                    None
                }
                Kind::Get => {
                    let mut out = vec![0u8; len];
                    apply::read(&span, shape, &mut out);
                    Some(out)
                }
                Kind::Acc => {
                    apply::accumulate(&mut span, shape, op, data, false, Sharing::Private)?;
                    None
                }
                Kind::GetAcc => {
                    let input = if data.len() == len {
                        data.to_vec()
                    } else {
                        vec![0u8; len]
                    };
                    Some(apply::accumulate(
                        &mut span,
                        shape,
                        op,
                        &input,
                        true,
                        Sharing::Private,
                    )?)
                }
                Kind::Cas => {
                    let n = req.basic.size as usize;
                    if data.len() != 2 * n {
                        return Err(MpiError::new(
                            ErrorClass::Intern,
                            "malformed compare-and-swap",
                        ));
                    }
                    let (o, c) = data.split_at(n);
                    Some(apply::compare_and_swap(
                        &mut span,
                        &req.basic,
                        o,
                        c,
                        Sharing::Private,
                    )?)
                }
                _ => None,
            })
        })?;
        match out {
            Some(bytes) => self.reply(id, origin, req.reply, OutBuf::Owned(bytes)),
            None => Ok(()),
        }
    }

    /// Sends `buf` to `origin` under reply tag `tag` (fire and forget).
    fn reply(&mut self, id: WinId, origin: usize, tag: i32, buf: OutBuf) -> Result<()> {
        let rid = self.win_send(id, origin, tag, buf)?;
        self.detach(rid);
        Ok(())
    }

    /// Replies with the first error seen serving `origin` (0: none), clearing it.
    fn answer_status(&mut self, id: WinId, origin: usize, tag: i32) -> Result<()> {
        let w = self.wins.get_mut(id)?;
        let code = w.target.errors[origin].take().map_or(0, |c| c as i32);
        self.reply(id, origin, tag, OutBuf::Owned(code.to_le_bytes().to_vec()))
    }

    fn lock_or_queue(&mut self, id: WinId, origin: usize, exclusive: bool, tag: i32) {
        let Ok(w) = self.wins.get_mut(id) else { return };
        let lock = &mut w.target.lock;
        if lock.waiting.is_empty() && try_lock(lock, origin, exclusive) {
            let _ = self.answer_status(id, origin, tag);
        } else {
            lock.waiting.push_back((origin, exclusive, tag));
        }
    }

    fn release_lock(&mut self, id: WinId, origin: usize) {
        let Ok(w) = self.wins.get_mut(id) else { return };
        let lock = &mut w.target.lock;
        if lock.exclusive == Some(origin) {
            lock.exclusive = None;
        } else {
            lock.shared = lock.shared.saturating_sub(1);
        }
    }

    /// Grants waiting lock requests, in order, while they can be.
    fn grant_waiting(&mut self, id: WinId) {
        loop {
            let Ok(w) = self.wins.get_mut(id) else { return };
            let lock = &mut w.target.lock;
            let Some(&(origin, exclusive, tag)) = lock.waiting.front() else {
                return;
            };
            if !try_lock(lock, origin, exclusive) {
                return;
            }
            lock.waiting.pop_front();
            let _ = self.answer_status(id, origin, tag);
        }
    }

    /// Completes the application's requests whose transfer is done.
    pub(crate) fn settle_links(&mut self, id: WinId) {
        let Ok(w) = self.wins.get_mut(id) else { return };
        let links = std::mem::take(&mut w.origin.linked);
        let mut kept = Vec::with_capacity(links.len());
        for (transfer, user) in links {
            if self.core.requests.get(transfer).is_some_and(|r| r.complete) {
                self.core.complete(user, crate::request::Status::empty());
            } else {
                kept.push((transfer, user));
            }
        }
        if let Ok(w) = self.wins.get_mut(id) {
            w.origin.linked.extend(kept);
        }
    }
}

/// Grants a lock if it can be held now.
fn try_lock(lock: &mut LockState, origin: usize, exclusive: bool) -> bool {
    if lock.exclusive.is_some() || (exclusive && lock.shared > 0) {
        return false;
    }
    if exclusive {
        lock.exclusive = Some(origin);
    } else {
        lock.shared += 1;
    }
    true
}

/// Runs `f` with the shape a request's layout gives its span.
fn with_remote_shape<R>(layout: Option<&RemoteLayout>, lo: i64, f: impl FnOnce(&Shape) -> R) -> R {
    let shape = match layout {
        Some(l) => Shape::Typed {
            program: &l.program,
            count: l.count,
            extent: l.extent,
            origin: (lo as isize).wrapping_neg() as usize,
        },
        None => Shape::Dense,
    };
    f(&shape)
}

/// Removes a finished internal receive and returns the bytes it owned.
pub(crate) fn take_owned<T: Transport>(e: &mut Engine<T>, rid: RequestId) -> Option<Vec<u8>> {
    let req = e.core.requests.remove(rid)?;
    let bytes = req.status.bytes;
    match req.op {
        Op::Recv(r) => match r.buf {
            InBuf::Owned(mut v) => {
                v.truncate(bytes);
                Some(v)
            }
            _ => Some(Vec::new()),
        },
        _ => None,
    }
}

/// The attached memory `[start, start + span)` of a dynamic window: inside one region, or across
/// regions attached side by side (memory that is contiguous in the target's address space,
/// attached in pieces, is one range of the window to an origin).
fn covering(regions: &[RecvBuf], start: u64, span: usize) -> Option<RecvBuf> {
    let end = start.checked_add(span as u64)?;
    let holds = |r: &RecvBuf, at: u64| r.addr() as u64 <= at && at < (r.addr() + r.len()) as u64;
    let mut reach = *regions.iter().find(|r| holds(r, start))?;
    while ((reach.addr() + reach.len()) as u64) < end {
        let next = regions
            .iter()
            .find(|r| r.addr() == reach.addr() + reach.len())?;
        reach = reach.join(next)?;
    }
    reach.range((start - reach.addr() as u64) as usize, span)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_access_may_span_regions_attached_side_by_side_but_no_gap() {
        let mem: &'static mut [u8] = Box::leak(vec![0u8; 300].into_boxed_slice());
        let whole = RecvBuf::from_slice(mem);
        let base = whole.addr() as u64;
        // [0, 100) and [100, 200) side by side, then [250, 300) after a gap; attached in any order.
        let regions = [
            whole.slice(100, 100),
            whole.slice(250, 50),
            whole.slice(0, 100),
        ];
        let reach = covering(&regions, base + 50, 120).expect("two adjacent regions");
        assert_eq!((reach.addr() as u64, reach.len()), (base + 50, 120));
        assert!(
            covering(&regions, base + 150, 60).is_none(),
            "runs into the gap"
        );
        assert!(
            covering(&regions, base + 200, 10).is_none(),
            "starts in the gap"
        );
        assert_eq!(
            covering(&regions, base + 250, 50).map(|r| r.len()),
            Some(50)
        );
        assert!(
            covering(&regions, base + 250, 51).is_none(),
            "past the last region"
        );
    }
}
