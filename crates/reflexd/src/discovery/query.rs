//! The client side of selection: ask a selector for hosts (used by `mpiexec` and
//! `reflex-select`).
//!
//! One TLS 1.3 connection per request, authenticated both ways exactly as a job's connection
//! (the user's certificate; the selector's host certificate must name the host as addressed).
//! Selectors are tried in the order given until one answers, as REXEC's client walks its
//! `VEXEC_SVRS` list (`seed000a.md` §1.2): a lost replica only costs a timeout.

use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use rustls::ClientConfig;

use crate::config::DEFAULT_SELECTOR_PORT;
use crate::proto::codec::{Msg, SelectedHost};
use crate::tls::TlsLink;

/// How long one selector may take to answer.
pub const TIMEOUT: Duration = Duration::from_secs(5);

/// `host` or `host:port` (default port 7291).
pub fn split_addr(addr: &str) -> Result<(String, u16), String> {
    match addr.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() => port
            .parse::<u16>()
            .ok()
            .filter(|&p| p > 0)
            .map(|p| (host.to_owned(), p))
            .ok_or_else(|| format!("selector {addr:?}: {port:?} is not a port")),
        Some(_) => Err(format!("selector {addr:?}: no host")),
        None if addr.is_empty() => Err("empty selector address".into()),
        None => Ok((addr.to_owned(), DEFAULT_SELECTOR_PORT)),
    }
}

/// Asks the selector at `addr` for `slots` slots by `policy` (empty: its own); `slots` 0
/// lists every live host.
pub fn ask(
    addr: &str,
    slots: u32,
    policy: &str,
    tls: Arc<ClientConfig>,
) -> Result<Vec<SelectedHost>, String> {
    let (host, port) = split_addr(addr)?;
    let deadline = Instant::now() + TIMEOUT;
    let fail = |e: &dyn std::fmt::Display| format!("selector {host}:{port}: {e}");
    let target = (host.as_str(), port)
        .to_socket_addrs()
        .map_err(|e| fail(&e))?
        .next()
        .ok_or_else(|| fail(&"no address"))?;
    let sock = TcpStream::connect_timeout(&target, TIMEOUT).map_err(|e| fail(&e))?;
    sock.set_nonblocking(true).map_err(|e| fail(&e))?;
    let mut link = TlsLink::client(sock, tls, &host).map_err(|e| fail(&e))?;
    link.send(&Msg::Select {
        slots,
        policy: policy.to_owned(),
    })
    .map_err(|e| fail(&e))?;
    while Instant::now() < deadline {
        let mut flags = PollFlags::POLLIN;
        if link.wants_write() {
            flags |= PollFlags::POLLOUT;
        }
        let mut fds = [PollFd::new(link.fd(), flags)];
        let _ = poll(&mut fds, PollTimeout::from(100u16));
        link.flush().map_err(|e| fail(&e))?;
        let got = link.receive().map_err(|e| fail(&e))?;
        match got.msgs.into_iter().next() {
            Some(Msg::Selected { hosts }) => return Ok(hosts),
            Some(Msg::Error(text)) => return Err(fail(&text)),
            Some(other) => {
                let what = crate::proto::daemon::name(&other);
                return Err(fail(&format!("unexpected answer: {what}")));
            }
            None if got.closed => return Err(fail(&"closed without an answer")),
            None => {}
        }
    }
    Err(fail(&"no answer within 5 s"))
}

/// Asks each selector in turn until one answers; the error lists every failure.
pub fn ask_any(
    selectors: &[String],
    slots: u32,
    policy: &str,
    tls: &Arc<ClientConfig>,
) -> Result<Vec<SelectedHost>, String> {
    let mut errors = Vec::new();
    for addr in selectors {
        match ask(addr, slots, policy, tls.clone()) {
            Ok(hosts) => return Ok(hosts),
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        errors.push("no selector configured".into());
    }
    Err(errors.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        assert_eq!(split_addr("n1").unwrap(), ("n1".into(), 7291));
        assert_eq!(split_addr("10.0.0.1:99").unwrap(), ("10.0.0.1".into(), 99));
        for bad in ["", ":7", "n1:0", "n1:x"] {
            assert!(split_addr(bad).is_err(), "{bad}");
        }
    }
}
