//! The selector (REXEC's `vexecd`, `seed000a.md` §1.1): listens to the announcements, keeps
//! the membership, and answers selection requests over TLS.
//!
//! [`Selector`] is the I/O-free core: datagrams and requests in, answers out, time passed in.
//! [`start`] runs it in a thread of `reflexd` with one `poll(2)` loop over the multicast
//! socket, the TLS listener and the open requests. A request is one [`Msg::Select`] on a TLS
//! 1.3 connection with a client certificate from the cluster CA (as for jobs); the answer is
//! [`Msg::Selected`] or [`Msg::Error`], then the connection closes. Requests are bounded (64 at
//! once, 5 s each). Dropped datagrams are logged at most once a second, with the counters.

use std::collections::HashMap;
use std::io;
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::os::fd::AsFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use rustls::ServerConfig;

use super::membership::Membership;
use super::policy::{by_name, Policy};
use crate::proto::codec::{Msg, SelectedHost};
use crate::tls::TlsLink;

/// Most slots one request may ask for (mpiexec's own limit).
pub const MAX_SLOTS: u32 = 4096;
/// Requests served at once.
const MAX_REQUESTS: usize = 64;
/// Time a requester has to complete the handshake and ask.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// The membership and the policies.
pub struct Selector {
    members: Membership,
    default_policy: String,
    policies: HashMap<String, Box<dyn Policy>>,
}

impl std::fmt::Debug for Selector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Selector")
            .field("members", &self.members)
            .field("default_policy", &self.default_policy)
            .finish()
    }
}

impl Selector {
    /// A selector over `members`, using `default_policy` when a request names none.
    pub fn new(members: Membership, default_policy: &str) -> Result<Self, String> {
        by_name(default_policy).ok_or_else(|| format!("unknown policy {default_policy:?}"))?;
        Ok(Self {
            members,
            default_policy: default_policy.to_owned(),
            policies: HashMap::new(),
        })
    }

    /// The membership (to feed datagrams and read counters).
    pub fn members(&mut self) -> &mut Membership {
        &mut self.members
    }

    /// Drops the hosts silent for longer than the expiry at `now`, logging each: every path that
    /// expires hosts goes through here, so that no departure goes unlogged (a query that came
    /// just after a host's expiry used to drop it silently).
    pub fn expire(&mut self, now: Instant) {
        for gone in self.members.expire(now) {
            eprintln!("reflexd: selector: host {gone} is silent, dropped");
        }
    }

    /// The answer to `Select { slots, policy }` at `now`.
    pub fn answer(&mut self, slots: u32, policy: &str, now: Instant) -> Msg {
        self.expire(now);
        let hosts = self.members.hosts();
        if hosts.is_empty() {
            return Msg::Error("no host has announced itself to this selector".into());
        }
        if slots == 0 {
            let hosts = hosts.iter().map(|h| selected(h, h.free_slots())).collect();
            return Msg::Selected { hosts };
        }
        if slots > MAX_SLOTS {
            return Msg::Error(format!("{slots} slots asked for, at most {MAX_SLOTS}"));
        }
        let name = if policy.is_empty() {
            self.default_policy.as_str()
        } else {
            policy
        };
        let Some(fresh) = by_name(name) else {
            return Msg::Error(format!(
                "unknown policy {name:?} (one of {})",
                super::policy::NAMES.join(", ")
            ));
        };
        let chosen = self
            .policies
            .entry(name.to_owned())
            .or_insert(fresh)
            .select(&hosts, slots);
        let mut answer = Vec::with_capacity(chosen.len());
        for (i, n) in chosen {
            self.members.reserve(&hosts[i].name, n);
            answer.push(selected(&hosts[i], n));
        }
        Msg::Selected { hosts: answer }
    }
}

fn selected(h: &super::membership::HostState, slots: u32) -> SelectedHost {
    SelectedHost {
        name: h.name.clone(),
        port: h.port,
        slots,
    }
}

/// Binds the request listener at `listen`.
pub fn bind(listen: &str) -> io::Result<TcpListener> {
    TcpListener::bind(listen)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot listen on {listen}: {e}")))
}

/// Serves datagrams from `udp` and requests from `listener` in a new thread.
pub fn start(
    selector: Selector,
    udp: UdpSocket,
    listener: TcpListener,
    tls: Arc<ServerConfig>,
) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    udp.set_nonblocking(true)?;
    eprintln!("reflexd: selector listening on {}", listener.local_addr()?);
    super::spawn_quiet("selector", move || {
        Server::new(selector, udp, listener, tls).run()
    })
}

struct Request {
    link: TlsLink,
    deadline: Instant,
    answered: bool,
}

struct Server {
    selector: Selector,
    udp: UdpSocket,
    listener: TcpListener,
    tls: Arc<ServerConfig>,
    requests: Vec<Request>,
    last_drop_log: Option<Instant>,
}

impl Server {
    fn new(
        selector: Selector,
        udp: UdpSocket,
        listener: TcpListener,
        tls: Arc<ServerConfig>,
    ) -> Self {
        Self {
            selector,
            udp,
            listener,
            tls,
            requests: Vec::new(),
            last_drop_log: None,
        }
    }

    fn run(mut self) {
        loop {
            let ready = self.wait();
            if ready.first() == Some(&true) {
                self.receive_datagrams();
            }
            if ready.get(1) == Some(&true) {
                self.accept();
            }
            let now = Instant::now();
            for (i, r) in self.requests.iter_mut().enumerate() {
                if ready.get(i + 2) == Some(&true) || now >= r.deadline {
                    serve(&mut self.selector, r, now);
                }
            }
            self.requests.retain(|r| !r.answered && now < r.deadline);
            self.selector.expire(now);
        }
    }

    /// Polls every socket (half a second at most, for expiry); which ones are ready.
    fn wait(&self) -> Vec<bool> {
        let mut fds = vec![
            PollFd::new(self.udp.as_fd(), PollFlags::POLLIN),
            PollFd::new(self.listener.as_fd(), PollFlags::POLLIN),
        ];
        for r in &self.requests {
            let mut flags = PollFlags::POLLIN;
            if r.link.wants_write() {
                flags |= PollFlags::POLLOUT;
            }
            fds.push(PollFd::new(r.link.fd(), flags));
        }
        if poll(&mut fds, PollTimeout::from(500u16)).is_err() {
            return Vec::new();
        }
        fds.iter()
            .map(|f| f.revents().is_some_and(|e| !e.is_empty()))
            .collect()
    }

    fn receive_datagrams(&mut self) {
        let mut buf = [0u8; super::announce::MAX_DATAGRAM + 1];
        while let Ok((n, from)) = self.udp.recv_from(&mut buf) {
            let now = Instant::now();
            match self
                .selector
                .members()
                .receive(&buf[..n], now, super::unix_ms())
            {
                Ok((name, true)) => eprintln!("reflexd: selector: host {name} joined"),
                Ok(_) => {}
                Err(e) => self.log_drop(from, &e.to_string(), now),
            }
        }
    }

    fn log_drop(&mut self, from: SocketAddr, why: &str, now: Instant) {
        if self
            .last_drop_log
            .is_some_and(|t| now.duration_since(t) < Duration::from_secs(1))
        {
            return;
        }
        self.last_drop_log = Some(now);
        let s = self.selector.members().stats();
        eprintln!(
            "reflexd: selector: dropped a datagram from {from}: {why} (so far {} malformed, {} forged, {} replayed)",
            s.malformed, s.forged, s.replayed
        );
    }

    fn accept(&mut self) {
        while let Ok((sock, _)) = self.listener.accept() {
            if self.requests.len() >= MAX_REQUESTS || sock.set_nonblocking(true).is_err() {
                continue; // dropping it closes it
            }
            if let Ok(link) = TlsLink::server(sock, self.tls.clone()) {
                self.requests.push(Request {
                    link,
                    deadline: Instant::now() + REQUEST_TIMEOUT,
                    answered: false,
                });
            }
        }
    }
}

/// Reads a request's messages and answers the first `Select`; anything else ends it.
fn serve(selector: &mut Selector, r: &mut Request, now: Instant) {
    if now >= r.deadline {
        r.answered = true;
        return;
    }
    let got = match r.link.receive() {
        Ok(got) => got,
        Err(_) => {
            r.answered = true; // a refused certificate or garbage: nothing to say
            return;
        }
    };
    let reply = match got.msgs.first() {
        Some(Msg::Select { slots, policy }) => selector.answer(*slots, policy, now),
        Some(other) => Msg::Error(format!(
            "a selector answers only select, not {}",
            crate::proto::daemon::name(other)
        )),
        None if got.closed => {
            r.answered = true;
            return;
        }
        None => return,
    };
    let _ = r.link.send(&reply);
    r.link.close();
    r.answered = true;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster_key::ClusterKey;
    use crate::discovery::announce::{seal, Announcement};

    fn selector(names: &[(&str, u32)]) -> Selector {
        let key = ClusterKey::from_bytes([3; 32]);
        let mut m = Membership::new(key.clone(), Duration::from_secs(3), Duration::from_secs(60));
        for (name, cores) in names {
            let a = Announcement {
                instance: 1,
                seq: 1,
                time_ms: crate::discovery::unix_ms(),
                port: 7290,
                cores: *cores,
                load_milli: 0,
                ranks: 0,
                jobs: 0,
                names: vec![(*name).into()],
            };
            m.receive(
                &seal(&a, &key).unwrap(),
                Instant::now(),
                crate::discovery::unix_ms(),
            )
            .unwrap();
        }
        Selector::new(m, "least-load").unwrap()
    }

    fn hosts(msg: Msg) -> Vec<(String, u32)> {
        match msg {
            Msg::Selected { hosts } => hosts.into_iter().map(|h| (h.name, h.slots)).collect(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn answers_reserve_slots_until_the_next_announcement() {
        let mut s = selector(&[("a", 2), ("b", 2)]);
        let now = Instant::now();
        assert_eq!(
            hosts(s.answer(2, "", now)),
            [("a".into(), 1), ("b".into(), 1)]
        );
        // Those slots now count as busy: the listing shows one free slot per host.
        assert_eq!(
            hosts(s.answer(0, "", now)),
            [("a".into(), 1), ("b".into(), 1)]
        );
        assert_eq!(
            hosts(s.answer(3, "fill", now)),
            [("a".into(), 2), ("b".into(), 1)]
        );
    }

    #[test]
    fn refusals_are_explained() {
        let now = Instant::now();
        let mut empty = selector(&[]);
        assert!(matches!(empty.answer(1, "", now), Msg::Error(e) if e.contains("no host")));
        let mut s = selector(&[("a", 2)]);
        assert!(
            matches!(s.answer(1, "random", now), Msg::Error(e) if e.contains("unknown policy"))
        );
        assert!(matches!(s.answer(MAX_SLOTS + 1, "", now), Msg::Error(e) if e.contains("at most")));
        // Everything expires after 3 s of silence.
        assert!(matches!(
            s.answer(1, "", now + Duration::from_secs(4)),
            Msg::Error(_)
        ));
        assert!(Selector::new(
            Membership::new(
                ClusterKey::from_bytes([0; 32]),
                Duration::ZERO,
                Duration::ZERO
            ),
            "x"
        )
        .is_err());
    }
}
