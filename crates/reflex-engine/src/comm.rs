//! Communicators and groups.
//!
//! A communicator is a group (the world ranks of its members, in communicator-rank order), this
//! process's rank in it, and a context id. Point-to-point traffic uses the context id `ctx`, collective
//! traffic `ctx + 1`, so the two never match each other. An intercommunicator also has a remote
//! group: ranks in point-to-point calls name remote processes, and a message carries the sender's
//! rank in its own (local) group, which is the receiver's name for it. It takes four context ids:
//! `ctx` and `ctx + 1` between the groups, `ctx + 2` and `ctx + 3` inside each group (the hidden
//! local communicator its collectives use). New context ids are agreed by a max-reduction
//! over the parent communicator (every member proposes its next free id), which needs no central
//! server; disjoint communicators created by one split may share an id safely because no process
//! belongs to two of them.

use crate::error::{ErrorClass, MpiError, Result};
use crate::topo::Topology;
use std::collections::HashMap;
use std::sync::Arc;

/// Index of a communicator in the engine's table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CommId(pub u32);

/// `MPI_COMM_WORLD`.
pub const COMM_WORLD: CommId = CommId(0);
/// `MPI_COMM_SELF`.
pub const COMM_SELF: CommId = CommId(1);
/// The library's own duplicate of the world communicator, hidden from the application: the
/// parent of the MPI-4.0 Sessions constructors (`MPI_Comm_create_from_group`,
/// `MPI_Intercomm_create_from_groups`), which have no parent communicator of their own.
pub const COMM_SESSIONS: CommId = CommId(2);
/// The first table index of a communicator the application creates.
pub const FIRST_USER_COMM: u32 = 3;

/// Index of a group in the engine's table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GroupId(pub u32);

/// An ordered set of processes, as world ranks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// World rank of each member, indexed by group rank.
    pub members: Arc<[u32]>,
}

impl Group {
    /// Rank of world rank `world` in this group.
    pub fn rank_of(&self, world: u32) -> Option<usize> {
        self.members.iter().position(|&m| m == world)
    }

    /// Number of members.
    pub fn size(&self) -> usize {
        self.members.len()
    }
}

/// Result of comparing two groups or communicators (`MPI_IDENT` ... `MPI_UNEQUAL`, MPICH values),
/// ordered from most to least alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(i32)]
pub enum Comparison {
    /// Same object (communicators) or same members in the same order (groups).
    Ident = 0,
    /// Same members in the same order, different context.
    Congruent = 1,
    /// Same members, different order.
    Similar = 2,
    /// Anything else.
    Unequal = 3,
}

/// Compares the membership of two groups.
pub fn compare_groups(a: &Group, b: &Group) -> Comparison {
    if a.members == b.members {
        return Comparison::Ident;
    }
    if a.size() == b.size() {
        let mut x = a.members.to_vec();
        let mut y = b.members.to_vec();
        x.sort_unstable();
        y.sort_unstable();
        if x == y {
            return Comparison::Similar;
        }
    }
    Comparison::Unequal
}

/// A communicator.
#[derive(Debug, Clone)]
pub struct Comm {
    /// Context id for point-to-point traffic; collectives use `ctx + 1`.
    pub ctx: u32,
    /// This process's rank in the communicator.
    pub rank: u32,
    /// The members (the local group of an intercommunicator).
    pub group: Group,
    /// The remote group of an intercommunicator (`None`: an intracommunicator).
    pub remote: Option<Group>,
    /// The error handler, as the C ABI layer names it (opaque to the engine).
    pub errhandler: i32,
    /// `MPI_Comm_set_name`.
    pub name: String,
}

impl Comm {
    /// An intracommunicator with no name.
    pub fn intra(ctx: u32, rank: u32, group: Group, errhandler: i32) -> Self {
        Comm {
            ctx,
            rank,
            group,
            remote: None,
            errhandler,
            name: String::new(),
        }
    }

    /// Number of ranks (of the local group, for an intercommunicator).
    pub fn size(&self) -> usize {
        self.group.size()
    }

    /// Whether this is an intercommunicator.
    pub fn is_inter(&self) -> bool {
        self.remote.is_some()
    }

    /// The processes that point-to-point ranks name: the remote group of an intercommunicator,
    /// the group itself otherwise.
    pub fn peers(&self) -> &Group {
        self.remote.as_ref().unwrap_or(&self.group)
    }

    /// World rank of peer `rank` (caller checked the range).
    #[inline]
    pub fn world_of(&self, rank: usize) -> usize {
        self.peers().members[rank] as usize
    }

    /// World rank of peer `rank` when it names a process (`None` for `PROC_NULL`, a wildcard or
    /// a rank out of range).
    #[inline]
    pub(crate) fn peer_world(&self, rank: i32) -> Option<usize> {
        let members = &self.peers().members;
        usize::try_from(rank)
            .ok()
            .and_then(|r| members.get(r))
            .map(|&w| w as usize)
    }

    /// The context of collective traffic inside the local group.
    pub fn local_coll_ctx(&self) -> u32 {
        if self.is_inter() {
            self.ctx + 3
        } else {
            self.ctx + 1
        }
    }

    /// Checks a source rank: `0..size`, `PROC_NULL` or `ANY_SOURCE`.
    #[inline]
    pub fn check_source(&self, rank: i32) -> Result<()> {
        if rank == crate::request::ANY_SOURCE {
            return Ok(());
        }
        self.check_rank(rank, "source")
    }

    /// Checks a destination rank: `0..size` or `PROC_NULL`.
    #[inline]
    pub fn check_rank(&self, rank: i32, what: &str) -> Result<()> {
        let n = self.peers().size();
        if rank == crate::request::PROC_NULL || (rank >= 0 && (rank as usize) < n) {
            return Ok(());
        }
        let of = if self.is_inter() {
            "the remote group of an intercommunicator"
        } else {
            "a communicator"
        };
        Err(MpiError::new(
            ErrorClass::Rank,
            format!("{what} rank {rank} is out of range for {of} of size {n}"),
        ))
    }
}

/// The table of live communicators.
#[derive(Debug, Default)]
pub(crate) struct Comms {
    slots: Vec<Option<Comm>>,
    /// Lowest context id this process has not used yet (a multiple of 2), below
    /// `comm_idup::HASHED_BASE`.
    pub(crate) next_ctx: u32,
    /// The slots above `comm_idup::HASHED_BASE` held here: by live duplicates and by duplicates
    /// in flight.
    pub(crate) hashed: std::collections::HashSet<u32>,
    /// `MPI_Comm_create_group` calls made so far, by (parent, tag, group) (`comm_idup`).
    pub(crate) group_calls: HashMap<u64, u32>,
    /// The process topology of each communicator that has one (see `topo_ops`).
    pub(crate) topos: HashMap<u32, Arc<Topology>>,
    /// Collectives started on each communicator so far (their sequence numbers, by slot).
    coll_seqs: Vec<u32>,
    /// The shared-memory board of each communicator that tried to set one up, by slot (a
    /// vector, not a map: it is looked up at every blocking collective).
    boards: Vec<Option<crate::coll::board::CommBoard>>,
}

impl Comms {
    pub(crate) fn insert(&mut self, comm: Comm) -> CommId {
        let first = FIRST_USER_COMM as usize;
        let id = if let Some(i) = self.slots.iter().skip(first).position(Option::is_none) {
            self.slots[i + first] = Some(comm);
            CommId((i + first) as u32)
        } else {
            self.slots.push(Some(comm));
            CommId(self.slots.len() as u32 - 1)
        };
        self.coll_seqs.resize(self.slots.len(), 0);
        self.coll_seqs[id.0 as usize] = 0;
        id
    }

    /// The sequence number of the next collective started on `id`.
    pub(crate) fn next_coll_seq(&mut self, id: CommId) -> Result<u32> {
        self.get(id)?;
        let seq = &mut self.coll_seqs[id.0 as usize];
        *seq = seq.wrapping_add(1);
        Ok(*seq)
    }

    /// The board of `id`: `None` until a collective tried to set one up.
    pub(crate) fn board_mut(&mut self, id: CommId) -> &mut Option<crate::coll::board::CommBoard> {
        let i = id.0 as usize;
        if self.boards.len() <= i {
            self.boards.resize_with(i + 1, || None);
        }
        &mut self.boards[i]
    }

    /// The board of `id`, the epoch of its last collective and its scratch buffer, when the
    /// board is set up and usable (the fast paths' lookup: one index, nothing grown or cloned).
    #[inline]
    pub(crate) fn board_on(
        &mut self,
        id: CommId,
    ) -> Option<(&reflex_shm::board::Board, &mut u32, &mut Vec<u8>)> {
        match self.boards.get_mut(id.0 as usize)? {
            Some(crate::coll::board::CommBoard::On {
                board,
                epoch,
                scratch,
                ..
            }) => Some((&**board, epoch, scratch)),
            _ => None,
        }
    }

    /// Communicator `id`, if it exists (the fast paths' lookup: no error is built).
    #[inline]
    pub(crate) fn find(&self, id: CommId) -> Option<&Comm> {
        self.slots.get(id.0 as usize).and_then(Option::as_ref)
    }

    #[inline]
    pub(crate) fn get(&self, id: CommId) -> Result<&Comm> {
        self.slots
            .get(id.0 as usize)
            .and_then(Option::as_ref)
            .ok_or_else(|| {
                MpiError::new(
                    ErrorClass::Comm,
                    format!("communicator {} does not exist (freed?)", id.0),
                )
            })
    }

    pub(crate) fn get_mut(&mut self, id: CommId) -> Result<&mut Comm> {
        self.slots
            .get_mut(id.0 as usize)
            .and_then(Option::as_mut)
            .ok_or_else(|| {
                MpiError::new(
                    ErrorClass::Comm,
                    format!("communicator {} does not exist (freed?)", id.0),
                )
            })
    }

    pub(crate) fn remove(&mut self, id: CommId) -> Result<Comm> {
        if id.0 < FIRST_USER_COMM {
            return Err(MpiError::new(
                ErrorClass::Comm,
                "predefined communicators cannot be freed",
            ));
        }
        let comm = self
            .slots
            .get_mut(id.0 as usize)
            .and_then(Option::take)
            .ok_or_else(|| {
                MpiError::new(
                    ErrorClass::Comm,
                    format!("communicator {} does not exist (freed?)", id.0),
                )
            })?;
        self.topos.remove(&id.0);
        self.unclaim(comm.ctx); // a duplicate's slot is free again
        if let Some(board) = self.boards.get_mut(id.0 as usize) {
            *board = None;
        }
        Ok(comm)
    }
}

/// The table of live groups (`MPI_GROUP_EMPTY` is id 0).
#[derive(Debug)]
pub(crate) struct Groups {
    slots: Vec<Option<Group>>,
}

/// `MPI_GROUP_EMPTY`.
pub const GROUP_EMPTY: GroupId = GroupId(0);

impl Default for Groups {
    fn default() -> Self {
        Self {
            slots: vec![Some(Group {
                members: Arc::from(Vec::new()),
            })],
        }
    }
}

impl Groups {
    pub(crate) fn insert(&mut self, group: Group) -> GroupId {
        if let Some(i) = self.slots.iter().skip(1).position(Option::is_none) {
            self.slots[i + 1] = Some(group);
            GroupId(i as u32 + 1)
        } else {
            self.slots.push(Some(group));
            GroupId(self.slots.len() as u32 - 1)
        }
    }

    pub(crate) fn get(&self, id: GroupId) -> Result<&Group> {
        self.slots
            .get(id.0 as usize)
            .and_then(Option::as_ref)
            .ok_or_else(|| {
                MpiError::new(
                    ErrorClass::Group,
                    format!("group {} does not exist (freed?)", id.0),
                )
            })
    }

    pub(crate) fn remove(&mut self, id: GroupId) -> Result<()> {
        if id == GROUP_EMPTY {
            return Err(MpiError::new(
                ErrorClass::Group,
                "MPI_GROUP_EMPTY cannot be freed",
            ));
        }
        self.slots
            .get_mut(id.0 as usize)
            .and_then(Option::take)
            .map(|_| ())
            .ok_or_else(|| {
                MpiError::new(
                    ErrorClass::Group,
                    format!("group {} does not exist (freed?)", id.0),
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(m: &[u32]) -> Group {
        Group {
            members: Arc::from(m.to_vec()),
        }
    }

    #[test]
    fn group_comparison() {
        assert_eq!(
            compare_groups(&group(&[0, 1, 2]), &group(&[0, 1, 2])),
            Comparison::Ident
        );
        assert_eq!(
            compare_groups(&group(&[0, 1, 2]), &group(&[2, 0, 1])),
            Comparison::Similar
        );
        assert_eq!(
            compare_groups(&group(&[0, 1]), &group(&[0, 2])),
            Comparison::Unequal
        );
    }

    #[test]
    fn freed_slots_are_reused_and_predefined_ones_protected() {
        let mut comms = Comms::default();
        let c = |ctx| Comm::intra(ctx, 0, group(&[0]), 0);
        assert_eq!(comms.insert(c(0)), COMM_WORLD);
        assert_eq!(comms.insert(c(2)), COMM_SELF);
        assert_eq!(comms.insert(c(4)), COMM_SESSIONS);
        let a = comms.insert(c(6));
        assert!(comms.remove(COMM_SESSIONS).is_err());
        assert!(comms.remove(COMM_WORLD).is_err());
        comms.remove(a).unwrap();
        assert_eq!(comms.get(a).unwrap_err().class, ErrorClass::Comm);
        assert_eq!(comms.insert(c(8)), a);
    }
}
