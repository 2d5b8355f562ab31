//! The I/O loop: positioned reads and writes of the file runs behind a range of view data.
//!
//! A read stops at the end of the file (a short read: the caller reports the bytes actually
//! read in the status); a write extends the file. Each run is one `pread`/`pwrite` loop
//! (the system call may move fewer bytes than asked).

use super::view::View;
use crate::error::{ErrorClass, MpiError, Result};
use std::fs::File;
use std::os::unix::fs::FileExt;

fn io(what: &str, at: u64, e: &std::io::Error) -> MpiError {
    let class = match e.kind() {
        std::io::ErrorKind::StorageFull => ErrorClass::NoSpace,
        std::io::ErrorKind::QuotaExceeded => ErrorClass::Quota,
        _ => ErrorClass::Io,
    };
    MpiError::new(class, format!("{what} at file offset {at}: {e}"))
}

/// Runs `body` holding a lock on the whole file (`exclusive` for writes, shared for reads):
/// `MPI_File_set_atomicity(fh, 1)`, so that concurrent accesses from other processes see all
/// of one access or none of it (`flock`, which NFS v4 and Lustre map onto byte-range locks).
pub fn with_lock<R>(file: &File, exclusive: bool, body: impl FnOnce() -> Result<R>) -> Result<R> {
    let locked = if exclusive {
        file.lock()
    } else {
        file.lock_shared()
    };
    locked.map_err(|e| io("cannot lock the file", 0, &e))?;
    let out = body();
    file.unlock()
        .map_err(|e| io("cannot unlock the file", 0, &e))?;
    out
}

/// Reads view data bytes `[offset, offset + buf.len())` into `buf`; returns how many there were
/// before the end of the file.
pub fn read_view(file: &File, view: &View, offset: u64, buf: &mut [u8]) -> Result<usize> {
    let mut done = 0;
    for (at, len) in view.runs(offset, buf.len()) {
        let got = read_at_most(file, at, &mut buf[done..done + len])?;
        done += got;
        if got < len {
            break;
        }
    }
    Ok(done)
}

/// Reads file bytes from `at` into `buf`; returns how many there were before the end of the file.
pub(super) fn read_at_most(file: &File, at: u64, buf: &mut [u8]) -> Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], at + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io("read failed", at + done as u64, &e)),
        }
    }
    Ok(done)
}

/// Writes `buf` as view data bytes `[offset, offset + buf.len())`.
pub fn write_view(file: &File, view: &View, offset: u64, buf: &[u8]) -> Result<()> {
    let mut done = 0;
    for (at, len) in view.runs(offset, buf.len()) {
        write_run(file, at, &buf[done..done + len])?;
        done += len;
    }
    Ok(())
}

/// Writes `buf` at file byte `at`.
pub(super) fn write_run(file: &File, at: u64, buf: &[u8]) -> Result<()> {
    file.write_all_at(buf, at)
        .map_err(|e| io("write failed", at, &e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::{Basic, Datatype, Layout, ValueKind};

    #[test]
    fn views_write_into_their_runs_and_reads_stop_at_the_end() {
        let file = super::super::scratch_file("access");
        file.write_all_at(&[0xee; 12], 0).unwrap();
        let byte = Datatype::Basic(Basic::plain(ValueKind::Byte, 1));
        // two bytes of every four, from byte 2
        let v = Datatype::derived(Layout::vector(1, 2, 4, byte.clone()).unwrap());
        let ft = Datatype::derived(Layout::resized(v, 0, 4).unwrap());
        let view = View::new(2, byte, ft, true).unwrap();
        write_view(&file, &view, 0, &[1, 2, 3, 4, 5, 6]).unwrap();
        let mut all = [0u8; 12];
        assert_eq!(read_view(&file, &View::bytes(), 0, &mut all).unwrap(), 12);
        assert_eq!(all, [0xee, 0xee, 1, 2, 0xee, 0xee, 3, 4, 0xee, 0xee, 5, 6]);
        let mut back = [0u8; 8];
        // data bytes 2.. : 3 4 5 6, then the end of the file
        assert_eq!(read_view(&file, &view, 2, &mut back).unwrap(), 4);
        assert_eq!(back[..4], [3, 4, 5, 6]);
    }
}
