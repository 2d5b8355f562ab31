//! Partitioned point-to-point communication (MPI-4.0 chapter 4): `MPI_Psend_init`,
//! `MPI_Precv_init`, `MPI_Pready*`, `MPI_Parrived`, built on ordinary internal messages.
//!
//! A partitioned request is a persistent request (its slab entry carries the
//! [`Persistent::Part`] marker) whose state lives here, keyed by its id. All its traffic uses the
//! communicator's collective context (`ctx + 1`) with negative tags, which neither user messages
//! (tags `0..=MPI_TAG_UB`) nor collective schedules (positive tags) use, so it never matches an
//! ordinary receive.
//!
//! Matching happens once, at initialisation: `MPI_Precv_init` sends the source an *announcement*
//! (its partition count, partition size and a fresh block of data tags) tagged with the user's
//! tag, and `MPI_Psend_init` posts the receive for it. Per-pair FIFO order makes the k-th
//! partitioned receive of (comm, source, tag) meet the k-th partitioned send, as MPI-4.0 §4.2.2
//! requires. Data then travels as one message per receive partition (see [`cover`]): the
//! receiver posts one receive per partition at each `MPI_Start`, straight into its buffer, and
//! the sender sends a piece as soon as the send partitions covering it are ready (directly from
//! the application's buffer when the piece is whole elements, else packed). Partition counts may
//! differ between the two sides; only the total size must agree.
//!
//! An active partitioned request is advanced by progress with the collective schedules
//! ([`Engine::advance_partitioned`]): the sender takes the announcement in when it arrives and
//! sends what was marked ready before, either side completes once its messages have.

pub(crate) mod cover;
mod progress;

use crate::comm::CommId;
use crate::datatype::Datatype;
use crate::engine::Engine;
use crate::error::{ErrorClass, MpiError, Result};
use crate::p2p::bad_request;
use crate::packet::Envelope;
use crate::request::{InBuf, Op, OutBuf, Persistent, RequestId, SendMode, Status, PROC_NULL};
use cover::Split;
use reflex_base::buf::{RecvBuf, SendBuf};
use reflex_base::transport::Transport;
use std::collections::HashMap;

/// Tags of announcements: the user's tag (`0..2^30`) above `i32::MIN`.
const ANNOUNCE_TAG: i32 = i32::MIN;
/// Tags of data pieces: `DATA_TAG + (base + j) % DATA_SPAN`, from -2^30 up to -3 (never
/// `ANY_TAG`).
const DATA_TAG: i32 = -(1 << 30);
const DATA_SPAN: u32 = (1 << 30) - 2;
/// Bytes of an announcement: partitions, partition bytes, tag base (little-endian u64s).
const ANNOUNCE_LEN: usize = 24;

/// The partitioned requests of this process.
#[derive(Debug, Default)]
pub(crate) struct Parts {
    table: HashMap<u32, Part>,
    /// The next free data tag (receivers take blocks of their partition count).
    next_base: u32,
}

/// What both sides know of a partitioned request.
#[derive(Debug)]
struct Part {
    /// Context of the traffic and this process's rank as a sender in it.
    ctx: u32,
    me: u32,
    /// The peer's rank in the communicator (or `PROC_NULL`) and in the world.
    peer: i32,
    peer_world: usize,
    tag: i32,
    dt: Datatype,
    /// Elements per partition, and partitions.
    count: usize,
    split: Split,
    side: Side,
}

#[derive(Debug)]
enum Side {
    Send(Sender),
    Recv(Receiver),
}

#[derive(Debug)]
struct Sender {
    buf: SendBuf,
    /// The receive of the announcement, until it arrives.
    announcement: Option<RequestId>,
    /// The receiver's partitioning and data tags, once announced.
    peer: Option<(Split, u32)>,
    /// This round: partitions marked ready, pieces sent, sends in flight.
    ready: Vec<bool>,
    sent: Vec<bool>,
    inflight: Vec<RequestId>,
}

#[derive(Debug)]
struct Receiver {
    buf: RecvBuf,
    base: u32,
    /// This round: the receive of each partition, and whether it arrived.
    posted: Vec<Option<RequestId>>,
    arrived: Vec<bool>,
    bytes: usize,
    error: Option<Box<MpiError>>,
}

fn data_tag(base: u32, j: usize) -> i32 {
    DATA_TAG + ((base as u64 + j as u64) % u64::from(DATA_SPAN)) as i32
}

/// The buffer of elements `[first, first + n)` of a typed buffer `whole` that holds `total`
/// elements of `dt` (both as [`Datatype::span`] wraps them).
fn elements(dt: &Datatype, total: usize, first: usize, n: usize) -> Result<(usize, usize)> {
    let (lo_all, _) = dt.span(total)?;
    let (lo, len) = dt.span(n)?;
    if len == 0 {
        return Ok((0, 0));
    }
    let start = (first as isize)
        .checked_mul(dt.extent())
        .and_then(|s| s.checked_add(lo))
        .and_then(|s| s.checked_sub(lo_all))
        .and_then(|s| usize::try_from(s).ok())
        .ok_or_else(|| MpiError::new(ErrorClass::Intern, "partition outside its buffer"))?;
    Ok((start, len))
}

impl<T: Transport> Engine<T> {
    /// The checks and the common part of both init calls.
    #[allow(clippy::too_many_arguments)] // the MPI call's own parameter list
    fn part_new(
        &mut self,
        partitions: i32,
        count: usize,
        dt: Datatype,
        peer: i32,
        tag: i32,
        comm: CommId,
        side: Side,
    ) -> Result<RequestId> {
        let parts = usize::try_from(partitions)
            .ok()
            .filter(|&p| p >= 1 && p as u64 <= u64::from(DATA_SPAN))
            .ok_or_else(|| {
                MpiError::new(
                    ErrorClass::Arg,
                    format!("partitions is {partitions}; it must be at least 1"),
                )
            })?;
        let bytes = dt.packed_len(count)?;
        Split { parts, bytes }.total_checked()?;
        let c = self.comms.get(comm)?;
        c.check_rank(peer, "peer")?;
        let peer_world = if peer == PROC_NULL {
            usize::MAX
        } else {
            c.world_of(peer as usize)
        };
        let part = Part {
            ctx: c.ctx + 1,
            me: c.rank,
            peer,
            peer_world,
            tag,
            dt,
            count,
            split: Split { parts, bytes },
            side,
        };
        let id = self.insert_persistent(Persistent::Part);
        self.parts.table.insert(id.0, part);
        Ok(id)
    }

    /// `MPI_Psend_init`: `partitions` partitions of `count` elements of `dt` from `buf`.
    #[allow(clippy::too_many_arguments)] // the MPI call's own parameter list
    pub fn psend_init(
        &mut self,
        buf: SendBuf,
        partitions: i32,
        count: usize,
        dt: Datatype,
        dest: i32,
        tag: i32,
        comm: CommId,
    ) -> Result<RequestId> {
        let sender = Sender {
            buf,
            announcement: None,
            peer: None,
            ready: Vec::new(),
            sent: Vec::new(),
            inflight: Vec::new(),
        };
        let id = self.part_new(partitions, count, dt, dest, tag, comm, Side::Send(sender))?;
        let part = &self.parts.table[&id.0];
        if part.peer != PROC_NULL {
            let (ctx, peer, tag) = (part.ctx, part.peer, ANNOUNCE_TAG + part.tag);
            let rid = self
                .core
                .new_recv(InBuf::Owned(vec![0; ANNOUNCE_LEN]), peer, tag, None);
            self.core.post_recv(rid, ctx, peer, tag);
            if let Some(Side::Send(s)) = self.parts.table.get_mut(&id.0).map(|p| &mut p.side) {
                s.announcement = Some(rid);
            }
        }
        Ok(id)
    }

    /// `MPI_Precv_init`: `partitions` partitions of `count` elements of `dt` into `buf`.
    #[allow(clippy::too_many_arguments)] // the MPI call's own parameter list
    pub fn precv_init(
        &mut self,
        buf: RecvBuf,
        partitions: i32,
        count: usize,
        dt: Datatype,
        source: i32,
        tag: i32,
        comm: CommId,
    ) -> Result<RequestId> {
        let base = self.parts.next_base;
        let all = count.saturating_mul(usize::try_from(partitions).unwrap_or(0));
        crate::p2p::check_no_overlap(all, &dt)?;
        let receiver = Receiver {
            buf,
            base,
            posted: Vec::new(),
            arrived: Vec::new(),
            bytes: 0,
            error: None,
        };
        let id = self.part_new(
            partitions,
            count,
            dt,
            source,
            tag,
            comm,
            Side::Recv(receiver),
        )?;
        let part = &self.parts.table[&id.0];
        let (split, peer_world) = (part.split, part.peer_world);
        let env = part.envelope(ANNOUNCE_TAG + part.tag, ANNOUNCE_LEN);
        let next = (u64::from(base) + split.parts as u64) % u64::from(DATA_SPAN);
        self.parts.next_base = next as u32;
        if part.peer == PROC_NULL {
            return Ok(id);
        }
        let mut note = Vec::with_capacity(ANNOUNCE_LEN);
        for v in [split.parts as u64, split.bytes as u64, u64::from(base)] {
            note.extend_from_slice(&v.to_le_bytes());
        }
        let mode = SendMode::Standard;
        let rid = self.start_send(OutBuf::Owned(note), peer_world, env, mode, None)?;
        self.forget(rid);
        Ok(id)
    }

    /// `MPI_Start` of partitioned request `id` (active already checked).
    pub(crate) fn part_start(&mut self, id: RequestId) -> Result<()> {
        let mut part = self
            .parts
            .table
            .remove(&id.0)
            .ok_or_else(|| bad_request(id))?;
        let started = self.part_begin(&mut part);
        let null = part.peer == PROC_NULL;
        self.parts.table.insert(id.0, part);
        started?;
        self.core.install(Some(id), Op::Null);
        if null {
            self.core.complete(id, Status::from_proc_null());
        } else {
            self.colls.push(id);
        }
        Ok(())
    }

    /// Resets the round of `part`: a receiver posts one receive per partition.
    fn part_begin(&mut self, part: &mut Part) -> Result<()> {
        let n = part.split.parts;
        match &mut part.side {
            Side::Send(s) => {
                s.ready = vec![false; n];
                s.sent = s.peer.map_or_else(Vec::new, |(r, _)| vec![false; r.parts]);
                Ok(())
            }
            Side::Recv(r) => {
                r.arrived = vec![false; n];
                r.posted = vec![None; n];
                r.bytes = 0;
                r.error = None;
                if part.peer == PROC_NULL {
                    r.arrived.fill(true);
                    return Ok(());
                }
                let (ctx, peer, count, total) = (part.ctx, part.peer, part.count, n * part.count);
                for j in 0..n {
                    let (start, len) = elements(&part.dt, total, j * count, count)?;
                    let inb = self.in_buf(r.buf.slice(start, len), count, &part.dt)?;
                    let tag = data_tag(r.base, j);
                    let rid = self.core.new_recv(inb, peer, tag, None);
                    self.core.post_recv(rid, ctx, peer, tag);
                    r.posted[j] = Some(rid);
                }
                Ok(())
            }
        }
    }

    /// `MPI_Pready`, `MPI_Pready_range` and `MPI_Pready_list`: marks `partitions` of send `id`
    /// ready (all checked before any is marked) and sends the pieces they complete.
    pub fn pready(&mut self, id: RequestId, partitions: &[i32]) -> Result<()> {
        let active = self
            .core
            .requests
            .get(id)
            .ok_or_else(|| bad_request(id))?
            .active;
        let part = self
            .parts
            .table
            .get_mut(&id.0)
            .ok_or_else(|| not_partitioned(id))?;
        let Side::Send(s) = &mut part.side else {
            return Err(MpiError::new(
                ErrorClass::Request,
                "MPI_Pready needs a partitioned send request (this one receives)",
            ));
        };
        if !active {
            return Err(MpiError::new(
                ErrorClass::Request,
                "the partitioned send is not active (MPI_Start it first)",
            ));
        }
        let n = part.split.parts;
        let mut marked = s.ready.clone();
        for &p in partitions {
            let i = usize::try_from(p).ok().filter(|&i| i < n).ok_or_else(|| {
                MpiError::new(ErrorClass::Arg, format!("partition {p} is outside 0..{n}"))
            })?;
            if std::mem::replace(&mut marked[i], true) {
                return Err(MpiError::new(
                    ErrorClass::Arg,
                    format!("partition {p} is marked ready already in this round"),
                ));
            }
        }
        s.ready = marked;
        if part.peer == PROC_NULL {
            return Ok(());
        }
        let mut part = self
            .parts
            .table
            .remove(&id.0)
            .ok_or_else(|| bad_request(id))?;
        let sent = partitions
            .iter()
            .try_for_each(|&p| self.send_pieces_of(&mut part, Some(p as usize)));
        self.parts.table.insert(id.0, part);
        sent
    }

    /// `MPI_Parrived`: whether partition `partition` of receive `id` has arrived (progressing
    /// once when it has not).
    pub fn parrived(&mut self, id: RequestId, partition: i32) -> Result<bool> {
        let req = self.core.requests.get(id).ok_or_else(|| bad_request(id))?;
        let (active, complete) = (req.active, req.complete);
        let part = self
            .parts
            .table
            .get(&id.0)
            .ok_or_else(|| not_partitioned(id))?;
        let Side::Recv(r) = &part.side else {
            return Err(MpiError::new(
                ErrorClass::Request,
                "MPI_Parrived needs a partitioned receive request (this one sends)",
            ));
        };
        if !active {
            return Err(MpiError::new(
                ErrorClass::Request,
                "the partitioned receive is not active (MPI_Start it first)",
            ));
        }
        let n = part.split.parts;
        let i = usize::try_from(partition)
            .ok()
            .filter(|&i| i < n)
            .ok_or_else(|| {
                MpiError::new(
                    ErrorClass::Arg,
                    format!("partition {partition} is outside 0..{n}"),
                )
            })?;
        if complete || r.arrived[i] {
            return Ok(true);
        }
        self.poll()?;
        Ok(partition_arrived(self, id, i))
    }

    /// Whether `id` is a partitioned request (the C layer's `MPI_Cancel`).
    pub fn is_partitioned(&self, id: RequestId) -> bool {
        self.parts.table.contains_key(&id.0)
    }

    /// Drops the state of partitioned request `id` (`MPI_Request_free`); an announcement not
    /// yet received is left to arrive.
    pub(crate) fn part_free(&mut self, id: RequestId) {
        if let Some(Part {
            side:
                Side::Send(Sender {
                    announcement: Some(rid),
                    ..
                }),
            ..
        }) = self.parts.table.remove(&id.0)
        {
            self.forget(rid);
        }
    }

    /// Lets internal request `rid` finish on its own and be released then.
    fn forget(&mut self, rid: RequestId) {
        if let Some(req) = self.core.requests.get_mut(rid) {
            req.detached = true;
            if req.complete {
                self.core.release(rid);
            }
        }
    }
}

impl Part {
    /// The envelope of a message of `len` bytes to the peer.
    fn envelope(&self, tag: i32, len: usize) -> Envelope {
        Envelope {
            ctx: self.ctx,
            src: self.me,
            tag,
            len: len as u64,
            sreq: 0,
            flags: 0,
        }
    }
}

impl Split {
    fn total_checked(self) -> Result<usize> {
        self.parts.checked_mul(self.bytes).ok_or_else(|| {
            MpiError::new(
                ErrorClass::Count,
                format!("{} partitions of {} bytes overflow", self.parts, self.bytes),
            )
        })
    }
}

/// Whether partition `i` of receive `id` has arrived: noted by progress already, or its
/// receive is complete.
fn partition_arrived<T: Transport>(e: &Engine<T>, id: RequestId, i: usize) -> bool {
    let Some(Side::Recv(r)) = e.parts.table.get(&id.0).map(|p| &p.side) else {
        return false;
    };
    let done = |rid| e.core.requests.get(rid).is_some_and(|q| q.complete);
    r.arrived[i] || r.posted[i].is_some_and(done)
}

fn not_partitioned(id: RequestId) -> MpiError {
    MpiError::new(
        ErrorClass::Request,
        format!("request {} is not a partitioned request", id.0),
    )
}
