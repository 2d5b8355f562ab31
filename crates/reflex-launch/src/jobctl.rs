//! Job control: Ctrl-Z stops the whole job and `fg`/`bg` continue it, as a shell does for the
//! processes of one job.
//!
//! Each rank leads a session and process group of its own (so that one signal also reaches a
//! rank's children), which is not the terminal's foreground group: the terminal's SIGTSTP reaches
//! mpiexec alone. So mpiexec reads SIGTSTP and SIGCONT through its signalfd (a blocked SIGCONT
//! still continues the process, and is then queued for the signalfd). On SIGTSTP it stops every
//! rank with SIGSTOP (on other hosts through their session, which also stops expecting
//! heartbeats), then stops itself, so that the shell sees the job stopped; on SIGCONT (`fg`,
//! `bg`, `kill -CONT`) it continues every rank. mpiexec stops itself with SIGSTOP rather than
//! SIGTSTP: the kernel discards a SIGTSTP whose process group has no parent in the session
//! (an orphaned group, e.g. under a daemon), and the stop the user asked for must happen.

use nix::sys::signal::{kill, Signal};
use nix::unistd::getpid;

/// The signals of job control, added to the ones mpiexec reads through its signalfd.
pub const SIGNALS: [Signal; 2] = [Signal::SIGTSTP, Signal::SIGCONT];

/// What a signal asks of the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobControl {
    /// SIGTSTP (Ctrl-Z): stop every rank, then mpiexec.
    Stop,
    /// SIGCONT: continue every rank.
    Continue,
}

impl JobControl {
    /// The job-control meaning of signal number `signal`, if it has one.
    pub fn from_signal(signal: i32) -> Option<Self> {
        match Signal::try_from(signal) {
            Ok(Signal::SIGTSTP) => Some(Self::Stop),
            Ok(Signal::SIGCONT) => Some(Self::Continue),
            _ => None,
        }
    }
}

/// Stops mpiexec until a SIGCONT (returns after it). Call it once every rank was sent SIGSTOP.
pub fn stop_self() {
    // SIGSTOP cannot fail for the calling process.
    let _ = kill(getpid(), Signal::SIGSTOP);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_tstp_and_cont_are_job_control() {
        assert_eq!(
            JobControl::from_signal(Signal::SIGTSTP as i32),
            Some(JobControl::Stop)
        );
        assert_eq!(
            JobControl::from_signal(Signal::SIGCONT as i32),
            Some(JobControl::Continue)
        );
        for other in [Signal::SIGINT, Signal::SIGCHLD, Signal::SIGSTOP] {
            assert_eq!(JobControl::from_signal(other as i32), None);
        }
        assert_eq!(JobControl::from_signal(0), None);
    }
}
