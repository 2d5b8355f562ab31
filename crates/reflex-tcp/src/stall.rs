//! Connections whose peer stopped acknowledging what was sent to it.
//!
//! Keepalive ([`crate::Keepalive`]) notices a silent peer only while nothing is in flight: with
//! data unacknowledged the kernel retransmits instead, for about 15 minutes (`tcp_retries2`)
//! before it gives up. `TCP_USER_TIMEOUT` would bound that, but it also fails a healthy
//! connection to a peer that merely stops reading (checked on Linux 6.18: with a full receive
//! window the connection was aborted after the timeout although every window probe was
//! answered). So the transport looks itself, at most once a second while a wait is about to
//! yield or sleep ([`crate::TcpTransport`]'s `failed_link`): the kernel's `TCP_INFO` tells
//! whether a connection has retransmissions or window probes outstanding *unanswered*
//! (`tcpi_retransmits`, `tcpi_probes`) and how long ago the last acknowledgement came
//! (`tcpi_last_ack_recv`). A connection with unanswered ones and no acknowledgement for the
//! keepalive budget (the time keepalive takes to declare a silent peer dead) has a dead peer or
//! a dead path; a peer that does not read keeps answering probes from its kernel and never
//! qualifies.

use std::cell::{Cell, RefCell};
use std::io;
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// Pause between two looks at the connections.
const LOOK_EVERY: Duration = Duration::from_secs(1);

/// What the kernel says about a connection's acknowledgements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Acks {
    /// Retransmissions or window probes sent and not answered yet.
    pub unanswered: u32,
    /// Time since the last acknowledgement arrived.
    pub since_last: Duration,
}

/// Reads `stream`'s acknowledgement state from `TCP_INFO`.
pub(crate) fn acks(stream: &TcpStream) -> io::Result<Acks> {
    use nix::libc;
    // SAFETY: `tcp_info` is plain old data (integers only), for which all-zero bytes are valid.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: the descriptor is open (borrowed from `stream`); `info` is writable for `len` bytes
    // and the kernel writes at most `len` of them (fewer on older kernels: the rest stay 0).
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(Acks {
        unanswered: u32::from(info.tcpi_retransmits) + u32::from(info.tcpi_probes),
        since_last: Duration::from_millis(u64::from(info.tcpi_last_ack_recv)),
    })
}

/// When the connections were last looked at, and the first stalled one found.
#[derive(Debug, Default)]
pub(crate) struct StallWatch {
    looked: Cell<Option<Instant>>,
    found: RefCell<Option<(usize, String)>>,
}

impl StallWatch {
    /// The first of `conns` (peer, socket) with unanswered retransmissions or probes and no
    /// acknowledgement for `limit`; looks at most once a second, and keeps what it found.
    pub(crate) fn look<'a>(
        &self,
        limit: Duration,
        conns: impl Iterator<Item = (usize, &'a TcpStream)>,
    ) -> Option<(usize, String)> {
        if let Some(found) = self.found.borrow().as_ref() {
            return Some(found.clone());
        }
        let now = Instant::now();
        if self.looked.get().is_some_and(|t| now < t + LOOK_EVERY) {
            return None;
        }
        self.looked.set(Some(now));
        let stalled = conns.into_iter().find_map(|(peer, stream)| {
            let a = acks(stream).ok()?;
            (a.unanswered > 0 && a.since_last >= limit).then(|| {
                let why = format!(
                    "nothing sent to it was acknowledged for {} s ({} retransmissions or \
                     probes unanswered): its host or the network is down",
                    a.since_last.as_secs(),
                    a.unanswered
                );
                (peer, why)
            })
        });
        self.found.replace(stalled.clone());
        stalled
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::TcpListener;

    #[test]
    fn a_peer_that_does_not_read_still_acknowledges() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut sender = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (_receiver, _) = listener.accept().unwrap();
        sender.set_nonblocking(true).unwrap();
        let chunk = vec![7u8; 1 << 16];
        // Fill the receiver's window and the sender's buffer: the receiver never reads.
        while sender.write(&chunk).is_ok() {}
        let a = acks(&sender).unwrap();
        assert_eq!(a.unanswered, 0, "{a:?}");
        let watch = StallWatch::default();
        let conns = [(3, &sender)];
        assert_eq!(watch.look(Duration::ZERO, conns.into_iter()), None);
    }

    #[test]
    fn looks_at_most_once_a_second_and_keeps_a_finding() {
        let watch = StallWatch::default();
        assert_eq!(watch.look(Duration::ZERO, std::iter::empty()), None);
        watch.found.replace(Some((1, "gone".into())));
        assert_eq!(
            watch.look(Duration::ZERO, std::iter::empty()),
            Some((1, "gone".into()))
        );
    }
}
