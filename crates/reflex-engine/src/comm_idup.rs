//! `MPI_Comm_idup`: duplicating a communicator without blocking, and how its context id is
//! chosen safely while other communicators are being created.
//!
//! The blocking constructors agree on the highest "next free context id" of the members: a
//! process's counter only grows, and a blocking constructor ends before its process starts
//! another, so the agreed ids are free everywhere. A nonblocking duplicate cannot rely on that:
//! while its exchange is in flight each process may create other communicators (blocking ones,
//! or duplicates of other parents posted in another order elsewhere, or from other threads),
//! and proposals taken from the counter would collide or keep missing each other.
//!
//! So duplicates draw their ids from a region of their own, above [`HASHED_BASE`], where the
//! counter never goes: every member computes the same candidate, a slot of 4 ids chosen by
//! hashing the parent's context id, the parent's collective sequence number (which agrees on
//! every member, as for a nonblocking collective) and the attempt. Each member *claims* the
//! candidate if no live communicator and no other duplicate in flight holds it there, and the
//! members exchange one byte each: claimed or not. All claimed: the duplicate has its ids.
//! Otherwise every member gives back its claim and they try the next candidate. The order in
//! which duplicates are posted does not matter, since a candidate depends only on the
//! duplicate itself; two that want the same slot at once may both fail (each holding it on a
//! different member), but their next candidates differ. A freed communicator's slot is free
//! again.
//!
//! The exchange goes over the parent's collective context (and, on an intercommunicator, over
//! both of its contexts: the local group and the remote one), tagged like a schedule with the
//! parent's sequence number and the attempt, so any number of duplicates of one parent or of
//! several may be in flight; progress advances it like a nonblocking collective. The new
//! communicator's handle exists from the start (MPI hands it out with the request); it gets its
//! context id when the request completes and may not be used before (MPI-3.1 §6.4.2).

use crate::coll::exchange::Peer;
use crate::comm::{Comm, CommId, Comms};
use crate::engine::Engine;
use crate::error::{ErrorClass, MpiError, Result};
use crate::request::{Op, RequestId, Status};
use reflex_base::transport::Transport;

/// Context ids from here up belong to duplicates (chosen by hashing); the blocking
/// constructors' counter stays below.
pub(crate) const HASHED_BASE: u32 = 1 << 31;
/// Slots of 4 ids above [`HASHED_BASE`] (the last 4 ids are [`PENDING_CTX`]'s).
const SLOTS: u64 = (1 << 29) - 1;
/// The context id of a duplicate whose agreement is still running.
const PENDING_CTX: u32 = u32::MAX - 3;
/// Candidates tried at most (each attempt is one step tag of the parent's sequence number).
const MAX_ATTEMPTS: u8 = 64;

/// A duplicate in progress.
#[derive(Debug)]
pub(crate) struct PendingDup {
    new: CommId,
    /// The parent's context id and the collective sequence number the duplicate took: with
    /// the attempt, they name the candidate.
    parent_ctx: u32,
    seq: u32,
    attempt: u8,
    /// This attempt's candidate, and whether this process claimed it.
    candidate: u32,
    claimed: bool,
    /// Every other member (of both groups), with the context and ranks to reach it by.
    peers: Vec<Peer>,
    /// The attempt's (send, receive) with each peer.
    pending: Vec<(RequestId, RequestId)>,
    /// Free the communicator once agreed: the caller gave it up ([`Engine::comm_idup_abandon`]).
    abandoned: bool,
}

/// The candidate context id of attempt `attempt` of the duplicate with sequence number `seq`
/// of the communicator with context id `parent_ctx` (splitmix64 of the three: every member
/// computes the same, and different duplicates spread over the slots).
fn candidate(parent_ctx: u32, seq: u32, attempt: u8) -> u32 {
    let key = (u64::from(parent_ctx) << 32) | u64::from(seq);
    let mut z = key ^ u64::from(attempt).wrapping_mul(0xD1B5_4A32_D192_ED03);
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    HASHED_BASE + 4 * (z % SLOTS) as u32
}

impl Comms {
    /// Claims hashed slot `ctx` for a duplicate; false if a live communicator or another
    /// duplicate in flight holds it.
    fn claim(&mut self, ctx: u32) -> bool {
        self.hashed.insert(ctx)
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
        let (peers, parent_ctx) = (peers_of(p), p.ctx);
        let placeholder = Comm {
            ctx: PENDING_CTX,
            name: String::new(),
            ..p.clone()
        };
        let seq = self.comms.next_coll_seq(parent)?;
        let new = self.comms.insert(placeholder);
        if let Some(topo) = self.comms.topos.get(&parent.0).cloned() {
            self.comms.topos.insert(new.0, topo);
        }
        let request = self.core.install(None, Op::Null);
        let mut dup = PendingDup {
            new,
            parent_ctx,
            seq,
            attempt: 0,
            candidate: 0,
            claimed: false,
            peers,
            pending: Vec::new(),
            abandoned: false,
        };
        if let Err(e) = self.post_round(&mut dup) {
            self.core.requests.remove(request);
            let _ = self.comms.remove(new);
            return Err(e);
        }
        self.dups.insert(request.0, dup);
        self.colls.push(request);
        self.advance_dup(request);
        Ok((new, request))
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
        match self.dups.get_mut(&request.0) {
            Some(dup) => dup.abandoned = true,
            None => {
                let _ = self.comms.remove(new);
            }
        }
        let _ = self.request_free(request);
    }

    /// Claims this attempt's candidate if it is free here, tells every peer whether it did and
    /// posts the receives of their answers.
    fn post_round(&mut self, dup: &mut PendingDup) -> Result<()> {
        dup.candidate = candidate(dup.parent_ctx, dup.seq, dup.attempt);
        dup.claimed = self.comms.claim(dup.candidate);
        let tag = crate::coll::sched::schedule_tag(dup.seq, dup.attempt);
        for peer in &mut dup.peers {
            peer.tag = tag;
        }
        for peer in &dup.peers {
            let posted = self.post_exchange(peer, vec![u8::from(dup.claimed)], 1)?;
            dup.pending.push(posted);
        }
        Ok(())
    }

    /// Advances duplicate `id`: when its round's exchange is over, either agrees (and completes
    /// the request) or starts the next round. Returns the events (rounds ended).
    pub(crate) fn advance_dup(&mut self, id: RequestId) -> usize {
        let Some(mut dup) = self.dups.remove(&id.0) else {
            self.colls.retain(|&c| c != id);
            return 0;
        };
        let done = |e: &Self, r: RequestId| e.core.requests.get(r).is_none_or(|q| q.complete);
        if !dup
            .pending
            .iter()
            .all(|&(s, r)| done(self, s) && done(self, r))
        {
            self.dups.insert(id.0, dup);
            return 0;
        }
        let outcome = self.end_round(&mut dup);
        match outcome {
            Ok(false) => {
                self.dups.insert(id.0, dup);
                1
            }
            Ok(true) => self.finish_dup(id, dup, None),
            Err(e) => self.finish_dup(id, dup, Some(e)),
        }
    }

    /// Collects the attempt's answers; true when every member claimed the candidate (the
    /// communicator has its context id), false when the next attempt is posted.
    fn end_round(&mut self, dup: &mut PendingDup) -> Result<bool> {
        let mut all = dup.claimed;
        for (send, recv) in std::mem::take(&mut dup.pending) {
            self.retire(send)?;
            all &= self.take_owned(recv)?.first() == Some(&1);
        }
        if all {
            self.comms.get_mut(dup.new)?.ctx = dup.candidate;
            return Ok(true);
        }
        if dup.claimed {
            self.comms.unclaim(dup.candidate);
        }
        if dup.attempt + 1 == MAX_ATTEMPTS {
            return Err(MpiError::new(
                ErrorClass::Intern,
                format!("MPI_Comm_idup found no context id free on every member in {MAX_ATTEMPTS} attempts"),
            ));
        }
        dup.attempt += 1;
        self.post_round(dup)?;
        Ok(false)
    }

    /// Completes duplicate `id` (with `error`, if the agreement failed).
    fn finish_dup(&mut self, id: RequestId, dup: PendingDup, error: Option<MpiError>) -> usize {
        self.colls.retain(|&c| c != id);
        if dup.abandoned {
            let _ = self.comms.remove(dup.new);
        }
        let status = Status {
            error: error.map(Box::new),
            ..Status::empty()
        };
        self.core.complete(id, status);
        1
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
                c >= HASHED_BASE && c + 3 < PENDING_CTX && c % 4 == 0,
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
    fn a_slot_is_claimed_once_until_given_back() {
        let mut comms = Comms::default();
        let c = candidate(6, 1, 0);
        assert!(comms.claim(c));
        assert!(!comms.claim(c));
        comms.unclaim(c);
        assert!(comms.claim(c));
    }
}
