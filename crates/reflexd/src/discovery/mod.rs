//! Node discovery and selection, after REXEC's announcements and `vexecd`
//! (`shared/reference/seed000a.md` §1.1-1.2).
//!
//! Every `reflexd` multicasts its host's state ([`announce`]: names, port, slots, load, jobs),
//! sealed with the cluster key, every interval and whenever a job starts or ends
//! ([`announcer`]). Any daemon may also be a selector ([`selector`]): it listens to the
//! announcements, keeps the membership with expiry ([`membership`]) and answers "N slots by
//! policy P" over TLS with the host list ([`policy`]); `mpiexec` asks one ([`query`]) when it
//! was given no hosts, then talks to the chosen daemons directly, as with `-hosts`.

pub mod announce;
pub mod announcer;
pub mod membership;
pub mod policy;
pub mod query;
pub mod selector;
pub mod service;

use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::config::DiscoverySection;

/// Starts a helper thread of the daemon with every signal blocked (the mask is inherited at
/// creation), so that the process's signals stay pending for the main thread's signalfd.
/// Without it a `SIGCHLD` could be delivered to (and dropped by) this thread, and an ended
/// session would be neither reaped nor cleaned up until the next connection woke the daemon.
pub fn spawn_quiet(name: &str, f: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
    use nix::sys::signal::{SigSet, SigmaskHow};
    let mut old = SigSet::empty();
    nix::sys::signal::pthread_sigmask(
        SigmaskHow::SIG_SETMASK,
        Some(&SigSet::all()),
        Some(&mut old),
    )?;
    let spawned = std::thread::Builder::new().name(name.into()).spawn(f);
    nix::sys::signal::pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&old), None)?;
    spawned.map(drop)
}

/// Unix time in milliseconds.
pub fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The multicast group and port of `d`.
pub fn group_addr(d: &DiscoverySection) -> SocketAddrV4 {
    SocketAddrV4::new(d.group, d.port)
}

/// A socket that receives the group's datagrams (bound to the group address, so that other
/// traffic to the port is not delivered), non-blocking.
pub fn listen_socket(d: &DiscoverySection) -> std::io::Result<UdpSocket> {
    let sock = UdpSocket::bind(group_addr(d)).map_err(|e| {
        std::io::Error::new(e.kind(), format!("cannot bind udp {}: {e}", group_addr(d)))
    })?;
    let iface = d.interface.unwrap_or(Ipv4Addr::UNSPECIFIED);
    sock.join_multicast_v4(&d.group, &iface).map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!(
                "cannot join {} on {iface}: {e} (is there a multicast route?)",
                d.group
            ),
        )
    })?;
    sock.set_nonblocking(true)?;
    Ok(sock)
}

#[cfg(test)]
mod quiet_tests {
    use nix::sys::signal::{SigSet, Signal};

    #[test]
    fn a_quiet_thread_blocks_every_signal_and_the_caller_keeps_its_mask() {
        let before = SigSet::thread_get_mask().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        super::spawn_quiet("quiet-test", move || {
            let mask = SigSet::thread_get_mask().unwrap();
            tx.send([Signal::SIGCHLD, Signal::SIGTERM].map(|s| mask.contains(s)))
                .unwrap();
        })
        .unwrap();
        assert_eq!(rx.recv().unwrap(), [true, true]);
        let after = SigSet::thread_get_mask().unwrap();
        assert_eq!(
            after.contains(Signal::SIGCHLD),
            before.contains(Signal::SIGCHLD)
        );
    }
}
