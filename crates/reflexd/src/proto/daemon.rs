//! The daemon side of one client connection, as an I/O-free state machine (rustls style:
//! messages in, decisions out; the session process does the I/O).
//!
//! Phases: `AwaitHello` → (hello checked against the certificate's user and the local account
//! database) → `AwaitLaunch` → (launch checked) → `Running`. Any message that is not allowed in
//! the current phase is a protocol error: the daemon answers `Error` and ends the connection,
//! which ends the job (all-or-nothing).

use crate::identity::authorize;
use crate::proto::codec::{LaunchSpec, Msg, VERSION};

/// Where the conversation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    AwaitHello,
    AwaitLaunch,
    Running,
}

/// What the session process must do after a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Nothing (a heartbeat).
    Nothing,
    /// The user is authenticated as `uid`: answer `Welcome`.
    Welcome {
        uid: u32,
        user: String,
    },
    /// Start these ranks.
    Launch(LaunchSpec),
    Stdin(Vec<u8>),
    StdinEof,
    Signal(i32),
    PmiReply {
        rank: u32,
        line: Vec<u8>,
    },
    /// End the job.
    Kill,
    /// Stop every rank (SIGSTOP); the client is stopped too, so its silence is expected.
    Stop,
    /// Continue every rank (SIGCONT); the client's heartbeats count again.
    Continue,
}

/// The daemon's view of one connection.
#[derive(Debug)]
pub struct DaemonProtocol {
    phase: Phase,
    cert_user: String,
    ranks: Vec<u32>,
}

impl DaemonProtocol {
    /// A connection whose client certificate names `cert_user`.
    pub fn new(cert_user: &str) -> Self {
        Self {
            phase: Phase::AwaitHello,
            cert_user: cert_user.to_owned(),
            ranks: Vec::new(),
        }
    }

    /// The current phase.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// Handles one message; `lookup` gives the local uid of a user name. An error is fatal.
    pub fn on_message(
        &mut self,
        msg: Msg,
        lookup: impl Fn(&str) -> Option<u32>,
    ) -> Result<Step, String> {
        match (self.phase, msg) {
            (_, Msg::Heartbeat) => Ok(Step::Nothing),
            (Phase::AwaitHello, Msg::Hello { version, uid, user }) => {
                if version != VERSION {
                    return Err(format!("protocol version {version} is not supported (this daemon speaks {VERSION})"));
                }
                let uid =
                    authorize(&self.cert_user, &user, uid, lookup).map_err(|e| e.to_string())?;
                self.phase = Phase::AwaitLaunch;
                Ok(Step::Welcome { uid, user })
            }
            (Phase::AwaitLaunch, Msg::Launch(spec)) => {
                check_launch(&spec)?;
                self.ranks = spec.ranks.clone();
                self.phase = Phase::Running;
                Ok(Step::Launch(spec))
            }
            (Phase::Running, Msg::Stdin(bytes)) => Ok(Step::Stdin(bytes)),
            (Phase::Running, Msg::StdinEof) => Ok(Step::StdinEof),
            (Phase::Running, Msg::Signal(s)) if (1..65).contains(&s) => Ok(Step::Signal(s)),
            (Phase::Running, Msg::PmiReply { rank, line }) if self.ranks.contains(&rank) => {
                Ok(Step::PmiReply { rank, line })
            }
            (Phase::AwaitLaunch | Phase::Running, Msg::Kill) => Ok(Step::Kill),
            // Before the launch there is nothing to stop, but the client's silence is expected.
            (Phase::AwaitLaunch | Phase::Running, Msg::Stop) => Ok(Step::Stop),
            (Phase::AwaitLaunch | Phase::Running, Msg::Continue) => Ok(Step::Continue),
            (Phase::AwaitLaunch | Phase::Running, Msg::Error(text)) => {
                Err(format!("the client gave up: {text}"))
            }
            (phase, msg) => Err(format!("unexpected {} while {phase:?}", name(&msg))),
        }
    }
}

/// A short name of a message for error texts (never its contents).
pub fn name(msg: &Msg) -> &'static str {
    match msg {
        Msg::Hello { .. } => "hello",
        Msg::Welcome { .. } => "welcome",
        Msg::Launch(_) => "launch",
        Msg::Started { .. } => "started",
        Msg::Stdin(_) => "stdin",
        Msg::StdinEof => "stdin eof",
        Msg::Signal(_) => "signal",
        Msg::Kill => "kill",
        Msg::Output { .. } => "output",
        Msg::PmiRequest { .. } => "pmi request",
        Msg::PmiReply { .. } => "pmi reply (for a rank not on this host?)",
        Msg::Exit { .. } => "exit",
        Msg::Done => "done",
        Msg::Heartbeat => "heartbeat",
        Msg::Error(_) => "error",
        Msg::Stop => "stop",
        Msg::Continue => "continue",
        Msg::Select { .. } => "select (this is a job daemon, not a selector)",
        Msg::Selected { .. } => "selected",
    }
}

/// A launch must name a program and at least one rank, ascending, below the job size.
fn check_launch(spec: &LaunchSpec) -> Result<(), String> {
    if spec.argv.first().is_none_or(|p| p.is_empty()) {
        return Err("launch without a program".into());
    }
    if spec.ranks.is_empty() {
        return Err("launch without ranks".into());
    }
    if !spec.ranks.windows(2).all(|w| w[0] < w[1]) || spec.ranks.iter().any(|&r| r >= spec.size) {
        return Err(format!(
            "launch ranks {:?} are not ascending ranks below {}",
            spec.ranks, spec.size
        ));
    }
    if spec.kvsname.is_empty() || spec.kvsname.len() > 200 {
        return Err("launch with a bad job name".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db(name: &str) -> Option<u32> {
        (name == "alice").then_some(1000)
    }

    fn launch(ranks: Vec<u32>) -> Msg {
        Msg::Launch(LaunchSpec {
            kvsname: "job".into(),
            size: 4,
            ranks,
            argv: vec![b"a.out".to_vec()],
            ..Default::default()
        })
    }

    #[test]
    fn a_normal_conversation() {
        let mut p = DaemonProtocol::new("alice");
        let hello = Msg::Hello {
            version: VERSION,
            uid: 1000,
            user: "alice".into(),
        };
        assert_eq!(
            p.on_message(hello, db),
            Ok(Step::Welcome {
                uid: 1000,
                user: "alice".into()
            })
        );
        assert!(matches!(
            p.on_message(launch(vec![2, 3]), db),
            Ok(Step::Launch(_))
        ));
        assert_eq!(p.phase(), Phase::Running);
        assert_eq!(p.on_message(Msg::Signal(2), db), Ok(Step::Signal(2)));
        let reply = Msg::PmiReply {
            rank: 3,
            line: b"x\n".to_vec(),
        };
        assert!(matches!(
            p.on_message(reply, db),
            Ok(Step::PmiReply { rank: 3, .. })
        ));
        assert_eq!(p.on_message(Msg::Heartbeat, db), Ok(Step::Nothing));
        assert_eq!(p.on_message(Msg::Stop, db), Ok(Step::Stop));
        assert_eq!(p.on_message(Msg::Continue, db), Ok(Step::Continue));
        assert_eq!(p.on_message(Msg::Kill, db), Ok(Step::Kill));
    }

    #[test]
    fn refuses_out_of_order_and_bad_messages() {
        let hello = |user: &str, uid| Msg::Hello {
            version: VERSION,
            uid,
            user: user.into(),
        };
        let cases: Vec<(Vec<Msg>, &str)> = vec![
            (vec![launch(vec![0])], "unexpected launch while AwaitHello"),
            (vec![Msg::Stop], "unexpected stop while AwaitHello"),
            (vec![hello("bob", 1000)], "client says"),
            (vec![hello("alice", 0)], "uid 1000 here"),
            (
                vec![Msg::Hello {
                    version: 9,
                    uid: 1000,
                    user: "alice".into(),
                }],
                "version 9",
            ),
            (
                vec![hello("alice", 1000), Msg::Stdin(vec![])],
                "unexpected stdin while AwaitLaunch",
            ),
            (vec![hello("alice", 1000), launch(vec![])], "without ranks"),
            (
                vec![hello("alice", 1000), launch(vec![3, 2])],
                "not ascending",
            ),
            (vec![hello("alice", 1000), launch(vec![4])], "below 4"),
            (
                vec![
                    hello("alice", 1000),
                    launch(vec![1]),
                    Msg::PmiReply {
                        rank: 0,
                        line: vec![],
                    },
                ],
                "pmi reply",
            ),
            (
                vec![hello("alice", 1000), launch(vec![1]), Msg::Signal(0)],
                "unexpected signal",
            ),
            (
                vec![
                    hello("alice", 1000),
                    launch(vec![1]),
                    Msg::Hello {
                        version: 1,
                        uid: 1,
                        user: "x".into(),
                    },
                ],
                "unexpected hello",
            ),
        ];
        for (msgs, want) in cases {
            let mut p = DaemonProtocol::new("alice");
            let mut last = Ok(Step::Nothing);
            for m in msgs {
                last = p.on_message(m, db);
                if last.is_err() {
                    break;
                }
            }
            let err = last.unwrap_err();
            assert!(err.contains(want), "{err} does not say {want}");
        }
    }
}
