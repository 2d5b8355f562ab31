//! The debug mode (`REFLEX_BSP_DEBUG=1` or `warn`): the error detectors of the visual BSP
//! debugger (Martin and Wilson, P2), checked at every superstep without recompiling.
//!
//! During a superstep every process records its registration calls, its writes into registered
//! memory and its hp transfers, each with the source location `bsp.h`'s macros passed. At the
//! sync, before the real one, each process
//! 1. completes its hp transfers and waits for the others (barrier), so that the memory is as
//!    the superstep left it;
//! 2. checks its hp transfers: an hpput source whose checksum differs from the one taken at the
//!    call was modified before the sync. An hpget lands in a buffer of the debugger (hp transfers
//!    may happen at any time of the superstep, so delivering at the sync is allowed): a
//!    destination whose checksum changed since the call was written by the program before the
//!    sync, and a source that differs from what the transfer read was modified during the
//!    superstep (the paper's compare-after-sync heuristic, made exact for the destination);
//! 3. sends its [`report::Report`] to process 0 (gather), which runs [`check::analyse`] (sync
//!    lines, registrations, overlapping writes), prints the findings, and broadcasts the number
//!    of errors.
//!
//! Policy: in `1` mode, errors stop the job (exit status 1) after process 0 printed them all;
//! in `warn` mode the job carries on. Warnings (registration sizes that differ) never stop it.
//! The cost is a barrier, a gather and a broadcast per superstep, plus a checksum of each hpput
//! source and a second read of each hpget source.

pub mod check;
pub mod report;

use crate::config::DebugMode;
use crate::drma::Drma;
use crate::loc::{say, BspError, BspResult, Loc};
use crate::mpi::{Aint, Win};
use crate::registry::{SlotId, Target};
use crate::runtime::Bsp;
use crate::sync::SyncCall;
use check::{Finding, Severity};
use report::{RegOp, Report, Site, Write};

/// An hpput source as it was at the call.
struct HpSource {
    addr: usize,
    len: usize,
    sum: u64,
    at: Loc,
}

/// An hpget of `len` bytes at `disp` of `pid` for local `dst`. In debug mode the transfer goes
/// into `data` and is copied to `dst` at the sync, so that writes of the program into `dst`
/// before the sync show (`dst_sum` is the checksum of `dst` at the call).
struct HpGet {
    pid: usize,
    disp: Aint,
    dst: usize,
    dst_sum: u64,
    data: Box<[u8]>,
    at: Loc,
}

/// The debug records of the current superstep.
pub struct Debugger {
    mode: DebugMode,
    regops: Vec<RegOp>,
    writes: Vec<Write>,
    hpputs: Vec<HpSource>,
    hpgets: Vec<HpGet>,
}

fn site(at: Loc) -> Site {
    Site {
        file: at.file(),
        line: u64::from(at.line()),
    }
}

/// FNV-1a over `bytes`: enough to notice a change, cheap enough for a debug mode.
fn checksum(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The bytes at `addr`.
///
/// # Safety
/// `addr..addr+len` is readable (or `len` is 0).
unsafe fn bytes<'a>(addr: usize, len: usize) -> &'a [u8] {
    if len == 0 {
        return &[];
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(addr as *const u8, len) }
}

impl Debugger {
    pub fn new(mode: DebugMode) -> Debugger {
        Debugger {
            mode,
            regops: Vec::new(),
            writes: Vec::new(),
            hpputs: Vec::new(),
            hpgets: Vec::new(),
        }
    }

    pub fn record_push(&mut self, size: usize, at: Loc) {
        self.regops.push(RegOp::Push {
            size: size as u64,
            at: site(at),
        });
    }

    pub fn record_pop(&mut self, slot: SlotId, at: Loc) {
        self.regops.push(RegOp::Pop { slot, at: site(at) });
    }

    pub fn record_write(
        &mut self,
        pid: usize,
        target: &Target,
        offset: usize,
        len: usize,
        hp: bool,
        at: Loc,
    ) {
        let addr = target.area.addr.wrapping_add(offset) as u64;
        let (slot, offset) = (target.id, offset as u64);
        self.writes.push(Write {
            target: pid as u64,
            addr,
            len: len as u64,
            slot,
            offset,
            hp,
            at: site(at),
        });
    }

    /// Remembers the checksum of an hpput source.
    ///
    /// # Safety
    /// `addr..addr+len` is readable.
    pub unsafe fn record_hpput(&mut self, addr: usize, len: usize, at: Loc) {
        // SAFETY: the caller's contract.
        let sum = checksum(unsafe { bytes(addr, len) });
        self.hpputs.push(HpSource { addr, len, sum, at });
    }

    /// Starts an hpget into a buffer of the debugger (see [`HpGet`]).
    ///
    /// # Safety
    /// `dst..dst+len` is readable and writable until the sync; for `pid == me`, `disp` is the
    /// address of `len` readable bytes of this process.
    pub unsafe fn hpget(
        &mut self,
        bsp: (Win, usize),
        pid: usize,
        disp: Aint,
        dst: usize,
        len: usize,
        at: Loc,
    ) -> BspResult {
        // SAFETY: the caller's contract.
        let dst_sum = checksum(unsafe { bytes(dst, len) });
        let mut data = vec![0u8; len].into_boxed_slice();
        let mut drma = Drma::default();
        // SAFETY: `data` is a heap buffer of `len` bytes that stays in place (boxed) until the
        // flush at the sync; the source was checked against its registration.
        unsafe { drma.hpget(bsp.0, bsp.1, pid, disp, data.as_mut_ptr(), len)? };
        self.hpgets.push(HpGet {
            pid,
            disp,
            dst,
            dst_sum,
            data,
            at,
        });
        Ok(())
    }

    /// Forgets the superstep (after the sync).
    pub fn clear(&mut self) {
        self.regops.clear();
        self.writes.clear();
        self.hpputs.clear();
        self.hpgets.clear();
    }

    fn changed_hpputs(&self) -> Vec<String> {
        let changed = self.hpputs.iter().filter(|h| {
            // SAFETY: the program keeps hpput sources readable until the sync (BSPlib contract,
            // and the same bytes were read at the call).
            checksum(unsafe { bytes(h.addr, h.len) }) != h.sum
        });
        changed
            .map(|h| {
                format!(
                    "bsp_hpput at {}: its source ({} bytes) was modified before the sync",
                    h.at, h.len
                )
            })
            .collect()
    }
}

/// Completes the hpgets (all processes are in the sync, their transfers flushed): reports a
/// destination the program wrote before the sync, and a source that differs now from what the
/// transfer read (modified during the superstep); then delivers the data.
fn finish_hpgets(bsp: &Bsp, d: &Debugger) -> BspResult<Vec<String>> {
    let mut fresh: Vec<Vec<u8>> = d.hpgets.iter().map(|g| vec![0u8; g.data.len()]).collect();
    let mut drma = Drma::default();
    for (g, buf) in d.hpgets.iter().zip(&mut fresh) {
        // SAFETY: `buf` is ours and outlives the flush below; the source was checked against its
        // registration at the hpget.
        unsafe { drma.hpget(bsp.win, bsp.pid, g.pid, g.disp, buf.as_mut_ptr(), buf.len())? };
    }
    drma.flush_hp(bsp.win)?;
    let mut notes = Vec::new();
    for (g, now) in d.hpgets.iter().zip(&fresh) {
        let len = g.data.len();
        // SAFETY: the hpget destination is readable and writable for `len` bytes until the sync
        // (BSPlib contract, and it was read at the call).
        let dst = unsafe { std::slice::from_raw_parts_mut(g.dst as *mut u8, len) };
        if checksum(dst) != g.dst_sum {
            notes.push(format!(
                "bsp_hpget at {}: its destination ({len} bytes) was written before the sync",
                g.at
            ));
        }
        if now.as_slice() != &*g.data {
            notes.push(format!(
                "bsp_hpget at {}: pid {}'s source changed between the transfer and the sync (modified during the superstep)",
                g.at, g.pid
            ));
        }
        dst.copy_from_slice(&g.data);
    }
    Ok(notes)
}

/// Runs the checks of the superstep ending at `at` (see the module comment).
pub fn check_superstep(bsp: &mut Bsp, at: Loc, call: SyncCall) -> BspResult {
    let Some(d) = bsp.debug.as_ref() else {
        return Ok(());
    };
    bsp.drma.flush_hp(bsp.win)?;
    bsp.win.sync()?;
    bsp.comm.barrier()?;
    let mut notes = d.changed_hpputs();
    notes.extend(finish_hpgets(bsp, d)?);
    let report = Report {
        pid: bsp.pid as u64,
        call: call.name().into(),
        at: site(at),
        regops: d.regops.clone(),
        writes: d.writes.clone(),
        notes,
    };
    let gathered = bsp.comm.gather_bytes(&report.encode(), 0)?;
    let errors = if bsp.pid == 0 {
        print_findings(&gathered, bsp.superstep, d.mode)
    } else {
        0
    };
    let errors = bsp.comm.bcast_i64(errors, 0)?;
    if errors > 0 && d.mode == DebugMode::Abort {
        return Err(BspError::Checks);
    }
    Ok(())
}

/// Process 0: decodes the reports, prints the findings; returns the number of errors.
fn print_findings(gathered: &[Vec<u8>], superstep: u64, mode: DebugMode) -> i64 {
    let mut findings: Vec<Finding> = Vec::new();
    let mut reports = Vec::new();
    for (pid, bytes) in gathered.iter().enumerate() {
        match Report::decode(bytes) {
            Some(r) => reports.push(r),
            None => findings.push(check::error(format!(
                "pid {pid} sent a malformed debug report"
            ))),
        }
    }
    findings.extend(check::analyse(&reports));
    let mut errors = 0;
    for f in &findings {
        let kind = match f.severity {
            Severity::Error => {
                errors += 1;
                "error"
            }
            Severity::Warning => "warning",
        };
        say(&format!(
            "bsp debug: superstep {superstep}: {kind}: {}",
            f.text
        ));
    }
    if errors > 0 && mode == DebugMode::Abort {
        say(&format!(
            "bsp debug: {errors} error(s) in superstep {superstep}; stopping the job (REFLEX_BSP_DEBUG=warn reports and carries on)"
        ));
    }
    errors
}
