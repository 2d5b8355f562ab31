//! Exchanges of byte strings that communicator creation runs inside the engine, outside the
//! schedules of application collectives: the pairwise sends and receives the nonblocking
//! constructors post ([`Engine::post_exchange`]), and the allgathers of window creation (polled,
//! [`Gathering`]) and of the constructors between jobs (connect/accept, spawn: blocking).
//!
//! The allgathers use small fixed tags on a collective context, below the tags of schedules, so
//! they can run while application collectives are in flight on the same communicator.

use crate::comm::CommId;
use crate::engine::Engine;
use crate::error::{ErrorClass, MpiError, Result};
use crate::packet::Envelope;
use crate::request::{InBuf, Op, OutBuf, RequestId, SendMode};
use reflex_base::transport::Transport;

/// Tag of [`Engine::allgather_bytes`].
const TAG_ALLGATHER_BYTES: i32 = 4;
/// One side of a pairwise exchange: where to send, whom to receive from, and how.
#[derive(Debug, Clone)]
pub(crate) struct Peer {
    /// Context of both messages.
    pub ctx: u32,
    /// World rank the message goes to.
    pub world: u32,
    /// Rank the reply is matched against (the peer's rank in its own group).
    pub rank: i32,
    /// This process's rank as the peer knows it.
    pub me: u32,
    /// Tag of both messages.
    pub tag: i32,
}

/// An exchange of equal-length byte strings among a group, posted and not yet collected.
#[derive(Debug)]
pub(crate) struct Gathering {
    /// (send, receive) with each other member, in member order.
    pending: Vec<(RequestId, RequestId)>,
    /// This process's member index, the group's size and what this process contributed.
    me: usize,
    members: usize,
    mine: Vec<u8>,
}

impl Gathering {
    /// Whether every send and receive has completed ([`Engine::collect`] then waits for nothing).
    pub(crate) fn arrived<T: Transport>(&self, e: &Engine<T>) -> bool {
        let done = |r: &RequestId| e.core.requests.get(*r).is_none_or(|q| q.complete);
        self.pending
            .iter()
            .all(|(send, recv)| done(send) && done(recv))
    }
}

impl<T: Transport> Engine<T> {
    /// Gathers one byte string from every rank of `comm` onto every rank (internal: split, dup).
    pub(crate) fn allgather_bytes(&mut self, comm: CommId, mine: Vec<u8>) -> Result<Vec<Vec<u8>>> {
        let posted = self.post_allgather_bytes(comm, mine)?;
        self.wait_until(|e| posted.arrived(e))?;
        self.collect(posted)
    }

    /// Starts [`Self::allgather_bytes`] without waiting: once [`Gathering::arrived`],
    /// [`Self::collect`] gives what it gathered.
    pub(crate) fn post_allgather_bytes(
        &mut self,
        comm: CommId,
        mine: Vec<u8>,
    ) -> Result<Gathering> {
        let c = self.comms.get(comm)?;
        if c.is_inter() {
            return Err(MpiError::new(
                ErrorClass::Comm,
                "this operation needs an intracommunicator",
            ));
        }
        let (ctx, members, rank) = (c.ctx + 1, c.group.members.clone(), c.rank as usize);
        self.post_among(ctx, &members, rank, TAG_ALLGATHER_BYTES, mine)
    }

    /// The bytes of every member of a finished [`Gathering`], indexed by member (ours included).
    pub(crate) fn collect(&mut self, g: Gathering) -> Result<Vec<Vec<u8>>> {
        let mut theirs = self.finish_exchanges(g.pending)?.into_iter();
        let mut mine = Some(g.mine);
        Ok((0..g.members)
            .map(|r| match r == g.me {
                true => mine.take().unwrap_or_default(),
                false => theirs.next().unwrap_or_default(),
            })
            .collect())
    }

    /// Sends `mine` to every other member of `members` and posts the receives of theirs, over
    /// context `ctx` where this process is member `me`; messages carry `tag` and all have
    /// `mine.len()` bytes.
    fn post_among(
        &mut self,
        ctx: u32,
        members: &[u32],
        me: usize,
        tag: i32,
        mine: Vec<u8>,
    ) -> Result<Gathering> {
        let mut pending = Vec::with_capacity(members.len());
        for (r, &world) in members.iter().enumerate().filter(|&(r, _)| r != me) {
            let peer = Peer {
                ctx,
                world,
                rank: r as i32,
                me: me as u32,
                tag,
            };
            pending.push(self.post_exchange(&peer, mine.clone(), mine.len())?);
        }
        Ok(Gathering {
            pending,
            me,
            members: members.len(),
            mine,
        })
    }

    /// Posts the send and the receive of one pairwise exchange.
    pub(crate) fn post_exchange(
        &mut self,
        peer: &Peer,
        mine: Vec<u8>,
        their_len: usize,
    ) -> Result<(RequestId, RequestId)> {
        let send = self.post_bytes(peer, mine)?;
        Ok((send, self.expect_bytes(peer, their_len)))
    }

    /// Starts sending `mine` to `peer`.
    pub(crate) fn post_bytes(&mut self, peer: &Peer, mine: Vec<u8>) -> Result<RequestId> {
        let env = Envelope {
            ctx: peer.ctx,
            src: peer.me,
            tag: peer.tag,
            len: mine.len() as u64,
            sreq: 0,
            flags: 0,
        };
        let out = OutBuf::Owned(mine);
        self.start_send(out, peer.world as usize, env, SendMode::Standard, None)
    }

    /// Posts the receive of `len` bytes from `peer`.
    pub(crate) fn expect_bytes(&mut self, peer: &Peer, len: usize) -> RequestId {
        let buf = InBuf::Owned(vec![0; len]);
        let recv = self.core.new_recv(buf, peer.rank, peer.tag, None);
        self.core.post_recv(recv, peer.ctx, peer.rank, peer.tag);
        recv
    }

    /// Sends `outgoing[r]` to member `r` of `comm` where it is `Some` and receives
    /// `incoming[r]` bytes from member `r` where that is `Some` (ours moves locally), on the
    /// collective context with `tag`. The result holds what came from each member.
    pub(crate) fn exchange_some(
        &mut self,
        comm: CommId,
        tag: i32,
        mut outgoing: Vec<Option<Vec<u8>>>,
        incoming: &[Option<usize>],
    ) -> Result<Vec<Option<Vec<u8>>>> {
        let c = self.comms.get(comm)?;
        let (ctx, members, me) = (c.ctx + 1, c.group.members.clone(), c.rank as usize);
        let peer = |r: usize| Peer {
            ctx,
            world: members[r],
            rank: r as i32,
            me: me as u32,
            tag,
        };
        let mut sends = Vec::new();
        for (r, out) in outgoing.iter_mut().enumerate().filter(|&(r, _)| r != me) {
            if let Some(bytes) = out.take() {
                sends.push(self.post_bytes(&peer(r), bytes)?);
            }
        }
        let mut recvs = Vec::new();
        for (r, len) in incoming.iter().enumerate().filter(|&(r, _)| r != me) {
            if let Some(len) = *len {
                recvs.push((r, self.expect_bytes(&peer(r), len)));
            }
        }
        let mut got: Vec<Option<Vec<u8>>> = vec![None; members.len()];
        if incoming.get(me).copied().flatten().is_some() {
            got[me] = outgoing.get_mut(me).and_then(Option::take);
        }
        for (r, id) in recvs {
            got[r] = Some(self.wait_owned(id)?);
        }
        for id in sends {
            self.wait(id)?;
        }
        Ok(got)
    }

    /// Waits for posted exchanges; returns what each received, in order.
    fn finish_exchanges(&mut self, pending: Vec<(RequestId, RequestId)>) -> Result<Vec<Vec<u8>>> {
        let mut got = Vec::with_capacity(pending.len());
        for &(_, recv) in &pending {
            got.push(self.wait_owned(recv)?);
        }
        for (send, _) in pending {
            self.wait(send)?;
        }
        Ok(got)
    }

    /// Waits for an internal receive into an owned buffer and returns the buffer.
    fn wait_owned(&mut self, id: RequestId) -> Result<Vec<u8>> {
        self.wait_until(|e| e.core.requests.get(id).is_none_or(|r| r.complete))?;
        self.take_owned(id)
    }

    /// The buffer of a completed internal receive (the request is dropped).
    pub(crate) fn take_owned(&mut self, id: RequestId) -> Result<Vec<u8>> {
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
