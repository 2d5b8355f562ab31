//! Making communicators without blocking: `MPI_Comm_idup`, dup, split and create (of intra- and
//! intercommunicators), create_group and `MPI_Intercomm_merge` (their blocking forms wait for
//! it, so that under `MPI_THREAD_MULTIPLE` they wait without the library lock), with context ids
//! chosen safely while other communicators are being made. `MPI_Intercomm_create` draws its ids
//! the same way (`crate::comm_bridge`).
//!
//! The remaining blocking constructors (those between jobs: connect/accept, spawn, join) agree on
//! the highest "next free context id" of the members: a process's counter only grows, and a
//! blocking constructor ends before its process starts another, so the agreed ids are free
//! everywhere. A nonblocking
//! one cannot rely on that: while its exchange is in flight each process may make other
//! communicators (blocking ones, or nonblocking ones of other parents posted in another order
//! elsewhere, or from other threads), and proposals taken from the counter would collide or keep
//! missing each other.
//!
//! So these draw their ids from a region of their own, above [`HASHED_BASE`], where the counter
//! never goes: every member computes the same candidate, a slot of 4 ids chosen by hashing the
//! parent's context id, a sequence number every member agrees on (the parent's collective
//! sequence number, as for a nonblocking collective; for create_group, which only the group's
//! members call, a count of the calls with that parent, tag and group) and the attempt. Each
//! member that gets the communicator *claims* the candidate if no live communicator and no other
//! making in flight holds it there, and the members exchange one byte each (a split's color and
//! key travel with it): claimed or not. All claimed: the communicator has its ids. Otherwise
//! every member gives back its claim and they try the next candidate. The order in which they
//! are posted does not matter, since a candidate depends only on the call itself; two that want
//! the same slot at once may both fail (each holding it on a different member), but their next
//! candidates differ. A freed communicator's slot is free again. Each answer carries the
//! candidate too: members that computed different ones (calls made in different orders, an
//! erroneous program) get an error rather than different context ids. The colors of a split share the
//! slot: their communicators have no process in common.
//!
//! The exchange goes over the parent's collective context (and, on an intercommunicator, over
//! both of its contexts: the local group and the remote one), tagged like a schedule with the
//! parent's sequence number and the attempt (create_group: with the caller's tag), so any number
//! may be in flight; progress advances it like a nonblocking collective. A duplicate's handle
//! exists from the start (MPI hands it out with the request); it gets its context id when the
//! request completes and may not be used before (MPI-3.1 §6.4.2).

use crate::coll::exchange::Peer;
use crate::comm::{Comm, CommId, Comms, Group, GroupId};
use crate::comm_ops::UNDEFINED;
use crate::engine::Engine;
use crate::error::{ErrorClass, MpiError, Result};
use crate::request::{Op, RequestId, Status};
use reflex_base::transport::Transport;

/// Context ids from here up are chosen by hashing; the blocking constructors' counter stays
/// below.
pub(crate) const HASHED_BASE: u32 = 1 << 31;
/// Slots of 4 ids above [`HASHED_BASE`] (the last 4 ids are [`PENDING_CTX`]'s).
const SLOTS: u64 = (1 << 29) - 1;
/// The context id of a duplicate whose agreement is still running.
const PENDING_CTX: u32 = u32::MAX - 3;
/// Candidates tried at most (each attempt is one step tag of the parent's sequence number).
pub(crate) const MAX_ATTEMPTS: u8 = 64;

/// The communicator being made.
#[derive(Debug)]
enum Shape {
    /// A duplicate (`MPI_Comm_idup`), whose handle exists from the start.
    Dup(CommId),
    /// `MPI_Comm_split` (and, on an intercommunicator, `MPI_Comm_create`), and
    /// `MPI_Comm_split_type` with a hash of the label as the color: this process's color and
    /// key; the members' arrive with the first answers.
    Split { color: i64, key: i32 },
    /// `MPI_Comm_create` of an intracommunicator, and `MPI_Comm_create_group` (collective over
    /// the group only): the group.
    Create(Group),
    /// `MPI_Intercomm_merge`: whether this process's group goes second; the other group's
    /// choice arrives with the first answers.
    Merge { high: bool },
}

impl Shape {
    /// The (color, key) this process sends with its answers: a split's, or a merge's `high`.
    fn choice(&self) -> Option<(i64, i32)> {
        match *self {
            Shape::Split { color, key } => Some((color, key)),
            Shape::Merge { high } => Some((i64::from(high), 0)),
            _ => None,
        }
    }
}

/// A communicator in the making.
#[derive(Debug)]
pub(crate) struct PendingComm {
    shape: Shape,
    parent: CommId,
    /// The parent's context id and the collective sequence number the call took: with the
    /// attempt, they name the candidate.
    parent_ctx: u32,
    seq: u32,
    attempt: u8,
    /// This attempt's candidate, and whether this process claimed it.
    candidate: u32,
    claimed: bool,
    /// Whether this process gets a communicator (and so must claim the candidate).
    holds: bool,
    /// Every other member (of both groups), with the context and ranks to reach it by.
    peers: Vec<Peer>,
    /// The tag of every attempt (`MPI_Comm_create_group`'s, from the caller's); `None`: the
    /// parent's sequence number and the attempt, as a schedule's.
    tag: Option<i32>,
    /// The attempt's (send, receive) with each peer.
    pending: Vec<(RequestId, RequestId)>,
    /// Each member's (color, key) of a split or merge, by parent rank (an intercommunicator's
    /// remote group after its local one); empty otherwise.
    choices: Vec<(i64, i32)>,
    /// The size of the parent's local group when it is an intercommunicator.
    local_size: Option<usize>,
    /// Free the communicator once agreed: the caller gave it up ([`Engine::comm_idup_abandon`]).
    abandoned: bool,
}

/// The candidate context id of attempt `attempt` of the call with sequence number `seq` on
/// the communicator with context id `parent_ctx` (hashed: every member computes the same, and
/// different calls spread over the slots).
pub(crate) fn candidate(parent_ctx: u32, seq: u32, attempt: u8) -> u32 {
    let key = (u64::from(parent_ctx) << 32) | u64::from(seq);
    let z = mix(key ^ u64::from(attempt).wrapping_mul(0xD1B5_4A32_D192_ED03));
    HASHED_BASE + 4 * (z % SLOTS) as u32
}

/// The splitmix64 finaliser: a fixed function (the same in every process and every build).
pub(crate) fn mix(z: u64) -> u64 {
    let mut z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Comms {
    /// Claims hashed slot `ctx` for a duplicate; false if a live communicator or another
    /// duplicate in flight holds it.
    pub(crate) fn claim(&mut self, ctx: u32) -> bool {
        self.hashed.insert(ctx)
    }

    /// How many times this process made a communicator over the members with parent ranks
    /// `ranks` from the parent with context `ctx` with internal tag `tag` before (then counts
    /// this one), mixed into one number with the three (parent ranks, unlike process indexes,
    /// are the same on every member).
    fn group_call_count(&mut self, ctx: u32, tag: i32, ranks: &[u32]) -> u32 {
        let start = mix((u64::from(ctx) << 32) | u64::from(tag as u32));
        let key = ranks.iter().fold(start, |k, &r| mix(k ^ u64::from(r)));
        let count = self.group_calls.entry(key).or_insert(0);
        *count += 1;
        mix(key ^ u64::from(*count)) as u32
    }

    /// Gives back hashed slot `ctx` (a failed attempt, or a freed communicator).
    pub(crate) fn unclaim(&mut self, ctx: u32) {
        self.hashed.remove(&ctx);
    }
}

/// The other members of `c` as exchange peers (tags filled in per round): the local group over
/// its collective context, then the remote group of an intercommunicator over the inter-group
/// one.
fn peers_of(c: &Comm) -> Vec<Peer> {
    let me = c.rank;
    let local = c.group.members.iter().enumerate();
    let mut peers: Vec<Peer> = local
        .filter(|&(r, _)| r != me as usize)
        .map(|(r, &world)| Peer {
            ctx: c.local_coll_ctx(),
            world,
            rank: r as i32,
            me,
            tag: 0,
        })
        .collect();
    if let Some(remote) = &c.remote {
        peers.extend(remote.members.iter().enumerate().map(|(r, &world)| Peer {
            ctx: c.ctx + 1,
            world,
            rank: r as i32,
            me,
            tag: 0,
        }));
    }
    peers
}

impl<T: Transport> Engine<T> {
    /// `MPI_Comm_idup`: the new communicator (usable once the request completes) and the
    /// request. Its error handler and topology are the parent's; its name is empty.
    pub fn comm_idup(&mut self, parent: CommId) -> Result<(CommId, RequestId)> {
        let p = self.comms.get(parent)?;
        let placeholder = Comm {
            ctx: PENDING_CTX,
            name: String::new(),
            ..p.clone()
        };
        let new = self.comms.insert(placeholder);
        if let Some(topo) = self.comms.topos.get(&parent.0).cloned() {
            self.comms.topos.insert(new.0, topo);
        }
        match self.start_making(parent, Shape::Dup(new), true) {
            Ok(request) => Ok((new, request)),
            Err(e) => {
                let _ = self.comms.remove(new);
                Err(e)
            }
        }
    }

    /// Starts `MPI_Comm_split` of `parent`; the communicator (or `None` for `MPI_UNDEFINED`) is
    /// [`Self::take_made`]'s once the request completes. On an intercommunicator the processes
    /// of each group with a color (ordered by key) face those of the other group with the same
    /// color; one facing an empty group gets `None`.
    pub fn comm_isplit(&mut self, parent: CommId, color: i32, key: i32) -> Result<RequestId> {
        check_color(color)?;
        let color = i64::from(color);
        self.start_making(parent, Shape::Split { color, key }, color != NO_COLOR)
    }

    /// Starts `MPI_Comm_split_type`: the processes with equal labels (`None`: this process
    /// joins none) form a communicator, ordered by key, as [`Self::comm_isplit`] does with
    /// colors. A label travels as its hash ([`label_color`]), so that it fits the first answers.
    pub fn comm_isplit_label(
        &mut self,
        parent: CommId,
        label: Option<&[u8]>,
        key: i32,
    ) -> Result<RequestId> {
        let color = label.map_or(NO_COLOR, label_color);
        self.start_making(parent, Shape::Split { color, key }, label.is_some())
    }

    /// Starts `MPI_Comm_create` of `parent` over `group` (a subgroup of its local group); the
    /// communicator (`None` outside the group) is [`Self::take_made`]'s once the request
    /// completes. On an intercommunicator each group's members of its `group` face the
    /// other's: a split with one color.
    pub fn comm_icreate(&mut self, parent: CommId, group: GroupId) -> Result<RequestId> {
        let g = self.groups.get(group)?.clone();
        let p = self.comms.get(parent)?;
        check_subgroup(&g, &p.group)?;
        let mine = g.rank_of(p.group.members[p.rank as usize]);
        if p.is_inter() {
            let (color, key) = mine.map_or((UNDEFINED, 0), |r| (0, r as i32));
            return self.comm_isplit(parent, color, key);
        }
        self.start_making(parent, Shape::Create(g), mine.is_some())
    }

    /// Starts `MPI_Intercomm_merge` of intercommunicator `parent`: an intracommunicator over
    /// both groups, the group whose processes passed `high = false` first (on a tie, the group
    /// whose first member has the lower global identity: the same answer in every job); it is
    /// [`Self::take_made`]'s once the request completes.
    pub fn comm_imerge(&mut self, parent: CommId, high: bool) -> Result<RequestId> {
        self.inter(parent)?;
        self.start_making(parent, Shape::Merge { high }, true)
    }

    /// The communicator a split or create of request `request` made (`None`: this process is
    /// in none), once the request completed.
    pub fn take_made(&mut self, request: RequestId) -> Option<CommId> {
        self.made.remove(&request.0).flatten()
    }

    /// Starts `MPI_Comm_create_group`: a communicator over `group` (a subgroup of `parent`),
    /// made by the group's members only, `tag` telling concurrent calls apart; `None` to a
    /// caller outside the group. The candidates are named by the parent, the tag, the group and
    /// how many times this process made a communicator from the three before (the same count
    /// on every member: each such call is collective over the group).
    pub fn comm_icreate_group(
        &mut self,
        parent: CommId,
        group: GroupId,
        tag: i32,
    ) -> Result<Option<RequestId>> {
        let g = self.groups.get(group)?.clone();
        let p = self.intra(parent)?;
        check_subgroup(&g, &p.group)?;
        let Some(rank) = g.rank_of(self.core.me as u32) else {
            return Ok(None);
        };
        // Over the parent's context the members go by their parent ranks (unique there).
        let name = |m: u32| p.group.rank_of(m).unwrap_or(0) as u32;
        let (me, ctx, tag) = (name(g.members[rank]), p.ctx + 1, group_tag(tag));
        let peers = (g.members.iter().enumerate())
            .filter(|&(r, _)| r != rank)
            .map(|(_, &world)| Peer {
                ctx,
                world,
                rank: name(world) as i32,
                me,
                tag,
            })
            .collect();
        let ranks: Vec<u32> = g.members.iter().map(|&m| name(m)).collect();
        let seq = self.comms.group_call_count(p.ctx, tag, &ranks);
        let start = Start {
            peers,
            tag: Some(tag),
            seq,
        };
        self.start_with(parent, Shape::Create(g), true, start)
            .map(Some)
    }

    /// Posts the first attempt of making `shape` from `parent`, with the parent's members as
    /// peers; `holds`: whether this process gets a communicator.
    fn start_making(&mut self, parent: CommId, shape: Shape, holds: bool) -> Result<RequestId> {
        let peers = peers_of(self.comms.get(parent)?);
        let seq = self.comms.next_coll_seq(parent)?;
        let start = Start {
            peers,
            tag: None,
            seq,
        };
        self.start_with(parent, shape, holds, start)
    }

    fn start_with(
        &mut self,
        parent: CommId,
        shape: Shape,
        holds: bool,
        start: Start,
    ) -> Result<RequestId> {
        let p = self.comms.get(parent)?;
        let local_size = p.is_inter().then(|| p.group.size());
        let everyone = p.group.size() + p.remote.as_ref().map_or(0, Group::size);
        // Only a split and a merge gather each member's (color, key).
        let (parent_ctx, choices) = match shape.choice() {
            Some(_) => (p.ctx, vec![(0, 0); everyone]),
            None => (p.ctx, Vec::new()),
        };
        let request = self.core.install(None, Op::Null);
        let mut making = PendingComm {
            shape,
            parent,
            parent_ctx,
            seq: start.seq,
            attempt: 0,
            candidate: 0,
            claimed: false,
            holds,
            peers: start.peers,
            tag: start.tag,
            pending: Vec::new(),
            choices,
            local_size,
            abandoned: false,
        };
        if let Err(e) = self.post_round(&mut making) {
            self.core.requests.remove(request);
            return Err(e);
        }
        self.making.insert(request.0, making);
        self.colls.push(request);
        self.advance_making(request);
        Ok(request)
    }

    /// `MPI_Comm_dup`: [`Self::comm_idup`], waited for.
    pub fn comm_dup(&mut self, parent: CommId) -> Result<CommId> {
        let (new, request) = self.comm_idup(parent)?;
        match self.wait(request)?.error {
            None => Ok(new),
            Some(e) => {
                let _ = self.comms.remove(new);
                Err(*e)
            }
        }
    }

    /// Gives up duplicate `new` of request `request` (the caller failed after starting it): the
    /// agreement goes on, since the other processes take part in it, and the communicator and
    /// the request are freed when it ends.
    pub fn comm_idup_abandon(&mut self, new: CommId, request: RequestId) {
        match self.making.get_mut(&request.0) {
            Some(making) => making.abandoned = true,
            None => {
                let _ = self.comms.remove(new);
            }
        }
        let _ = self.request_free(request);
    }

    /// Claims this attempt's candidate if this process gets a communicator and it is free here,
    /// tells every peer whether it could (and, for a split, its color and key) and posts the
    /// receives of their answers.
    fn post_round(&mut self, m: &mut PendingComm) -> Result<()> {
        m.candidate = candidate(m.parent_ctx, m.seq, m.attempt);
        m.claimed = m.holds && self.comms.claim(m.candidate);
        let mut answer = vec![u8::from(m.claimed || !m.holds)];
        answer.extend(m.candidate.to_le_bytes());
        if let Some((color, key)) = m.shape.choice() {
            answer.extend(color.to_le_bytes());
            answer.extend(key.to_le_bytes());
        }
        let tag = (m.tag).unwrap_or_else(|| crate::coll::sched::schedule_tag(m.seq, m.attempt));
        for peer in &mut m.peers {
            peer.tag = tag;
        }
        for peer in &m.peers {
            let posted = self.post_exchange(peer, answer.clone(), answer.len())?;
            m.pending.push(posted);
        }
        Ok(())
    }

    /// Advances the making of request `id`: when its attempt's exchange is over, either agrees
    /// (and completes the request) or starts the next attempt. Returns the events (attempts
    /// ended).
    pub(crate) fn advance_making(&mut self, id: RequestId) -> usize {
        let Some(mut m) = self.making.remove(&id.0) else {
            self.colls.retain(|&c| c != id);
            return 0;
        };
        let done = |e: &Self, r: RequestId| e.core.requests.get(r).is_none_or(|q| q.complete);
        if !m
            .pending
            .iter()
            .all(|&(s, r)| done(self, s) && done(self, r))
        {
            self.making.insert(id.0, m);
            return 0;
        }
        match self.end_round(&mut m) {
            Ok(false) => {
                self.making.insert(id.0, m);
                1
            }
            Ok(true) => {
                let made = self.make(&m);
                self.finish_making(id, m, made)
            }
            Err(e) => self.finish_making(id, m, Err(e)),
        }
    }

    /// Collects the attempt's answers; true when every member could claim the candidate,
    /// false when the next attempt is posted.
    fn end_round(&mut self, m: &mut PendingComm) -> Result<bool> {
        let (mut all, mut agree) = (m.claimed || !m.holds, true);
        let me = self.comms.get(m.parent)?.rank as usize;
        if let Some(choice) = m.shape.choice() {
            m.choices[me] = choice;
        }
        // A peer's slot in `choices`: its rank, after the local group for the remote one.
        let remote_ctx = m.parent_ctx + 1;
        let slot = |p: &Peer| match m.local_size {
            Some(n) if p.ctx == remote_ctx => n + p.rank as usize,
            _ => p.rank as usize,
        };
        let peers: Vec<usize> = m.peers.iter().map(slot).collect();
        for ((send, recv), rank) in std::mem::take(&mut m.pending).into_iter().zip(peers) {
            self.retire(send)?;
            let answer = self.take_owned(recv)?;
            let word = |at: usize| {
                answer
                    .get(at..at + 4)
                    .map(|b| b.try_into().expect("4 bytes"))
            };
            agree &= word(1).map(u32::from_le_bytes) == Some(m.candidate);
            all &= answer.first() == Some(&1);
            let color = answer.get(5..13).map(|b| b.try_into().expect("8 bytes"));
            if let (Some(c), Some(k)) = (color, word(13)) {
                m.choices[rank] = (i64::from_le_bytes(c), i32::from_le_bytes(k));
            }
        }
        if agree && all {
            return Ok(true);
        }
        if m.claimed {
            self.comms.unclaim(m.candidate);
            m.claimed = false;
        }
        if !agree {
            return Err(MpiError::new(
                ErrorClass::Comm,
                "the processes disagree on the communicator being made (were its calls made in \
                 the same order everywhere?)",
            ));
        }
        if m.attempt + 1 == MAX_ATTEMPTS {
            return Err(MpiError::new(
                ErrorClass::Intern,
                format!("no context id was free on every member in {MAX_ATTEMPTS} attempts"),
            ));
        }
        m.attempt += 1;
        self.post_round(m)?;
        Ok(false)
    }

    /// The communicator the agreed candidate makes (the duplicate gets its context id), or
    /// `None` where this process is in none.
    fn make(&mut self, m: &PendingComm) -> Result<Option<CommId>> {
        let p = self.comms.get(m.parent)?;
        let (errhandler, me) = (p.errhandler, p.group.members[p.rank as usize]);
        let group = match &m.shape {
            Shape::Dup(new) => {
                self.comms.get_mut(*new)?.ctx = m.candidate;
                return Ok(Some(*new));
            }
            Shape::Split { color, .. } if *color == NO_COLOR => return Ok(None),
            _ if m.local_size.is_some() => return self.make_from_inter(m),
            Shape::Split { color, .. } => split_group(&p.group, &m.choices, *color),
            Shape::Create(g) => g.clone(),
            Shape::Merge { .. } => {
                return Err(MpiError::new(
                    ErrorClass::Intern,
                    "a merge of an intracommunicator",
                ))
            }
        };
        let Some(rank) = group.rank_of(me) else {
            return Ok(None);
        };
        let comm = Comm::intra(m.candidate, rank as u32, group, errhandler);
        Ok(Some(self.comms.insert(comm)))
    }

    /// What a split or merge of intercommunicator `m.parent` makes: a split's processes of
    /// each group with this process's color face the other group's (`None` facing nobody);
    /// a merge puts the group that chose `high = false` first.
    fn make_from_inter(&mut self, m: &PendingComm) -> Result<Option<CommId>> {
        let p = self.inter(m.parent)?;
        let (group, remote) = (p.group.clone(), p.peers().clone());
        let (errhandler, me) = (p.errhandler, group.members[p.rank as usize]);
        let (here, there) = m.choices.split_at(group.size());
        if let Shape::Merge { .. } = m.shape {
            let order = |g: &Group, c: &[(i64, i32)]| (c[0].0, self.global_id(g.members[0]));
            let (first, second) = match order(&group, here) < order(&remote, there) {
                true => (&group, &remote),
                false => (&remote, &group),
            };
            let members: Vec<u32> = first
                .members
                .iter()
                .chain(&*second.members)
                .copied()
                .collect();
            let rank = members.iter().position(|&w| w == me).unwrap_or(0) as u32;
            let merged = Group {
                members: members.into(),
            };
            let comm = Comm::intra(m.candidate, rank, merged, errhandler);
            return Ok(Some(self.comms.insert(comm)));
        }
        let Some((color, _)) = m.shape.choice() else {
            return Err(MpiError::new(ErrorClass::Intern, "no color to split by"));
        };
        let local = split_group(&group, here, color);
        let remote = split_group(&remote, there, color);
        match local.rank_of(me) {
            Some(rank) if remote.size() > 0 => Ok(Some(self.insert_inter(
                m.candidate,
                rank as u32,
                local,
                remote,
                errhandler,
            ))),
            _ => Ok(None),
        }
    }

    /// Completes the making of request `id` with what it made (or the error that stopped it).
    fn finish_making(
        &mut self,
        id: RequestId,
        m: PendingComm,
        made: Result<Option<CommId>>,
    ) -> usize {
        self.colls.retain(|&c| c != id);
        let (made, error) = match made {
            Ok(made) => (made, None),
            Err(e) => (None, Some(e)),
        };
        if made.is_none() && m.claimed {
            self.comms.unclaim(m.candidate); // an intercommunicator's member facing nobody
        }
        match m.shape {
            Shape::Dup(new) if m.abandoned => {
                let _ = self.comms.remove(new);
            }
            Shape::Dup(_) => {}
            _ => {
                self.made.insert(id.0, made);
            }
        }
        let status = Status {
            error: error.map(Box::new),
            ..Status::empty()
        };
        self.core.complete(id, status);
        1
    }
}

/// Where the first attempt's messages go, and the sequence number that names the candidates.
struct Start {
    peers: Vec<Peer>,
    tag: Option<i32>,
    seq: u32,
}

/// Internal tag of a `MPI_Comm_create_group` exchange with user tag `tag` (>= 0): negative, so
/// that it never meets a schedule's or an application's.
fn group_tag(tag: i32) -> i32 {
    -16 - tag
}

/// `group` must lie within the communicator whose members are `within` (`MPI_ERR_GROUP`).
fn check_subgroup(group: &Group, within: &Group) -> Result<()> {
    match group.members.iter().find(|m| within.rank_of(**m).is_none()) {
        Some(outsider) => Err(MpiError::new(
            ErrorClass::Group,
            format!("world rank {outsider} of the group is not in the communicator"),
        )),
        None => Ok(()),
    }
}

/// The color of the processes that join no communicator (`MPI_UNDEFINED`).
const NO_COLOR: i64 = UNDEFINED as i64;

/// The color of label `label` in `MPI_Comm_split_type`: a fixed 63-bit hash of its bytes (the
/// same in every process and job; never negative, so never [`NO_COLOR`]). Two different labels
/// share a color with probability 2^-63 per pair.
fn label_color(label: &[u8]) -> i64 {
    let start = mix(label.len() as u64);
    let folded = label.chunks(8).fold(start, |h, c| {
        let mut word = [0u8; 8];
        word[..c.len()].copy_from_slice(c);
        mix(h ^ u64::from_le_bytes(word))
    });
    (folded >> 1) as i64
}

/// `MPI_Comm_split`'s color: non-negative or `MPI_UNDEFINED`.
pub(crate) fn check_color(color: i32) -> Result<()> {
    if color < 0 && color != UNDEFINED {
        return Err(MpiError::new(
            ErrorClass::Arg,
            format!("split color {color} is negative and not MPI_UNDEFINED"),
        ));
    }
    Ok(())
}

/// The members of `parent` that chose `color`, by (key, parent rank).
fn split_group(parent: &Group, choices: &[(i64, i32)], color: i64) -> Group {
    let mut chosen: Vec<(i32, usize)> = (choices.iter().enumerate())
        .filter(|(_, (c, _))| *c == color)
        .map(|(r, (_, k))| (*k, r))
        .collect();
    chosen.sort_unstable();
    let members: Vec<u32> = chosen.iter().map(|&(_, r)| parent.members[r]).collect();
    Group {
        members: members.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_are_aligned_slots_above_the_counter_and_below_the_pending_id() {
        for (ctx, seq, attempt) in [(0, 0, 0), (6, 1, 0), (6, 1, 1), (u32::MAX, u32::MAX, 63)] {
            let c = candidate(ctx, seq, attempt);
            assert!(
                c >= HASHED_BASE && c + 3 < PENDING_CTX && c.is_multiple_of(4),
                "{c:#x}"
            );
        }
    }

    #[test]
    fn candidates_differ_by_parent_sequence_and_attempt() {
        let mut seen = std::collections::HashSet::new();
        for ctx in [6, 8, HASHED_BASE] {
            for seq in 0..100 {
                for attempt in 0..4 {
                    assert!(
                        seen.insert(candidate(ctx, seq, attempt)),
                        "{ctx} {seq} {attempt}"
                    );
                }
            }
        }
    }

    #[test]
    fn labels_have_distinct_non_negative_colors() {
        let labels: [&[u8]; 5] = [b"", b"\0", b"node01", b"node02", b"node01\0"];
        let colors: Vec<i64> = labels.iter().map(|l| label_color(l)).collect();
        for (i, c) in colors.iter().enumerate() {
            assert!(*c >= 0);
            assert!(!colors[..i].contains(c), "{:?}", labels[i]);
        }
        assert_eq!(label_color(b"node01"), label_color(b"node01"));
    }

    #[test]
    fn a_slot_is_claimed_once_until_given_back() {
        let mut comms = Comms::default();
        let c = candidate(6, 1, 0);
        assert!(comms.claim(c));
        assert!(!comms.claim(c));
        comms.unclaim(c);
        assert!(comms.claim(c));
    }
}
