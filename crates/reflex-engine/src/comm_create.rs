//! The communicator constructors beyond dup/split/create: `MPI_Comm_create_group` (collective
//! over the new group only; made as `comm_idup` makes communicators, its exchange over the
//! parent's collective context tagged with the caller's tag, so that concurrent calls on
//! overlapping groups are told apart as MPI-3.1 §6.4.2 requires)) and `MPI_Comm_split_type`
//! (by a per-process label such as the host).

use crate::comm::{CommId, GroupId};
use crate::engine::Engine;
use crate::error::Result;
use reflex_base::transport::Transport;

impl<T: Transport> Engine<T> {
    /// `MPI_Comm_create_group`: [`Self::comm_icreate_group`], waited for.
    pub fn comm_create_group(
        &mut self,
        parent: CommId,
        group: GroupId,
        tag: i32,
    ) -> Result<Option<CommId>> {
        match self.comm_icreate_group(parent, group, tag)? {
            Some(request) => self.wait_made(request),
            None => Ok(None),
        }
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
        let request = self.comm_isplit_label(parent, label, key)?;
        self.wait_made(request)
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
}
