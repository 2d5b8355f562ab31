//! The transports a process can use, as one enum (static dispatch, chosen at start-up), and the
//! start-up that picks them.
//!
//! A job's ranks are grouped into nodes by `PMI_process_mapping` when the launcher publishes it
//! (Hydra, Slurm and Reflex's mpiexec do), else by host name plus boot id. Node-local resources
//! are named by job and node index, never by host name alone: emulated nodes share a host name
//! (launchers.md §1.6). Ranks of one node use shared memory, ranks of different nodes TCP
//! ([`Fabric::Mixed`] chooses per peer); `REFLEX_TCP_LOCAL=1` makes every pair use TCP.
//!
//! Processes of other jobs (dynamic process management) are reached over a bridge, a second TCP
//! transport created on first use: [`Fabric::bridge`] wraps the start-up fabric in
//! [`Fabric::Bridged`], which sends to indices from the world size on over the bridge and polls
//! and sleeps on both. A job that never meets another keeps its start-up variant, so its paths
//! do not change.

use crate::error::{ErrorClass, MpiError, Result};
use reflex_base::cache::CachePadded;
use reflex_base::config::Config;
use reflex_base::coop::CoopSlot;
use reflex_base::transport::{copy_parts, Sink, Transport, WouldBlock};
use reflex_pmi::client::PmiClient;
use reflex_shm::{ShmParams, ShmSegment, ShmTransport};
use reflex_tcp::{TcpParams, TcpTransport};
use std::time::Duration;

pub use reflex_shm::ShmStats;
pub use reflex_tcp::TcpStats;

/// Every transport of Reflex. A job of one process needs none (`Alone`: all traffic is loopback).
#[derive(Debug)]
pub enum Fabric {
    /// Shared memory between the ranks of one node (the whole job is on one node).
    Shm(ShmTransport),
    /// TCP to every peer.
    Tcp(Box<TcpTransport>),
    /// Shared memory to the ranks of this node, TCP to the others.
    Mixed(Box<Mixed>),
    /// No peers.
    Alone,
    /// The start-up fabric plus a bridge to processes of other jobs.
    Bridged(Box<Bridged>),
}

/// The start-up fabric for this job's ranks (indices below `world`) and a TCP bridge to the
/// processes of other jobs (indices from `world` on, `reflex_tcp::bridge`).
#[derive(Debug)]
pub struct Bridged {
    base: Fabric,
    bridge: TcpTransport,
    world: usize,
    polls: u32,
}

/// Longest single sleep of a [`Mixed`] fabric: it sleeps on the shared-memory doorbell, which
/// TCP traffic does not ring, so TCP arrivals are noticed within this time (spurious returns
/// are allowed by the transport contract; the engine only sleeps after spinning).
pub const MIXED_SLEEP_SLICE: Duration = Duration::from_micros(200);
/// A [`Mixed`] fabric polls TCP at least once every this many polls while shared memory is busy
/// (an `epoll_wait` per poll would slow the shared-memory path).
const TCP_POLL_EVERY: u32 = 8;

/// Marks a rank that is not on this node in [`Mixed`]'s table.
const NOT_LOCAL: u32 = u32::MAX;

/// Shared memory to local ranks and TCP to the others; indexed by world rank.
#[derive(Debug)]
pub struct Mixed {
    shm: ShmTransport,
    tcp: TcpTransport,
    /// Shared-memory index of each world rank, or [`NOT_LOCAL`].
    local_index: Box<[u32]>,
    /// World rank of each shared-memory index.
    world_of_local: Box<[usize]>,
    polls: u32,
}

impl Mixed {
    /// `local[i]` is the world rank of shared-memory index `i`; `size` ranks in all.
    fn new(shm: ShmTransport, tcp: TcpTransport, local: &[usize], size: usize) -> Self {
        let mut local_index = vec![NOT_LOCAL; size];
        for (i, &world) in local.iter().enumerate() {
            local_index[world] = i as u32;
        }
        Self {
            shm,
            tcp,
            local_index: local_index.into(),
            world_of_local: local.into(),
            polls: 0,
        }
    }
}

impl Fabric {
    /// The bridge to other jobs, created (listening) at the first call by process `me` of a job
    /// of `world` ranks.
    pub fn bridge(
        &mut self,
        world: usize,
        me: reflex_tcp::bridge::GlobalId,
    ) -> std::io::Result<&mut TcpTransport> {
        if !matches!(self, Fabric::Bridged(_)) {
            let bridge = TcpTransport::bind_bridge(me, TcpParams::default())?;
            let base = std::mem::replace(self, Fabric::Alone);
            *self = Fabric::Bridged(Box::new(Bridged {
                base,
                bridge,
                world,
                polls: 0,
            }));
        }
        match self {
            Fabric::Bridged(b) => Ok(&mut b.bridge),
            _ => unreachable!("the fabric was bridged above"),
        }
    }

    /// Whether every peer is reached through this node's shared memory (so that the
    /// single-copy rendezvous, which reads a peer's memory by pid, is valid for all of them).
    pub fn shares_memory_with_all(&self) -> bool {
        match self {
            Fabric::Bridged(b) => b.base.shares_memory_with_all(),
            f => matches!(f, Fabric::Shm(_) | Fabric::Alone),
        }
    }

    /// Name of this node's shared segment, when ranks here use one (job and node in the name).
    pub fn node_segment_name(&self) -> Option<&str> {
        match self {
            Fabric::Shm(t) => Some(t.segment().name()),
            Fabric::Mixed(m) => Some(m.shm.segment().name()),
            Fabric::Bridged(b) => b.base.node_segment_name(),
            Fabric::Tcp(_) | Fabric::Alone => None,
        }
    }
}

impl crate::engine::Engine<Fabric> {
    /// The slow-path counters of the transports this process uses (tools' counters): those of
    /// shared memory and of TCP (the bridge to other jobs included), `None` for a transport it
    /// does not use.
    pub fn transport_stats(&self) -> (Option<ShmStats>, Option<TcpStats>) {
        fabric_stats(&self.fabric)
    }
}

fn fabric_stats(fabric: &Fabric) -> (Option<ShmStats>, Option<TcpStats>) {
    match fabric {
        Fabric::Shm(t) => (Some(t.stats()), None),
        Fabric::Tcp(t) => (None, Some(t.stats())),
        Fabric::Mixed(m) => (Some(m.shm.stats()), Some(m.tcp.stats())),
        Fabric::Alone => (None, None),
        Fabric::Bridged(b) => {
            let (shm, tcp) = fabric_stats(&b.base);
            let bridge = b.bridge.stats();
            (shm, Some(tcp.map_or(bridge, |t| t.sum(&bridge))))
        }
    }
}

impl Transport for Fabric {
    #[inline]
    fn max_packet(&self) -> usize {
        match self {
            Fabric::Shm(t) => t.max_packet(),
            Fabric::Tcp(t) => t.max_packet(),
            Fabric::Mixed(m) => m.shm.max_packet().min(m.tcp.max_packet()),
            Fabric::Alone => 1 << 20,
            Fabric::Bridged(b) => b.base.max_packet().min(b.bridge.max_packet()),
        }
    }

    fn max_packet_to(&self, dest: usize) -> usize {
        match self {
            Fabric::Mixed(m) if m.local_index[dest] == NOT_LOCAL => m.tcp.max_packet(),
            Fabric::Bridged(b) if dest >= b.world => b.bridge.max_packet(),
            Fabric::Bridged(b) => b.base.max_packet_to(dest),
            _ => self.max_packet(),
        }
    }

    fn is_stream(&self, dest: usize) -> bool {
        match self {
            Fabric::Tcp(t) => t.is_stream(dest),
            Fabric::Mixed(m) => m.local_index[dest] == NOT_LOCAL,
            Fabric::Bridged(b) => dest >= b.world || b.base.is_stream(dest),
            Fabric::Shm(_) | Fabric::Alone => false,
        }
    }

    #[inline]
    fn try_send_parts(
        &mut self,
        dest: usize,
        head: &[u8],
        body: &[u8],
    ) -> std::result::Result<(), WouldBlock> {
        match self {
            Fabric::Tcp(t) => t.try_send_parts(dest, head, body),
            Fabric::Mixed(m) if m.local_index[dest] == NOT_LOCAL => {
                m.tcp.try_send_parts(dest, head, body)
            }
            Fabric::Bridged(b) if dest >= b.world => b.bridge.try_send_parts(dest, head, body),
            Fabric::Bridged(b) => b.base.try_send_parts(dest, head, body),
            _ => self.try_send(dest, head.len() + body.len(), |b| copy_parts(b, head, body)),
        }
    }

    #[inline]
    fn try_send<F: FnOnce(&mut [u8])>(
        &mut self,
        dest: usize,
        len: usize,
        fill: F,
    ) -> std::result::Result<(), WouldBlock> {
        match self {
            Fabric::Shm(t) => t.try_send(dest, len, fill),
            Fabric::Tcp(t) => t.try_send(dest, len, fill),
            Fabric::Mixed(m) => match m.local_index[dest] {
                NOT_LOCAL => m.tcp.try_send(dest, len, fill),
                local => m.shm.try_send(local as usize, len, fill),
            },
            Fabric::Bridged(b) if dest >= b.world => b.bridge.try_send(dest, len, fill),
            Fabric::Bridged(b) => b.base.try_send(dest, len, fill),
            Fabric::Alone => unreachable!("a job of one process has no peer {dest}"),
        }
    }

    #[inline]
    fn poll<H: FnMut(usize, &[u8])>(&mut self, mut handler: H) -> usize {
        self.poll_into(&mut handler)
    }

    #[inline]
    fn poll_into<S: Sink>(&mut self, sink: &mut S) -> usize {
        match self {
            Fabric::Tcp(t) => t.poll_into(sink),
            Fabric::Mixed(m) => {
                let world = &m.world_of_local;
                let local = m
                    .shm
                    .poll(|src, bytes: &[u8]| sink.packet(world[src], bytes));
                m.polls = m.polls.wrapping_add(1);
                if local == 0 || m.polls % TCP_POLL_EVERY == 0 {
                    local + m.tcp.poll_into(sink)
                } else {
                    local
                }
            }
            Fabric::Shm(t) => t.poll(|src, bytes: &[u8]| sink.packet(src, bytes)),
            Fabric::Alone => 0,
            Fabric::Bridged(b) => {
                let local = b.base.poll_into(sink);
                b.polls = b.polls.wrapping_add(1);
                if local == 0 || b.polls % TCP_POLL_EVERY == 0 {
                    local + b.bridge.poll_into(sink)
                } else {
                    local
                }
            }
        }
    }

    /// Only within an all-shared-memory job: single copies need every peer on this node.
    fn coop_slots(&self, sender: usize, receiver: usize) -> Option<&[CachePadded<CoopSlot>]> {
        match self {
            Fabric::Shm(t) => t.coop_slots(sender, receiver),
            Fabric::Bridged(b) if sender.max(receiver) < b.world => {
                b.base.coop_slots(sender, receiver)
            }
            _ => None,
        }
    }

    fn sleep(&mut self, timeout: Duration) {
        match self {
            Fabric::Shm(t) => t.sleep(timeout),
            Fabric::Tcp(t) => t.sleep(timeout),
            Fabric::Mixed(m) => m.shm.sleep(timeout.min(MIXED_SLEEP_SLICE)),
            Fabric::Alone => std::thread::sleep(timeout),
            // The bridge's epoll alone when there is nothing else to wake on; else slices of
            // the start-up fabric's sleep (its doorbell does not ring for bridge traffic).
            Fabric::Bridged(b) if matches!(b.base, Fabric::Alone) => b.bridge.sleep(timeout),
            Fabric::Bridged(b) => b.base.sleep(timeout.min(MIXED_SLEEP_SLICE)),
        }
    }

    /// Links between this job's ranks only: a bridge's links end whenever another job does.
    fn failed_link(&self, grace: Duration) -> Option<(usize, String)> {
        match self {
            Fabric::Tcp(t) => t.failed_link(grace),
            Fabric::Mixed(m) => m.tcp.failed_link(grace),
            Fabric::Bridged(b) => b.base.failed_link(grace),
            Fabric::Shm(_) | Fabric::Alone => None,
        }
    }
}

fn wire_error(what: &str, e: impl std::fmt::Display) -> MpiError {
    MpiError::new(ErrorClass::Other, format!("{what}: {e}"))
}

/// Where the ranks of a job are: the node index of every rank, and whether TCP is forced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Layout {
    nodes: Vec<u32>,
    me: usize,
    tcp_local: bool,
}

impl Layout {
    fn new(nodes: Vec<u32>, me: usize, tcp_local: bool) -> Self {
        Self {
            nodes,
            me,
            tcp_local,
        }
    }

    /// World ranks on this rank's node, ascending.
    fn local_ranks(&self) -> Vec<usize> {
        let mine = self.nodes[self.me];
        (0..self.nodes.len())
            .filter(|&r| self.nodes[r] == mine)
            .collect()
    }

    /// Whether some node has a shared-memory segment (the same answer on every rank).
    fn shm_anywhere(&self) -> bool {
        if self.tcp_local {
            return false;
        }
        let mut sorted = self.nodes.clone();
        sorted.sort_unstable();
        sorted.windows(2).any(|w| w[0] == w[1])
    }

    /// Whether some pair talks over TCP (the same answer on every rank).
    fn tcp_anywhere(&self) -> bool {
        self.tcp_local || self.nodes.iter().any(|&n| n != self.nodes[0])
    }

    /// Whether this rank reaches `peer` over TCP.
    fn uses_tcp(&self, peer: usize) -> bool {
        peer != self.me && (self.tcp_local || self.nodes[peer] != self.nodes[self.me])
    }
}

/// Node index of every rank: from `PMI_process_mapping`, else by host name + boot id
/// (one PMI exchange, with a barrier that every rank takes alike).
fn node_of_ranks(pmi: &mut PmiClient, rank: usize, size: usize) -> Result<Vec<u32>> {
    if let Some(map) = pmi.process_mapping().filter(|m| m.len() == size) {
        return Ok(map.to_vec());
    }
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    let key = format!("{}:{}", crate::world::host_name(), boot.trim());
    pmi.put(&format!("reflex-host-{rank}"), &key)
        .map_err(|e| wire_error("publishing the host name", e))?;
    pmi.barrier()
        .map_err(|e| wire_error("start-up barrier", e))?;
    let mut hosts: Vec<String> = Vec::new();
    let mut nodes = Vec::with_capacity(size);
    for r in 0..size {
        let theirs = pmi
            .get(&format!("reflex-host-{r}"))
            .map_err(|e| wire_error("reading host names", e))?;
        let index = hosts.iter().position(|h| *h == theirs).unwrap_or_else(|| {
            hosts.push(theirs);
            hosts.len() - 1
        });
        nodes.push(index as u32);
    }
    Ok(nodes)
}

/// Sets up the transports of rank `rank` of `size` (`size > 1`).
///
/// Every rank takes the same PMI barriers: cards and the node segment's name are published, a
/// barrier, peers' cards read and the segment opened, a second barrier (only when some node has
/// a segment), after which the node's first rank unlinks the segment, so no file is left in
/// `/dev/shm` once start-up is over. Returns the fabric and the number of ranks on this node.
pub(crate) fn wire_up(
    pmi: &mut PmiClient,
    config: &Config,
    rank: usize,
    size: usize,
) -> Result<(Fabric, usize)> {
    let layout = Layout::new(node_of_ranks(pmi, rank, size)?, rank, config.tcp_local != 0);
    let mut tcp = if layout.tcp_anywhere() {
        let params = TcpParams {
            streams: config.tcp_streams.get(),
            stripe_min: config.tcp_stripe_min.get(),
            keepalive_s: config.tcp_keepalive,
            ..TcpParams::default()
        };
        let t = TcpTransport::bind(rank, size, params)
            .map_err(|e| wire_error("cannot set up the tcp transport", e))?;
        pmi.put(&format!("reflex-tcp-{rank}"), &t.card())
            .map_err(|e| wire_error("publishing the tcp business card", e))?;
        Some(t)
    } else {
        None
    };
    let local = layout.local_ranks();
    let shm_here = layout.shm_anywhere() && local.len() > 1;
    let name = reflex_base::segment::segment_name(pmi.kvsname(), layout.nodes[rank] as usize);
    let creates_segment = shm_here && local[0] == rank;
    let params = match config.shm_ring_bytes.get() {
        0 if creates_segment => {
            let free = reflex_base::segment::shm_free_bytes()
                .map_err(|e| wire_error("sizing the shared segment", e))?;
            ShmParams::for_node(local.len(), free)
        }
        ring_bytes => ShmParams { ring_bytes },
    };
    let created = if creates_segment {
        Some(
            ShmSegment::create(&name, local.len(), &params)
                .map_err(|e| wire_error(&format!("cannot create shared segment {name}"), e))?,
        )
    } else {
        None
    };
    let leader = created.is_some();
    pmi.barrier()
        .map_err(|e| wire_error("start-up barrier", e))?;
    if let Some(t) = &mut tcp {
        for peer in (0..size).filter(|&p| layout.uses_tcp(p)) {
            let card = pmi
                .get(&format!("reflex-tcp-{peer}"))
                .map_err(|e| wire_error(&format!("reading the tcp card of rank {peer}"), e))?;
            t.set_card(peer, &card)
                .map_err(|e| wire_error(&format!("rank {peer}"), e))?;
        }
    }
    let segment = match created {
        Some(seg) => Some(seg),
        None if shm_here => Some(
            ShmSegment::open(&name)
                .map_err(|e| wire_error(&format!("cannot open shared segment {name}"), e))?,
        ),
        None => None,
    };
    if layout.shm_anywhere() {
        pmi.barrier()
            .map_err(|e| wire_error("start-up barrier", e))?;
    }
    if leader {
        reflex_base::segment::unlink(&name)
            .map_err(|e| wire_error(&format!("cannot unlink shared segment {name}"), e))?;
    }
    let shm = match segment {
        Some(seg) => {
            let me = local.iter().position(|&r| r == rank).unwrap_or(0);
            Some(
                ShmTransport::new(seg, me)
                    .map_err(|e| wire_error("cannot attach to the shared segment", e))?,
            )
        }
        None => None,
    };
    let fabric = match (shm, tcp) {
        (Some(shm), None) => Fabric::Shm(shm),
        (None, Some(tcp)) => Fabric::Tcp(Box::new(tcp)),
        (Some(shm), Some(tcp)) => Fabric::Mixed(Box::new(Mixed::new(shm, tcp, &local, size))),
        (None, None) => {
            return Err(MpiError::new(
                ErrorClass::Intern,
                format!("rank {rank} of {size} found no transport to its peers"),
            ))
        }
    };
    Ok((fabric, local.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_choose_transports_per_peer() {
        // Two emulated nodes of two ranks (Hydra -hosts a:2,b:2).
        let l = Layout::new(vec![0, 0, 1, 1], 1, false);
        assert_eq!(l.local_ranks(), [0, 1]);
        assert!(l.shm_anywhere() && l.tcp_anywhere());
        assert_eq!(
            (0..4).map(|p| l.uses_tcp(p)).collect::<Vec<_>>(),
            [false, false, true, true]
        );
        // One node: shared memory only; forced TCP: TCP only.
        let one = Layout::new(vec![0, 0, 0], 2, false);
        assert!(one.shm_anywhere() && !one.tcp_anywhere());
        let forced = Layout::new(vec![0, 0, 0], 2, true);
        assert!(!forced.shm_anywhere() && forced.tcp_anywhere());
        assert!(forced.uses_tcp(0) && !forced.uses_tcp(2));
        // One rank per node: no segment anywhere.
        let spread = Layout::new(vec![0, 1, 2], 0, false);
        assert!(!spread.shm_anywhere() && spread.tcp_anywhere());
        // Cyclic placement: rank 2 shares node 0 with rank 0.
        let cyclic = Layout::new(vec![0, 1, 0, 1], 2, false);
        assert_eq!(cyclic.local_ranks(), [0, 2]);
    }
}
