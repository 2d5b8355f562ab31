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
