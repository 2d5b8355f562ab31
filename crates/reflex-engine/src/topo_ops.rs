//! Creating communicators with process topologies (MPI-3.1 chapter 7) and looking them up.
//!
//! Reflex never reorders ranks (`reorder` is accepted and ignored, which the standard allows):
//! a Cartesian or graph communicator is the first `n` ranks of the parent, split off with one
//! `MPI_Comm_split`; a distributed graph is a duplicate of the parent. `MPI_Dist_graph_create`,
//! where any process may name any edge, gathers every process's edge list onto every process
//! (one variable-length allgather) and keeps the edges that start or end here, ordered by the
//! rank that named them and then by position, so weights and neighbours stay paired.

use crate::comm::CommId;
use crate::comm_ops::UNDEFINED;
use crate::engine::Engine;
use crate::error::{ErrorClass, MpiError, Result};
use crate::topo::{Cart, DistGraph, Topology};
use reflex_base::transport::Transport;
use std::sync::Arc;

/// One edge named in `MPI_Dist_graph_create`: (source, destination, weight).
pub type Edge = (u32, u32, i32);

fn words(bytes: &[u8]) -> impl Iterator<Item = i32> + '_ {
    bytes
        .chunks_exact(4)
        .map(|w| i32::from_le_bytes(w.try_into().expect("4-byte word")))
}

impl<T: Transport> Engine<T> {
    /// The topology of `comm`, if it has one.
    pub fn topology(&self, comm: CommId) -> Result<Option<Arc<Topology>>> {
        self.comms.get(comm)?;
        Ok(self.comms.topos.get(&comm.0).cloned())
    }

    /// The Cartesian topology of `comm`, or `MPI_ERR_TOPOLOGY`.
    pub fn cart(&self, comm: CommId) -> Result<Arc<Topology>> {
        match self.topology(comm)? {
            Some(t) if matches!(*t, Topology::Cart(_)) => Ok(t),
            _ => Err(MpiError::new(
                ErrorClass::Topology,
                "the communicator has no Cartesian topology",
            )),
        }
    }

    fn attach(&mut self, comm: Option<CommId>, topo: Topology) -> Option<CommId> {
        if let Some(id) = comm {
            self.comms.topos.insert(id.0, Arc::new(topo));
        }
        comm
    }

    /// The first `n` ranks of `parent` in a new communicator (`None` for the others).
    fn first_ranks(&mut self, parent: CommId, n: usize, what: &str) -> Result<Option<CommId>> {
        let p = self.intra(parent)?;
        if n > p.size() {
            return Err(MpiError::new(
                ErrorClass::Arg,
                format!(
                    "the {what} has {n} processes, more than the communicator's {}",
                    p.size()
                ),
            ));
        }
        let rank = p.rank as i32;
        let color = if (rank as usize) < n { 0 } else { UNDEFINED };
        self.comm_split(parent, color, rank)
    }

    /// `MPI_Cart_create`.
    pub fn cart_create(&mut self, parent: CommId, cart: Cart) -> Result<Option<CommId>> {
        let id = self.first_ranks(parent, cart.size(), "grid")?;
        Ok(self.attach(id, Topology::Cart(cart)))
    }

    /// `MPI_Cart_sub`: the sub-grids that keep the dimensions where `remain` is true.
    pub fn cart_sub(&mut self, comm: CommId, remain: &[bool]) -> Result<CommId> {
        let topo = self.cart(comm)?;
        let Topology::Cart(cart) = &*topo else {
            unreachable!("cart() returns Cartesian topologies only")
        };
        if remain.len() != cart.dims.len() {
            return Err(MpiError::new(
                ErrorClass::Arg,
                format!(
                    "remain_dims has {} entries for a grid of {} dimensions",
                    remain.len(),
                    cart.dims.len()
                ),
            ));
        }
        let rank = self.comms.get(comm)?.rank;
        let (sub, color) = cart.sub(rank as usize, remain);
        let id = self.comm_split(comm, color as i32, rank as i32)?;
        let id = self.attach(id, Topology::Cart(sub));
        id.ok_or_else(|| MpiError::new(ErrorClass::Intern, "cart_sub produced no communicator"))
    }

    /// `MPI_Graph_create` (`topo` from [`Topology::graph`]).
    pub fn graph_create(&mut self, parent: CommId, topo: Topology) -> Result<Option<CommId>> {
        let n = match &topo {
            Topology::Graph { index, .. } => index.len(),
            _ => {
                return Err(MpiError::new(
                    ErrorClass::Intern,
                    "graph_create needs a graph",
                ))
            }
        };
        let id = self.first_ranks(parent, n, "graph")?;
        Ok(self.attach(id, topo))
    }

    fn check_ranks(&self, parent: CommId, ranks: impl IntoIterator<Item = i32>) -> Result<()> {
        let size = self.intra(parent)?.size();
        match ranks.into_iter().find(|&r| r < 0 || r as usize >= size) {
            Some(r) => Err(MpiError::new(
                ErrorClass::Rank,
                format!("graph node {r} is out of range for a communicator of size {size}"),
            )),
            None => Ok(()),
        }
    }

    /// `MPI_Dist_graph_create_adjacent`: this process's in- and out-edges, with weights.
    pub fn dist_graph_create_adjacent(
        &mut self,
        parent: CommId,
        sources: &[(i32, i32)],
        destinations: &[(i32, i32)],
        weighted: bool,
    ) -> Result<CommId> {
        self.check_ranks(parent, sources.iter().chain(destinations).map(|e| e.0))?;
        let graph = DistGraph {
            sources: sources.iter().map(|&(r, w)| (r as usize, w)).collect(),
            destinations: destinations.iter().map(|&(r, w)| (r as usize, w)).collect(),
            weighted,
        };
        let id = self.comm_dup(parent)?;
        self.comms.topos.remove(&id.0);
        self.attach(Some(id), Topology::DistGraph(graph));
        Ok(id)
    }

    /// `MPI_Dist_graph_create`: `edges` are the edges this process names (any source).
    pub fn dist_graph_create(
        &mut self,
        parent: CommId,
        edges: &[Edge],
        weighted: bool,
    ) -> Result<CommId> {
        self.check_ranks(parent, edges.iter().flat_map(|e| [e.0 as i32, e.1 as i32]))?;
        let me = self.comms.get(parent)?.rank as usize;
        let mut mine = vec![u8::from(weighted), 0, 0, 0];
        for &(s, d, w) in edges {
            for x in [s as i32, d as i32, w] {
                mine.extend_from_slice(&x.to_le_bytes());
            }
        }
        let all = self.allgather_var(parent, &mine)?;
        let mut graph = DistGraph {
            sources: Vec::new(),
            destinations: Vec::new(),
            weighted: false,
        };
        for bytes in &all {
            graph.weighted |= bytes.first().is_some_and(|&f| f != 0);
            let list: Vec<i32> = words(bytes.get(4..).unwrap_or(&[])).collect();
            for e in list.chunks_exact(3) {
                let (s, d, w) = (e[0] as usize, e[1] as usize, e[2]);
                if s == me {
                    graph.destinations.push((d, w));
                }
                if d == me {
                    graph.sources.push((s, w));
                }
            }
        }
        let id = self.comm_dup(parent)?;
        self.comms.topos.remove(&id.0);
        self.attach(Some(id), Topology::DistGraph(graph));
        Ok(id)
    }
}
