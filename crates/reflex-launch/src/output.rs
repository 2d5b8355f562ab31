//! Forwarding of the ranks' stdout and stderr to mpiexec's own, optionally labelled.
//!
//! Without `-l`, bytes are copied as they arrive (a partial line is not held back). With `-l`,
//! each complete line is prefixed `[rank] ` as Hydra's `-prepend-rank` does; a partial line is
//! kept until its newline arrives, and at end of stream it is emitted with a newline added, so
//! no output is lost when a rank exits (or is killed) mid-line.

use std::fs::File;
use std::io::{self, ErrorKind, Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

/// Which of mpiexec's streams a pipe is copied to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sink {
    Stdout,
    Stderr,
}

/// Adds `[rank] ` labels to a byte stream, line by line.
#[derive(Debug)]
pub struct Labeler {
    prefix: Vec<u8>,
    partial: Vec<u8>,
}

/// How output and messages name rank `rank` of job `job` (0: the first job, then spawned jobs
/// in the order they started).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RankOf {
    pub job: usize,
    pub rank: u32,
}

impl RankOf {
    /// The `-l` label: `3`, or `2:1` for rank 1 of spawned job 2.
    pub fn tag(self) -> String {
        match self.job {
            0 => self.rank.to_string(),
            job => format!("{job}:{}", self.rank),
        }
    }
}

impl std::fmt::Display for RankOf {
    /// `rank 3`, or `rank 1 of spawned job 2`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.job {
            0 => write!(f, "rank {}", self.rank),
            job => write!(f, "rank {} of spawned job {job}", self.rank),
        }
    }
}

impl Labeler {
    /// Labels lines `[tag] ` (the rank, or `job:rank` for a spawned job).
    pub fn new(tag: impl std::fmt::Display) -> Self {
        Self {
            prefix: format!("[{tag}] ").into_bytes(),
            partial: Vec::new(),
        }
    }

    /// Appends the labelled complete lines of `chunk` to `out`; keeps a trailing partial line.
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<u8>) {
        let mut rest = chunk;
        while let Some(pos) = rest.iter().position(|&b| b == b'\n') {
            out.extend_from_slice(&self.prefix);
            out.append(&mut self.partial);
            out.extend_from_slice(&rest[..=pos]);
            rest = &rest[pos + 1..];
        }
        self.partial.extend_from_slice(rest);
    }

    /// At end of stream: the pending partial line, labelled and terminated.
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        if !self.partial.is_empty() {
            out.extend_from_slice(&self.prefix);
            out.append(&mut self.partial);
            out.push(b'\n');
        }
    }
}

/// One rank's stdout or stderr pipe.
#[derive(Debug)]
pub struct OutputPipe {
    pipe: Option<File>,
    sink: Sink,
    labeler: Option<Labeler>,
}

impl OutputPipe {
    /// A pipe copied to `sink`, its lines labelled `[label] ` when a label is given.
    pub fn new(pipe: OwnedFd, sink: Sink, label: Option<String>) -> Self {
        Self {
            pipe: Some(File::from(pipe)),
            sink,
            labeler: label.map(Labeler::new),
        }
    }

    /// The pipe to poll, while it is open.
    pub fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.pipe.as_ref().map(|p| p.as_fd())
    }

    pub fn is_open(&self) -> bool {
        self.pipe.is_some()
    }

    /// Reads what is available (the pipe was reported readable) and forwards it. Closes the
    /// pipe at end of stream.
    pub fn pump(&mut self, sinks: &mut Sinks) {
        let Some(pipe) = self.pipe.as_mut() else {
            return;
        };
        let mut chunk = [0u8; 16 * 1024];
        match pipe.read(&mut chunk) {
            Ok(0) => self.close(sinks),
            Ok(n) => {
                let mut out = Vec::new();
                match self.labeler.as_mut() {
                    Some(labeler) => labeler.feed(&chunk[..n], &mut out),
                    None => out.extend_from_slice(&chunk[..n]),
                }
                sinks.write(self.sink, &out);
            }
            Err(e) if e.kind() == ErrorKind::Interrupted || e.kind() == ErrorKind::WouldBlock => {}
            Err(_) => self.close(sinks),
        }
    }

    fn close(&mut self, sinks: &mut Sinks) {
        self.pipe = None;
        if let Some(labeler) = self.labeler.as_mut() {
            let mut out = Vec::new();
            labeler.finish(&mut out);
            sinks.write(self.sink, &out);
        }
    }

    /// Forwards everything still buffered in the pipe, then closes it (used once the writers
    /// are known to be dead, or when giving up on a pipe held open elsewhere).
    pub fn drain_and_close(&mut self, sinks: &mut Sinks) {
        while let Some(pipe) = self.pipe.as_ref() {
            let readable = nix::poll::poll(
                &mut [nix::poll::PollFd::new(
                    pipe.as_fd(),
                    nix::poll::PollFlags::POLLIN,
                )],
                nix::poll::PollTimeout::ZERO,
            );
            if !matches!(readable, Ok(n) if n > 0) {
                self.close(sinks);
                return;
            }
            self.pump(sinks);
        }
    }
}

/// mpiexec's stdout and stderr; a sink whose reader went away (EPIPE) is dropped silently, so
/// `mpiexec ... | head` does not disturb the job.
#[derive(Debug, Default)]
pub struct Sinks {
    stdout_gone: bool,
    stderr_gone: bool,
}

impl Sinks {
    pub fn write(&mut self, sink: Sink, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        let gone = match sink {
            Sink::Stdout => &mut self.stdout_gone,
            Sink::Stderr => &mut self.stderr_gone,
        };
        if *gone {
            return;
        }
        let result = match sink {
            Sink::Stdout => write_flush(&mut io::stdout().lock(), bytes),
            Sink::Stderr => write_flush(&mut io::stderr().lock(), bytes),
        };
        *gone = result.is_err();
    }
}

fn write_flush(out: &mut impl Write, bytes: &[u8]) -> io::Result<()> {
    out.write_all(bytes)?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_of_spawned_jobs_name_their_job() {
        let first = RankOf { job: 0, rank: 3 };
        let spawned = RankOf { job: 2, rank: 1 };
        assert_eq!(
            (first.tag(), first.to_string()),
            ("3".into(), "rank 3".into())
        );
        assert_eq!(spawned.tag(), "2:1");
        assert_eq!(spawned.to_string(), "rank 1 of spawned job 2");
    }

    #[test]
    fn labels_complete_lines_and_keeps_partials() {
        let mut labeler = Labeler::new(3);
        let mut out = Vec::new();
        labeler.feed(b"one\ntw", &mut out);
        assert_eq!(out, b"[3] one\n");
        labeler.feed(b"o\n\nthr", &mut out);
        assert_eq!(out, b"[3] one\n[3] two\n[3] \n");
        labeler.finish(&mut out);
        assert_eq!(out, b"[3] one\n[3] two\n[3] \n[3] thr\n");
        let mut again = Vec::new();
        labeler.finish(&mut again);
        assert!(again.is_empty());
    }
}
