//! Intercommunicators (MPI-3.1 §6.6): `MPI_Intercomm_create`, `MPI_Intercomm_merge`, and dup,
//! split and create applied to an intercommunicator.
//!
//! `MPI_Intercomm_create` agrees on a context id in three steps: every local group finds its
//! highest proposal (an allgather over the local communicator), the two leaders swap theirs and
//! their groups' members over the peer communicator (under the caller's tag, mapped below every
//! other internal tag), and each leader hands the result to its group. The new intercommunicator
//! takes four context ids from the highest proposal of both groups (see [`crate::comm`]).
//! Constructors on an existing intercommunicator exchange a fixed-size record (proposal, color,
//! key) among all members of both groups ([`Engine::allgather_inter`]), from which every process
//! computes the same result.
//!
//! Groups may hold processes of other jobs (`crate::dynproc`), which number processes
//! differently: members travel as global identities ([`crate::procs::GlobalId`]), never as this
//! process's indices, and a process met only by another member is refused with a message (its
//! bridge card is unknown here).

use crate::coll::exchange::Peer;
use crate::comm::{compare_groups, Comm, CommId, Comparison, Group, GroupId};
use crate::comm_ops::UNDEFINED;
use crate::engine::Engine;
use crate::error::{ErrorClass, MpiError, Result};
use crate::procs::{GlobalId, GLOBAL_ID_LEN};
use reflex_base::transport::Transport;
use std::sync::Arc;

/// The record every process contributes to a constructor on an intercommunicator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Record {
    proposal: u32,
    color: i32,
    key: i32,
}

impl Record {
    fn bytes(self) -> Vec<u8> {
        [self.proposal as i32, self.color, self.key]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect()
    }

    fn parse(b: &[u8]) -> Record {
        let word = |i: usize| i32::from_le_bytes(b[4 * i..4 * i + 4].try_into().expect("4 bytes"));
        Record {
            proposal: word(0) as u32,
            color: word(1),
            key: word(2),
        }
    }
}

/// Internal tag of the leaders' exchange of `MPI_Intercomm_create` with user tag `tag` (≥ 0):
/// far below the negative tags of `MPI_Comm_create_group`.
fn leader_tag(tag: i32) -> i32 {
    i32::MIN + tag
}

fn words(values: &[u32]) -> Vec<u8> {
    values.iter().flat_map(|w| w.to_le_bytes()).collect()
}

fn unwords(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
        .collect()
}

/// Members of `all` (records by rank of `group`) whose color is `color`, ordered by (key, rank).
fn chosen(group: &Group, all: &[Record], color: i32) -> Group {
    let mut picked: Vec<(i32, usize)> = (all.iter().enumerate())
        .filter(|(_, r)| r.color == color)
        .map(|(rank, r)| (r.key, rank))
        .collect();
    picked.sort_unstable();
    Group {
        members: picked.iter().map(|&(_, r)| group.members[r]).collect(),
    }
}

impl<T: Transport> Engine<T> {
    /// `MPI_Intercomm_create`: an intercommunicator between the group of `local` and the group
    /// led by `remote_leader` (a rank of `peer`, significant at `local_leader` only).
    pub fn intercomm_create(
        &mut self,
        local: CommId,
        local_leader: usize,
        peer: CommId,
        remote_leader: i32,
        tag: i32,
    ) -> Result<CommId> {
        let l = self.comms.get(local)?;
        if l.is_inter() {
            return Err(MpiError::new(
                ErrorClass::Comm,
                "the local communicator of MPI_Intercomm_create must be an intracommunicator",
            ));
        }
        let (group, rank, errhandler) = (l.group.clone(), l.rank, l.errhandler);
        let proposals = self.allgather_bytes(local, self.comms.next_ctx.to_le_bytes().to_vec())?;
        let highest = proposals.iter().map(|b| unwords(b)[0]).max().unwrap_or(0);
        let mut summary = Vec::new();
        if rank as usize == local_leader {
            let (ctx, remote) =
                self.swap_with_leader(peer, remote_leader, tag, highest, &group.members)?;
            summary = words(&[ctx]);
            summary.extend(remote);
        }
        let summaries = self.allgather_var(local, &summary)?;
        let summary = &summaries[local_leader];
        let ctx = summary
            .get(..4)
            .map(|b| unwords(b)[0])
            .ok_or_else(|| MpiError::new(ErrorClass::Intern, "the local leader sent no summary"))?;
        let remote = self.members_from_ids(&summary[4..])?;
        if let Some(both) = remote.iter().find(|m| group.rank_of(**m).is_some()) {
            return Err(MpiError::new(
                ErrorClass::Arg,
                format!("world rank {both} is in both groups of the intercommunicator"),
            ));
        }
        self.comms.next_ctx = ctx + 4;
        let remote = Group {
            members: Arc::from(remote),
        };
        Ok(self.insert_inter(ctx, rank, group, remote, errhandler))
    }

    /// The leaders' half of `MPI_Intercomm_create`: swaps (highest proposal, group size), then
    /// the group members (global identities), with the remote leader; returns the agreed context
    /// and the remote group's identities, encoded.
    fn swap_with_leader(
        &mut self,
        peer: CommId,
        remote_leader: i32,
        tag: i32,
        highest: u32,
        members: &[u32],
    ) -> Result<(u32, Vec<u8>)> {
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
        let leader = Peer {
            ctx: p.ctx + 1,
            world: p.world_of(remote_leader as usize) as u32,
            rank: remote_leader,
            me: p.rank,
            tag: leader_tag(tag),
        };
        let head = words(&[highest, members.len() as u32]);
        let theirs = unwords(&self.swap_bytes(&leader, head, 8)?);
        let mine = self.ids_of_members(members);
        let len = GLOBAL_ID_LEN * theirs[1] as usize;
        let remote = self.swap_bytes(&leader, mine, len)?;
        Ok((highest.max(theirs[0]), remote))
    }

    /// The global identities of `members`, encoded (what travels instead of indices).
    fn ids_of_members(&self, members: &[u32]) -> Vec<u8> {
        members
            .iter()
            .flat_map(|&m| self.global_id(m).encode())
            .collect()
    }

    /// The identity of process `index` (a member of some group, so known).
    pub(crate) fn global_id(&self, index: u32) -> GlobalId {
        self.procs.id_of(index as usize).unwrap_or(GlobalId {
            job: self.procs.job(),
            rank: index,
        })
    }

    /// The indices of the processes encoded in `b` (identities from [`Engine::ids_of_members`]).
    fn members_from_ids(&self, b: &[u8]) -> Result<Vec<u32>> {
        b.chunks(GLOBAL_ID_LEN)
            .map(|c| {
                let id = GlobalId::decode(c).ok_or_else(|| {
                    MpiError::new(ErrorClass::Intern, "a damaged list of group members")
                })?;
                self.procs.index_of(id).map(|i| i as u32).ok_or_else(|| {
                    MpiError::new(
                        ErrorClass::Other,
                        format!(
                            "process {} of job {:016x} is not connected to this process \
                             (connect to its job first: MPI_Comm_connect/accept or MPI_Comm_join)",
                            id.rank, id.job
                        ),
                    )
                })
            })
            .collect()
    }

    pub(crate) fn insert_inter(
        &mut self,
        ctx: u32,
        rank: u32,
        group: Group,
        remote: Group,
        errhandler: i32,
    ) -> CommId {
        self.comms.insert(Comm {
            remote: Some(remote),
            ..Comm::intra(ctx, rank, group, errhandler)
        })
    }

    /// Exchanges `(proposal, color, key)` among all processes of intercommunicator `comm`;
    /// returns the records of the local and of the remote group and the agreed context id
    /// (reserving `reserve` ids from it).
    fn agree_inter(
        &mut self,
        comm: CommId,
        color: i32,
        key: i32,
        reserve: u32,
    ) -> Result<(Vec<Record>, Vec<Record>, u32)> {
        let mine = Record {
            proposal: self.comms.next_ctx,
            color,
            key,
        };
        let (here, there) = self.allgather_inter(comm, &mine.bytes())?;
        let here: Vec<Record> = here.iter().map(|b| Record::parse(b)).collect();
        let there: Vec<Record> = there.iter().map(|b| Record::parse(b)).collect();
        let ctx = here.iter().chain(&there).map(|r| r.proposal).max();
        let ctx = ctx.unwrap_or(mine.proposal);
        self.comms.next_ctx = ctx + reserve;
        Ok((here, there, ctx))
    }

    /// `MPI_Intercomm_merge`: an intracommunicator over both groups, the group whose processes
    /// passed `high = false` first (on a tie, the group whose first member has the lower global
    /// identity: the same answer in every job).
    pub fn intercomm_merge(&mut self, comm: CommId, high: bool) -> Result<CommId> {
        let c = self.inter(comm)?;
        let (group, remote, errhandler) = (c.group.clone(), c.peers().clone(), c.errhandler);
        let me = group.members[c.rank as usize];
        let (here, there, ctx) = self.agree_inter(comm, high as i32, 0, 2)?;
        let key = |g: &Group, r: &[Record]| (r[0].color, self.global_id(g.members[0]));
        let (first, second) = match key(&group, &here) < key(&remote, &there) {
            true => (&group, &remote),
            false => (&remote, &group),
        };
        let members: Vec<u32> = first
            .members
            .iter()
            .chain(&*second.members)
            .copied()
            .collect();
        let rank = members.iter().position(|&m| m == me).unwrap_or(0) as u32;
        let merged = Group {
            members: members.into(),
        };
        Ok(self
            .comms
            .insert(Comm::intra(ctx, rank, merged, errhandler)))
    }

    /// `MPI_Comm_dup`, `MPI_Comm_split` and `MPI_Comm_create` on an intercommunicator: the
    /// processes of each group with `color` (ordered by key) face those of the other group with
    /// the same color. `None` to a process with color `MPI_UNDEFINED` or facing an empty group.
    pub(crate) fn inter_split(
        &mut self,
        comm: CommId,
        color: i32,
        key: i32,
    ) -> Result<Option<CommId>> {
        let c = self.inter(comm)?;
        let (group, remote, errhandler) = (c.group.clone(), c.peers().clone(), c.errhandler);
        let me = group.members[c.rank as usize];
        let (here, there, ctx) = self.agree_inter(comm, color, key, 4)?;
        let local = chosen(&group, &here, color);
        let remote = chosen(&remote, &there, color);
        let Some(rank) = local.rank_of(me).filter(|_| color != UNDEFINED) else {
            return Ok(None);
        };
        if remote.size() == 0 {
            return Ok(None);
        }
        Ok(Some(self.insert_inter(
            ctx,
            rank as u32,
            local,
            remote,
            errhandler,
        )))
    }

    /// `MPI_Comm_split_type` on an intercommunicator (MPI-4.0 §7.4.2): processes of both groups
    /// with equal labels get the same color (the lowest position, in the order of global
    /// identities, among them: the same in every job).
    pub(crate) fn inter_split_by_label(
        &mut self,
        comm: CommId,
        label: Option<&[u8]>,
        key: i32,
    ) -> Result<Option<CommId>> {
        let c = self.inter(comm)?;
        let mut ids: Vec<GlobalId> = (c.group.members.iter().chain(&*c.peers().members))
            .map(|&m| self.global_id(m))
            .collect();
        let unsorted = ids.clone();
        ids.sort_unstable();
        let worlds: Vec<u32> = unsorted
            .iter()
            .map(|id| ids.binary_search(id).unwrap_or(0) as u32)
            .collect();
        // A length word then the label padded to the longest; length u32::MAX is "no label".
        let len = label.map_or(u32::MAX, |l| l.len() as u32);
        let (here, there) = self.allgather_inter(comm, &len.to_le_bytes())?;
        let lens: Vec<u32> = here.iter().chain(&there).map(|b| unwords(b)[0]).collect();
        let longest = lens
            .iter()
            .filter(|&&l| l != u32::MAX)
            .max()
            .copied()
            .unwrap_or(0);
        let mut padded = label.unwrap_or_default().to_vec();
        padded.resize(longest.max(1) as usize, 0); // never empty, as for `allgather_var`
        let (here, there) = self.allgather_inter(comm, &padded)?;
        let labels: Vec<Option<&[u8]>> = (here.iter().chain(&there).zip(&lens))
            .map(|(b, &l)| (l != u32::MAX).then(|| &b[..l as usize]))
            .collect();
        let color = match label {
            None => UNDEFINED,
            Some(mine) => (labels.iter().zip(&worlds))
                .filter(|(l, _)| **l == Some(mine))
                .map(|(_, &w)| w as i32)
                .min()
                .unwrap_or(UNDEFINED),
        };
        self.inter_split(comm, color, key)
    }

    /// `MPI_Comm_create` on an intercommunicator: `group` is a subgroup of the local group.
    pub(crate) fn inter_create(&mut self, comm: CommId, group: GroupId) -> Result<Option<CommId>> {
        let g = self.groups.get(group)?.clone();
        let c = self.inter(comm)?;
        if let Some(outsider) = g.members.iter().find(|m| c.group.rank_of(**m).is_none()) {
            return Err(MpiError::new(
                ErrorClass::Group,
                format!("world rank {outsider} of the group is not in the local group"),
            ));
        }
        let me = c.group.members[c.rank as usize];
        match g.rank_of(me) {
            Some(rank) => self.inter_split(comm, 0, rank as i32),
            None => self.inter_split(comm, UNDEFINED, 0),
        }
    }

    /// `MPI_Comm_compare` of two intercommunicators: both groups are compared.
    pub(crate) fn inter_compare(a: &Comm, b: &Comm) -> Comparison {
        let (Some(ra), Some(rb)) = (&a.remote, &b.remote) else {
            return Comparison::Unequal;
        };
        let both = [compare_groups(&a.group, &b.group), compare_groups(ra, rb)];
        match both.iter().max().copied().unwrap_or(Comparison::Unequal) {
            Comparison::Ident => Comparison::Congruent,
            other => other,
        }
    }

    /// The intercommunicator behind `id` (`MPI_ERR_COMM` for an intracommunicator).
    pub(crate) fn inter(&self, id: CommId) -> Result<&Comm> {
        let c = self.comms.get(id)?;
        if !c.is_inter() {
            return Err(MpiError::new(
                ErrorClass::Comm,
                "this operation needs an intercommunicator",
            ));
        }
        Ok(c)
    }

    /// The intracommunicator behind `id` (`MPI_ERR_COMM` for an intercommunicator, on which
    /// topologies, `MPI_Comm_create_group` and `MPI_Comm_split_type` are not defined).
    pub(crate) fn intra(&self, id: CommId) -> Result<&Comm> {
        let c = self.comms.get(id)?;
        if c.is_inter() {
            return Err(MpiError::new(
                ErrorClass::Comm,
                "this operation needs an intracommunicator",
            ));
        }
        Ok(c)
    }

    /// `MPI_Comm_remote_group`: a new group handle with the remote group.
    pub fn comm_remote_group(&mut self, id: CommId) -> Result<GroupId> {
        let remote = self.inter(id)?.peers().clone();
        Ok(self.groups.insert(remote))
    }
}
