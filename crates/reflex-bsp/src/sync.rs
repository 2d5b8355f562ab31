//! `bsp_sync`: the end of a superstep.
//!
//! Order of events (each step runs only when some process needs it; the flags and counts travel
//! in the first step, so every process takes the same branches):
//! 1. the debug checks, when switched on (`debug.rs`);
//! 2. this process's hp transfers complete (`MPI_Win_flush_all`) and its stores become visible
//!    (`MPI_Win_sync`);
//! 3. control all-to-all of six words per pair: message bytes for that pid, flags (has gets, has
//!    puts, has messages), pushes, pops, a fingerprint of the pops, the next tag size. It is also
//!    the barrier after which every process has finished computing. Registration counts, pops and
//!    tag sizes must agree, else the job stops with a registration / tag-size error;
//! 4. messages: `MPI_Alltoallv` of the bytes announced in step 3;
//! 5. gets (reading the state at the end of the superstep), flush, and a barrier if puts follow;
//! 6. puts from the buffered copies, flush;
//! 7. registrations: a barrier (no transfer is in flight any more), attach/detach the changed
//!    memory, allgather of the new areas, which is also the closing barrier; without
//!    registration changes a plain barrier closes a superstep that moved data.
//!
//! An empty superstep costs one all-to-all of 48 bytes per pair: that is BSP's `l` here.

use crate::debug;
use crate::loc::{BspError, BspResult, Loc};
use crate::mpi::{self, MpiResult};
use crate::registry::Area;
use crate::runtime::Bsp;

const HAS_GETS: i64 = 1;
const HAS_PUTS: i64 = 2;
const HAS_MESSAGES: i64 = 4;
/// Words of the control block each process sends to each other.
const WORDS: usize = 6;

/// Which call ends the superstep (for the debug check of sync locations).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncCall {
    Sync,
    End,
}

impl SyncCall {
    pub fn name(self) -> &'static str {
        match self {
            SyncCall::Sync => "bsp_sync",
            SyncCall::End => "bsp_end",
        }
    }
}

/// Ends the superstep of `bsp`.
pub fn sync(bsp: &mut Bsp, at: Loc, call: SyncCall) -> BspResult {
    if bsp.debug.is_some() {
        debug::check_superstep(bsp, at, call)?;
    }
    bsp.drma.flush_hp(bsp.win)?;
    bsp.win.sync()?;
    let control = exchange_control(bsp)?;
    control.check_agreement(bsp.superstep)?;
    let received = if control.any(HAS_MESSAGES) {
        exchange_messages(bsp, &control)?
    } else {
        Vec::new()
    };
    let (gets, puts) = (control.any(HAS_GETS), control.any(HAS_PUTS));
    if gets {
        bsp.drma.run_gets(bsp.win, bsp.pid)?;
        if puts {
            bsp.comm.barrier()?;
        }
    }
    if puts {
        bsp.drma.run_puts(bsp.win, bsp.pid)?;
    }
    if !bsp.reg.pushes().is_empty() || !bsp.reg.pops().is_empty() {
        apply_registrations(bsp)?;
    } else if gets || puts {
        bsp.comm.barrier()?;
    }
    bsp.win.sync()?;
    bsp.bsmp.deliver(received)?;
    if let Some(d) = bsp.debug.as_mut() {
        d.clear();
    }
    bsp.superstep += 1;
    Ok(())
}

/// What every process announced in the control all-to-all: `words[i*WORDS..]` came from pid i.
struct Control {
    words: Vec<i64>,
}

impl Control {
    fn field(&self, pid: usize, k: usize) -> i64 {
        self.words[pid * WORDS + k]
    }

    fn nprocs(&self) -> usize {
        self.words.len() / WORDS
    }

    fn any(&self, flag: i64) -> bool {
        (0..self.nprocs()).any(|i| self.field(i, 1) & flag != 0)
    }

    /// Registration counts, pops and tag sizes must be the same on every process.
    fn check_agreement(&self, superstep: u64) -> BspResult {
        let hint = "set REFLEX_BSP_DEBUG=1 to see the source lines";
        let checks = [
            (2, "bsp_push_reg calls", "registration mismatch"),
            (3, "bsp_pop_reg calls", "registration mismatch"),
            (
                4,
                "popped registrations (fingerprint)",
                "registration mismatch",
            ),
            (5, "bsp_set_tagsize sizes", "tag size mismatch"),
        ];
        for (k, what, title) in checks {
            let values: Vec<i64> = (0..self.nprocs()).map(|i| self.field(i, k)).collect();
            if values.iter().any(|&v| v != values[0]) {
                let show = |(i, v): (usize, &i64)| match k {
                    4 => format!("pid {i}: {v:#x}"),
                    _ => format!("pid {i}: {v}"),
                };
                let list: Vec<String> = values.iter().enumerate().map(show).collect();
                let list = list.join(", ");
                let msg =
                    format!("{title} in superstep {superstep}: {what} differ ({list}); {hint}");
                return Err(BspError::Agreed(msg));
            }
        }
        Ok(())
    }
}

fn exchange_control(bsp: &Bsp) -> MpiResult<Control> {
    let mut flags = 0;
    if bsp.drma.has_gets() {
        flags |= HAS_GETS;
    }
    if bsp.drma.has_puts() {
        flags |= HAS_PUTS;
    }
    if bsp.bsmp.has_outgoing() {
        flags |= HAS_MESSAGES;
    }
    let common = [
        flags,
        bsp.reg.pushes().len() as i64,
        bsp.reg.pops().len() as i64,
        bsp.reg.pop_signature() as i64,
        bsp.bsmp.next_tagsize() as i64,
    ];
    let mut send = Vec::with_capacity(WORDS * bsp.nprocs);
    for j in 0..bsp.nprocs {
        send.push(bsp.bsmp.outgoing_to(j) as i64);
        send.extend_from_slice(&common);
    }
    let mut words = vec![0i64; send.len()];
    bsp.comm.alltoall_i64(&send, &mut words)?;
    Ok(Control { words })
}

fn exchange_messages(bsp: &Bsp, control: &Control) -> MpiResult<Vec<u8>> {
    let (out, out_lens) = bsp.bsmp.outgoing();
    let in_lens: Vec<usize> = (0..bsp.nprocs)
        .map(|i| control.field(i, 0).max(0) as usize)
        .collect();
    let mut received = vec![0u8; in_lens.iter().sum()];
    bsp.comm
        .alltoallv_bytes(&out, &out_lens, &mut received, &in_lens)?;
    Ok(received)
}

/// Makes the superstep's pushes and pops take effect (see the module comment, step 7).
fn apply_registrations(bsp: &mut Bsp) -> BspResult {
    bsp.comm.barrier()?;
    let wanted = bsp.reg.intervals();
    for &(start, end) in &bsp.attached {
        if !wanted.contains(&(start, end)) {
            bsp.win.detach(start)?;
        }
    }
    for &(start, end) in &wanted {
        if !bsp.attached.contains(&(start, end)) {
            // SAFETY: registered memory stays valid while registered (the BSPlib contract of
            // bsp_push_reg), and the intervals are disjoint, each attached once.
            unsafe { bsp.win.attach(start, end - start)? };
        }
    }
    bsp.attached = wanted;
    let mut mine = Vec::with_capacity(2 * bsp.reg.pushes().len());
    for push in bsp.reg.pushes() {
        mine.push(mpi::address_of(push.area.addr)? as i64);
        mine.push(push.area.size as i64);
    }
    let mut all = vec![0i64; mine.len() * bsp.nprocs];
    bsp.comm.allgather_i64(&mine, &mut all)?;
    let per_pid = mine.len();
    let areas = (0..bsp.reg.pushes().len())
        .map(|k| {
            (0..bsp.nprocs)
                .map(|p| Area {
                    addr: all[p * per_pid + 2 * k] as usize,
                    size: all[p * per_pid + 2 * k + 1] as usize,
                })
                .collect()
        })
        .collect();
    bsp.reg.commit(areas);
    Ok(())
}
