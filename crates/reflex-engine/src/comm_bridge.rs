//! `MPI_Intercomm_create` without blocking, so that under `MPI_THREAD_MULTIPLE` it waits
//! without the library lock (threads of one process may build intercommunicators at once).
//!
//! Only the two leaders can reach each other (over the peer communicator, under the caller's
//! tag mapped below every other internal tag); every other step runs inside a local group, over
//! its collective context with the tags of a schedule of the local communicator's sequence
//! number. The steps, each advanced by progress like a collective schedule:
//!
//! 1. the leaders swap a proposal and their group's size, then their members (as global
//!    identities, since the groups may hold processes of other jobs); the seed of the context
//!    ids is a fixed mix of both proposals;
//! 2. each leader hands its group the seed and the remote members;
//! 3. every member claims the attempt's candidate context id (a hashed slot, as in
//!    [`crate::comm_idup`]: the counter of the blocking constructors cannot be agreed on while
//!    other communicators are being made) and tells its leader; the leaders swap whether their
//!    whole group claimed it and tell their groups; when one process could not, every member
//!    gives its claim back and they try the next candidate.

use crate::coll::exchange::Peer;
use crate::coll::sched::schedule_tag;
use crate::comm::{CommId, Group};
use crate::comm_idup::{candidate, mix, MAX_ATTEMPTS};
use crate::comm_inter::leader_tag;
use crate::engine::Engine;
use crate::error::{ErrorClass, MpiError, Result};
use crate::procs::GLOBAL_ID_LEN;
use crate::request::{Op, RequestId, Status};
use reflex_base::transport::Transport;

/// Where an intercommunicator in the making stands (what its posted messages are for).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Leader: swapping (proposal, group size) with the remote leader.
    Heads,
    /// Leader: swapping the groups' members.
    Members,
    /// Other members: receiving (seed, remote size) from the leader.
    SpreadHead,
    /// Other members: receiving the remote members.
    SpreadMembers,
    /// Leader: receiving whether each member claimed the candidate; the others: telling it and
    /// receiving the outcome.
    Claims,
    /// Leader: swapping with the remote leader whether each group claimed it.
    Relay,
    /// Leader: telling its group the outcome.
    Decision,
}

/// An intercommunicator being made by `MPI_Intercomm_create`.
#[derive(Debug)]
pub(crate) struct PendingBridge {
    stage: Stage,
    /// This process's rank in the local group, the leader's, and the local group.
    rank: usize,
    leader: usize,
    group: Group,
    errhandler: i32,
    /// The local communicator's collective context and the sequence number this call took.
    local_ctx: u32,
    seq: u32,
    /// The remote leader over the peer communicator (at the local leader only).
    across: Option<Peer>,
    proposal: u32,
    seed: u64,
    remote_size: usize,
    remote: Vec<u32>,
    attempt: u8,
    candidate: u32,
    claimed: bool,
    /// Whether the outcome of the attempt is known to be "all claimed" (leader: its group's).
    all: bool,
    sends: Vec<RequestId>,
    recvs: Vec<RequestId>,
}

/// The step tags inside a group: the seed, the members, then two per attempt.
const STEP_HEAD: u8 = 0;
const STEP_MEMBERS: u8 = 1;
fn step_claim(attempt: u8) -> u8 {
    2 + 2 * attempt
}
fn step_decision(attempt: u8) -> u8 {
    3 + 2 * attempt
}

/// The seed of both groups' candidates: the same from either side's point of view.
fn seed(a: u32, b: u32) -> u64 {
    mix((u64::from(a.min(b)) << 32) | u64::from(a.max(b)))
}

fn word(b: &[u8], i: usize) -> u32 {
    b.get(4 * i..4 * i + 4)
        .map_or(0, |w| u32::from_le_bytes(w.try_into().expect("4 bytes")))
}

impl<T: Transport> Engine<T> {
    /// `MPI_Intercomm_create`: [`Self::intercomm_icreate`], waited for.
    pub fn intercomm_create(
        &mut self,
        local: CommId,
        local_leader: usize,
        peer: CommId,
        remote_leader: i32,
        tag: i32,
    ) -> Result<CommId> {
        let request = self.intercomm_icreate(local, local_leader, peer, remote_leader, tag)?;
        let made = self.wait_made(request)?;
        made.ok_or_else(|| MpiError::new(ErrorClass::Intern, "no intercommunicator was made"))
    }

    /// Starts `MPI_Intercomm_create`: an intercommunicator between the group of `local` and the
    /// group led by `remote_leader` (a rank of `peer`, significant at `local_leader` only); it is
    /// [`Self::take_made`]'s once the request completes.
    pub fn intercomm_icreate(
        &mut self,
        local: CommId,
        local_leader: usize,
        peer: CommId,
        remote_leader: i32,
        tag: i32,
    ) -> Result<RequestId> {
        let l = self.comms.get(local)?;
        if l.is_inter() {
            return Err(MpiError::new(
                ErrorClass::Comm,
                "the local communicator of MPI_Intercomm_create must be an intracommunicator",
            ));
        }
        if local_leader >= l.size() {
            return Err(MpiError::new(
                ErrorClass::Rank,
                format!(
                    "local leader {local_leader} is not a rank of the local communicator (size {})",
                    l.size()
                ),
            ));
        }
        let (rank, group, errhandler, local_ctx) =
            (l.rank as usize, l.group.clone(), l.errhandler, l.ctx + 1);
        let across = match rank == local_leader {
            true => Some(self.remote_leader(peer, remote_leader, tag)?),
            false => None,
        };
        let seq = self.comms.next_coll_seq(local)?;
        let me = self.global_id(group.members[rank]);
        let proposal = mix(u64::from(me.rank) ^ me.job.rotate_left(17) ^ (u64::from(seq) << 32));
        let mut b = PendingBridge {
            stage: Stage::SpreadHead,
            rank,
            leader: local_leader,
            group,
            errhandler,
            local_ctx,
            seq,
            across,
            proposal: proposal as u32 ^ local_ctx,
            seed: 0,
            remote_size: 0,
            remote: Vec::new(),
            attempt: 0,
            candidate: 0,
            claimed: false,
            all: false,
            sends: Vec::new(),
            recvs: Vec::new(),
        };
        match &b.across {
            Some(_) => self.swap_heads(&mut b)?,
            None => self.expect_from_leader(&mut b, STEP_HEAD, 12),
        }
        let request = self.core.install(None, Op::Null);
        self.bridging.insert(request.0, b);
        self.colls.push(request);
        self.advance_bridge(request);
        Ok(request)
    }

    /// The remote leader as an exchange peer over `peer` (which must be an intracommunicator
    /// where it is another process).
    fn remote_leader(&self, peer: CommId, remote_leader: i32, tag: i32) -> Result<Peer> {
        let p = self.comms.get(peer)?;
        if p.is_inter() {
            return Err(MpiError::new(
                ErrorClass::Comm,
                "the peer communicator of MPI_Intercomm_create must be an intracommunicator",
            ));
        }
        p.check_rank(remote_leader, "remote leader")?;
        if remote_leader < 0 || remote_leader as u32 == p.rank {
            return Err(MpiError::new(
                ErrorClass::Rank,
                format!(
                    "remote leader {remote_leader} must be another process of the peer communicator"
                ),
            ));
        }
        Ok(Peer {
            ctx: p.ctx + 1,
            world: p.world_of(remote_leader as usize) as u32,
            rank: remote_leader,
            me: p.rank,
            tag: leader_tag(tag),
        })
    }

    /// Advances intercommunicator `id` once all its posted messages are done. Returns the
    /// events (steps taken).
    pub(crate) fn advance_bridge(&mut self, id: RequestId) -> usize {
        let Some(mut b) = self.bridging.remove(&id.0) else {
            self.colls.retain(|&c| c != id);
            return 0;
        };
        let done = |e: &Self, r: &RequestId| e.core.requests.get(*r).is_none_or(|q| q.complete);
        if !(b.sends.iter().chain(&b.recvs)).all(|r| done(self, r)) {
            self.bridging.insert(id.0, b);
            return 0;
        }
        match self.bridge_step(&mut b) {
            Ok(None) => {
                self.bridging.insert(id.0, b);
                1
            }
            Ok(Some(comm)) => self.finish_bridge(id, Ok(comm)),
            Err(e) => {
                if b.claimed {
                    self.comms.unclaim(b.candidate);
                }
                self.finish_bridge(id, Err(e))
            }
        }
    }

    fn finish_bridge(&mut self, id: RequestId, made: Result<CommId>) -> usize {
        self.colls.retain(|&c| c != id);
        let error = match made {
            Ok(comm) => {
                self.made.insert(id.0, Some(comm));
                None
            }
            Err(e) => Some(Box::new(e)),
        };
        let status = Status {
            error,
            ..Status::empty()
        };
        self.core.complete(id, status);
        1
    }

    /// Takes the next step of `b`, whose messages are all done: the intercommunicator once
    /// every member claimed the same candidate.
    fn bridge_step(&mut self, b: &mut PendingBridge) -> Result<Option<CommId>> {
        for send in std::mem::take(&mut b.sends) {
            self.retire(send)?;
        }
        let got = std::mem::take(&mut b.recvs)
            .into_iter()
            .map(|r| self.take_owned(r))
            .collect::<Result<Vec<_>>>()?;
        let first = got.first().map_or(&[][..], Vec::as_slice);
        match b.stage {
            Stage::Heads => {
                b.seed = seed(b.proposal, word(first, 0));
                b.remote_size = word(first, 1) as usize;
                let across = b.across.clone().expect("the leader's peer");
                let mine = self.ids_of_members(&b.group.members);
                let len = GLOBAL_ID_LEN * b.remote_size;
                let (send, recv) = self.post_exchange(&across, mine, len)?;
                (b.sends, b.recvs, b.stage) = (vec![send], vec![recv], Stage::Members);
            }
            Stage::Members => {
                self.take_remote(b, first)?;
                self.spread(b, first)?;
                self.claim_round(b)?;
            }
            Stage::SpreadHead => {
                b.seed = u64::from(word(first, 0)) | (u64::from(word(first, 1)) << 32);
                b.remote_size = word(first, 2) as usize;
                let len = GLOBAL_ID_LEN * b.remote_size;
                self.expect_from_leader(b, STEP_MEMBERS, len);
                b.stage = Stage::SpreadMembers;
            }
            Stage::SpreadMembers => {
                self.take_remote(b, first)?;
                self.claim_round(b)?;
            }
            Stage::Claims if b.across.is_some() => {
                b.all = b.claimed && got.iter().all(|g| g.first() == Some(&1));
                let across = b.across.clone().expect("the leader's peer");
                let (send, recv) = self.post_exchange(&across, vec![u8::from(b.all)], 1)?;
                (b.sends, b.recvs, b.stage) = (vec![send], vec![recv], Stage::Relay);
            }
            Stage::Relay => {
                b.all &= first.first() == Some(&1);
                let decision = vec![u8::from(b.all)];
                for r in (0..b.group.size()).filter(|&r| r != b.rank) {
                    let to = self.local_peer(b, r, step_decision(b.attempt));
                    b.sends.push(self.post_bytes(&to, decision.clone())?);
                }
                b.stage = Stage::Decision;
            }
            Stage::Claims | Stage::Decision => {
                if b.across.is_none() {
                    b.all = first.first() == Some(&1);
                }
                return self.conclude_attempt(b);
            }
        }
        Ok(None)
    }

    /// The remote members (identities in `ids`), which may not meet the local group.
    fn take_remote(&mut self, b: &mut PendingBridge, ids: &[u8]) -> Result<()> {
        b.remote = self.members_from_ids(ids)?;
        if let Some(both) = b.remote.iter().find(|m| b.group.rank_of(**m).is_some()) {
            return Err(MpiError::new(
                ErrorClass::Arg,
                format!("world rank {both} is in both groups of the intercommunicator"),
            ));
        }
        Ok(())
    }

    /// The leader hands its group the seed and the remote members (`ids`, as received).
    fn spread(&mut self, b: &mut PendingBridge, ids: &[u8]) -> Result<()> {
        let head: Vec<u8> = [b.seed as u32, (b.seed >> 32) as u32, b.remote_size as u32]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        for r in (0..b.group.size()).filter(|&r| r != b.rank) {
            let to = self.local_peer(b, r, STEP_HEAD);
            b.sends.push(self.post_bytes(&to, head.clone())?);
            let to = Peer {
                tag: schedule_tag(b.seq, STEP_MEMBERS),
                ..to
            };
            b.sends.push(self.post_bytes(&to, ids.to_vec())?);
        }
        Ok(())
    }

    /// Claims this attempt's candidate; the leader waits for its members' answers, the others
    /// tell it theirs and wait for the outcome.
    fn claim_round(&mut self, b: &mut PendingBridge) -> Result<()> {
        b.candidate = candidate((b.seed >> 32) as u32, b.seed as u32, b.attempt);
        b.claimed = self.comms.claim(b.candidate);
        let step = step_claim(b.attempt);
        if b.across.is_some() {
            for r in (0..b.group.size()).filter(|&r| r != b.rank) {
                let from = self.local_peer(b, r, step);
                b.recvs.push(self.expect_bytes(&from, 1));
            }
        } else {
            let to = self.local_peer(b, b.leader, step);
            b.sends
                .push(self.post_bytes(&to, vec![u8::from(b.claimed)])?);
            self.expect_from_leader(b, step_decision(b.attempt), 1);
        }
        b.stage = Stage::Claims;
        Ok(())
    }

    /// With the attempt's outcome in `b.all`: the intercommunicator, or the next attempt.
    fn conclude_attempt(&mut self, b: &mut PendingBridge) -> Result<Option<CommId>> {
        if b.all {
            b.claimed = false; // the intercommunicator holds it now
            let remote = Group {
                members: std::mem::take(&mut b.remote).into(),
            };
            let (group, rank) = (b.group.clone(), b.rank as u32);
            let comm = self.insert_inter(b.candidate, rank, group, remote, b.errhandler);
            return Ok(Some(comm));
        }
        if b.claimed {
            self.comms.unclaim(b.candidate);
            b.claimed = false;
        }
        if b.attempt + 1 == MAX_ATTEMPTS {
            return Err(MpiError::new(
                ErrorClass::Intern,
                format!("no context id was free on every member in {MAX_ATTEMPTS} attempts"),
            ));
        }
        b.attempt += 1;
        self.claim_round(b)?;
        Ok(None)
    }

    /// The leader's first step: swap (proposal, group size) with the remote leader.
    fn swap_heads(&mut self, b: &mut PendingBridge) -> Result<()> {
        let across = b.across.clone().expect("the leader's peer");
        let head = [b.proposal, b.group.size() as u32];
        let head: Vec<u8> = head.iter().flat_map(|w| w.to_le_bytes()).collect();
        let (send, recv) = self.post_exchange(&across, head, 8)?;
        (b.sends, b.recvs, b.stage) = (vec![send], vec![recv], Stage::Heads);
        Ok(())
    }

    /// Posts the receive of `len` bytes from the leader at step `step`.
    fn expect_from_leader(&mut self, b: &mut PendingBridge, step: u8, len: usize) {
        let from = self.local_peer(b, b.leader, step);
        b.recvs.push(self.expect_bytes(&from, len));
    }

    /// Local member `r` as a peer at step `step`.
    fn local_peer(&self, b: &PendingBridge, r: usize, step: u8) -> Peer {
        Peer {
            ctx: b.local_ctx,
            world: b.group.members[r],
            rank: r as i32,
            me: b.rank as u32,
            tag: schedule_tag(b.seq, step),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_leaders_derive_the_same_seed() {
        assert_eq!(seed(3, 9), seed(9, 3));
        assert_ne!(seed(3, 9), seed(3, 10));
    }

    #[test]
    fn step_tags_of_every_attempt_are_distinct() {
        let mut steps = vec![STEP_HEAD, STEP_MEMBERS];
        for a in 0..MAX_ATTEMPTS {
            steps.extend([step_claim(a), step_decision(a)]);
        }
        let n = steps.len();
        steps.sort_unstable();
        steps.dedup();
        assert_eq!(steps.len(), n);
    }
}
