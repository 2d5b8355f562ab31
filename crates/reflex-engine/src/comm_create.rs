//! The communicator constructors beyond dup/split/create: `MPI_Comm_create_group` (collective
//! over the new group only), `MPI_Comm_split_type` (by a per-process label such as the host) and
//! the completed request behind `MPI_Comm_idup`.
//!
//! `MPI_Comm_create_group` cannot use the parent's collectives, since only the group's members
//! take part. The members agree on a context id with an all-to-all exchange of their proposals
//! over the parent's collective context, tagged with the caller's tag mapped to negative tags
//! (`-16 - tag`): the foundation's collectives use small positive tags, so the two never match,
//! and concurrent calls on overlapping groups are told apart by their tags, as MPI-3.1 §6.4.2
//! requires.

use crate::comm::{Comm, CommId, GroupId};
use crate::engine::Engine;
use crate::error::{ErrorClass, MpiError, Result};
use crate::request::{Op, RequestId, Status};
use reflex_base::transport::Transport;

/// Internal tag of a `MPI_Comm_create_group` exchange with user tag `tag` (≥ 0).
fn group_tag(tag: i32) -> i32 {
    -16 - tag
}

impl<T: Transport> Engine<T> {
    /// `MPI_Comm_create_group`: a communicator over `group` (a subgroup of `parent`), created by
    /// the group's members only. Returns `None` to a caller outside the group.
    pub fn comm_create_group(
        &mut self,
        parent: CommId,
        group: GroupId,
        tag: i32,
    ) -> Result<Option<CommId>> {
        let g = self.groups.get(group)?.clone();
        let p = self.intra(parent)?;
        if let Some(outsider) = g.members.iter().find(|m| p.group.rank_of(**m).is_none()) {
            return Err(MpiError::new(
                ErrorClass::Group,
                format!("world rank {outsider} of the group is not in the communicator"),
            ));
        }
        let (coll_ctx, errhandler) = (p.ctx + 1, p.errhandler);
        let Some(rank) = g.rank_of(self.core.me as u32) else {
            return Ok(None);
        };
        let proposal = self.comms.next_ctx.to_le_bytes();
        // Over the parent's context the members go by their parent ranks (unique there).
        let names: Vec<u32> = (g.members.iter())
            .map(|m| p.group.rank_of(*m).unwrap_or(0) as u32)
            .collect();
        let tag = group_tag(tag);
        let all = self.exchange_named(coll_ctx, (&g.members, &names), rank, tag, &proposal)?;
        let ctx = all
            .iter()
            .map(|b| u32::from_le_bytes(b[..4].try_into().expect("4-byte proposal")))
            .max()
            .unwrap_or(self.comms.next_ctx);
        self.comms.next_ctx = ctx + 2;
        let comm = Comm::intra(ctx, rank as u32, g, errhandler);
        Ok(Some(self.comms.insert(comm)))
    }

    /// `MPI_Comm_split_type` by label: processes whose `label` is equal (the host name for
    /// `MPI_COMM_TYPE_SHARED`) form one communicator, ordered by (`key`, parent rank); a process
    /// without a label (`MPI_UNDEFINED`) takes part and gets `None`.
    pub fn comm_split_by_label(
        &mut self,
        parent: CommId,
        label: Option<&[u8]>,
        key: i32,
    ) -> Result<Option<CommId>> {
        if self.comms.get(parent)?.is_inter() {
            return self.inter_split_by_label(parent, label, key);
        }
        // One marker byte tells "no label" from an empty label.
        let tagged: Vec<u8> = match label {
            Some(l) => std::iter::once(1).chain(l.iter().copied()).collect(),
            None => vec![0],
        };
        let labels = self.allgather_var(parent, &tagged)?;
        // The color is the lowest parent rank carrying the same label.
        let color = match label {
            Some(_) => labels.iter().position(|l| *l == tagged).unwrap_or(0) as i32,
            None => crate::comm_ops::UNDEFINED,
        };
        self.comm_split(parent, color, key)
    }

    /// Gathers one byte string of any length from every rank of `comm` onto every rank: one
    /// allgather of the lengths, one of the strings padded to the longest.
    pub(crate) fn allgather_var(&mut self, comm: CommId, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        let word =
            |b: &[u8]| u32::from_le_bytes(b[..4].try_into().expect("4-byte length")) as usize;
        let lengths: Vec<usize> = self
            .allgather_bytes(comm, (mine.len() as u32).to_le_bytes().to_vec())?
            .iter()
            .map(|b| word(b))
            .collect();
        let mut padded = mine.to_vec();
        // At least one byte: `allgather_bytes` needs a non-empty contribution.
        padded.resize(lengths.iter().copied().max().unwrap_or(0).max(1), 0);
        let mut all = self.allgather_bytes(comm, padded)?;
        for (v, &len) in all.iter_mut().zip(&lengths) {
            v.truncate(len);
        }
        Ok(all)
    }

    /// A request that is already complete with an empty status (`MPI_Comm_idup`, which Reflex
    /// completes before returning).
    pub fn completed_request(&mut self) -> RequestId {
        let id = self.core.install(None, Op::Null);
        self.core.complete(id, Status::empty());
        id
    }
}
