//! Ports (`MPI_Open_port`, `MPI_Close_port`): a listening TCP socket of the opening process and
//! its name, `reflex-port:tcp://ADDRESS:PORT:NONCE` (NONCE: 16 hex digits, random). A connector
//! must show the nonce before the acceptor answers, so that a stale name (of a closed port whose
//! number the kernel gave to another port since) is refused rather than connected to the wrong
//! place. The address is this host's first non-loopback IPv4 address (loopback when it has none).

use crate::error::{ErrorClass, MpiError, Result};
use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener};

/// `MPI_MAX_PORT_NAME` of MPICH's ABI (the name and its terminating NUL must fit).
pub const MAX_PORT_NAME: usize = 256;
const PREFIX: &str = "reflex-port:tcp://";

/// A parsed port name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortName {
    /// Where the port listens.
    pub addr: SocketAddrV4,
    /// The secret a connector shows.
    pub nonce: u64,
}

impl std::fmt::Display for PortName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{PREFIX}{}:{:016x}", self.addr, self.nonce)
    }
}

impl PortName {
    /// Parses a port name (`MPI_ERR_PORT` with the reason when it is not one of Reflex's).
    pub fn parse(name: &str) -> Result<PortName> {
        let bad = |why: &str| {
            MpiError::new(
                ErrorClass::Port,
                format!("{name:?} is not a port name of MPI_Open_port ({why})"),
            )
        };
        let rest = name
            .strip_prefix(PREFIX)
            .ok_or_else(|| bad(&format!("it does not start with {PREFIX}")))?;
        let (addr, nonce) = rest
            .rsplit_once(':')
            .ok_or_else(|| bad("no nonce after the address"))?;
        let addr: SocketAddrV4 = addr
            .parse()
            .map_err(|_| bad("the address is not IPv4-address:port"))?;
        if nonce.len() != 16 {
            return Err(bad("the nonce is not 16 hex digits"));
        }
        let nonce =
            u64::from_str_radix(nonce, 16).map_err(|_| bad("the nonce is not 16 hex digits"))?;
        Ok(PortName { addr, nonce })
    }
}

/// 64 random bits from the kernel.
pub(crate) fn random_u64() -> Result<u64> {
    use std::io::Read;
    let mut bytes = [0u8; 8];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| MpiError::new(ErrorClass::Other, format!("cannot read /dev/urandom: {e}")))?;
    Ok(u64::from_le_bytes(bytes))
}

/// This host's address in port names.
fn host_addr() -> Ipv4Addr {
    reflex_tcp::card::local_addrs()
        .ok()
        .and_then(|addrs| addrs.into_iter().map(|a| a.ip).find(|ip| !ip.is_loopback()))
        .unwrap_or(Ipv4Addr::LOCALHOST)
}

/// The ports this process opened, by name.
#[derive(Debug, Default)]
pub struct Ports {
    open: HashMap<String, (PortName, TcpListener)>,
}

impl Ports {
    /// Opens a port; returns its name.
    pub fn open(&mut self) -> Result<String> {
        let listener = TcpListener::bind(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0))
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .map_err(|e| MpiError::new(ErrorClass::Other, format!("cannot open a port: {e}")))?;
        let port = listener
            .local_addr()
            .map_err(|e| MpiError::new(ErrorClass::Other, format!("cannot open a port: {e}")))?
            .port();
        let name = PortName {
            addr: SocketAddrV4::new(host_addr(), port),
            nonce: random_u64()?,
        };
        let text = name.to_string();
        self.open.insert(text.clone(), (name, listener));
        Ok(text)
    }

    /// Closes the port `name` (`MPI_ERR_PORT` when this process has no such port open).
    pub fn close(&mut self, name: &str) -> Result<()> {
        self.open
            .remove(name)
            .map(drop)
            .ok_or_else(|| not_open(name))
    }

    /// The listener and nonce of the open port `name`.
    pub(crate) fn get(&self, name: &str) -> Result<(&TcpListener, u64)> {
        self.open
            .get(name)
            .map(|(n, l)| (l, n.nonce))
            .ok_or_else(|| not_open(name))
    }
}

fn not_open(name: &str) -> MpiError {
    MpiError::new(
        ErrorClass::Port,
        format!("{name:?} is not a port this process opened (or it was closed)"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        let n = PortName {
            addr: "10.0.0.1:41234".parse().unwrap(),
            nonce: 0x0123_4567_89ab_cdef,
        };
        let text = n.to_string();
        assert_eq!(text, "reflex-port:tcp://10.0.0.1:41234:0123456789abcdef");
        assert_eq!(PortName::parse(&text).unwrap(), n);
        assert!(text.len() < MAX_PORT_NAME);
    }

    #[test]
    fn bad_names_are_port_errors() {
        for (name, why) in [
            ("", "does not start"),
            ("tcp://1.2.3.4:5:0123456789abcdef", "does not start"),
            ("reflex-port:tcp://1.2.3.4:5", "not IPv4"),
            ("reflex-port:tcp://1.2.3.4:0123456789abcdef", "not IPv4"),
            ("reflex-port:tcp://host:5:0123456789abcdef", "not IPv4"),
            ("reflex-port:tcp://1.2.3.4:5:0123", "16 hex"),
            ("reflex-port:tcp://1.2.3.4:5:0123456789abcdeg", "16 hex"),
            (
                "reflex-port:tcp://1.2.3.4:70000:0123456789abcdef",
                "not IPv4",
            ),
        ] {
            let e = PortName::parse(name).unwrap_err();
            assert_eq!(e.class, ErrorClass::Port, "{name}");
            assert!(e.message.contains(why), "{name}: {}", e.message);
        }
    }

    #[test]
    fn ports_open_and_close_once() {
        let mut ports = Ports::default();
        let name = ports.open().unwrap();
        assert!(PortName::parse(&name).is_ok());
        assert!(ports.get(&name).is_ok());
        ports.close(&name).unwrap();
        assert_eq!(ports.close(&name).unwrap_err().class, ErrorClass::Port);
        assert_eq!(ports.get(&name).unwrap_err().class, ErrorClass::Port);
    }
}
