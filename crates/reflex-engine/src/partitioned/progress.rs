//! The progress of active partitioned requests ([`Engine::advance_partitioned`], called with
//! the collective schedules): the sender takes the receiver's announcement in and sends each
//! piece once the send partitions covering it are ready; the receiver notes arrived partitions;
//! either side completes once its messages have.

use super::cover::{self, Split};
use super::{data_tag, elements, Part, Side, ANNOUNCE_LEN};
use crate::engine::Engine;
use crate::error::{ErrorClass, MpiError, Result};
use crate::p2p::bad_request;
use crate::request::{InBuf, Op, OutBuf, RequestId, SendMode, Status};
use reflex_base::transport::Transport;

impl<T: Transport> Engine<T> {
    /// Advances active partitioned request `id` (called by progress); 1 when it completed.
    pub(crate) fn advance_partitioned(&mut self, id: RequestId) -> usize {
        let Some(mut part) = self.parts.table.remove(&id.0) else {
            self.colls.retain(|&c| c != id);
            return 0;
        };
        let outcome = match part.side {
            Side::Send(_) => self.advance_send(&mut part),
            Side::Recv(_) => Ok(self.advance_recv(&mut part)),
        };
        let done = match outcome {
            Ok(done) => done,
            Err(e) => Some(Status {
                error: Some(Box::new(e)),
                ..Status::empty()
            }),
        };
        self.parts.table.insert(id.0, part);
        let Some(status) = done else {
            return 0;
        };
        self.colls.retain(|&c| c != id);
        self.core.complete(id, status);
        if self.core.requests.get(id).is_none() {
            self.part_free(id); // freed while active: released on completion
        }
        1
    }

    /// The sender's step: takes the announcement in, sends what it allows, and reports the
    /// status once every piece is sent and delivered.
    fn advance_send(&mut self, part: &mut Part) -> Result<Option<Status>> {
        let Side::Send(s) = &mut part.side else {
            return Ok(None);
        };
        if let Some(rid) = s.announcement {
            if !self.core.requests.get(rid).is_some_and(|r| r.complete) {
                return Ok(None);
            }
            s.announcement = None;
            let req = self
                .core
                .requests
                .remove(rid)
                .ok_or_else(|| bad_request(rid))?;
            let (split, base) = announced(req)?;
            s.peer = Some((split, base));
            s.sent = vec![false; split.parts];
            self.send_pieces_of(part, None)?;
        }
        let Side::Send(s) = &mut part.side else {
            return Ok(None);
        };
        let Some((peer, _)) = s.peer else {
            return Ok(None);
        };
        if s.sent.iter().any(|&x| !x) {
            return Ok(None);
        }
        let requests = &self.core.requests;
        if !s
            .inflight
            .iter()
            .all(|&r| requests.get(r).is_none_or(|r| r.complete))
        {
            return Ok(None);
        }
        let mut status = Status::empty();
        for rid in std::mem::take(&mut s.inflight) {
            if let Some(req) = self.core.requests.remove(rid) {
                status.error = status.error.or(req.status.error);
            }
        }
        if part.split.total() > peer.total() {
            status.error = Some(Box::new(MpiError::new(
                ErrorClass::Truncate,
                format!(
                    "partitioned send of {} bytes to a partitioned receive of {}",
                    part.split.total(),
                    peer.total()
                ),
            )));
        }
        Ok(Some(status))
    }

    /// Sends the pieces whose partitions are all ready: those partition `i` takes part in, or
    /// all of them (`None`). Nothing before the receiver's announcement.
    pub(super) fn send_pieces_of(&mut self, part: &mut Part, i: Option<usize>) -> Result<()> {
        let Side::Send(s) = &part.side else {
            return Ok(());
        };
        let Some((recv, base)) = s.peer else {
            return Ok(());
        };
        let candidates = match i {
            Some(i) => cover::pieces_of(recv, part.split, i),
            None => 0..recv.parts,
        };
        for j in candidates {
            let bytes = cover::piece_range(recv, part.split, j);
            let Side::Send(s) = &part.side else {
                return Ok(());
            };
            if s.sent[j] || !cover::covering(part.split, &bytes).all(|p| s.ready[p]) {
                continue;
            }
            let out = self.piece(part, &bytes)?;
            let env = part.envelope(data_tag(base, j), bytes.len());
            let rid = self.start_send(out, part.peer_world, env, SendMode::Standard, None)?;
            if let Side::Send(s) = &mut part.side {
                s.sent[j] = true;
                s.inflight.push(rid);
            }
        }
        Ok(())
    }

    /// What a piece sends: whole elements straight from the buffer, else a packed copy.
    fn piece(&mut self, part: &Part, bytes: &std::ops::Range<usize>) -> Result<OutBuf> {
        let Side::Send(s) = &part.side else {
            return Ok(OutBuf::Owned(Vec::new()));
        };
        let size = part.dt.size();
        let total = part.split.parts * part.count;
        if size > 0 && bytes.start.is_multiple_of(size) && bytes.len().is_multiple_of(size) {
            let (first, n) = (bytes.start / size, bytes.len() / size);
            let (start, len) = elements(&part.dt, total, first, n)?;
            return self.out_buf(s.buf.slice(start, len), n, &part.dt);
        }
        let mut whole = self.out_buf(s.buf, total, &part.dt)?;
        let mut v = vec![0; bytes.len()];
        whole.pack(bytes.start, &mut v, &mut self.core.stats);
        Ok(OutBuf::Owned(v))
    }

    /// The receiver's step: notes arrived partitions; the status once all have.
    fn advance_recv(&mut self, part: &mut Part) -> Option<Status> {
        let Side::Recv(r) = &mut part.side else {
            return None;
        };
        for (j, slot) in r.posted.iter_mut().enumerate() {
            let Some(rid) = *slot else { continue };
            if !self.core.requests.get(rid).is_some_and(|q| q.complete) {
                continue;
            }
            if let Some(req) = self.core.requests.remove(rid) {
                r.bytes += req.status.bytes;
                r.error = r.error.take().or(req.status.error);
            }
            *slot = None;
            r.arrived[j] = true;
        }
        if r.arrived.iter().any(|&a| !a) {
            return None;
        }
        Some(Status {
            source: part.peer,
            tag: part.tag,
            bytes: r.bytes,
            cancelled: false,
            error: r.error.take(),
        })
    }
}

/// The receiver's partitioning and data tags from its announcement.
fn announced(req: crate::request::Request) -> Result<(Split, u32)> {
    let bytes = match req.op {
        Op::Recv(op) => match op.buf {
            InBuf::Owned(v) => v,
            _ => Vec::new(),
        },
        _ => Vec::new(),
    };
    if req.status.bytes != ANNOUNCE_LEN || bytes.len() < ANNOUNCE_LEN {
        return Err(MpiError::new(
            ErrorClass::Intern,
            format!("partitioned announcement of {} bytes", req.status.bytes),
        ));
    }
    let word = |k: usize| {
        let mut b = [0; 8];
        b.copy_from_slice(&bytes[8 * k..8 * k + 8]);
        u64::from_le_bytes(b)
    };
    let split = Split {
        parts: word(0) as usize,
        bytes: word(1) as usize,
    };
    Ok((split, word(2) as u32))
}
