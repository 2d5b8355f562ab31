//! MPI-IO (MPI-3.1 chapter 13) over POSIX files: access modes, opening and deleting with
//! precise error classes, file views, and the positioned read/write loop.
//!
//! Every rank opens the file itself and accesses it with positioned reads and writes
//! (`pread`/`pwrite` through [`std::os::unix::fs::FileExt`]), as ROMIO's generic UFS driver does;
//! collective accesses of short interleaved runs go through aggregators ([`plan`], [`aggregate`]:
//! two-phase I/O), the others are the independent ones plus an agreement. [`view`] maps the data of a view (displacement, etype, filetype tiled from the
//! displacement) onto runs of file bytes with the datatype engine's cursor; [`access`] reads and
//! writes those runs. Collective calls agree on their outcome with [`Engine::file_agree`], so that
//! a failure on one rank is an error on every rank.

pub mod access;
pub mod aggregate;
pub mod amode;
pub mod plan;
pub mod shared;
pub mod view;

use crate::comm::CommId;
use crate::engine::Engine;
use crate::error::{ErrorClass, MpiError, Result};
use reflex_base::transport::Transport;
use std::io;
use std::path::Path;

pub use access::{read_view, with_lock, write_view};
pub use amode::Amode;
pub use plan::{Buffering, Direction, Hints, Plan};
pub use shared::SharedPointer;
pub use view::View;

/// The error class and message of a failed file system call on `path`.
pub fn io_error(what: &str, path: &Path, e: &io::Error) -> MpiError {
    use io::ErrorKind as K;
    let class = match e.kind() {
        K::NotFound => ErrorClass::NoSuchFile,
        K::AlreadyExists => ErrorClass::FileExists,
        K::PermissionDenied => ErrorClass::Access,
        K::ReadOnlyFilesystem => ErrorClass::ReadOnly,
        K::StorageFull => ErrorClass::NoSpace,
        K::QuotaExceeded => ErrorClass::Quota,
        K::InvalidFilename | K::NotADirectory | K::IsADirectory | K::InvalidInput => {
            ErrorClass::BadFile
        }
        _ => ErrorClass::Io,
    };
    MpiError::new(class, format!("{what} \"{}\": {e}", path.display()))
}

/// Opens `path` for this rank with the access mode `amode` (already checked).
pub fn open(path: &Path, amode: Amode) -> Result<std::fs::File> {
    let mut o = std::fs::OpenOptions::new();
    o.read(!amode.write_only()).write(!amode.read_only());
    if amode.excl() {
        o.create_new(true);
    } else if amode.create() {
        o.create(true);
    }
    o.open(path).map_err(|e| io_error("cannot open", path, &e))
}

/// `MPI_File_delete`: removes `path`.
pub fn delete(path: &Path) -> Result<()> {
    std::fs::remove_file(path).map_err(|e| io_error("cannot delete", path, &e))
}

/// A rank's outcome as one word: 0 for success, else the error class.
fn outcome_word(mine: Option<&MpiError>) -> Vec<u8> {
    mine.map_or(0, |e| e.class as i32).to_le_bytes().to_vec()
}

/// The first failure among the ranks' outcome words and messages, as this rank reports it.
fn first_failure(words: &[Vec<u8>], messages: &[Vec<u8>]) -> Option<MpiError> {
    let word = |b: &[u8]| -> Option<i32> { Some(i32::from_le_bytes(b.get(..4)?.try_into().ok()?)) };
    words.iter().enumerate().find_map(|(rank, b)| {
        let class = word(b).filter(|&c| c != 0)?;
        let class = ErrorClass::from_i32(class).unwrap_or(ErrorClass::Other);
        let text = messages
            .get(rank)
            .map(|m| String::from_utf8_lossy(m).into_owned())
            .unwrap_or_default();
        Some(MpiError::new(class, format!("on rank {rank}: {text}")))
    })
}

impl<T: Transport> Engine<T> {
    /// Makes a collective file operation fail on every rank of `comm` when it failed on one: each
    /// rank contributes its outcome; a rank that failed returns its own error, the others the
    /// first failing rank's class and message.
    pub fn file_agree<R>(&mut self, comm: CommId, mine: Result<R>) -> Result<R> {
        let err = mine.as_ref().err();
        let words = self.allgather_bytes(comm, outcome_word(err))?;
        let failed = words.iter().any(|w| w.iter().any(|&b| b != 0));
        let messages = match failed {
            true => self.allgather_var(comm, err.map_or(&[][..], |e| e.message.as_bytes()))?,
            false => Vec::new(),
        };
        match (mine, first_failure(&words, &messages)) {
            (Err(e), _) => Err(e),
            (Ok(_), Some(e)) => Err(e),
            (Ok(r), None) => Ok(r),
        }
    }

    /// A request already complete with `bytes` moved (the nonblocking file calls, which Reflex
    /// completes before returning).
    pub fn file_request(&mut self, bytes: usize) -> crate::request::RequestId {
        let id = self.core.install(None, crate::request::Op::Null);
        let status = crate::request::Status {
            bytes,
            ..crate::request::Status::empty()
        };
        self.core.complete(id, status);
        id
    }

    /// Gathers one byte string of any length from every rank of `comm` (the exchanges of the
    /// ordered and shared-pointer calls).
    pub fn file_allgather(&mut self, comm: CommId, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        self.allgather_var(comm, mine)
    }

    /// Checks that every rank of `comm` passed the same `value` to a collective file call
    /// (`what` names the argument in the error).
    pub fn file_same(&mut self, comm: CommId, value: &[u8], what: &str) -> Result<()> {
        let all = self.allgather_var(comm, value)?;
        match all.iter().position(|v| v != value) {
            None => Ok(()),
            Some(rank) => Err(MpiError::new(
                ErrorClass::NotSame,
                format!("{what} differs between the ranks (rank {rank} passed another value)"),
            )),
        }
    }
}

/// A scratch file for unit tests, already unlinked (it goes away with its descriptor).
#[cfg(test)]
pub(crate) fn scratch_file(name: &str) -> std::fs::File {
    let path = std::env::temp_dir().join(format!("reflex-{name}-{}", std::process::id()));
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .unwrap();
    std::fs::remove_file(&path).unwrap();
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("reflex-file-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn open_errors_have_their_classes() {
        let dir = scratch("open");
        let p = dir.join("missing");
        let e = open(&p, Amode::new(amode::RDONLY).unwrap()).unwrap_err();
        assert_eq!(e.class, ErrorClass::NoSuchFile);
        assert!(e.message.contains("missing"), "{}", e.message);
        let f = open(&p, Amode::new(amode::RDWR | amode::CREATE).unwrap());
        assert!(f.is_ok());
        let excl = Amode::new(amode::RDWR | amode::CREATE | amode::EXCL).unwrap();
        assert_eq!(open(&p, excl).unwrap_err().class, ErrorClass::FileExists);
        assert_eq!(
            open(&dir, Amode::new(amode::RDWR).unwrap())
                .unwrap_err()
                .class,
            ErrorClass::BadFile
        );
        delete(&p).unwrap();
        assert_eq!(delete(&p).unwrap_err().class, ErrorClass::NoSuchFile);
        std::fs::remove_dir(&dir).unwrap();
    }

    #[test]
    fn failures_are_reported_with_the_rank() {
        let ok = outcome_word(None);
        let bad = outcome_word(Some(&MpiError::new(ErrorClass::Access, "denied")));
        assert!(first_failure(&[ok.clone(), ok.clone()], &[]).is_none());
        let e = first_failure(&[ok, bad], &[vec![], b"denied".to_vec()]).unwrap();
        assert_eq!(e.class, ErrorClass::Access);
        assert_eq!(e.message, "on rank 1: denied");
    }
}
