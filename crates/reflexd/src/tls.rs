//! TLS 1.3 with mutual certificate authentication (rustls, ring provider), and [`TlsLink`]: a
//! non-blocking TLS connection carrying launcher protocol messages, for `poll(2)` loops.
//!
//! Both sides trust only the cluster CA: the daemon requires a client certificate signed by it
//! (the user's identity), the client checks the daemon's host certificate against the name it
//! connected to. rustls does the handshake and record layer without I/O of its own; the link
//! moves bytes between it and a non-blocking socket when poll says so.

use std::io::{self, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::danger::ClientCertVerifier;
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConnection, Connection, RootCertStore, ServerConfig, ServerConnection};

use crate::proto::codec::{encode, FrameBuffer, Msg};

/// The client side's TLS configuration ([`Credentials::client_config`]), for crates that hold one.
pub use rustls::ClientConfig;

fn tls_error(e: impl std::fmt::Display) -> io::Error {
    io::Error::new(ErrorKind::InvalidData, format!("tls: {e}"))
}

/// The certificates in a PEM text.
pub fn certs_from_pem(pem: &[u8]) -> io::Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(tls_error)?;
    if certs.is_empty() {
        return Err(tls_error("no certificate in the pem text"));
    }
    Ok(certs)
}

/// A trust store holding the certificates of a PEM text.
pub fn roots_from_pem(pem: &[u8]) -> io::Result<RootCertStore> {
    let mut roots = RootCertStore::empty();
    for cert in certs_from_pem(pem)? {
        roots.add(cert).map_err(tls_error)?;
    }
    Ok(roots)
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn client_verifier(roots: RootCertStore) -> io::Result<Arc<dyn ClientCertVerifier>> {
    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
        .build()
        .map_err(tls_error)
}

/// Checks a client certificate against the CA as the daemon does (for tests and tools).
pub fn verify_client_cert(roots: &RootCertStore, cert: &CertificateDer<'_>) -> io::Result<()> {
    client_verifier(roots.clone())?
        .verify_client_cert(cert, &[], UnixTime::now())
        .map(|_| ())
        .map_err(|e| tls_error(crate::ca::explain_tls_failure(&e)))
}

/// PEM files of one party: the CA certificate, its own certificate and key.
#[derive(Debug, Clone)]
pub struct Credentials {
    pub ca_pem: Vec<u8>,
    pub cert_pem: Vec<u8>,
    pub key_pem: Vec<u8>,
}

impl Credentials {
    /// Reads `ca.pem`, `<stem>.pem` and `<stem>.key` from `dir`.
    pub fn load(dir: &Path, stem: &str) -> io::Result<Credentials> {
        let read = |name: String| {
            let path = dir.join(&name);
            std::fs::read(&path).map_err(|e| {
                io::Error::new(e.kind(), format!("cannot read {}: {e}", path.display()))
            })
        };
        Ok(Credentials {
            ca_pem: read("ca.pem".into())?,
            cert_pem: read(format!("{stem}.pem"))?,
            key_pem: read(format!("{stem}.key"))?,
        })
    }

    fn key(&self) -> io::Result<PrivateKeyDer<'static>> {
        PrivateKeyDer::from_pem_slice(&self.key_pem).map_err(tls_error)
    }

    /// The daemon's configuration: TLS 1.3, client certificates from the CA required.
    pub fn server_config(&self) -> io::Result<Arc<ServerConfig>> {
        let verifier = client_verifier(roots_from_pem(&self.ca_pem)?)?;
        let config = ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(tls_error)?
            .with_client_cert_verifier(verifier)
            .with_single_cert(certs_from_pem(&self.cert_pem)?, self.key()?)
            .map_err(tls_error)?;
        Ok(Arc::new(config))
    }

    /// The client's configuration: TLS 1.3, the daemon's certificate from the CA, our own sent.
    pub fn client_config(&self) -> io::Result<Arc<ClientConfig>> {
        let config = ClientConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(tls_error)?
            .with_root_certificates(roots_from_pem(&self.ca_pem)?)
            .with_client_auth_cert(certs_from_pem(&self.cert_pem)?, self.key()?)
            .map_err(tls_error)?;
        Ok(Arc::new(config))
    }
}

/// What one read from a [`TlsLink`] produced.
#[derive(Debug, Default)]
pub struct Received {
    pub msgs: Vec<Msg>,
    /// The peer closed the connection.
    pub closed: bool,
}

/// Bytes read from the socket per call at most, so one peer cannot starve a poll loop.
const READ_BUDGET: usize = 1 << 20;

/// A non-blocking TLS connection carrying protocol messages.
#[derive(Debug)]
pub struct TlsLink {
    sock: TcpStream,
    conn: Connection,
    frames: FrameBuffer,
}

impl TlsLink {
    /// The client end, over a connected (or connecting) non-blocking socket to `server`.
    pub fn client(sock: TcpStream, config: Arc<ClientConfig>, server: &str) -> io::Result<Self> {
        let name = ServerName::try_from(server.to_owned()).map_err(tls_error)?;
        let conn = ClientConnection::new(config, name).map_err(tls_error)?;
        Ok(Self::wrap(sock, Connection::Client(conn)))
    }

    /// The server end, over an accepted non-blocking socket.
    pub fn server(sock: TcpStream, config: Arc<ServerConfig>) -> io::Result<Self> {
        let conn = ServerConnection::new(config).map_err(tls_error)?;
        Ok(Self::wrap(sock, Connection::Server(conn)))
    }

    fn wrap(sock: TcpStream, mut conn: Connection) -> Self {
        // Output is bounded by the protocol (stdio chunks, PMI lines): never refuse a write.
        conn.set_buffer_limit(None);
        Self {
            sock,
            conn,
            frames: FrameBuffer::default(),
        }
    }

    /// The socket, for poll.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.sock.as_fd()
    }

    /// Whether TLS has bytes to send (poll for writability).
    pub fn wants_write(&self) -> bool {
        self.conn.wants_write()
    }

    /// Whether the handshake is still going on.
    pub fn is_handshaking(&self) -> bool {
        self.conn.is_handshaking()
    }

    /// The peer's certificate chain, once the handshake is done.
    pub fn peer_certificates(&self) -> Option<&[CertificateDer<'static>]> {
        self.conn.peer_certificates()
    }

    /// Queues a message (sent after the handshake) and writes what the socket takes.
    pub fn send(&mut self, msg: &Msg) -> io::Result<()> {
        self.conn.writer().write_all(&encode(msg))?;
        self.flush()
    }

    /// Writes pending TLS records until the socket would block.
    pub fn flush(&mut self) -> io::Result<()> {
        while self.conn.wants_write() {
            match self.conn.write_tls(&mut self.sock) {
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Reads what the socket has, runs TLS on it and returns the complete messages.
    /// A TLS failure (e.g. a refused certificate) or a malformed message is an error.
    pub fn receive(&mut self) -> io::Result<Received> {
        let mut received = Received::default();
        let mut budget = READ_BUDGET;
        while budget > 0 {
            match self.conn.read_tls(&mut self.sock) {
                Ok(0) => {
                    received.closed = true;
                    break;
                }
                Ok(n) => budget = budget.saturating_sub(n),
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
            if let Err(e) = self.conn.process_new_packets() {
                let _ = self.flush(); // deliver the alert that tells the peer why
                return Err(tls_error(crate::ca::explain_tls_failure(&e)));
            }
        }
        self.flush()?;
        let mut plain = [0u8; 16 * 1024];
        loop {
            match self.conn.reader().read(&mut plain) {
                Ok(0) => {
                    received.closed = true;
                    break;
                }
                Ok(n) => self.frames.extend(&plain[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::UnexpectedEof => {
                    received.closed = true;
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        while let Some(msg) = self
            .frames
            .next_msg()
            .map_err(|e| io::Error::new(ErrorKind::InvalidData, e))?
        {
            received.msgs.push(msg);
        }
        Ok(received)
    }

    /// Sends a TLS close_notify (best effort).
    pub fn close(&mut self) {
        self.conn.send_close_notify();
        let _ = self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ca::Authority;
    use std::net::TcpListener;

    fn creds(ca: &Authority, issued: &crate::ca::Issued) -> Credentials {
        Credentials {
            ca_pem: ca.cert_pem().into_bytes(),
            cert_pem: issued.cert_pem.clone().into_bytes(),
            key_pem: issued.key_pem.clone().into_bytes(),
        }
    }

    /// Connects a client with `user` credentials to a server with `host` credentials and
    /// drives both until the client's hello arrives or either side fails.
    fn handshake(server: &Credentials, client: &Credentials) -> Result<Msg, String> {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let c = TcpStream::connect(addr).unwrap();
        let (s, _) = listener.accept().unwrap();
        c.set_nonblocking(true).unwrap();
        s.set_nonblocking(true).unwrap();
        let mut cl = TlsLink::client(c, client.client_config().unwrap(), "127.0.0.1").unwrap();
        let mut sv = TlsLink::server(s, server.server_config().unwrap()).unwrap();
        let hello = Msg::Hello {
            version: 1,
            uid: 0,
            user: "root".into(),
        };
        cl.send(&hello).map_err(|e| e.to_string())?;
        for _ in 0..100_000 {
            let got = sv.receive().map_err(|e| format!("server: {e}"))?;
            if let Some(m) = got.msgs.into_iter().next() {
                return Ok(m);
            }
            cl.receive().map_err(|e| format!("client: {e}"))?;
            cl.flush().map_err(|e| format!("client: {e}"))?;
        }
        Err("no progress".into())
    }

    #[test]
    fn mutual_authentication() {
        let ca = Authority::create("Reflex CA tls").unwrap();
        let host = creds(&ca, &ca.issue_host(&["127.0.0.1".into()]).unwrap());
        let user = creds(&ca, &ca.issue_user("root").unwrap());
        let got = handshake(&host, &user).unwrap();
        assert_eq!(
            got,
            Msg::Hello {
                version: 1,
                uid: 0,
                user: "root".into()
            }
        );

        // A user certificate from another CA is refused by the daemon.
        let rogue = Authority::create("Rogue CA").unwrap();
        let mut stranger = creds(&rogue, &rogue.issue_user("root").unwrap());
        stranger.ca_pem = ca.cert_pem().into_bytes(); // it even trusts the real daemon
        let err = handshake(&host, &stranger).unwrap_err();
        assert!(
            err.contains("server") && err.to_lowercase().contains("cert"),
            "{err}"
        );

        // A daemon with a certificate from another CA is refused by the client.
        let fake_host = creds(&rogue, &rogue.issue_host(&["127.0.0.1".into()]).unwrap());
        let err = handshake(
            &Credentials {
                ca_pem: ca.cert_pem().into_bytes(),
                ..fake_host
            },
            &user,
        )
        .unwrap_err();
        assert!(err.contains("client"), "{err}");

        // A host certificate for another name is refused too.
        let other = creds(&ca, &ca.issue_host(&["10.9.9.9".into()]).unwrap());
        assert!(handshake(&other, &user).unwrap_err().contains("client"));
    }
}
