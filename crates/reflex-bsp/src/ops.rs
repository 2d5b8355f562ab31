//! The BSPlib operations on a run, after the C layer has turned its arguments into Rust values:
//! argument checks, registration lookups, then the DRMA / BSMP queues and the debug records.

use crate::loc::{usage, BspResult, Loc};
use crate::mpi::Aint;
use crate::registry::{Area, Target};
use crate::runtime::Bsp;

/// Converts a C `int` count or offset, which must not be negative.
pub fn non_negative(what: &str, v: i32) -> BspResult<usize> {
    usize::try_from(v).or_else(|_| usage(format!("{what} is {v}; it must not be negative")))
}

/// A C buffer address (null only with a length of 0).
pub fn buffer(what: &str, addr: usize, len: usize) -> BspResult<usize> {
    if addr == 0 && len > 0 {
        return usage(format!("{what} is NULL with {len} bytes to transfer"));
    }
    Ok(addr)
}

impl Bsp {
    /// The checked `(pid, offset, nbytes)` of a put or get.
    pub fn transfer_args(
        &self,
        pid: i32,
        offset: i32,
        nbytes: i32,
    ) -> BspResult<(usize, usize, usize)> {
        Ok((
            self.check_pid(pid)?,
            non_negative("offset", offset)?,
            non_negative("nbytes", nbytes)?,
        ))
    }

    /// A pid argument.
    pub fn check_pid(&self, pid: i32) -> BspResult<usize> {
        match usize::try_from(pid) {
            Ok(p) if p < self.nprocs => Ok(p),
            _ => usage(format!(
                "pid {pid} is out of range (there are {} processes)",
                self.nprocs
            )),
        }
    }

    pub fn push_reg(&mut self, addr: usize, size: i32, at: Loc) -> BspResult {
        let size = non_negative("the size", size)?;
        self.reg.push(Area { addr, size }, at);
        if let Some(d) = self.debug.as_mut() {
            d.record_push(size, at);
        }
        Ok(())
    }

    pub fn pop_reg(&mut self, addr: usize, at: Loc) -> BspResult {
        let id = self.reg.pop(addr, at)?;
        if let Some(d) = self.debug.as_mut() {
            d.record_pop(id, at);
        }
        Ok(())
    }

    /// Finds where `offset..offset+nbytes` of the registration of `addr` lies on `pid`: the
    /// address to use (a local pointer for this process, the MPI address elsewhere).
    fn locate(
        &self,
        addr: usize,
        pid: usize,
        offset: usize,
        nbytes: usize,
    ) -> BspResult<(Target, Aint)> {
        let target = self.reg.target(addr, pid, offset, nbytes)?;
        let base = if pid == self.pid {
            addr
        } else {
            target.area.addr
        };
        Ok((target, base.wrapping_add(offset) as Aint))
    }

    /// `bsp_put`: `src` is copied now.
    pub fn put(&mut self, pid: usize, src: &[u8], dst: usize, offset: usize, at: Loc) -> BspResult {
        let (target, disp) = self.locate(dst, pid, offset, src.len())?;
        self.drma.put(pid, disp, src);
        if let Some(d) = self.debug.as_mut() {
            d.record_write(pid, &target, offset, src.len(), false, at);
        }
        Ok(())
    }

    /// `bsp_get` into `dst` (written at the sync).
    pub fn get(
        &mut self,
        pid: usize,
        src: usize,
        offset: usize,
        dst: usize,
        len: usize,
    ) -> BspResult {
        let (_, disp) = self.locate(src, pid, offset, len)?;
        self.drma.get(pid, disp, dst, len);
        Ok(())
    }

    /// `bsp_hpput`.
    ///
    /// # Safety
    /// `src..src+len` is readable and stays so until the sync.
    pub unsafe fn hpput(
        &mut self,
        pid: usize,
        src: usize,
        dst: usize,
        offset: usize,
        len: usize,
        at: Loc,
    ) -> BspResult {
        let (target, disp) = self.locate(dst, pid, offset, len)?;
        if let Some(d) = self.debug.as_mut() {
            // SAFETY: the caller's contract.
            unsafe { d.record_hpput(src, len, at) };
            d.record_write(pid, &target, offset, len, true, at);
        }
        // SAFETY: the caller's contract; `disp` was checked against the registration.
        unsafe {
            self.drma
                .hpput(self.win, self.pid, pid, src as *const u8, disp, len)?
        };
        Ok(())
    }

    /// `bsp_hpget`.
    ///
    /// # Safety
    /// `dst..dst+len` is readable and writable and stays so until the sync.
    pub unsafe fn hpget(
        &mut self,
        pid: usize,
        src: usize,
        offset: usize,
        dst: usize,
        len: usize,
        at: Loc,
    ) -> BspResult {
        let (_, disp) = self.locate(src, pid, offset, len)?;
        if let Some(d) = self.debug.as_mut() {
            // SAFETY: the caller's contract.
            return unsafe { d.hpget((self.win, self.pid), pid, disp, dst, len, at) };
        }
        // SAFETY: the caller's contract; `disp` was checked against the registration.
        unsafe {
            self.drma
                .hpget(self.win, self.pid, pid, disp, dst as *mut u8, len)?
        };
        Ok(())
    }
}
