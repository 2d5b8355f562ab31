//! The client (`mpiexec`) side of one host's connection, as an I/O-free state machine.
//!
//! Phases: `AwaitWelcome` (hello sent) → `AwaitStarted` (launch sent) → `Running` → `Done`.
//! Messages from the daemon become [`HostEvent`]s for the launcher's job logic; anything out of
//! order, or an `Error` from the daemon, is fatal for the job.

use crate::proto::codec::Msg;
use crate::proto::daemon::name;

/// Where the conversation with one host is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostPhase {
    AwaitWelcome,
    AwaitStarted,
    Running,
    Done,
}

/// What a message from the daemon means for the job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostEvent {
    /// Heartbeat: nothing to do.
    Nothing,
    /// Authenticated: send the launch now.
    Welcome {
        host: String,
    },
    /// The host's ranks run.
    Started {
        pids: Vec<u32>,
    },
    Output {
        rank: u32,
        err: bool,
        bytes: Vec<u8>,
    },
    PmiRequest {
        rank: u32,
        line: Vec<u8>,
    },
    Exit {
        rank: u32,
        status: i32,
        how: String,
    },
    /// Every process of the job on this host is gone.
    Done,
}

/// `mpiexec`'s view of one host.
#[derive(Debug)]
pub struct HostProtocol {
    phase: HostPhase,
    ranks: Vec<u32>,
}

impl HostProtocol {
    /// A connection to the host of `ranks`, whose hello has been sent.
    pub fn new(ranks: Vec<u32>) -> Self {
        Self {
            phase: HostPhase::AwaitWelcome,
            ranks,
        }
    }

    /// The current phase.
    pub fn phase(&self) -> HostPhase {
        self.phase
    }

    /// Handles one message from the daemon. An error is fatal for the job.
    pub fn on_message(&mut self, msg: Msg) -> Result<HostEvent, String> {
        let mine = |rank: &u32| self.ranks.contains(rank);
        match (self.phase, msg) {
            (_, Msg::Heartbeat) => Ok(HostEvent::Nothing),
            (_, Msg::Error(text)) => Err(text),
            (HostPhase::AwaitWelcome, Msg::Welcome { host }) => {
                self.phase = HostPhase::AwaitStarted;
                Ok(HostEvent::Welcome { host })
            }
            (HostPhase::AwaitStarted, Msg::Started { pids }) if pids.len() == self.ranks.len() => {
                self.phase = HostPhase::Running;
                Ok(HostEvent::Started { pids })
            }
            (HostPhase::AwaitStarted | HostPhase::Running, Msg::Done) => {
                self.phase = HostPhase::Done;
                Ok(HostEvent::Done)
            }
            (HostPhase::Running, Msg::Output { rank, err, bytes }) if mine(&rank) => {
                Ok(HostEvent::Output { rank, err, bytes })
            }
            (HostPhase::Running, Msg::PmiRequest { rank, line }) if mine(&rank) => {
                Ok(HostEvent::PmiRequest { rank, line })
            }
            (HostPhase::AwaitStarted | HostPhase::Running, Msg::Exit { rank, status, how })
                if mine(&rank) =>
            {
                Ok(HostEvent::Exit { rank, status, how })
            }
            (phase, msg) => Err(format!(
                "unexpected {} from the daemon while {phase:?}",
                name(&msg)
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_normal_conversation_and_violations() {
        let mut h = HostProtocol::new(vec![2, 3]);
        assert_eq!(
            h.on_message(Msg::Welcome { host: "n1".into() }),
            Ok(HostEvent::Welcome { host: "n1".into() })
        );
        assert!(h
            .on_message(Msg::Started { pids: vec![1] })
            .unwrap_err()
            .contains("unexpected started"));
        let mut h = HostProtocol::new(vec![2, 3]);
        h.on_message(Msg::Welcome { host: "n1".into() }).unwrap();
        h.on_message(Msg::Started { pids: vec![10, 11] }).unwrap();
        assert_eq!(h.phase(), HostPhase::Running);
        let out = Msg::Output {
            rank: 3,
            err: false,
            bytes: b"hi".to_vec(),
        };
        assert!(matches!(
            h.on_message(out),
            Ok(HostEvent::Output { rank: 3, .. })
        ));
        let foreign = Msg::PmiRequest {
            rank: 0,
            line: vec![],
        };
        assert!(h.on_message(foreign).is_err(), "rank 0 is not on this host");
        assert_eq!(
            h.on_message(Msg::Error("disk full".into())),
            Err("disk full".into())
        );
        assert_eq!(h.on_message(Msg::Done), Ok(HostEvent::Done));
        assert_eq!(h.phase(), HostPhase::Done);
    }
}
