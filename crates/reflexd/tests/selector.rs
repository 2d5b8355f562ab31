//! A selector thread end to end on loopback: announcements sent to its socket (unicast, so no
//! multicast route is needed), requests over TLS with certificates from the test CA.

use std::net::{TcpListener, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

use reflexd::ca::Authority;
use reflexd::cluster_key::ClusterKey;
use reflexd::discovery::announce::{seal, Announcement};
use reflexd::discovery::membership::Membership;
use reflexd::discovery::query::{ask, ask_any};
use reflexd::discovery::selector::{start, Selector};
use reflexd::discovery::unix_ms;
use reflexd::tls::Credentials;

fn credentials(ca: &Authority, issued: &reflexd::ca::Issued) -> Credentials {
    Credentials {
        ca_pem: ca.cert_pem().into_bytes(),
        cert_pem: issued.cert_pem.clone().into_bytes(),
        key_pem: issued.key_pem.clone().into_bytes(),
    }
}

fn announcement(name: &str, seq: u64) -> Announcement {
    Announcement {
        instance: 42,
        seq,
        time_ms: unix_ms(),
        port: 7300,
        cores: 2,
        load_milli: 0,
        ranks: 0,
        jobs: 0,
        names: vec![name.into()],
    }
}

/// Asks until the answer lists `want` hosts (the datagrams are handled by another thread).
fn await_hosts(addr: &str, tls: &Arc<rustls::ClientConfig>, want: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let got: Vec<String> = ask(addr, 0, "", tls.clone())
            .map(|hosts| hosts.into_iter().map(|h| h.name).collect())
            .unwrap_or_default();
        if got.len() == want || Instant::now() > deadline {
            return got;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_selector_answers_over_tls_and_ignores_forged_announcements() {
    let ca = Authority::create("Reflex selector test CA").unwrap();
    let host = credentials(&ca, &ca.issue_host(&["127.0.0.1".into()]).unwrap());
    let user = credentials(&ca, &ca.issue_user("root").unwrap());
    let key = ClusterKey::from_bytes([5; 32]);
    let members = Membership::new(
        key.clone(),
        Duration::from_secs(60),
        Duration::from_secs(60),
    );
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    let target = udp.local_addr().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let selector = Selector::new(members, "least-load").unwrap();
    start(selector, udp, listener, host.server_config().unwrap()).unwrap();
    let tls = user.client_config().unwrap();

    let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
    let forged = seal(
        &announcement("intruder", 1),
        &ClusterKey::from_bytes([6; 32]),
    )
    .unwrap();
    sender.send_to(&forged, target).unwrap();
    sender.send_to(b"garbage", target).unwrap();
    for name in ["a", "b"] {
        sender
            .send_to(&seal(&announcement(name, 1), &key).unwrap(), target)
            .unwrap();
    }
    assert_eq!(await_hosts(&addr, &tls, 2), ["a", "b"]);

    let chosen = ask(&addr, 3, "fill", tls.clone()).unwrap();
    let got: Vec<(&str, u16, u32)> = chosen
        .iter()
        .map(|h| (h.name.as_str(), h.port, h.slots))
        .collect();
    assert_eq!(got, [("a", 7300, 2), ("b", 7300, 1)]);
    let err = ask(&addr, 1, "random", tls.clone()).unwrap_err();
    assert!(err.contains("unknown policy"), "{err}");

    // A dead selector first in the list: the next one answers.
    let dead = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string();
    let hosts = ask_any(&[dead.clone(), addr.clone()], 1, "", &tls).unwrap();
    assert_eq!(hosts.len(), 1);
    assert!(ask_any(&[dead], 1, "", &tls)
        .unwrap_err()
        .contains("refused"));

    // A client whose certificate is from another CA gets nothing.
    let rogue = Authority::create("Rogue CA").unwrap();
    let mut stranger = credentials(&rogue, &rogue.issue_user("root").unwrap());
    stranger.ca_pem = ca.cert_pem().into_bytes();
    assert!(ask(&addr, 1, "", stranger.client_config().unwrap()).is_err());
}
