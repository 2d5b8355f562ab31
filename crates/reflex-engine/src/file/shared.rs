//! The shared file pointer (MPI-3.1 §13.4.4): one counter for all ranks of a file, kept in a
//! small sidecar file, read and advanced under an exclusive lock.
//!
//! Where the sidecar lives: when every rank of the file shares one node, in `/dev/shm` under the
//! job's segment names ([`SharedPointer::name_on_node`]), so that a launcher that removes the
//! job's segments after a crash removes it too; otherwise next to the file (as ROMIO does), on
//! the file system the ranks of several nodes share.
//!
//! The sidecar holds the pointer as 8 little-endian bytes (in bytes of view data); an empty or
//! missing sidecar is pointer 0. Every rank opens it lazily with `O_CREAT` (no truncation), so
//! whichever rank comes first creates it; `flock` (exclusive) makes each read-modify-write
//! atomic between processes. Rank 0 of the file removes it when the file is closed.

use super::io_error;
use crate::error::Result;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The sidecar of one open file.
#[derive(Debug, Clone)]
pub struct SharedPointer {
    path: PathBuf,
}

/// Distinguishes the sidecars of files one process opens.
static OPENED: AtomicU64 = AtomicU64::new(0);

impl SharedPointer {
    /// A new sidecar name for `file` (chosen by rank 0, handed to the others): hidden, in the
    /// same directory, unique to this process and open.
    pub fn name_for(file: &Path) -> PathBuf {
        let n = OPENED.fetch_add(1, Ordering::Relaxed);
        let base = file
            .file_name()
            .map_or_else(|| "file".into(), |f| f.to_string_lossy().into_owned());
        file.with_file_name(format!(".{base}.shfp.{}.{n}", std::process::id()))
    }

    /// A new sidecar name for a file whose ranks all share the node whose shared segments are
    /// named after `base` (`reflex-<job>-<node>`): `/dev/shm/<base>.shfp_<pid>_<n>`, a name the
    /// launcher's sweep of the job's segments matches.
    pub fn name_on_node(base: &str) -> PathBuf {
        let n = OPENED.fetch_add(1, Ordering::Relaxed);
        Path::new(reflex_base::segment::SHM_DIR)
            .join(format!("{base}.shfp_{}_{n}", std::process::id()))
    }

    /// The sidecar at `path`.
    pub fn at(path: PathBuf) -> Self {
        Self { path }
    }

    /// Where the sidecar lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn open(&self) -> Result<File> {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&self.path)
            .map_err(|e| io_error("cannot open the shared file pointer", &self.path, &e))?;
        f.lock()
            .map_err(|e| io_error("cannot lock the shared file pointer", &self.path, &e))?;
        Ok(f)
    }

    fn read(&self, f: &File) -> Result<u64> {
        let mut b = [0u8; 8];
        let mut got = 0;
        while got < 8 {
            match f.read_at(&mut b[got..], got as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) => return Err(io_error("cannot read", &self.path, &e)),
            }
        }
        Ok(if got == 8 { u64::from_le_bytes(b) } else { 0 })
    }

    fn store(&self, f: &File, v: u64) -> Result<()> {
        f.write_all_at(&v.to_le_bytes(), 0)
            .map_err(|e| io_error("cannot write", &self.path, &e))
    }

    /// Advances the pointer by `n` bytes; returns where it was (the lock is held throughout).
    pub fn fetch_add(&self, n: u64) -> Result<u64> {
        let f = self.open()?;
        let old = self.read(&f)?;
        self.store(&f, old + n)?;
        Ok(old)
    }

    /// The pointer.
    pub fn get(&self) -> Result<u64> {
        let f = self.open()?;
        self.read(&f)
    }

    /// Sets the pointer.
    pub fn set(&self, v: u64) -> Result<()> {
        let f = self.open()?;
        self.store(&f, v)
    }

    /// Removes the sidecar (a missing one is fine: no shared access happened).
    pub fn remove(&self) -> Result<()> {
        match std::fs::remove_file(&self.path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(io_error("cannot remove", &self.path, &e))
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pointer_starts_at_zero_and_advances_across_threads() {
        let file = std::env::temp_dir().join(format!("reflex-shfp-{}", std::process::id()));
        let sp = SharedPointer::at(SharedPointer::name_for(&file));
        assert_eq!(sp.get().unwrap(), 0);
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let sp = sp.clone();
                std::thread::spawn(move || {
                    (0..50).for_each(|_| {
                        sp.fetch_add(3).unwrap();
                    })
                })
            })
            .collect();
        handles.into_iter().for_each(|h| h.join().unwrap());
        assert_eq!(sp.get().unwrap(), 600);
        sp.set(7).unwrap();
        assert_eq!(sp.fetch_add(1).unwrap(), 7);
        sp.remove().unwrap();
        assert!(!sp.path().exists());
        sp.remove().unwrap();
    }
}
