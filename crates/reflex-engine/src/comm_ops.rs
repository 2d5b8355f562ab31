//! Creating, comparing and freeing communicators (groups: `group_ops`).
//!
//! `MPI_Comm_dup`, and `MPI_Comm_split` and `MPI_Comm_create` of an intracommunicator, are the
//! nonblocking forms of `comm_idup` waited for: the context id comes from a hashed slot that every
//! member claims (the split's colors and keys travel with the first claims).

use crate::comm::{compare_groups, Comm, CommId, Comparison, Group, GroupId, COMM_WORLD};
use crate::engine::Engine;
use crate::error::Result;
use crate::request::RequestId;
use reflex_base::transport::Transport;

/// `MPI_UNDEFINED` (MPICH's value): the color of ranks that join no new communicator.
pub const UNDEFINED: i32 = -32766;

impl<T: Transport> Engine<T> {
    /// The communicator behind `id`.
    pub fn comm(&self, id: CommId) -> Result<&Comm> {
        self.comms.get(id)
    }

    /// Mutable access (names, error handlers).
    pub fn comm_mut(&mut self, id: CommId) -> Result<&mut Comm> {
        self.comms.get_mut(id)
    }

    /// `MPI_Comm_split`: ranks with the same color form a communicator, ordered by (key, old rank).
    /// Returns `None` for `MPI_UNDEFINED`.
    pub fn comm_split(&mut self, parent: CommId, color: i32, key: i32) -> Result<Option<CommId>> {
        let request = self.comm_isplit(parent, color, key)?;
        self.wait_made(request)
    }

    /// `MPI_Comm_create`: the members of `group` (a subgroup of the parent) get a new communicator.
    pub fn comm_create(&mut self, parent: CommId, group: GroupId) -> Result<Option<CommId>> {
        let request = self.comm_icreate(parent, group)?;
        self.wait_made(request)
    }

    /// Waits for a split or create and returns what it made.
    pub(crate) fn wait_made(&mut self, request: RequestId) -> Result<Option<CommId>> {
        let status = self.wait(request)?;
        let made = self.take_made(request);
        match status.error {
            Some(e) => Err(*e),
            None => Ok(made),
        }
    }

    /// `MPI_Comm_free`.
    pub fn comm_free(&mut self, id: CommId) -> Result<()> {
        self.comms.remove(id).map(|_| ())
    }

    /// `MPI_Comm_compare`.
    pub fn comm_compare(&self, a: CommId, b: CommId) -> Result<Comparison> {
        if a == b {
            self.comms.get(a)?;
            return Ok(Comparison::Ident);
        }
        let (ca, cb) = (self.comms.get(a)?, self.comms.get(b)?);
        if ca.is_inter() || cb.is_inter() {
            return Ok(Self::inter_compare(ca, cb));
        }
        Ok(match compare_groups(&ca.group, &cb.group) {
            Comparison::Ident => Comparison::Congruent,
            other => other,
        })
    }

    /// `MPI_Comm_group`: a new group handle with the communicator's members (the local group
    /// of an intercommunicator).
    pub fn comm_group(&mut self, id: CommId) -> Result<GroupId> {
        let group = self.comms.get(id)?.group.clone();
        Ok(self.groups.insert(group))
    }

    /// The world group (`MPI_Comm_group(MPI_COMM_WORLD)` without a new handle).
    pub fn world_group(&self) -> Result<&Group> {
        Ok(&self.comms.get(COMM_WORLD)?.group)
    }
}
