//! Creating, comparing and freeing communicators (groups: `group_ops`).
//!
//! `MPI_Comm_dup` and `MPI_Comm_split` are collective over the parent: one allgather carries every
//! member's proposed context id (its lowest unused one) together with its color and key, so the new
//! context id (the maximum proposal) and the new membership are agreed in a single exchange.

use crate::comm::{compare_groups, Comm, CommId, Comparison, Group, GroupId, COMM_WORLD};
use crate::engine::Engine;
use crate::error::{ErrorClass, MpiError, Result};
use reflex_base::transport::Transport;

/// `MPI_UNDEFINED` (MPICH's value): the color of ranks that join no new communicator.
pub const UNDEFINED: i32 = -32766;

fn word(b: &[u8], i: usize) -> i32 {
    i32::from_le_bytes(b[4 * i..4 * i + 4].try_into().expect("4 bytes"))
}

impl<T: Transport> Engine<T> {
    /// The communicator behind `id`.
    pub fn comm(&self, id: CommId) -> Result<&Comm> {
        self.comms.get(id)
    }

    /// Mutable access (names, error handlers).
    pub fn comm_mut(&mut self, id: CommId) -> Result<&mut Comm> {
        self.comms.get_mut(id)
    }

    /// One collective exchange of (next free context id, color, key); returns the agreed context id
    /// and every member's (color, key).
    fn exchange_for_new_comm(
        &mut self,
        parent: CommId,
        color: i32,
        key: i32,
    ) -> Result<(u32, Vec<(i32, i32)>)> {
        let proposal = self.comms.next_ctx as i32;
        let mine = [proposal, color, key]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        let all = self.allgather_bytes(parent, mine)?;
        let ctx = all.iter().map(|b| word(b, 0)).max().unwrap_or(proposal) as u32;
        self.comms.next_ctx = ctx + 2;
        Ok((ctx, all.iter().map(|b| (word(b, 1), word(b, 2))).collect()))
    }

    /// `MPI_Comm_split`: ranks with the same color form a communicator, ordered by (key, old rank).
    /// Returns `None` for `MPI_UNDEFINED`.
    pub fn comm_split(&mut self, parent: CommId, color: i32, key: i32) -> Result<Option<CommId>> {
        if color < 0 && color != UNDEFINED {
            return Err(MpiError::new(
                ErrorClass::Arg,
                format!("split color {color} is negative and not MPI_UNDEFINED"),
            ));
        }
        if self.comms.get(parent)?.is_inter() {
            return self.inter_split(parent, color, key);
        }
        let (ctx, choices) = self.exchange_for_new_comm(parent, color, key)?;
        if color == UNDEFINED {
            return Ok(None);
        }
        let p = self.comms.get(parent)?;
        let mut chosen: Vec<(i32, usize)> = choices
            .iter()
            .enumerate()
            .filter(|(_, (c, _))| *c == color)
            .map(|(r, (_, k))| (*k, r))
            .collect();
        chosen.sort_unstable();
        let members: Vec<u32> = chosen.iter().map(|&(_, r)| p.group.members[r]).collect();
        let me = p.group.members[p.rank as usize];
        let rank = members
            .iter()
            .position(|&m| m == me)
            .expect("this rank chose its own color") as u32;
        let group = Group {
            members: members.into(),
        };
        let comm = Comm::intra(ctx, rank, group, p.errhandler);
        Ok(Some(self.comms.insert(comm)))
    }

    /// `MPI_Comm_create`: the members of `group` (a subgroup of the parent) get a new communicator.
    pub fn comm_create(&mut self, parent: CommId, group: GroupId) -> Result<Option<CommId>> {
        if self.comms.get(parent)?.is_inter() {
            return self.inter_create(parent, group);
        }
        let g = self.groups.get(group)?.clone();
        let p = self.comms.get(parent)?;
        if let Some(outsider) = g.members.iter().find(|m| p.group.rank_of(**m).is_none()) {
            return Err(MpiError::new(
                ErrorClass::Group,
                format!("world rank {outsider} of the group is not in the communicator"),
            ));
        }
        let me = p.group.members[p.rank as usize];
        let (ctx, _) = self.exchange_for_new_comm(parent, 0, 0)?;
        let Some(rank) = g.rank_of(me) else {
            return Ok(None);
        };
        let errhandler = self.comms.get(parent)?.errhandler;
        let comm = Comm::intra(ctx, rank as u32, g, errhandler);
        Ok(Some(self.comms.insert(comm)))
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
