//! Requests: the state of every operation in flight, in a slab indexed by [`RequestId`].
//!
//! A request is created by a nonblocking call (or internally by a blocking one), advanced by the
//! progress engine as packets arrive, and released when the application completes it (wait/test) or
//! frees it. Persistent requests keep their arguments and go back to the inactive state instead of
//! being released. Slots are reused through a free list, so steady-state traffic allocates nothing.

use crate::datatype::Datatype;
use crate::error::{MpiError, Result};
pub(crate) use crate::msgbuf::{InBuf, OutBuf};
use crate::packet::Envelope;
use reflex_base::buf::{RecvBuf, SendBuf};
use std::any::Any;
use std::fmt;
use std::sync::Arc;

/// Index of a request in the engine's slab.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RequestId(pub u32);

impl RequestId {
    /// The one request that stands for every send complete from its start (an eager `MPI_Isend`
    /// that went out at once): complete, empty status, never released. Like MPICH's lightweight
    /// requests, it spares such a send a request of its own; waiting for it, testing, freeing or
    /// cancelling it behave as for a completed send of its own.
    pub const SENT: RequestId = RequestId(0);
}

/// `MPI_ANY_SOURCE` as the engine stores it in a receive pattern.
pub const ANY_SOURCE: i32 = -2;
/// `MPI_ANY_TAG` as the engine stores it in a receive pattern.
pub const ANY_TAG: i32 = -1;
/// `MPI_PROC_NULL`.
pub const PROC_NULL: i32 = -1;

/// What a completed operation reports (`MPI_Status`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// Rank of the sender in the communicator (or `PROC_NULL`).
    pub source: i32,
    /// Tag of the message (or `ANY_TAG` for a null receive).
    pub tag: i32,
    /// Bytes delivered into the receive buffer.
    pub bytes: usize,
    /// The operation was cancelled.
    pub cancelled: bool,
    /// Per-request error (e.g. truncation).
    pub error: Option<Box<MpiError>>,
}

impl Status {
    /// The empty status (MPI-3.1 §3.7.3): source `ANY_SOURCE`, tag `ANY_TAG`, count 0. Sends,
    /// null and inactive requests report it.
    pub fn empty() -> Self {
        Self {
            source: ANY_SOURCE,
            tag: ANY_TAG,
            bytes: 0,
            cancelled: false,
            error: None,
        }
    }

    /// The status of a receive from `MPI_PROC_NULL`: source `PROC_NULL`, tag `ANY_TAG`, count 0.
    pub fn from_proc_null() -> Self {
        Self {
            source: PROC_NULL,
            ..Self::empty()
        }
    }
}

/// The application's side of a generalized request (MPI-3.1 §12.2): the callbacks registered with
/// `MPI_Grequest_start`, implemented by the C layer.
///
/// The engine never calls them: they are application code, which may call MPI (and so the engine)
/// again. It hands them back when one is due, in a [`crate::Completion`] (query then free, see
/// [`crate::Completion::settle`]) or from the calls that release the request. It is `Any` so
/// that the C layer can reach its own type behind a request's [`Hooks`] again (MPICH's Fortran
/// binding marks the request's callbacks as Fortran ones after `MPI_Grequest_start`).
pub trait Generalized: Any + Send + Sync {
    /// `query_fn`: fills in the status of the completed operation.
    fn query(&self, status: &mut Status) -> Result<()>;
    /// `free_fn`: releases the application's state of the request.
    fn free(&self) -> Result<()>;
    /// `cancel_fn`: asks the application to cancel; `complete` tells whether it already completed.
    fn cancel(&self, complete: bool) -> Result<()>;
}

/// The callbacks of one generalized request (compared by identity).
#[derive(Clone)]
pub struct Hooks(pub Arc<dyn Generalized>);

impl fmt::Debug for Hooks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Hooks(..)")
    }
}

impl PartialEq for Hooks {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Hooks {}

/// Where a send stands in its protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SendPhase {
    /// Not yet handed to the transport (queued behind back-pressure, or a persistent request not started).
    Queued,
    /// Eager synchronous send delivered; waiting for SYNC_ACK.
    AwaitAck,
    /// RTS delivered; waiting for FIN (single copy) or CTS (streaming).
    AwaitReply,
    /// Streaming DATA chunks to the receiver's request `peer_req` (named by its CTS); `next` is
    /// the offset of the next chunk to queue.
    Streaming { next: usize, peer_req: u32 },
    /// Nothing left to do.
    Done,
}

/// The send flavours of MPI point-to-point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendMode {
    /// `MPI_Send`/`MPI_Isend`.
    Standard,
    /// `MPI_Ssend`: completes only once matched.
    Synchronous,
    /// `MPI_Bsend`: copied into the attached buffer, completes at once.
    Buffered,
    /// `MPI_Rsend`: the receive is known to be posted (sent like a standard send).
    Ready,
}

/// Where an `MPI_Cancel` of a send stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SendCancel {
    /// Not asked (or refused: the message was matched).
    No,
    /// CANCEL sent, its answer awaited; `finished` once the send's own protocol ended meanwhile
    /// (its completion waits for the answer, so that the request outlives every packet naming
    /// it).
    Asked { finished: bool },
}

#[derive(Debug)]
pub(crate) struct SendOp {
    pub(crate) buf: OutBuf,
    pub(crate) env: Envelope,
    pub(crate) phase: SendPhase,
    /// Bytes of the attached buffer this buffered send holds until it is on the wire.
    pub(crate) bsend_reserved: usize,
}

/// Where a receive stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RecvPhase {
    /// In the posted queue, unmatched.
    Posted,
    /// Matched a streamed rendezvous; `received` of `expected` bytes arrived.
    Streaming { received: usize, expected: usize },
    /// Matched a rendezvous copied cooperatively (`crate::coop`).
    Coop,
    /// Complete.
    Done,
}

#[derive(Debug)]
pub(crate) struct RecvOp {
    pub(crate) buf: InBuf,
    pub(crate) source: i32,
    pub(crate) tag: i32,
    pub(crate) phase: RecvPhase,
    /// The matched message carried [`crate::packet::FLAG_UPSTREAM_FAILED`].
    pub(crate) upstream_failed: bool,
}

/// Arguments a persistent request re-uses on every `MPI_Start`.
#[derive(Debug, Clone)]
pub(crate) enum Persistent {
    Send {
        buf: SendBuf,
        count: usize,
        dt: Datatype,
        dest: i32,
        tag: i32,
        comm: u32,
        mode: SendMode,
    },
    Recv {
        buf: RecvBuf,
        count: usize,
        dt: Datatype,
        source: i32,
        tag: i32,
        comm: u32,
    },
    /// A persistent collective (`MPI_Bcast_init` ...): the schedule each start runs a copy of.
    Coll(Box<crate::coll::sched::Schedule>),
    /// A partitioned send or receive (`MPI_Psend_init`, `MPI_Precv_init`): its state is kept by
    /// `crate::partitioned`, under the request's id.
    Part,
}

#[derive(Debug)]
pub(crate) enum Op {
    Send(SendOp),
    Recv(RecvOp),
    /// A collective schedule in progress.
    Coll(Box<crate::coll::sched::Schedule>),
    /// Completed at creation (PROC_NULL peers, buffered sends, inactive persistent requests).
    Null,
    /// A generalized request: the application completes it (`MPI_Grequest_complete`).
    Generalized(Hooks),
    /// A send and a receive that complete as one request (`MPI_Isendrecv`): complete when both
    /// are; its status is the receive's.
    Pair {
        send: RequestId,
        recv: RequestId,
    },
}

#[derive(Debug)]
pub(crate) struct Request {
    pub(crate) op: Op,
    pub(crate) complete: bool,
    pub(crate) status: Status,
    /// Boxed: rare, and a small request is cheaper to create and drop.
    pub(crate) persistent: Option<Box<Persistent>>,
    /// The application freed the handle; release the slot once the operation completes.
    pub(crate) detached: bool,
    /// A persistent request was started and not yet completed by a wait/test.
    pub(crate) active: bool,
    /// A send's destination, by world rank (where a CANCEL goes); kept here, in the padding
    /// after the flags, rather than in the send itself, to keep a request within 128 bytes.
    pub(crate) peer: u32,
    /// Where an `MPI_Cancel` of a send stands.
    pub(crate) cancel: SendCancel,
}

impl Request {
    pub(crate) fn new(op: Op) -> Self {
        Self {
            op,
            complete: false,
            status: Status::empty(),
            persistent: None,
            detached: false,
            active: true,
            peer: 0,
            cancel: SendCancel::No,
        }
    }

    /// Marks the request complete with `status`; true when the application freed it already
    /// (it is to be released now).
    #[inline]
    pub(crate) fn mark_complete(&mut self, status: Status) -> bool {
        self.complete = true;
        self.status = status;
        self.detached
    }

    /// A request that holds nothing of the engine's and no template: a receive into an
    /// application buffer, or an operation already done. Releasing it is dropping it.
    #[inline]
    pub(crate) fn is_plain(&self) -> bool {
        self.persistent.is_none()
            && matches!(
                self.op,
                Op::Null
                    | Op::Recv(RecvOp {
                        buf: InBuf::User(_),
                        ..
                    })
            )
    }

    pub(crate) fn completed(status: Status) -> Self {
        Self {
            op: Op::Null,
            complete: true,
            status,
            persistent: None,
            detached: false,
            active: true,
            peer: 0,
            cancel: SendCancel::No,
        }
    }
}

// A request is moved into and out of its slot: up to 128 bytes the compiler moves it with a few
// vector loads and stores instead of a call to `memcpy` (two calls per `MPI_Irecv` at 136 bytes,
// callgrind 2026-11-26).
const _: () = assert!(std::mem::size_of::<Request>() <= 128);

/// The slab of requests. Slot 0 holds [`RequestId::SENT`] for good.
#[derive(Debug)]
pub(crate) struct Requests {
    slots: Vec<Option<Request>>,
    free: Vec<u32>,
}

impl Default for Requests {
    fn default() -> Self {
        Self {
            slots: vec![Some(Request::completed(Status::empty()))],
            free: Vec::new(),
        }
    }
}

impl Requests {
    #[inline(always)] // built in its slot: a request is created per `MPI_Irecv`
    pub(crate) fn insert(&mut self, req: Request) -> RequestId {
        if let Some(i) = self.free.pop() {
            // A free slot is empty: `get_or_insert` writes it without the drop glue of an
            // assignment.
            let slot = &mut self.slots[i as usize];
            debug_assert!(slot.is_none(), "free slot {i} holds a request");
            slot.get_or_insert(req);
            RequestId(i)
        } else {
            self.slots.push(Some(req));
            RequestId(self.slots.len() as u32 - 1)
        }
    }

    /// Requests in the slab (the shared [`RequestId::SENT`] included).
    #[cfg(test)]
    pub(crate) fn live(&self) -> usize {
        self.slots.iter().filter(|s| s.is_some()).count()
    }

    pub(crate) fn get(&self, id: RequestId) -> Option<&Request> {
        self.slots.get(id.0 as usize).and_then(Option::as_ref)
    }

    /// The send operation of request `id`, if it is a send.
    pub(crate) fn send_mut(&mut self, id: RequestId) -> Option<&mut SendOp> {
        match self.get_mut(id) {
            Some(Request {
                op: Op::Send(send), ..
            }) => Some(send),
            _ => None,
        }
    }

    /// The receive operation of request `id`, if it is a receive.
    pub(crate) fn recv_mut(&mut self, id: RequestId) -> Option<&mut RecvOp> {
        match self.get_mut(id) {
            Some(Request {
                op: Op::Recv(recv), ..
            }) => Some(recv),
            _ => None,
        }
    }

    pub(crate) fn get_mut(&mut self, id: RequestId) -> Option<&mut Request> {
        self.slots.get_mut(id.0 as usize).and_then(Option::as_mut)
    }

    /// Takes a request out of its slot without freeing the slot (see [`Requests::put_back`]).
    pub(crate) fn take(&mut self, id: RequestId) -> Option<Request> {
        self.slots.get_mut(id.0 as usize)?.take()
    }

    /// Returns a request taken with [`Requests::take`] to its slot.
    pub(crate) fn put_back(&mut self, id: RequestId, req: Request) {
        self.slots[id.0 as usize] = Some(req);
    }

    /// Drops request `id` where it lies (no move out of the slab) and frees its slot.
    pub(crate) fn discard(&mut self, id: RequestId) {
        if id == RequestId::SENT {
            return;
        }
        if let Some(slot @ Some(_)) = self.slots.get_mut(id.0 as usize) {
            *slot = None;
            self.free.push(id.0);
        }
    }

    /// Frees the slot of a plain request (see [`Request::is_plain`]) whose status was taken:
    /// nothing in it owns memory, so it is forgotten instead of going through the drop glue of
    /// every request kind (half the cost of retiring a receive, callgrind 2026-11-26).
    #[inline]
    pub(crate) fn discard_plain(&mut self, id: RequestId) {
        if id == RequestId::SENT {
            return;
        }
        let Some(slot) = self.slots.get_mut(id.0 as usize) else {
            return;
        };
        match slot.take() {
            Some(req) if req.is_plain() && req.status.error.is_none() => std::mem::forget(req),
            Some(req) => drop(req),
            None => return,
        }
        self.free.push(id.0);
    }

    pub(crate) fn remove(&mut self, id: RequestId) -> Option<Request> {
        if id == RequestId::SENT {
            return None;
        }
        let req = self.slots.get_mut(id.0 as usize)?.take()?;
        self.free.push(id.0);
        Some(req)
    }
}
