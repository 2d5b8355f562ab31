//! The blocking all-to-all exchange of byte strings that communicator creation runs inside the
//! engine (agreeing on context ids, splitting), outside the schedules of application collectives.
//!
//! It uses small fixed tags on the collective context, below the tags of schedules, so it can
//! run while application collectives are in flight on the same communicator.

use crate::comm::CommId;
use crate::engine::Engine;
use crate::error::{MpiError, Result};
use crate::packet::Envelope;
use crate::request::{InBuf, Op, OutBuf, RequestId, SendMode};
use reflex_base::transport::Transport;

/// Tag of [`Engine::allgather_bytes`].
const TAG_ALLGATHER_BYTES: i32 = 4;

impl<T: Transport> Engine<T> {
    /// Gathers one byte string from every rank of `comm` onto every rank (internal: split, dup).
    pub(crate) fn allgather_bytes(&mut self, comm: CommId, mine: Vec<u8>) -> Result<Vec<Vec<u8>>> {
        let c = self.comms.get(comm)?;
        let (ctx, members, rank) = (c.ctx + 1, c.group.members.clone(), c.rank as usize);
        self.exchange_among(ctx, &members, rank, TAG_ALLGATHER_BYTES, &mine)
    }

    /// Sends `mine` to every other member of `members` and receives theirs, over context `ctx`
    /// where this process is member `me`; messages carry `tag` and all have `mine.len()` bytes.
    /// The result holds every member's bytes, indexed by member (ours included).
    pub(crate) fn exchange_among(
        &mut self,
        ctx: u32,
        members: &[u32],
        me: usize,
        tag: i32,
        mine: &[u8],
    ) -> Result<Vec<Vec<u8>>> {
        let mut sends = Vec::with_capacity(members.len());
        let mut recvs = Vec::with_capacity(members.len());
        for (r, &world) in members.iter().enumerate().filter(|&(r, _)| r != me) {
            let env = Envelope {
                ctx,
                src: me as u32,
                tag,
                len: mine.len() as u64,
                sreq: 0,
                flags: 0,
            };
            let out = OutBuf::Owned(mine.to_vec());
            sends.push(self.start_send(out, world as usize, env, SendMode::Standard, None)?);
            let id = self
                .core
                .new_recv(InBuf::Owned(vec![0; mine.len()]), r as i32, tag, None);
            self.core.post_recv(id, ctx, r as i32, tag);
            recvs.push((r, id));
        }
        let mut all = vec![mine.to_vec(); members.len()];
        for (r, id) in recvs {
            all[r] = self.wait_owned(id)?;
        }
        for s in sends {
            self.wait(s)?;
        }
        Ok(all)
    }

    /// Waits for an internal receive into an owned buffer and returns the buffer.
    fn wait_owned(&mut self, id: RequestId) -> Result<Vec<u8>> {
        self.wait_until(|e| e.core.requests.get(id).is_none_or(|r| r.complete))?;
        let req = self.core.requests.remove(id);
        let req = req.ok_or_else(|| crate::p2p::bad_request(id))?;
        if let Some(err) = req.status.error {
            return Err(MpiError::new(
                err.class,
                format!(
                    "ranks disagree on a communicator operation: {}",
                    err.message
                ),
            ));
        }
        match req.op {
            Op::Recv(recv) => match recv.buf {
                InBuf::Owned(v) => Ok(v),
                _ => Ok(Vec::new()),
            },
            _ => Ok(Vec::new()),
        }
    }
}
