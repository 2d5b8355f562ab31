//! Forwarding of mpiexec's stdin to rank 0 (the other ranks get `/dev/null`, as under Hydra).
//!
//! mpiexec reads its stdin only when the previous block has been written to rank 0's pipe, and
//! writes to that pipe only when it is writable (it is non-blocking), so a rank that never reads
//! stdin holds back at most one pipe buffer plus one block and never stalls the event loop. At
//! end of input, rank 0's pipe is closed so the rank sees EOF.

use std::fs::File;
use std::io::{self, ErrorKind, Read, Write};
use std::os::fd::{AsFd, BorrowedFd};

/// Largest block read from mpiexec's stdin at once.
const BLOCK: usize = 64 * 1024;

/// The stdin forwarding state.
#[derive(Debug)]
pub struct StdinForward {
    /// A duplicate of mpiexec's fd 0 (reads bypass std's buffered `Stdin`).
    source: Option<File>,
    /// Rank 0's stdin pipe, non-blocking.
    target: Option<File>,
    block: Vec<u8>,
    written: usize,
}

impl StdinForward {
    /// Forwards to `target` (rank 0's stdin), or does nothing when there is none.
    pub fn new(target: Option<File>) -> Self {
        let source = target
            .as_ref()
            .and_then(|_| io::stdin().as_fd().try_clone_to_owned().ok())
            .map(File::from);
        Self {
            source,
            target,
            block: Vec::new(),
            written: 0,
        }
    }

    /// mpiexec's stdin, when a new block should be read from it.
    pub fn source_fd(&self) -> Option<BorrowedFd<'_>> {
        match (&self.source, &self.target) {
            (Some(source), Some(_)) if self.block.is_empty() => Some(source.as_fd()),
            _ => None,
        }
    }

    /// Rank 0's pipe, when a block waits to be written to it.
    pub fn target_fd(&self) -> Option<BorrowedFd<'_>> {
        match &self.target {
            Some(target) if !self.block.is_empty() => Some(target.as_fd()),
            _ => None,
        }
    }

    /// Reads one block from mpiexec's stdin (it was reported readable).
    pub fn read_source(&mut self) {
        let Some(source) = self.source.as_mut() else {
            return;
        };
        let mut block = vec![0u8; BLOCK];
        match source.read(&mut block) {
            Ok(0) => self.end_of_input(),
            Ok(n) => {
                block.truncate(n);
                self.block = block;
                self.written = 0;
                self.write_target();
            }
            Err(e) if e.kind() == ErrorKind::Interrupted || e.kind() == ErrorKind::WouldBlock => {}
            Err(_) => self.end_of_input(),
        }
    }

    /// Writes as much of the pending block as rank 0's pipe accepts.
    pub fn write_target(&mut self) {
        let Some(target) = self.target.as_mut() else {
            return;
        };
        while self.written < self.block.len() {
            match target.write(&self.block[self.written..]) {
                Ok(n) => self.written += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(_) => {
                    // Rank 0 closed its stdin or exited: nothing more to forward.
                    self.stop();
                    return;
                }
            }
        }
        self.block.clear();
        self.written = 0;
        if self.source.is_none() {
            self.target = None;
        }
    }

    /// Input ended: close rank 0's stdin once the pending block is written.
    fn end_of_input(&mut self) {
        self.source = None;
        if self.block.is_empty() {
            self.target = None;
        }
    }

    /// Stops forwarding (rank 0 is gone).
    pub fn stop(&mut self) {
        self.source = None;
        self.target = None;
        self.block.clear();
    }
}
