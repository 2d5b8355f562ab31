//! Direct remote memory access: the buffered `bsp_put` / `bsp_get` of a superstep, and the
//! unbuffered `bsp_hpput` / `bsp_hpget`.
//!
//! BSPlib semantics, mapped onto one MPI dynamic window held in a `lock_all` epoch:
//! - `bsp_put` copies the source into an arena when called (the program may reuse it at once)
//!   and the `MPI_Put` from the copy is issued at the sync, after every get of the superstep;
//! - `bsp_get` reads the value the source has at the sync (after the computation of the
//!   superstep, before its puts land), so it too is issued at the sync;
//! - `bsp_hpput` / `bsp_hpget` are issued at once (`MPI_Put` / `MPI_Get` on the program's own
//!   buffers) and complete at the sync: the transfer may happen at any time of the superstep.
//!
//! Transfers whose target is this process are plain copies. Consecutive puts to adjacent bytes of
//! one process are merged into one `MPI_Put` (an h-relation of single words costs one call per
//! run of words rather than one per word).

use crate::mpi::{Aint, MpiResult, Win};

/// A put waiting for the sync: `len` bytes of the arena at `at` to address `disp` of `pid`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Put {
    pid: usize,
    disp: Aint,
    at: usize,
    len: usize,
}

/// A get waiting for the sync: `len` bytes at address `disp` of `pid` into local `dst`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Get {
    pid: usize,
    disp: Aint,
    dst: usize,
    len: usize,
}

/// The transfers of one superstep on this process.
#[derive(Debug, Default)]
pub struct Drma {
    puts: Vec<Put>,
    arena: Vec<u8>,
    gets: Vec<Get>,
    /// Whether a hp transfer was issued to another process since the last flush.
    hp_pending: bool,
}

impl Drma {
    /// Queues a buffered put of `src` (copied now).
    pub fn put(&mut self, pid: usize, disp: Aint, src: &[u8]) {
        let at = self.arena.len();
        self.arena.extend_from_slice(src);
        if let Some(last) = self.puts.last_mut() {
            let adjacent = last.pid == pid && last.at + last.len == at;
            if adjacent && last.disp.checked_add(last.len as Aint) == Some(disp) {
                last.len += src.len();
                return;
            }
        }
        self.puts.push(Put {
            pid,
            disp,
            at,
            len: src.len(),
        });
    }

    /// Queues a buffered get into `dst`.
    pub fn get(&mut self, pid: usize, disp: Aint, dst: usize, len: usize) {
        self.gets.push(Get {
            pid,
            disp,
            dst,
            len,
        });
    }

    /// Issues an unbuffered put now.
    ///
    /// # Safety
    /// `src..src+len` stays readable until the sync; for `pid == me`, `disp` is the address of
    /// `len` writable bytes of this process.
    pub unsafe fn hpput(
        &mut self,
        win: Win,
        me: usize,
        pid: usize,
        src: *const u8,
        disp: Aint,
        len: usize,
    ) -> MpiResult {
        if pid == me {
            // SAFETY: the caller's contract; `copy` allows the areas to overlap.
            unsafe { std::ptr::copy(src, disp as *mut u8, len) };
            return Ok(());
        }
        self.hp_pending = true;
        // SAFETY: the caller's contract; the window flushes before the sync returns.
        unsafe { win.put(src, len, pid, disp) }
    }

    /// Issues an unbuffered get now.
    ///
    /// # Safety
    /// `dst..dst+len` stays writable until the sync; for `pid == me`, `disp` is the address of
    /// `len` readable bytes of this process.
    pub unsafe fn hpget(
        &mut self,
        win: Win,
        me: usize,
        pid: usize,
        disp: Aint,
        dst: *mut u8,
        len: usize,
    ) -> MpiResult {
        if pid == me {
            // SAFETY: the caller's contract; `copy` allows the areas to overlap.
            unsafe { std::ptr::copy(disp as *const u8, dst, len) };
            return Ok(());
        }
        self.hp_pending = true;
        // SAFETY: the caller's contract.
        unsafe { win.get(dst, len, pid, disp) }
    }

    pub fn has_puts(&self) -> bool {
        !self.puts.is_empty()
    }

    pub fn has_gets(&self) -> bool {
        !self.gets.is_empty()
    }

    /// Completes the hp transfers issued so far (the first step of a sync).
    pub fn flush_hp(&mut self, win: Win) -> MpiResult {
        if std::mem::take(&mut self.hp_pending) {
            win.flush_all()?;
        }
        Ok(())
    }

    /// Issues and completes the superstep's gets; every process is in the sync.
    pub fn run_gets(&mut self, win: Win, me: usize) -> MpiResult {
        for g in self.gets.drain(..) {
            if g.pid == me {
                // SAFETY: `disp` lies in an area this process registered and `dst` is the
                // destination the program gave bsp_get for `len` bytes (checked at the call).
                unsafe { std::ptr::copy(g.disp as *const u8, g.dst as *mut u8, g.len) };
            } else {
                // SAFETY: as above; the flush below completes the get before the sync returns.
                unsafe { win.get(g.dst as *mut u8, g.len, g.pid, g.disp)? };
            }
        }
        win.flush_all()
    }

    /// Issues and completes the superstep's puts; every get of the superstep has completed.
    pub fn run_puts(&mut self, win: Win, me: usize) -> MpiResult {
        for p in self.puts.drain(..) {
            let src = self.arena[p.at..p.at + p.len].as_ptr();
            if p.pid == me {
                // SAFETY: `disp` lies in an area this process registered (checked at the call);
                // the arena is not registered memory, so the copy cannot overlap it.
                unsafe { std::ptr::copy_nonoverlapping(src, p.disp as *mut u8, p.len) };
            } else {
                // SAFETY: the arena is not touched until the flush below completes the put.
                unsafe { win.put(src, p.len, p.pid, p.disp)? };
            }
        }
        win.flush_all()?;
        self.arena.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adjacent_puts_merge() {
        let mut d = Drma::default();
        d.put(1, 1000, &[1, 2]);
        d.put(1, 1002, &[3]);
        d.put(2, 1003, &[4]);
        d.put(2, 1010, &[5]);
        assert_eq!(d.puts.len(), 3);
        assert_eq!(
            d.puts[0],
            Put {
                pid: 1,
                disp: 1000,
                at: 0,
                len: 3
            }
        );
        assert_eq!(d.arena, vec![1, 2, 3, 4, 5]);
    }

    #[test]
    fn gets_wait_for_the_sync() {
        let mut d = Drma::default();
        assert!(!d.has_gets());
        d.get(1, 64, 0x1000, 8);
        assert!(d.has_gets() && !d.has_puts());
    }
}
