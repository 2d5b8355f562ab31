//! Collective operations over point-to-point messages (the foundation's correct, simple versions).
//!
//! Collective traffic uses the communicator's second context id (`ctx + 1`), so it never matches
//! application messages. Algorithms: dissemination barrier (⌈log2 n⌉ rounds), binomial-tree
//! broadcast and reduce (a fixed tree shape, so results are reproducible run to run), reduce+bcast
//! allreduce (every rank receives the root's bits, so results are identical everywhere), linear
//! gather and gather+bcast allgather. The collectives issue replaces these with shared-memory
//! algorithms; the calls and their checks stay.

use crate::comm::{Comm, CommId};
use crate::datatype::Datatype;
use crate::engine::Engine;
use crate::error::{ErrorClass, MpiError, Result};
use crate::op::{self, ReduceOp};
use crate::packet::Envelope;
use crate::request::{InBuf, Op, OutBuf, RequestId, SendMode};
use reflex_base::buf::{RecvBuf, SendBuf};
use reflex_base::transport::Transport;

const TAG_BARRIER: i32 = 1;
const TAG_BCAST: i32 = 2;
const TAG_REDUCE: i32 = 3;
const TAG_GATHER: i32 = 4;
const TAG_ALLTOALL: i32 = 5;

/// The parts of a communicator a collective needs, copied so the engine can be borrowed mutably.
#[derive(Debug, Clone)]
pub(crate) struct CollComm {
    ctx: u32,
    rank: usize,
    size: usize,
    members: std::sync::Arc<[u32]>,
}

impl CollComm {
    fn of(comm: &Comm) -> Self {
        Self {
            ctx: comm.ctx + 1,
            rank: comm.rank as usize,
            size: comm.size(),
            members: comm.group.members.clone(),
        }
    }
}

fn check_root(root: i32, c: &CollComm) -> Result<usize> {
    if root < 0 || root as usize >= c.size {
        return Err(MpiError::new(
            ErrorClass::Root,
            format!(
                "root {root} is out of range for a communicator of size {}",
                c.size
            ),
        ));
    }
    Ok(root as usize)
}

impl<T: Transport> Engine<T> {
    pub(crate) fn coll_comm(&self, comm: CommId) -> Result<CollComm> {
        Ok(CollComm::of(self.comms.get(comm)?))
    }

    fn coll_isend(
        &mut self,
        c: &CollComm,
        dest: usize,
        tag: i32,
        buf: OutBuf,
    ) -> Result<RequestId> {
        let env = Envelope {
            ctx: c.ctx,
            src: c.rank as u32,
            tag,
            len: buf.len() as u64,
            sreq: 0,
            flags: 0,
        };
        self.start_send(buf, c.members[dest] as usize, env, SendMode::Standard, None)
    }

    fn coll_irecv(&mut self, c: &CollComm, src: usize, tag: i32, buf: InBuf) -> RequestId {
        let id = self.core.new_recv(buf, src as i32, tag, None);
        self.core.post_recv(id, c.ctx, src as i32, tag);
        id
    }

    /// Waits for an internal receive and returns its buffer (owned buffers) after checking its status.
    fn coll_wait_recv(&mut self, id: RequestId) -> Result<Option<Vec<u8>>> {
        self.wait_until(|e| e.core.requests.get(id).is_none_or(|r| r.complete))?;
        let req = self
            .core
            .requests
            .remove(id)
            .expect("internal request exists");
        if let Some(err) = req.status.error.map(|e| *e) {
            return Err(MpiError::new(
                err.class,
                format!("collective arguments differ across ranks: {}", err.message),
            ));
        }
        match req.op {
            Op::Recv(recv) => match recv.buf {
                InBuf::Owned(v) => Ok(Some(v)),
                _ => Ok(None),
            },
            _ => Ok(None),
        }
    }

    fn coll_wait_send(&mut self, id: RequestId) -> Result<()> {
        self.wait(id).map(|_| ())
    }

    /// `MPI_Barrier`: dissemination, ⌈log2 n⌉ rounds of one send and one receive.
    pub fn barrier(&mut self, comm: CommId) -> Result<()> {
        let c = self.coll_comm(comm)?;
        let mut dist = 1;
        while dist < c.size {
            let to = (c.rank + dist) % c.size;
            let from = (c.rank + c.size - dist) % c.size;
            let r = self.coll_irecv(&c, from, TAG_BARRIER, InBuf::Owned(Vec::new()));
            let s = self.coll_isend(&c, to, TAG_BARRIER, OutBuf::Owned(Vec::new()))?;
            self.coll_wait_send(s)?;
            self.coll_wait_recv(r)?;
            dist *= 2;
        }
        Ok(())
    }

    /// `MPI_Bcast`: binomial tree from `root`; every rank's `buf` holds `count` elements of `dt`.
    pub fn bcast(
        &mut self,
        buf: RecvBuf,
        count: usize,
        dt: Datatype,
        root: i32,
        comm: CommId,
    ) -> Result<()> {
        let c = self.coll_comm(comm)?;
        let root = check_root(root, &c)?;
        let len = dt.contiguous_span(count)?;
        self.bcast_bytes(&c, buf.slice(0, len), root, TAG_BCAST)
    }

    fn bcast_bytes(&mut self, c: &CollComm, buf: RecvBuf, root: usize, tag: i32) -> Result<()> {
        let rel = (c.rank + c.size - root) % c.size;
        let mut mask = 1;
        while mask < c.size {
            if rel & mask != 0 {
                let parent = (rel - mask + root) % c.size;
                let r = self.coll_irecv(c, parent, tag, InBuf::User(buf));
                self.coll_wait_recv(r)?;
                break;
            }
            mask <<= 1;
        }
        let mut sends = Vec::new();
        mask >>= 1;
        while mask > 0 {
            if rel + mask < c.size {
                let child = (rel + mask + root) % c.size;
                sends.push(self.coll_isend(c, child, tag, OutBuf::User(buf.as_send()))?);
            }
            mask >>= 1;
        }
        for s in sends {
            self.coll_wait_send(s)?;
        }
        Ok(())
    }

    /// `MPI_Reduce`: binomial tree towards `root`. `send = None` is `MPI_IN_PLACE` (root only: the
    /// root's contribution is already in `recv`).
    #[allow(clippy::too_many_arguments)] // the MPI call's own parameter list
    pub fn reduce(
        &mut self,
        send: Option<SendBuf>,
        recv: RecvBuf,
        count: usize,
        dt: Datatype,
        op: ReduceOp,
        root: i32,
        comm: CommId,
    ) -> Result<()> {
        let c = self.coll_comm(comm)?;
        let root = check_root(root, &c)?;
        let len = dt.contiguous_span(count)?;
        let basic = dt
            .basic()
            .ok_or_else(|| MpiError::new(ErrorClass::Type, "reductions need a basic datatype"))?;
        let mine = match send {
            Some(s) => s.as_slice()[..len].to_vec(),
            None => recv.as_slice()[..len].to_vec(),
        };
        let rel = (c.rank + c.size - root) % c.size;
        let mut acc = mine;
        let mut mask = 1;
        while mask < c.size {
            if rel & mask != 0 {
                let parent = (rel - mask + root) % c.size;
                let s = self.coll_isend(&c, parent, TAG_REDUCE, OutBuf::Owned(acc))?;
                self.coll_wait_send(s)?;
                return Ok(());
            }
            if rel + mask < c.size {
                let child = (rel + mask + root) % c.size;
                let r = self.coll_irecv(&c, child, TAG_REDUCE, InBuf::Owned(vec![0; len]));
                let mut theirs = self.coll_wait_recv(r)?.expect("owned buffer");
                // acc covers lower relative ranks than theirs: theirs = acc op theirs.
                op::apply(op, &basic, &mut theirs, &acc)?;
                acc = theirs;
            }
            mask <<= 1;
        }
        let mut out = recv;
        out.as_mut_slice()[..len].copy_from_slice(&acc);
        Ok(())
    }

    /// `MPI_Allreduce`: reduce to rank 0, then broadcast its bits (identical on every rank).
    #[allow(clippy::too_many_arguments)] // the MPI call's own parameter list
    pub fn allreduce(
        &mut self,
        send: Option<SendBuf>,
        recv: RecvBuf,
        count: usize,
        dt: Datatype,
        op: ReduceOp,
        comm: CommId,
    ) -> Result<()> {
        self.reduce(send, recv, count, dt.clone(), op, 0, comm)?;
        let c = self.coll_comm(comm)?;
        let len = dt.contiguous_span(count)?;
        self.bcast_bytes(&c, recv.slice(0, len), 0, TAG_BCAST)
    }

    /// `MPI_Gather`: every rank's `scount` elements land in rank order in the root's `recv`.
    /// `send = None` is `MPI_IN_PLACE` at the root.
    #[allow(clippy::too_many_arguments)] // the MPI call's own parameter list
    pub fn gather(
        &mut self,
        send: Option<(SendBuf, usize, Datatype)>,
        recv: RecvBuf,
        rcount: usize,
        rdt: Datatype,
        root: i32,
        comm: CommId,
    ) -> Result<()> {
        let c = self.coll_comm(comm)?;
        let root = check_root(root, &c)?;
        if c.rank != root {
            let (buf, count, dt) = send.ok_or_else(|| {
                MpiError::new(ErrorClass::Buffer, "MPI_IN_PLACE is only valid at the root")
            })?;
            let len = dt.contiguous_span(count)?;
            let s = self.coll_isend(&c, root, TAG_GATHER, OutBuf::User(buf.slice(0, len)))?;
            return self.coll_wait_send(s);
        }
        let block = rdt.contiguous_span(rcount)?;
        if let Some((buf, count, dt)) = send {
            let len = dt.contiguous_span(count)?;
            let mut mine = recv.slice(root * block, block);
            let n = len.min(block);
            mine.as_mut_slice()[..n].copy_from_slice(&buf.as_slice()[..n]);
        }
        let mut pending = Vec::new();
        for r in (0..c.size).filter(|&r| r != root) {
            pending.push(self.coll_irecv(
                &c,
                r,
                TAG_GATHER,
                InBuf::User(recv.slice(r * block, block)),
            ));
        }
        for r in pending {
            self.coll_wait_recv(r)?;
        }
        Ok(())
    }

    /// `MPI_Allgather`: gather to rank 0, then broadcast the whole buffer.
    #[allow(clippy::too_many_arguments)] // the MPI call's own parameter list
    pub fn allgather(
        &mut self,
        send: Option<(SendBuf, usize, Datatype)>,
        recv: RecvBuf,
        rcount: usize,
        rdt: Datatype,
        comm: CommId,
    ) -> Result<()> {
        let c = self.coll_comm(comm)?;
        let block = rdt.contiguous_span(rcount)?;
        // In place: this rank's block already sits in `recv`; non-roots send it from there.
        let mine = match send {
            Some(s) => Some(s),
            None if c.rank == 0 => None,
            None => Some((
                recv.slice(c.rank * block, block).as_send(),
                rcount,
                rdt.clone(),
            )),
        };
        self.gather(mine, recv, rcount, rdt, 0, comm)?;
        self.bcast_bytes(&c, recv.slice(0, block * c.size), 0, TAG_BCAST)
    }

    /// `MPI_Alltoall` on dense blocks of `block` bytes: block `r` of `send` goes to rank `r`, and
    /// rank `r`'s block lands at block `r` of `recv`. Every receive is posted before any send
    /// (pairwise exchange, no ordering between peers needed). `send = None` is `MPI_IN_PLACE`.
    pub fn alltoall(
        &mut self,
        send: Option<SendBuf>,
        recv: RecvBuf,
        block: usize,
        comm: CommId,
    ) -> Result<()> {
        let c = self.coll_comm(comm)?;
        let total = block
            .checked_mul(c.size)
            .filter(|&t| t <= recv.len())
            .ok_or_else(|| {
                MpiError::new(ErrorClass::Buffer, "alltoall receive buffer is too small")
            })?;
        // In place: what goes out is the receive buffer's current contents.
        let staged: Option<Vec<u8>> = send.is_none().then(|| recv.as_slice()[..total].to_vec());
        let outgoing = |r: usize| match (&send, &staged) {
            (Some(s), _) => OutBuf::User(s.slice(r * block, block)),
            (None, Some(v)) => OutBuf::Owned(v[r * block..(r + 1) * block].to_vec()),
            (None, None) => OutBuf::Owned(Vec::new()),
        };
        if let Some(s) = &send {
            let mut mine = recv.slice(c.rank * block, block);
            let n = block.min(s.len().saturating_sub(c.rank * block));
            mine.as_mut_slice()[..n].copy_from_slice(&s.slice(c.rank * block, n).as_slice()[..n]);
        }
        let peers: Vec<usize> = (1..c.size).map(|k| (c.rank + k) % c.size).collect();
        let recvs: Vec<RequestId> = peers
            .iter()
            .map(|&r| {
                let into = InBuf::User(recv.slice(r * block, block));
                self.coll_irecv(&c, r, TAG_ALLTOALL, into)
            })
            .collect();
        let mut sends = Vec::with_capacity(peers.len());
        for &r in &peers {
            sends.push(self.coll_isend(&c, r, TAG_ALLTOALL, outgoing(r))?);
        }
        for id in recvs {
            self.coll_wait_recv(id)?;
        }
        for id in sends {
            self.coll_wait_send(id)?;
        }
        Ok(())
    }

    /// Gathers one byte string from every rank of `comm` onto every rank (internal: split, dup).
    pub(crate) fn allgather_bytes(&mut self, comm: CommId, mine: Vec<u8>) -> Result<Vec<Vec<u8>>> {
        let c = self.coll_comm(comm)?;
        self.exchange_among(c.ctx, &c.members, c.rank, TAG_GATHER, &mine)
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
        let c = CollComm {
            ctx,
            rank: me,
            size: members.len(),
            members: members.into(),
        };
        let mut sends = Vec::with_capacity(c.size);
        let mut recvs = Vec::with_capacity(c.size);
        for r in (0..c.size).filter(|&r| r != me) {
            sends.push(self.coll_isend(&c, r, tag, OutBuf::Owned(mine.to_vec()))?);
            recvs.push((
                r,
                self.coll_irecv(&c, r, tag, InBuf::Owned(vec![0; mine.len()])),
            ));
        }
        let mut all = vec![mine.to_vec(); c.size];
        for (r, id) in recvs {
            all[r] = self.coll_wait_recv(id)?.expect("owned buffer");
        }
        for s in sends {
            self.coll_wait_send(s)?;
        }
        Ok(all)
    }
}
