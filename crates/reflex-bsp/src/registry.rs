//! Registrations (`bsp_push_reg` / `bsp_pop_reg`): which local address names which memory on
//! every process.
//!
//! BSPlib matches registrations across processes by order: the k-th push on every process names
//! the same logical variable, whatever its local address and size (sizes may differ, e.g. `NULL`
//! with size 0 on processes that hold no data). Pushes and pops take effect at the next
//! `bsp_sync`: until then a pushed area cannot be written and a popped one still can. A local
//! address may be registered several times; the most recent registration is the one used and the
//! one a pop removes.
//!
//! Each registration gets a [`SlotId`], equal on every process because pushes are counted in the
//! same order everywhere. At a sync the new pushes' `(address, size)` pairs are exchanged with one
//! allgather (see `sync.rs`), and the memory to expose through the dynamic window is recomputed as
//! a set of disjoint intervals ([`Registry::intervals`]), since MPI forbids attaching overlapping
//! memory twice.

use crate::loc::{usage, BspResult, Loc};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Hashes an address by one multiplication (Fibonacci hashing): addresses are already spread,
/// and every bsp_put looks one up, where the default SipHash was an eighth of the call's time.
#[derive(Default)]
struct AddrHasher(u64);

impl Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_usize(&mut self, v: usize) {
        self.0 = (v as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

type AddrMap<V> = HashMap<usize, V, BuildHasherDefault<AddrHasher>>;

/// The identity of one registration, the same on every process.
pub type SlotId = u64;

/// A registered area as one process declared it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Area {
    pub addr: usize,
    pub size: usize,
}

/// One active registration.
#[derive(Debug, Clone)]
pub struct Slot {
    pub id: SlotId,
    /// This process's area.
    pub local: Area,
    /// Every process's area, by pid.
    pub remote: Vec<Area>,
    pub pushed_at: Loc,
}

/// A push waiting for the next sync.
#[derive(Debug, Clone, Copy)]
pub struct Push {
    pub area: Area,
    pub at: Loc,
}

/// The registrations of this process: active ones and the changes of the current superstep.
#[derive(Debug, Default)]
pub struct Registry {
    /// Active registrations in push order (ids increasing).
    slots: Vec<Slot>,
    /// Local address -> ids registered at it, most recent last.
    by_addr: AddrMap<Vec<SlotId>>,
    pushes: Vec<Push>,
    pops: Vec<(SlotId, Loc)>,
    next_id: SlotId,
}

/// A registration found for a transfer: its id and the target's area.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    pub id: SlotId,
    pub area: Area,
}

impl Registry {
    pub fn push(&mut self, area: Area, at: Loc) {
        self.pushes.push(Push { area, at });
    }

    /// Marks the most recent registration of `addr` (not already being popped) for removal.
    pub fn pop(&mut self, addr: usize, at: Loc) -> BspResult<SlotId> {
        let popping = |id: &SlotId| self.pops.iter().any(|(p, _)| p == id);
        let found = self
            .by_addr
            .get(&addr)
            .and_then(|ids| ids.iter().rev().find(|id| !popping(id)));
        match found {
            Some(&id) => {
                self.pops.push((id, at));
                Ok(id)
            }
            None => usage(format!(
                "{:#x} is not registered{}",
                addr,
                self.pending_hint(addr)
            )),
        }
    }

    /// The registration a transfer to or from `addr` on `pid` uses, checked to hold
    /// `offset..offset+nbytes`.
    pub fn target(
        &self,
        addr: usize,
        pid: usize,
        offset: usize,
        nbytes: usize,
    ) -> BspResult<Target> {
        let Some(slot) = self.latest(addr) else {
            return usage(format!(
                "{:#x} is not registered{}",
                addr,
                self.pending_hint(addr)
            ));
        };
        let area = slot.remote[pid];
        if offset.checked_add(nbytes).is_none_or(|end| end > area.size) {
            return usage(format!(
                "offset {offset} + {nbytes} bytes is beyond the {} bytes registered by pid {pid} (registration pushed at {})",
                area.size, slot.pushed_at
            ));
        }
        Ok(Target { id: slot.id, area })
    }

    fn latest(&self, addr: usize) -> Option<&Slot> {
        let id = *self.by_addr.get(&addr)?.last()?;
        self.slot(id)
    }

    /// The active registration `id`.
    pub fn slot(&self, id: SlotId) -> Option<&Slot> {
        self.slots
            .binary_search_by_key(&id, |s| s.id)
            .ok()
            .map(|i| &self.slots[i])
    }

    fn pending_hint(&self, addr: usize) -> &'static str {
        if self.pushes.iter().any(|p| p.area.addr == addr) {
            " yet (bsp_push_reg takes effect at the next bsp_sync)"
        } else {
            ""
        }
    }

    /// The pushes of this superstep, in order.
    pub fn pushes(&self) -> &[Push] {
        &self.pushes
    }

    /// The registrations popped in this superstep, in order.
    pub fn pops(&self) -> &[(SlotId, Loc)] {
        &self.pops
    }

    /// A fingerprint of the pops of this superstep (FNV-1a over their ids), equal on every
    /// process when they popped the same registrations in the same order.
    pub fn pop_signature(&self) -> u64 {
        self.pops
            .iter()
            .fold(0xcbf2_9ce4_8422_2325u64, |h, (id, _)| {
                (h ^ id).wrapping_mul(0x0100_0000_01b3)
            })
    }

    /// Applies the superstep's changes: pops first, then the pushes with every process's areas
    /// (`areas[k][pid]` for the k-th push).
    pub fn commit(&mut self, areas: Vec<Vec<Area>>) {
        for (id, _) in std::mem::take(&mut self.pops) {
            self.remove(id);
        }
        for (push, remote) in std::mem::take(&mut self.pushes).into_iter().zip(areas) {
            let id = self.next_id;
            self.next_id += 1;
            self.by_addr.entry(push.area.addr).or_default().push(id);
            self.slots.push(Slot {
                id,
                local: push.area,
                remote,
                pushed_at: push.at,
            });
        }
    }

    fn remove(&mut self, id: SlotId) {
        let Ok(i) = self.slots.binary_search_by_key(&id, |s| s.id) else {
            return;
        };
        let slot = self.slots.remove(i);
        if let Some(ids) = self.by_addr.get_mut(&slot.local.addr) {
            ids.retain(|&x| x != id);
            if ids.is_empty() {
                self.by_addr.remove(&slot.local.addr);
            }
        }
    }

    /// The local memory to expose after the pending changes, as sorted disjoint `(start, end)`
    /// intervals (overlapping or touching areas merged, empty ones left out).
    pub fn intervals(&self) -> Vec<(usize, usize)> {
        let popped = |id: SlotId| self.pops.iter().any(|(p, _)| *p == id);
        let kept = self.slots.iter().filter(|s| !popped(s.id)).map(|s| s.local);
        let mut areas: Vec<(usize, usize)> = kept
            .chain(self.pushes.iter().map(|p| p.area))
            .filter(|a| a.size > 0)
            .map(|a| (a.addr, a.addr.saturating_add(a.size)))
            .collect();
        areas.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::with_capacity(areas.len());
        for (start, end) in areas {
            match merged.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => merged.push((start, end)),
            }
        }
        merged
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn area(addr: usize, size: usize) -> Area {
        Area { addr, size }
    }

    fn registry_with(pushes: &[Area], nprocs: usize) -> Registry {
        let mut r = Registry::default();
        for &a in pushes {
            r.push(a, Loc::default());
        }
        let table = pushes.iter().map(|&a| vec![a; nprocs]).collect();
        r.commit(table);
        r
    }

    #[test]
    fn push_takes_effect_at_commit() {
        let mut r = Registry::default();
        r.push(area(100, 8), Loc::default());
        let err = r.target(100, 0, 0, 8).unwrap_err().to_string();
        assert!(err.contains("takes effect at the next bsp_sync"), "{err}");
        r.commit(vec![vec![area(100, 8), area(200, 4)]]);
        assert_eq!(r.target(100, 1, 0, 4).unwrap().area, area(200, 4));
        assert!(r.target(100, 1, 2, 4).is_err(), "beyond pid 1's 4 bytes");
    }

    #[test]
    fn latest_registration_wins_and_is_popped_first() {
        let mut r = registry_with(&[area(100, 8), area(100, 16)], 1);
        assert_eq!(r.target(100, 0, 8, 8).unwrap().id, 1);
        assert_eq!(r.pop(100, Loc::default()).unwrap(), 1);
        assert_eq!(r.pop(100, Loc::default()).unwrap(), 0);
        assert!(r.pop(100, Loc::default()).is_err(), "both already popped");
        // Still usable until the sync.
        assert!(r.target(100, 0, 0, 8).is_ok());
        r.commit(Vec::new());
        assert!(r.target(100, 0, 0, 1).is_err());
    }

    #[test]
    fn pop_signature_depends_on_order() {
        let mut a = registry_with(&[area(1, 1), area(2, 1)], 1);
        let mut b = registry_with(&[area(1, 1), area(2, 1)], 1);
        a.pop(1, Loc::default()).unwrap();
        a.pop(2, Loc::default()).unwrap();
        b.pop(2, Loc::default()).unwrap();
        b.pop(1, Loc::default()).unwrap();
        assert_ne!(a.pop_signature(), b.pop_signature());
    }

    #[test]
    fn intervals_merge_overlaps_and_skip_empty() {
        let mut r = registry_with(&[area(100, 10), area(105, 10), area(300, 0)], 1);
        r.push(area(115, 5), Loc::default());
        r.push(area(200, 8), Loc::default());
        assert_eq!(r.intervals(), vec![(100, 120), (200, 208)]);
        r.pop(200, Loc::default()).unwrap_err();
        r.pop(105, Loc::default()).unwrap();
        assert_eq!(r.intervals(), vec![(100, 110), (115, 120), (200, 208)]);
    }
}
