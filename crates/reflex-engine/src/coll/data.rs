//! Schedules of the collectives that move data without combining it: barrier, broadcast,
//! gather, scatter, allgather, alltoall and the neighbourhood collectives.
//!
//! Blocks travel straight between application buffers of any datatype (the point-to-point layer
//! packs and unpacks them on the fly); only a rank's own block is copied locally, and in-place
//! alltoall packs what it sends first because the same memory receives.

use super::large;
use super::sched::{Builder, Dst, Src, Step};
use super::select::{Allgather, Alltoall, Barrier, Bcast, CollTuning};
use super::spec::{check_blocks, check_root, RecvData, SendData};
use super::trees;
use crate::comm::CommId;
use crate::engine::Engine;
use crate::error::{ErrorClass, MpiError, Result};
use crate::request::PROC_NULL;
use crate::topo::Topology;
use reflex_base::transport::Transport;

/// `MPI_Barrier` by the schedule the table picks.
pub(crate) fn barrier_with(b: &mut Builder, table: &CollTuning) {
    match table.barrier() {
        Barrier::Dissemination => barrier(b),
        Barrier::Pairwise => pairwise_barrier(b),
    }
}

/// `MPI_Barrier`: dissemination. In round k every rank signals rank + 2^k and waits for
/// rank − 2^k; after ⌈log2 n⌉ rounds every rank has heard, through some chain, from all others.
pub(crate) fn barrier(b: &mut Builder) {
    let (me, n) = (b.rank, b.size);
    let mut dist = 1;
    let mut round = 0u8;
    while dist < n {
        b.recv((me + n - dist) % n, round, Dst::Empty);
        b.send((me + dist) % n, round, Src::Empty);
        b.end_round();
        dist *= 2;
        round += 1;
    }
}

/// `MPI_Barrier` by pairwise exchange (recursive doubling): with n = 2^k + rem, the odd ranks
/// below 2·rem first signal their even neighbour and wait for its release at the end; the other
/// 2^k ranks exchange with partners at distance 1, 2, 4, … (renumbered past the folded ones).
pub(crate) fn pairwise_barrier(b: &mut Builder) {
    let (me, n) = (b.rank, b.size);
    let pow = if n == 0 { 0 } else { 1 << n.ilog2() };
    let rem = n - pow;
    if me < 2 * rem && me % 2 == 1 {
        b.send(me - 1, 0, Src::Empty);
        b.recv(me - 1, 1, Dst::Empty);
        return;
    }
    if me < 2 * rem {
        b.recv(me + 1, 0, Dst::Empty);
        b.end_round();
    }
    let new = if me < 2 * rem { me / 2 } else { me - rem };
    let actual = |r: usize| if r < rem { 2 * r } else { r + rem };
    let mut mask = 1;
    let mut tag = 2u8;
    while mask < pow {
        let partner = actual(new ^ mask);
        b.recv(partner, tag, Dst::Empty);
        b.send(partner, tag, Src::Empty);
        b.end_round();
        mask <<= 1;
        tag = tag.wrapping_add(1);
    }
    if me < 2 * rem {
        b.send(me + 1, 1, Src::Empty);
    }
}

/// `MPI_Bcast` down a binomial tree rooted at `root` (the local phase of intercommunicator
/// collectives).
pub(crate) fn bcast(b: &mut Builder, data: RecvData, root: i32) -> Result<()> {
    bcast_with(b, data, root, Bcast::Knomial(2))
}

/// `MPI_Bcast` by the schedule `algo`.
pub(crate) fn bcast_with(b: &mut Builder, data: RecvData, root: i32, algo: Bcast) -> Result<()> {
    let n = b.size;
    let root = check_root(root, n)?;
    let rel = (b.rank + n - root) % n;
    match algo {
        Bcast::Knomial(r) => trees::bcast_down(b, data, root, &trees::knomial(rel, n, r)),
        Bcast::Postal(lambda) => {
            let node = trees::postal(n, lambda).swap_remove(rel);
            trees::bcast_down(b, data, root, &node)
        }
        Bcast::ScatterAllgather => large::scatter_allgather_bcast(b, data, root)?,
    }
    Ok(())
}

/// `MPI_Gather(v)`: every rank sends its block to the root, which receives them all at once.
pub(crate) fn gather(
    b: &mut Builder,
    send: Option<SendData>,
    recv: Vec<RecvData>,
    root: i32,
) -> Result<()> {
    let (me, n) = (b.rank, b.size);
    let root = check_root(root, n)?;
    if me != root {
        let send = send.ok_or_else(|| in_place_not_here("the root"))?;
        b.send(root, 0, Src::User(send));
        return Ok(());
    }
    check_blocks(&recv, n, "the gather receive buffer")?;
    if let Some(send) = send {
        b.step(Step::Copy {
            from: send,
            to: recv[me].clone(),
        });
    }
    for (r, block) in recv.into_iter().enumerate().filter(|&(r, _)| r != me) {
        b.recv(r, 0, Dst::User(block));
    }
    Ok(())
}

/// `MPI_Scatter(v)`: the root sends every rank its block at once.
pub(crate) fn scatter(
    b: &mut Builder,
    send: Vec<SendData>,
    recv: Option<RecvData>,
    root: i32,
) -> Result<()> {
    let (me, n) = (b.rank, b.size);
    let root = check_root(root, n)?;
    if me != root {
        let recv = recv.ok_or_else(|| in_place_not_here("the root"))?;
        b.recv(root, 0, Dst::User(recv));
        return Ok(());
    }
    check_blocks(&send, n, "the scatter send buffer")?;
    if let Some(recv) = recv {
        b.step(Step::Copy {
            from: send[me].clone(),
            to: recv,
        });
    }
    for (r, block) in send.into_iter().enumerate().filter(|&(r, _)| r != me) {
        b.send(r, 0, Src::User(block));
    }
    Ok(())
}

/// `MPI_Allgather(v)` by the schedule the table picks: one round of direct exchange, a ring
/// (in round k a rank forwards to its right neighbour the block it received in round k − 1), or
/// Bruck's doubling.
pub(crate) fn allgather(
    b: &mut Builder,
    send: Option<SendData>,
    recv: Vec<RecvData>,
    table: &CollTuning,
) -> Result<()> {
    let (me, n) = (b.rank, b.size);
    check_blocks(&recv, n, "the allgather receive buffer")?;
    if let Some(send) = send {
        b.step(Step::Copy {
            from: send,
            to: recv[me].clone(),
        });
    }
    let mut lens = Vec::with_capacity(n);
    for block in &recv {
        lens.push(block.packed_len()?);
    }
    let largest = lens.iter().copied().max().unwrap_or(0);
    let uniform = lens.iter().all(|&l| l == largest);
    match table.allgather(n, largest, uniform) {
        Allgather::Direct => {
            for k in 1..n {
                let (to, from) = ((me + k) % n, (me + n - k) % n);
                b.recv(from, 0, Dst::User(recv[from].clone()));
                b.send(to, 0, Src::User(recv[me].as_send()));
            }
        }
        Allgather::Bruck => large::bruck_allgather(b, recv, largest),
        Allgather::Ring => {
            let (left, right) = ((me + n - 1) % n, (me + 1) % n);
            for k in 0..n.saturating_sub(1) {
                let (out, into) = ((me + n - k) % n, (me + n - k - 1) % n);
                b.recv(left, 0, Dst::User(recv[into].clone()));
                b.send(right, 0, Src::User(recv[out].as_send()));
                b.end_round();
            }
        }
    }
    Ok(())
}

/// `MPI_Alltoall(v,w)`: peers in the order rank + 1, rank + 2, … so that no rank is everyone's
/// first destination; every transfer in one round (direct) or one peer per round (pairwise).
pub(crate) fn alltoall(
    b: &mut Builder,
    send: Option<Vec<SendData>>,
    recv: Vec<RecvData>,
    table: &CollTuning,
) -> Result<()> {
    let (me, n) = (b.rank, b.size);
    check_blocks(&recv, n, "the alltoall receive buffer")?;
    let outgoing: Vec<Src> = match send {
        Some(send) => {
            check_blocks(&send, n, "the alltoall send buffer")?;
            b.step(Step::Copy {
                from: send[me].clone(),
                to: recv[me].clone(),
            });
            send.into_iter().map(Src::User).collect()
        }
        None => {
            // In place: what goes out must be read before the same memory receives.
            let mut staged = Vec::with_capacity(n);
            for block in &recv {
                let t = b.temp(block.packed_len()?);
                b.step(Step::Pack {
                    from: block.as_send(),
                    to: t,
                });
                staged.push(Src::Temp(t));
            }
            staged
        }
    };
    let mut largest = 0;
    for block in &recv {
        largest = largest.max(block.packed_len()?);
    }
    let pairwise = table.alltoall(n, largest) == Alltoall::Pairwise;
    for k in 1..n {
        let (to, from) = ((me + k) % n, (me + n - k) % n);
        b.recv(from, 0, Dst::User(recv[from].clone()));
        b.send(to, 0, outgoing[to].clone());
        if pairwise {
            b.end_round();
        }
    }
    Ok(())
}

/// One neighbour of a process topology: its rank (or `MPI_PROC_NULL`, a block that is neither
/// sent nor received) and the step tag its message carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Neighbor {
    /// Rank in the communicator, or `PROC_NULL`.
    pub rank: i32,
    /// Step tag of the message exchanged with it.
    pub tag: u8,
}

/// The neighbourhood collectives: one round, a receive from every in-neighbour and a send to
/// every out-neighbour.
pub(crate) fn neighbor(
    b: &mut Builder,
    sources: &[Neighbor],
    destinations: &[Neighbor],
    send: Vec<SendData>,
    recv: Vec<RecvData>,
) -> Result<()> {
    check_degree(recv.len(), sources.len(), "receive")?;
    check_degree(send.len(), destinations.len(), "send")?;
    for (nb, block) in sources.iter().zip(recv) {
        if nb.rank != PROC_NULL {
            b.recv(nb.rank as usize, nb.tag, Dst::User(block));
        }
    }
    for (nb, block) in destinations.iter().zip(send) {
        if nb.rank != PROC_NULL {
            b.send(nb.rank as usize, nb.tag, Src::User(block));
        }
    }
    Ok(())
}

fn check_degree(blocks: usize, neighbours: usize, what: &str) -> Result<()> {
    if blocks == neighbours {
        return Ok(());
    }
    Err(MpiError::new(
        ErrorClass::Arg,
        format!("{blocks} {what} blocks for {neighbours} neighbours"),
    ))
}

fn in_place_not_here(who: &str) -> MpiError {
    MpiError::new(
        ErrorClass::Buffer,
        format!("MPI_IN_PLACE is only valid at {who}"),
    )
}

impl<T: Transport> Engine<T> {
    /// The in- and out-neighbours of this process in `comm`'s topology, in the order the
    /// neighbourhood collectives use (MPI-3.1 §7.6): for a grid, per dimension the neighbour
    /// below then the one above (`MPI_PROC_NULL` off a non-periodic edge).
    ///
    /// On a grid each message is tagged with its direction, so that with two ranks on a
    /// periodic dimension (both neighbours the same process) the block sent "up" is the one
    /// received "from below". Graph neighbours are matched in order.
    pub fn neighbors(&self, comm: CommId) -> Result<(Vec<Neighbor>, Vec<Neighbor>)> {
        let rank = self.comms.get(comm)?.rank as usize;
        let topo = self.topology(comm)?.ok_or_else(|| {
            MpiError::new(
                ErrorClass::Topology,
                "neighbourhood collectives need a communicator with a process topology",
            )
        })?;
        let plain = |ranks: &mut dyn Iterator<Item = usize>| -> Vec<Neighbor> {
            ranks
                .map(|r| Neighbor {
                    rank: r as i32,
                    tag: 0,
                })
                .collect()
        };
        Ok(match &*topo {
            Topology::Cart(cart) => {
                let mut ins = Vec::with_capacity(2 * cart.dims.len());
                let mut outs = Vec::with_capacity(2 * cart.dims.len());
                for d in 0..cart.dims.len() {
                    let (below, above) = cart.shift(rank, d as i32, 1)?;
                    let tag = (2 * d).min(254) as u8;
                    // Sent down with `tag`, up with `tag + 1`; received from below what was
                    // sent up, from above what was sent down.
                    outs.push(Neighbor { rank: below, tag });
                    outs.push(Neighbor {
                        rank: above,
                        tag: tag + 1,
                    });
                    ins.push(Neighbor {
                        rank: below,
                        tag: tag + 1,
                    });
                    ins.push(Neighbor { rank: above, tag });
                }
                (ins, outs)
            }
            Topology::Graph { .. } => {
                let all = topo.graph_neighbors(rank).unwrap_or_default();
                (plain(&mut all.iter().copied()), plain(&mut all.into_iter()))
            }
            Topology::DistGraph(g) => (
                plain(&mut g.sources.iter().map(|&(r, _)| r)),
                plain(&mut g.destinations.iter().map(|&(r, _)| r)),
            ),
        })
    }
}
