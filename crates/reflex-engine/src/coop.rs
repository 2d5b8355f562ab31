//! The cooperative rendezvous: sender and receiver of a large contiguous message both copy it.
//!
//! With `REFLEX_SINGLE_COPY=coop`, a receiver that matches an RTS for a contiguous message into a
//! contiguous buffer opens a shared slot of the pair (`reflex_base::coop`: a claim counter, a done
//! counter and its buffer's address), answers COOP (slot and generation), and copies the message
//! chunk by chunk with `process_vm_readv`, claiming each chunk first. It never waits for the
//! sender. The sender, on COOP, joins whenever it polls with nothing else to do: it claims a chunk
//! and writes it into the receiver's buffer with `process_vm_writev`. When the done counter says
//! every chunk is in place, the receiver completes the receive, frees the slot and answers FIN,
//! which completes the send (so the sender's buffer stays untouched until both have finished).
//!
//! Measured in `bench/copyprobe.c` (bench/README.md, "cooperative"): two cores copying beat the
//! receiver alone by 1.2-1.4x with the right chunk, which [`chunk_for`] picks by size.
//!
//! Only a sender with time to spare helps, so a receiver does not invite a sender that it is
//! itself sending a large message to (an RTS of its own still awaits that peer's FIN or CTS):
//! in an exchange both sides copy already, and the chunks, claims and invitation only cost. On
//! the 2-core VM (2026-11-27, `pt2pt`, best of 3 interleaved runs) that took the 64 KiB ring
//! (`MPI_Sendrecv` both ways) from 9.4 to 6.8 µs a step and the 64 KiB bidirectional bandwidth
//! from 15.7 to 19.5 GB/s, the receiver-only copy's level; one-way bandwidth is unchanged. A
//! copy that began before this rank's own RTS went out takes whole runs from then on.
//!
//! Failures fall back without losing data: a side whose copy fails marks the slot aborted; the
//! receiver then takes every chunk left, copies the whole message alone (or streams it through
//! the rings when the kernel refuses reading too), retires the slot (an aborted slot is never
//! reused, since a chunk may still be in flight on the other side) and turns cooperation off.
//! Weak spot: when the receiver's own read failed and its fallback read then succeeds, a chunk
//! the sender was writing at that moment (the same bytes) may land after the receive completed;
//! the kernel refusing a copy it allowed a moment before is not something the tests can provoke.
//! A peer that dies mid-copy leaves the other waiting; the launcher ends the job
//! (`tests/mpi/kill_sender.c`).

use crate::core::{Core, Offer};
use crate::engine::Engine;
use crate::packet::{self, Envelope};
use crate::request::RecvPhase;
use reflex_base::coop::{CoopProgress, CoopSlot, CoopTarget};
use reflex_base::transport::Transport;

/// The chunk for a copy of `bytes` when the setting is `setting` (0: by size, from the probe's
/// best chunks: 32 KiB up to 128 KiB, 64 KiB up to 1 MiB, 256 KiB above).
pub(crate) fn chunk_for(setting: usize, bytes: usize) -> usize {
    match (setting, bytes) {
        (0, ..=0x2_0000) => 32 << 10,
        (0, ..=0x10_0000) => 64 << 10,
        (0, _) => 256 << 10,
        (chunk, _) => chunk,
    }
}

/// A matched receive copied cooperatively.
#[derive(Debug)]
pub(crate) struct CoopRecv {
    id: crate::request::RequestId,
    src_world: usize,
    env: Envelope,
    offer: Offer,
    /// Bytes to copy: the message cut to the receive buffer.
    bytes: usize,
    /// The slot, once open.
    open: Option<Opened>,
}

/// A receiver's open slot: which, its generation, and how the message is cut.
#[derive(Debug, Clone, Copy)]
struct Opened {
    slot: usize,
    generation: u32,
    chunks: usize,
    chunk: usize,
}

/// Most bytes a receiver claims in one run (one `process_vm_readv`): `bench/pt2pt.c`'s
/// bidirectional bandwidth lost 5-10% to 64-256 KiB reads against whole-message reads, and
/// claiming half of what is left, up to this, keeps the calls few while the sender still finds
/// chunks.
const SPAN: usize = 1 << 20;

/// A send the receiver invited to copy: the slot of its pair and the generation.
#[derive(Debug, Clone, Copy)]
struct CoopSend {
    id: crate::request::RequestId,
    dest: usize,
    slot: usize,
    generation: u32,
}

/// The cooperative copies of one process, as receiver and as sender.
#[derive(Debug, Default)]
pub(crate) struct Coop {
    /// Chunk setting when cooperation is on (0: by size); `None`: off.
    pub(crate) chunk: Option<usize>,
    recvs: Vec<CoopRecv>,
    sends: Vec<CoopSend>,
    /// Free slots of the pair (source -> this rank), per source world rank; built on first use.
    free: Vec<Option<Vec<usize>>>,
    /// Rendezvous sends in flight, per destination world rank.
    rdv_out: Vec<u32>,
}

impl Coop {
    /// Whether there is cooperative work in progress.
    pub(crate) fn busy(&self) -> bool {
        !self.recvs.is_empty() || !self.sends.is_empty()
    }

    /// Whether a receive waits on chunks the other side copies (nothing rings a doorbell then).
    pub(crate) fn awaiting_peer(&self) -> bool {
        !self.recvs.is_empty()
    }

    /// Whether this rank has a rendezvous send to `dest` in flight (an RTS without its FIN or
    /// CTS yet): then `dest` receives while it sends to this rank (an exchange), and is seldom
    /// idle enough to help copy what it sends.
    pub(crate) fn sending_to(&self, dest: usize) -> bool {
        self.rdv_out.get(dest).is_some_and(|&n| n > 0)
    }

    /// Counts an RTS sent to `dest`.
    pub(crate) fn sent_rts(&mut self, dest: usize) {
        if self.rdv_out.len() <= dest {
            self.rdv_out.resize(dest + 1, 0);
        }
        self.rdv_out[dest] += 1;
    }

    /// Counts the reply (FIN or CTS) to an RTS sent to `src`.
    pub(crate) fn rts_answered(&mut self, src: usize) {
        if let Some(n) = self.rdv_out.get_mut(src) {
            *n = n.saturating_sub(1);
        }
    }

    fn take_slot(&mut self, src_world: usize, nslots: usize) -> Option<usize> {
        if self.free.len() <= src_world {
            self.free.resize_with(src_world + 1, || None);
        }
        self.free[src_world]
            .get_or_insert_with(|| (0..nslots).rev().collect())
            .pop()
    }

    fn give_slot(&mut self, src_world: usize, slot: usize) {
        if let Some(Some(free)) = self.free.get_mut(src_world) {
            free.push(slot);
        }
    }
}

impl Core {
    /// Takes matched receive `id` into the cooperative copy when it qualifies (cooperation on, a
    /// peer's contiguous data, a contiguous buffer, more than one chunk); returns whether it did.
    pub(crate) fn try_start_coop(
        &mut self,
        id: crate::request::RequestId,
        src_world: usize,
        env: Envelope,
        offer: &Offer,
    ) -> bool {
        let Some(setting) = self.coop.chunk else {
            return false;
        };
        if src_world == self.me || offer.layout.is_some() || self.coop.sending_to(src_world) {
            return false;
        }
        let Some(recv) = self.requests.recv_mut(id) else {
            return false;
        };
        let Some(buf) = recv.buf.contiguous_mut() else {
            return false;
        };
        let bytes = (env.len as usize).min(buf.len());
        if bytes <= chunk_for(setting, bytes) {
            return false;
        }
        recv.phase = RecvPhase::Coop;
        recv.source = env.src as i32;
        recv.tag = env.tag;
        self.coop.recvs.push(CoopRecv {
            id,
            src_world,
            env,
            offer: offer.clone(),
            bytes,
            open: None,
        });
        true
    }

    /// COOP from `src_world`: the receiver of send `sreq` invites this rank to copy chunks.
    pub(crate) fn on_coop(&mut self, src_world: usize, sreq: u32, slot: u32, generation: u32) {
        let id = crate::request::RequestId(sreq);
        if self.requests.send_mut(id).is_none() {
            return self.record_fatal(crate::error::MpiError::new(
                crate::error::ErrorClass::Intern,
                format!("coop from rank {src_world} for unknown send {sreq}"),
            ));
        }
        if self.coop.chunk.is_some() {
            self.coop.sends.push(CoopSend {
                id,
                dest: src_world,
                slot: slot as usize,
                generation,
            });
        }
    }

    /// Completes cooperative receive `r` (every chunk in place): status, FIN, slot back.
    fn finish_coop(&mut self, r: &CoopRecv, slot: usize) {
        self.stats.single_copy += r.bytes as u64;
        let sreq = r.env.sreq;
        self.queue_control(
            r.src_world,
            |b| packet::encode_fin(b, sreq),
            packet::ACK_LEN,
        );
        let status =
            crate::core::recv_status(r.env.src as i32, r.env.tag, r.env.len as usize, r.bytes);
        self.finish_recv(r.id, status);
        self.coop.give_slot(r.src_world, slot);
    }
}

/// What one step of a cooperative receive left to do.
enum Next {
    Keep,
    Drop,
}

impl<T: Transport> Engine<T> {
    /// Advances the cooperative copies: every new receive opens its slot and invites its sender
    /// first (so that a sender with many messages in flight can help with a later one while the
    /// receiver copies an earlier one), then every receive copies all the chunks it can claim;
    /// when `idle` (this round of progress found nothing else), a send helps with one chunk.
    pub(crate) fn advance_coop(&mut self, idle: bool) -> usize {
        let mut events = 0;
        let mut recvs = std::mem::take(&mut self.core.coop.recvs);
        for r in recvs.iter_mut().filter(|r| r.open.is_none()) {
            r.open = self.open_slot(r);
        }
        recvs.retain_mut(|r| matches!(self.step_recv(r, &mut events), Next::Keep));
        recvs.append(&mut self.core.coop.recvs);
        self.core.coop.recvs = recvs;
        if idle && events == 0 {
            events += self.help_send();
        }
        events
    }

    /// The slots of messages from world rank `sender` to world rank `receiver`.
    fn slots(
        &self,
        sender: usize,
        receiver: usize,
    ) -> Option<&[reflex_base::cache::CachePadded<CoopSlot>]> {
        self.fabric
            .coop_slots(self.route[sender], self.route[receiver])
    }

    fn step_recv(&mut self, r: &mut CoopRecv, events: &mut usize) -> Next {
        let me = self.core.me;
        let Some(Opened {
            slot,
            generation,
            chunks,
            chunk,
        }) = r.open
        else {
            // No slot (or none free): the receiver copies alone.
            self.core
                .rendezvous_alone(r.id, r.src_world, r.env, r.offer.clone());
            *events += 1;
            return Next::Drop;
        };
        let Some(slots) = self
            .fabric
            .coop_slots(self.route[r.src_world], self.route[me])
        else {
            // Cannot happen (the slot was opened through the same call); never leave it hanging.
            self.core
                .rendezvous_alone(r.id, r.src_world, r.env, r.offer.clone());
            return Next::Drop;
        };
        let shared = &slots[slot];
        let most = (SPAN / chunk).max(1);
        // A sender that this rank now sends to as well (its RTS came after this copy began)
        // will seldom be idle enough to help: take whole runs then, one read each, as alone.
        let peer_busy = self.core.coop.sending_to(r.src_world);
        let claim = |g| match peer_busy {
            true => shared.claim_rest(g, most),
            false => shared.claim_share(g, most),
        };
        while let Some(c) = claim(generation) {
            let Some(buf) = self
                .core
                .requests
                .recv_mut(r.id)
                .and_then(|recv| recv.buf.contiguous_mut())
            else {
                shared.abort();
                break;
            };
            let remote = [(r.offer.addr as usize + c.offset, c.len)];
            let local = &mut buf[c.offset..c.offset + c.len];
            match reflex_shm::cma::read(r.offer.pid, &remote, &mut [local]) {
                Ok(n) if n == c.len => shared.finish(&c),
                _ => {
                    shared.abort();
                    break;
                }
            }
            *events += 1;
        }
        match shared.progress(chunks) {
            CoopProgress::Copying(_) => Next::Keep,
            CoopProgress::Done => {
                self.core.finish_coop(r, slot);
                *events += 1;
                Next::Drop
            }
            CoopProgress::Aborted => {
                shared.close(generation);
                // Retired, not freed: the other side may still finish a chunk in it.
                self.core.coop.chunk = None;
                self.core
                    .rendezvous_alone(r.id, r.src_world, r.env, r.offer.clone());
                *events += 1;
                Next::Drop
            }
        }
    }

    /// Opens a slot for receive `r` and invites the sender; `None` when no slot is free.
    fn open_slot(&mut self, r: &CoopRecv) -> Option<Opened> {
        let me = self.core.me;
        let setting = self.core.coop.chunk?;
        let nslots = self.slots(r.src_world, me)?.len();
        let dst = self
            .core
            .requests
            .recv_mut(r.id)?
            .buf
            .contiguous_mut()?
            .as_mut_ptr() as u64;
        let target = CoopTarget {
            pid: self.core.pid,
            dst,
            len: r.bytes,
            chunk: chunk_for(setting, r.bytes),
        };
        let chunks = target.chunks()?;
        let slot = self.core.coop.take_slot(r.src_world, nslots)?;
        let Some(generation) = self.slots(r.src_world, me)?[slot].open(target) else {
            self.core.coop.give_slot(r.src_world, slot);
            return None;
        };
        let mut bytes = [0u8; 16];
        packet::encode_coop(&mut bytes, r.env.sreq, slot as u32, generation);
        self.submit(
            r.src_world,
            crate::core::Out::Control(bytes, packet::COOP_LEN as u8),
        );
        Some(Opened {
            slot,
            generation,
            chunks,
            chunk: target.chunk,
        })
    }

    /// Copies one chunk of the newest send that still has one (the receiver works from the
    /// oldest, so the two rarely meet on one message); returns 1 if it did.
    fn help_send(&mut self) -> usize {
        let me = self.core.me;
        while let Some(&s) = self.core.coop.sends.last() {
            let Some(slots) = self.fabric.coop_slots(self.route[me], self.route[s.dest]) else {
                self.core.coop.sends.pop();
                continue;
            };
            let Some(shared) = slots.get(s.slot) else {
                self.core.coop.sends.pop();
                continue;
            };
            let Some(c) = shared.claim(s.generation) else {
                // Every chunk is taken: FIN will complete the send.
                self.core.coop.sends.pop();
                continue;
            };
            let source = self
                .core
                .requests
                .send_mut(s.id)
                .and_then(|send| send.buf.contiguous())
                .and_then(|b| b.get(c.offset..c.offset + c.len));
            let written = source.map(|chunk| {
                let remote = [(c.target.dst as usize + c.offset, c.len)];
                reflex_shm::cma::write(c.target.pid, &[chunk], &remote)
            });
            match written {
                Some(Ok(n)) if n == c.len => shared.finish(&c),
                _ => {
                    shared.abort();
                    self.core.coop.chunk = None;
                    self.core.coop.sends.clear();
                }
            }
            return 1;
        }
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_follow_the_setting_or_the_size() {
        assert_eq!(chunk_for(0, 64 << 10), 32 << 10);
        assert_eq!(chunk_for(0, 128 << 10), 32 << 10);
        assert_eq!(chunk_for(0, 256 << 10), 64 << 10);
        assert_eq!(chunk_for(0, 1 << 20), 64 << 10);
        assert_eq!(chunk_for(0, 4 << 20), 256 << 10);
        assert_eq!(chunk_for(16 << 10, 4 << 20), 16 << 10);
    }

    #[test]
    fn slots_are_handed_out_once_per_source_and_come_back() {
        let mut c = Coop::default();
        let a: Vec<_> = (0..3).filter_map(|_| c.take_slot(2, 3)).collect();
        assert_eq!(a, [0, 1, 2]);
        assert_eq!(c.take_slot(2, 3), None);
        assert_eq!(
            c.take_slot(0, 3),
            Some(0),
            "another source has its own slots"
        );
        c.give_slot(2, 1);
        assert_eq!(c.take_slot(2, 3), Some(1));
    }
}
