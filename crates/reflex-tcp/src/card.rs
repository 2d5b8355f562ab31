//! Business cards: how a rank tells the others where it listens (published through PMI).
//!
//! Format (one PMI value, no spaces, at most [`MAX_CARD_LEN`] bytes, so it fits the 1023-byte
//! PMI-1 value limit of launchers.md §2.2 with room to spare):
//! `tcp1;port=<port>;cookie=<16 hex>;addrs=<ip>/<prefix>,<ip>/<prefix>,...`
//!
//! A card lists every IPv4 address of the host's interfaces that are up, loopback last. The
//! connecting rank picks, in order: the first address on a subnet that one of its own
//! (non-loopback) interfaces is on and that is not also one of its own addresses (a bridge
//! address such as docker0's `172.17.0.1` exists on every host); else the first address on such
//! a subnet (the peer is on this host); else the first non-loopback address (a routed network);
//! else loopback (a host whose only interface is `lo`). So ranks in one network namespace,
//! or on one LAN, use the direct path without any setting. The cookie is a random number that
//! the acceptor checks in every hello: only a process that read the job's PMI space can open a
//! connection to a rank.

use std::fmt;
use std::net::{Ipv4Addr, SocketAddrV4};

/// Longest card written or accepted.
pub const MAX_CARD_LEN: usize = 900;
/// Most addresses a card lists.
pub const MAX_ADDRS: usize = 32;

/// One interface address with its prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IfAddr {
    /// The address.
    pub ip: Ipv4Addr,
    /// Length of the network prefix (netmask bits).
    pub prefix: u8,
}

impl IfAddr {
    /// Whether `other` is on this address's subnet.
    pub fn same_subnet(&self, other: Ipv4Addr) -> bool {
        let mask = if self.prefix == 0 {
            0
        } else {
            u32::MAX << (32 - u32::from(self.prefix.min(32)))
        };
        u32::from(self.ip) & mask == u32::from(other) & mask
    }
}

/// Where a rank listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Card {
    /// The listening port (on every address).
    pub port: u16,
    /// The secret a hello must carry.
    pub cookie: u64,
    /// Where the rank can be reached, best first, loopback last.
    pub addrs: Vec<IfAddr>,
}

/// A card that does not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardError(pub String);

impl fmt::Display for CardError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bad tcp business card: {}", self.0)
    }
}

impl std::error::Error for CardError {}

impl fmt::Display for Card {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "tcp1;port={};cookie={:016x};addrs=",
            self.port, self.cookie
        )?;
        for (i, a) in self.addrs.iter().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            write!(f, "{sep}{}/{}", a.ip, a.prefix)?;
        }
        Ok(())
    }
}

impl Card {
    /// Parses a card (bounds-checked; any input gives a card or an error).
    pub fn parse(text: &str) -> Result<Card, CardError> {
        let bad = |why: &str| CardError(why.to_owned());
        if text.len() > MAX_CARD_LEN {
            return Err(bad("longer than the limit"));
        }
        let mut fields = text.split(';');
        if fields.next() != Some("tcp1") {
            return Err(bad("does not start with tcp1"));
        }
        let mut field = |name: &str| {
            fields
                .next()
                .and_then(|f| f.strip_prefix(name))
                .and_then(|f| f.strip_prefix('='))
                .ok_or_else(|| CardError(format!("missing field {name}")))
        };
        let port = field("port")?
            .parse::<u16>()
            .ok()
            .filter(|&p| p != 0)
            .ok_or_else(|| bad("port is not a number from 1 to 65535"))?;
        let cookie = field("cookie")?;
        if cookie.len() != 16 {
            return Err(bad("cookie is not 16 hex digits"));
        }
        let cookie = u64::from_str_radix(cookie, 16).map_err(|_| bad("cookie is not hex"))?;
        let addrs = field("addrs")?
            .split(',')
            .map(parse_addr)
            .collect::<Result<Vec<_>, _>>()?;
        if fields.next().is_some() {
            return Err(bad("unexpected field after addrs"));
        }
        if addrs.is_empty() || addrs.len() > MAX_ADDRS {
            return Err(bad("needs 1 to 32 addresses"));
        }
        Ok(Card {
            port,
            cookie,
            addrs,
        })
    }

    /// The address to connect to from a host with interfaces `mine` (module documentation).
    pub fn choose(&self, mine: &[IfAddr]) -> SocketAddrV4 {
        let own_nets: Vec<&IfAddr> = mine.iter().filter(|a| !a.ip.is_loopback()).collect();
        let on_my_net = |peer: &&IfAddr| {
            !peer.ip.is_loopback() && own_nets.iter().any(|m| m.same_subnet(peer.ip))
        };
        let is_mine = |peer: &&IfAddr| mine.iter().any(|m| m.ip == peer.ip);
        // An address that is also one of ours, seen from another host, is a private network
        // every host has (a container or VM bridge): prefer the peer's other addresses.
        let direct = self.addrs.iter().filter(on_my_net).find(|p| !is_mine(p));
        let same_host = || self.addrs.iter().find(on_my_net);
        let routed = || self.addrs.iter().find(|peer| !peer.ip.is_loopback());
        let ip = direct
            .or_else(same_host)
            .or_else(routed)
            .or(self.addrs.first())
            .map_or(Ipv4Addr::LOCALHOST, |a| a.ip);
        SocketAddrV4::new(ip, self.port)
    }
}

fn parse_addr(text: &str) -> Result<IfAddr, CardError> {
    let (ip, prefix) = text
        .split_once('/')
        .ok_or_else(|| CardError(format!("address {text:?} has no /prefix")))?;
    let ip: Ipv4Addr = ip
        .parse()
        .map_err(|_| CardError(format!("{ip:?} is not an ipv4 address")))?;
    let prefix = prefix
        .parse::<u8>()
        .ok()
        .filter(|&p| p <= 32)
        .ok_or_else(|| CardError(format!("prefix {prefix:?} is not 0 to 32")))?;
    Ok(IfAddr { ip, prefix })
}

/// The IPv4 addresses of this host's interfaces that are up, loopback last (at most
/// [`MAX_ADDRS`]).
pub fn local_addrs() -> std::io::Result<Vec<IfAddr>> {
    use nix::net::if_::InterfaceFlags;
    let mut found = Vec::new();
    for ifa in nix::ifaddrs::getifaddrs()? {
        if !ifa.flags.contains(InterfaceFlags::IFF_UP) {
            continue;
        }
        let Some(ip) = ifa.address.as_ref().and_then(|a| a.as_sockaddr_in()) else {
            continue;
        };
        let prefix = ifa
            .netmask
            .as_ref()
            .and_then(|m| m.as_sockaddr_in())
            .map_or(32, |m| m.ip().to_bits().count_ones() as u8);
        found.push(IfAddr {
            ip: ip.ip(),
            prefix,
        });
    }
    found.sort_by_key(|a| a.ip.is_loopback());
    found.dedup();
    found.truncate(MAX_ADDRS);
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn addr(text: &str) -> IfAddr {
        parse_addr(text).unwrap()
    }

    fn card(addrs: &[&str]) -> Card {
        Card {
            port: 4000,
            cookie: 0x0123_4567_89ab_cdef,
            addrs: addrs.iter().map(|a| addr(a)).collect(),
        }
    }

    #[test]
    fn round_trips() {
        let c = card(&["10.0.0.2/24", "192.168.1.7/16", "127.0.0.1/8"]);
        let text = c.to_string();
        assert_eq!(
            text,
            "tcp1;port=4000;cookie=0123456789abcdef;addrs=10.0.0.2/24,192.168.1.7/16,127.0.0.1/8"
        );
        assert_eq!(Card::parse(&text), Ok(c));
        let full = card(&["255.255.255.255/32"; MAX_ADDRS]).to_string();
        assert!(full.len() <= MAX_CARD_LEN);
        assert!(Card::parse(&full).is_ok());
    }

    #[test]
    fn refuses_malformed_cards() {
        for bad in [
            "",
            "tcp2;port=1;cookie=0000000000000000;addrs=1.2.3.4/8",
            "tcp1;port=0;cookie=0000000000000000;addrs=1.2.3.4/8",
            "tcp1;port=65536;cookie=0000000000000000;addrs=1.2.3.4/8",
            "tcp1;port=1;cookie=00;addrs=1.2.3.4/8",
            "tcp1;port=1;cookie=000000000000000g;addrs=1.2.3.4/8",
            "tcp1;port=1;cookie=0000000000000000;addrs=",
            "tcp1;port=1;cookie=0000000000000000;addrs=1.2.3.4",
            "tcp1;port=1;cookie=0000000000000000;addrs=1.2.3.4/33",
            "tcp1;port=1;cookie=0000000000000000;addrs=1.2.3/8",
            "tcp1;port=1;cookie=0000000000000000;addrs=1.2.3.4/8;x=1",
            "tcp1;cookie=0000000000000000;port=1;addrs=1.2.3.4/8",
        ] {
            assert!(Card::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn chooses_the_direct_path_first() {
        let mine = [
            addr("10.9.0.3/24"),
            addr("172.16.0.9/16"),
            addr("127.0.0.1/8"),
        ];
        let peer = card(&["192.168.0.2/24", "172.16.5.5/16", "127.0.0.1/8"]);
        assert_eq!(peer.choose(&mine).ip(), &Ipv4Addr::new(172, 16, 5, 5));
        let routed = card(&["192.168.0.2/24", "127.0.0.1/8"]);
        assert_eq!(routed.choose(&mine).ip(), &Ipv4Addr::new(192, 168, 0, 2));
        // A bridge address every host has (docker0) is not taken for the peer's.
        let docker = [addr("172.17.0.1/16"), addr("10.9.0.3/24")];
        let peer = card(&["172.17.0.1/16", "10.9.0.7/24"]);
        assert_eq!(peer.choose(&docker).ip(), &Ipv4Addr::new(10, 9, 0, 7));
        // On the same host every address is ours: any shared one will do.
        let same = card(&["172.17.0.1/16", "10.9.0.3/24"]);
        assert_eq!(same.choose(&docker).ip(), &Ipv4Addr::new(172, 17, 0, 1));
        let lonely = card(&["127.0.0.1/8"]);
        assert_eq!(lonely.choose(&mine).ip(), &Ipv4Addr::LOCALHOST);
        assert_eq!(peer.choose(&mine).port(), 4000);
    }

    #[test]
    fn finds_loopback_last() {
        let addrs = local_addrs().unwrap();
        assert!(!addrs.is_empty());
        let first_loop = addrs.iter().position(|a| a.ip.is_loopback());
        if let Some(i) = first_loop {
            assert!(addrs[i..].iter().all(|a| a.ip.is_loopback()));
        }
    }

    proptest! {
        #[test]
        fn parser_is_total(text in "[ -~]{0,120}") {
            if let Ok(c) = Card::parse(&text) {
                prop_assert_eq!(Card::parse(&c.to_string()), Ok(c));
            }
        }

        #[test]
        fn near_misses_do_not_panic(cut in 0usize..90, byte in any::<u8>()) {
            let mut text = card(&["10.0.0.2/24", "127.0.0.1/8"]).to_string().into_bytes();
            let i = cut.min(text.len() - 1);
            text[i] = byte;
            let _ = Card::parse(&String::from_utf8_lossy(&text));
        }
    }
}
