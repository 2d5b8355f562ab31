//! Intercommunicators (MPI-3.1 §6.6): `MPI_Intercomm_merge` waited for, comparisons, and the
//! members' identities that travel between groups.
//!
//! `MPI_Intercomm_create` is `crate::comm_bridge`'s; merge, and dup, split and create applied to
//! an intercommunicator, are made like those of intracommunicators (`crate::comm_idup`), with
//! the members of both groups exchanging their claims (and colors, keys or `high`).
//!
//! Groups may hold processes of other jobs (`crate::dynproc`), which number processes
//! differently: members travel as global identities ([`crate::procs::GlobalId`]), never as this
//! process's indices, and a process met only by another member is refused with a message (its
//! bridge card is unknown here).

use crate::comm::{compare_groups, Comm, CommId, Comparison, Group, GroupId};
use crate::engine::Engine;
use crate::error::{ErrorClass, MpiError, Result};
use crate::procs::{GlobalId, GLOBAL_ID_LEN};
use reflex_base::transport::Transport;

/// Internal tag of the leaders' exchange of `MPI_Intercomm_create` with user tag `tag` (≥ 0):
/// far below the negative tags of `MPI_Comm_create_group`.
pub(crate) fn leader_tag(tag: i32) -> i32 {
    i32::MIN + tag
}

impl<T: Transport> Engine<T> {
    /// The global identities of `members`, encoded (what travels instead of indices).
    pub(crate) fn ids_of_members(&self, members: &[u32]) -> Vec<u8> {
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
    pub(crate) fn members_from_ids(&self, b: &[u8]) -> Result<Vec<u32>> {
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

    /// `MPI_Intercomm_merge`: [`Self::comm_imerge`], waited for.
    pub fn intercomm_merge(&mut self, comm: CommId, high: bool) -> Result<CommId> {
        let request = self.comm_imerge(comm, high)?;
        let made = self.wait_made(request)?;
        made.ok_or_else(|| MpiError::new(ErrorClass::Intern, "a merge made no communicator"))
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
