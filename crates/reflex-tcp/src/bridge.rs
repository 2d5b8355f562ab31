//! Who may connect to a bridge: a [`TcpTransport`](crate::TcpTransport) between the processes of
//! different MPI jobs (dynamic process management, `docs/dynamic-processes.md`).
//!
//! Within a job a peer is its rank, and any rank that shows this rank's cookie is welcome. On a
//! bridge the peers are processes of other jobs, known by their global identity (job id, rank in
//! that job) and given a local peer index by the engine when it is told about them (by an
//! accept/connect or join exchange). The hello then carries the initiator's job and its rank in
//! its own job; the acceptor takes it only when it carries the acceptor's cookie, names the
//! acceptor's own rank, and comes from a process the acceptor was told about. Everything else is
//! refused as a stranger. When both ends connect at once, the lower (job, rank)'s connection wins
//! (the rule of `crate::link`, with identities for ranks).

use std::collections::HashMap;

use crate::frame::Hello;
use crate::link::Sender;

/// A process of any job: its job id and its rank in that job.
pub type GlobalId = (u64, u32);

/// The identities of a bridge: its own, and those of the peers it was told about.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BridgeIds {
    /// This process.
    pub me: GlobalId,
    /// Peer index of each known process.
    by_id: HashMap<GlobalId, usize>,
    /// Identity of each peer index (`None`: not a peer of this bridge).
    ids: Vec<Option<GlobalId>>,
}

impl BridgeIds {
    /// The identities of a bridge of process `me`, with no peers yet.
    pub fn new(me: GlobalId) -> Self {
        Self {
            me,
            ..Self::default()
        }
    }

    /// Records `id` as peer `index`; an index or identity already taken by another is an error.
    pub fn add(&mut self, index: usize, id: GlobalId) -> Result<(), String> {
        if id == self.me {
            return Err(format!(
                "process {} of job {:016x} is this process",
                id.1, id.0
            ));
        }
        match (self.by_id.get(&id), self.ids.get(index).copied().flatten()) {
            (Some(&known), _) if known == index => return Ok(()),
            (Some(&known), _) => {
                return Err(format!(
                    "process {} of job {:016x} is already peer {known}",
                    id.1, id.0
                ))
            }
            (None, Some(other)) => {
                return Err(format!(
                    "peer {index} is already process {} of job {:016x}",
                    other.1, other.0
                ))
            }
            (None, None) => {}
        }
        if self.ids.len() <= index {
            self.ids.resize(index + 1, None);
        }
        self.ids[index] = Some(id);
        self.by_id.insert(id, index);
        Ok(())
    }

    /// The identity of peer `index`.
    pub fn id_of(&self, index: usize) -> Option<GlobalId> {
        self.ids.get(index).copied().flatten()
    }

    /// Whether `hello` is proper (this bridge's cookie, this process's rank) but from a process
    /// this bridge was not told about yet: the transport keeps such a connection waiting (its
    /// job may have heard of this process first) instead of refusing it.
    pub fn awaits(&self, cookie: u64, hello: &Hello) -> bool {
        hello.cookie == cookie
            && hello.to == self.me.1
            && (hello.job, hello.from) != self.me
            && !self.by_id.contains_key(&(hello.job, hello.from))
    }

    /// The sender of `hello`, received by this bridge whose cookie is `cookie`, or why it is
    /// refused.
    pub fn sender(&self, cookie: u64, hello: &Hello) -> Result<Sender, String> {
        if hello.cookie != cookie {
            return Err("wrong cookie".into());
        }
        if hello.to != self.me.1 {
            return Err(format!(
                "hello for rank {} reached rank {}",
                hello.to, self.me.1
            ));
        }
        let id = (hello.job, hello.from);
        match self.by_id.get(&id) {
            Some(&peer) => Ok(Sender {
                peer,
                wins: id < self.me,
            }),
            None => Err(format!(
                "hello from process {} of job {:016x}, which no accept, connect or join named",
                id.1, id.0
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello(job: u64, from: u32, to: u32, cookie: u64) -> Hello {
        Hello {
            from,
            to,
            cookie,
            stream: 0,
            streams: 1,
            job,
        }
    }

    #[test]
    fn only_processes_it_was_told_about_get_in() {
        let mut ids = BridgeIds::new((7, 1));
        ids.add(4, (9, 0)).unwrap();
        ids.add(5, (3, 2)).unwrap();
        assert_eq!(
            ids.sender(11, &hello(9, 0, 1, 11)),
            Ok(Sender {
                peer: 4,
                wins: false
            })
        );
        assert_eq!(
            ids.sender(11, &hello(3, 2, 1, 11)),
            Ok(Sender {
                peer: 5,
                wins: true
            })
        );
        let refused = [
            (hello(9, 0, 1, 12), "cookie"),
            (hello(9, 0, 2, 11), "reached rank 1"),
            (hello(9, 1, 1, 11), "no accept"),
            (hello(7, 0, 1, 11), "no accept"),
        ];
        for (h, why) in refused {
            let e = ids.sender(11, &h).unwrap_err();
            assert!(e.contains(why), "{h:?}: {e}");
        }
        // Only a proper hello from an unknown process waits to be told about.
        assert!(ids.awaits(11, &hello(9, 1, 1, 11)));
        assert!(!ids.awaits(11, &hello(9, 0, 1, 11)), "known already");
        assert!(!ids.awaits(12, &hello(9, 1, 1, 11)), "wrong cookie");
        assert!(!ids.awaits(11, &hello(9, 1, 2, 11)), "not for this rank");
        assert!(!ids.awaits(11, &hello(7, 1, 1, 11)), "this process itself");
    }

    #[test]
    fn indices_and_identities_stay_paired() {
        let mut ids = BridgeIds::new((7, 1));
        ids.add(4, (9, 0)).unwrap();
        assert_eq!(ids.add(4, (9, 0)), Ok(()));
        assert!(ids.add(5, (9, 0)).unwrap_err().contains("already peer 4"));
        assert!(ids
            .add(4, (9, 1))
            .unwrap_err()
            .contains("already process 0"));
        assert!(ids.add(6, (7, 1)).unwrap_err().contains("this process"));
        assert_eq!(ids.id_of(4), Some((9, 0)));
        assert_eq!(ids.id_of(3), None);
        assert_eq!(ids.id_of(99), None);
    }
}
