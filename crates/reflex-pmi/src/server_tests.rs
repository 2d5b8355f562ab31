//! Tests of the server state machine, driven by simulated ranks.

use super::*;
use proptest::prelude::*;

fn lines_to(outcome: &Outcome, rank: u32) -> Vec<&str> {
    outcome
        .replies
        .iter()
        .filter(|r| r.rank == rank)
        .map(|r| r.line.as_str())
        .collect()
}

fn only_reply(server: &mut Server, rank: u32, line: &str) -> String {
    let outcome = server.handle_line(rank, line.as_bytes());
    assert_eq!(outcome.replies.len(), 1, "{line:?} -> {outcome:?}");
    assert_eq!(outcome.replies[0].rank, rank);
    outcome.replies[0].line.clone()
}

#[test]
fn start_up_replies_match_hydra_byte_for_byte() {
    let mut s = Server::new("kvs_1", 2, 0, -1);
    let expect = [
        (
            "cmd=init pmi_version=1 pmi_subversion=1\n",
            "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n",
        ),
        (
            "cmd=get_maxes\n",
            "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024\n",
        ),
        ("cmd=get_appnum\n", "cmd=appnum appnum=0\n"),
        ("cmd=get_universe_size\n", "cmd=universe_size size=-1\n"),
        ("cmd=get_my_kvsname\n", "cmd=my_kvsname kvsname=kvs_1\n"),
        (
            "cmd=get kvsname=kvs_1 key=PMI_process_mapping\n",
            "cmd=get_result rc=0 msg=success value=(vector,(0,1,2))\n",
        ),
        (
            "cmd=put kvsname=kvs_1 key=addr-0 value=tcp://127.0.0.1:40000\n",
            "cmd=put_result rc=0 msg=success\n",
        ),
        (
            "cmd=get kvsname=kvs_1 key=no-such-key\n",
            "cmd=get_result rc=-1 msg=key_no-such-key_not_found value=unknown\n",
        ),
        ("cmd=finalize\n", "cmd=finalize_ack\n"),
    ];
    for (request, reply) in expect {
        assert_eq!(only_reply(&mut s, 0, request), reply, "request {request:?}");
    }
}

#[test]
fn pmi2_handshake_is_refused_with_rc() {
    let mut s = Server::new("k", 1, 0, 1);
    let reply = only_reply(&mut s, 0, "cmd=init pmi_version=2 pmi_subversion=0\n");
    assert_eq!(
        reply,
        "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=-1\n"
    );
}

#[test]
fn barrier_releases_everyone_and_publishes_puts() {
    const N: u32 = 64;
    let mut s = Server::new("job", N, 0, N as i32);
    for rank in 0..N {
        let put = format!("cmd=put kvsname=job key=card-{rank} value=v{rank}\n");
        assert_eq!(
            only_reply(&mut s, rank, &put),
            "cmd=put_result rc=0 msg=success\n"
        );
    }
    // Not visible before the fence.
    let early = only_reply(&mut s, 0, "cmd=get kvsname=job key=card-5\n");
    assert!(early.starts_with("cmd=get_result rc=-1"), "{early}");
    for rank in (0..N).rev().skip(1) {
        let outcome = s.handle_line(rank, b"cmd=barrier_in\n");
        assert_eq!(outcome, Outcome::default(), "rank {rank} released early");
    }
    let outcome = s.handle_line(N - 1, b"cmd=barrier_in\n");
    assert_eq!(outcome.event, Some(Event::BarrierComplete));
    for rank in 0..N {
        assert_eq!(lines_to(&outcome, rank), ["cmd=barrier_out\n"]);
    }
    for rank in 0..N {
        let peer = (rank + 1) % N;
        let reply = only_reply(
            &mut s,
            rank,
            &format!("cmd=get kvsname=job key=card-{peer}\n"),
        );
        assert_eq!(
            reply,
            format!("cmd=get_result rc=0 msg=success value=v{peer}\n")
        );
    }
    // A second round works the same way.
    for rank in 0..N - 1 {
        assert!(s.handle_line(rank, b"cmd=barrier_in\n").replies.is_empty());
    }
    assert_eq!(
        s.handle_line(N - 1, b"cmd=barrier_in\n").replies.len(),
        N as usize
    );
}

#[test]
fn abort_and_finalize_are_events() {
    let mut s = Server::new("k", 2, 0, 2);
    let outcome = s.handle_line(1, b"cmd=abort exitcode=7\n");
    assert_eq!(outcome.replies, []);
    assert_eq!(
        outcome.event,
        Some(Event::Abort {
            rank: 1,
            code: 7,
            msg: None
        })
    );
    let outcome = s.handle_line(0, b"cmd=abort exitcode=3 message=cannot open input.dat\n");
    let msg = Some("cannot open input.dat".to_owned());
    assert_eq!(
        outcome.event,
        Some(Event::Abort {
            rank: 0,
            code: 3,
            msg
        })
    );
    let outcome = s.handle_line(0, b"cmd=finalize\n");
    assert_eq!(lines_to(&outcome, 0), ["cmd=finalize_ack\n"]);
    assert_eq!(outcome.event, Some(Event::Finalize { rank: 0 }));
}

#[test]
fn bad_requests_are_protocol_errors() {
    let mut s = Server::new("k", 2, 0, 2);
    for (rank, line) in [
        (0, &b"cmd=frobnicate\n"[..]),
        (0, b"hello\n"),
        (0, b"cmd=put key\n"),
        (5, b"cmd=init pmi_version=1 pmi_subversion=1\n"),
    ] {
        let outcome = s.handle_line(rank, line);
        assert!(outcome.replies.is_empty());
        assert!(
            matches!(outcome.event, Some(Event::ProtocolError { .. })),
            "{line:?}: {outcome:?}"
        );
    }
    assert!(s.handle_line(0, b"cmd=barrier_in\n").event.is_none());
    let twice = s.handle_line(0, b"cmd=barrier_in\n");
    assert!(
        matches!(twice.event, Some(Event::ProtocolError { rank: 0, .. })),
        "{twice:?}"
    );
}

#[test]
fn put_and_get_check_kvsname_and_key() {
    let mut s = Server::new("mine", 1, 0, 1);
    let reply = only_reply(&mut s, 0, "cmd=put kvsname=other key=a value=1\n");
    assert_eq!(reply, "cmd=put_result rc=-1 msg=unknown_kvsname_other\n");
    let long_key = "k".repeat(KEYLEN_MAX);
    let reply = only_reply(
        &mut s,
        0,
        &format!("cmd=put kvsname=mine key={long_key} value=1\n"),
    );
    assert_eq!(reply, "cmd=put_result rc=-1 msg=key_too_long\n");
    let reply = only_reply(&mut s, 0, "cmd=put kvsname=mine key=a\n");
    assert_eq!(reply, "cmd=put_result rc=-1 msg=put_needs_key_and_value\n");
}

#[test]
fn a_rank_that_leaves_breaks_the_barrier() {
    let mut s = Server::new("k", 3, 0, 3);
    assert!(s.handle_line(0, b"cmd=barrier_in\n").event.is_none());
    let outcome = s.disconnect(2);
    assert_eq!(
        outcome.event,
        Some(Event::BarrierBroken {
            missing: 2,
            waiting: 1
        })
    );

    let mut s = Server::new("k", 2, 0, 2);
    s.handle_line(1, b"cmd=finalize\n");
    let outcome = s.handle_line(0, b"cmd=barrier_in\n");
    assert_eq!(
        outcome.event,
        Some(Event::BarrierBroken {
            missing: 1,
            waiting: 1
        })
    );

    // Leaving while nobody waits is fine (programs that never use PMI do exactly that).
    let mut s = Server::new("k", 2, 0, 2);
    assert_eq!(s.disconnect(0), Outcome::default());
    assert_eq!(s.disconnect(7), Outcome::default());
}

#[test]
fn initack_answers_like_hydra_pmi_port() {
    let s = Server::new("k", 2, 0, 2);
    let (rank, lines) = s.accept_initack(b"cmd=initack pmiid=1\n").unwrap();
    assert_eq!(rank, 1);
    assert_eq!(
        lines,
        "cmd=initack\ncmd=set size=2\ncmd=set rank=1\ncmd=set debug=0\n"
    );
    assert!(s.accept_initack(b"cmd=initack pmiid=2\n").is_err());
    assert!(s.accept_initack(b"cmd=initack\n").is_err());
    assert!(s.accept_initack(b"cmd=init\n").is_err());
}

#[test]
fn name_service_publishes_and_looks_up() {
    let mut s = Server::new("k", 1, 0, 1);
    let r = only_reply(&mut s, 0, "cmd=publish_name service=svc port=tcp://h:1\n");
    assert_eq!(r, "cmd=publish_result rc=0 msg=success\n");
    let r = only_reply(&mut s, 0, "cmd=lookup_name service=svc\n");
    assert_eq!(r, "cmd=lookup_result rc=0 msg=success port=tcp://h:1\n");
    let r = only_reply(&mut s, 0, "cmd=unpublish_name service=svc\n");
    assert_eq!(r, "cmd=unpublish_result rc=0 msg=success\n");
    let r = only_reply(&mut s, 0, "cmd=lookup_name service=svc\n");
    assert_eq!(r, "cmd=lookup_result rc=-1 msg=service_not_found\n");
}

proptest! {
    /// Whatever order ranks arrive in, the barrier releases each rank exactly once, and only
    /// when the last one arrives; after it every put is visible.
    #[test]
    fn barrier_releases_once_in_any_order(order in Just((0u32..9).collect::<Vec<_>>()).prop_shuffle()) {
        let n = order.len() as u32;
        let mut s = Server::new("p", n, 0, -1);
        let mut released = 0;
        for (i, &rank) in order.iter().enumerate() {
            s.handle_line(rank, format!("cmd=put kvsname=p key=k{rank} value={rank}\n").as_bytes());
            let outcome = s.handle_line(rank, b"cmd=barrier_in\n");
            released += outcome.replies.len();
            prop_assert_eq!(released, if i + 1 == order.len() { n as usize } else { 0 });
        }
        for rank in 0..n {
            let outcome = s.handle_line(0, format!("cmd=get kvsname=p key=k{rank}\n").as_bytes());
            let want = format!("cmd=get_result rc=0 msg=success value={rank}\n");
            prop_assert_eq!(&outcome.replies[0].line, &want);
        }
    }

    #[test]
    fn arbitrary_lines_never_panic(lines in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..80), 0..20)) {
        let mut s = Server::new("k", 3, 0, 3);
        for (i, line) in lines.iter().enumerate() {
            let _ = s.handle_line(i as u32 % 4, line);
            let _ = s.accept_initack(line);
        }
    }
}
