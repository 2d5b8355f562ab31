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

#[test]
fn a_service_is_published_once_and_shared_with_spawned_jobs() {
    let mut parent = Server::new("p", 1, 0, 4);
    let r = only_reply(&mut parent, 0, "cmd=publish_name service=svc port=a\n");
    assert_eq!(r, "cmd=publish_result rc=0 msg=success\n");
    let r = only_reply(&mut parent, 0, "cmd=publish_name service=svc port=b\n");
    assert_eq!(
        r,
        "cmd=publish_result rc=-1 msg=service_already_published\n"
    );
    let preput = [("PARENT_ROOT_PORT_NAME".to_owned(), "tag#0$".to_owned())];
    let mut child = parent.child("c", vec![0, 0, 1], &preput);
    assert_eq!(child.kvsname(), "c");
    let r = only_reply(&mut child, 2, "cmd=lookup_name service=svc\n");
    assert_eq!(r, "cmd=lookup_result rc=0 msg=success port=a\n");
    let r = only_reply(&mut child, 1, "cmd=get_appnum\n");
    assert_eq!(r, "cmd=appnum appnum=0\n");
    let r = only_reply(&mut child, 2, "cmd=get_appnum\n");
    assert_eq!(r, "cmd=appnum appnum=1\n");
    let r = only_reply(&mut child, 0, "cmd=get_universe_size\n");
    assert_eq!(r, "cmd=universe_size size=4\n");
    let r = only_reply(
        &mut child,
        0,
        "cmd=get kvsname=c key=PARENT_ROOT_PORT_NAME\n",
    );
    assert_eq!(r, "cmd=get_result rc=0 msg=success value=tag#0$\n");
    let r = only_reply(&mut child, 0, "cmd=get kvsname=c key=PMI_process_mapping\n");
    assert_eq!(
        r,
        "cmd=get_result rc=0 msg=success value=(vector,(0,1,3))\n"
    );
    only_reply(&mut child, 0, "cmd=unpublish_name service=svc\n");
    let r = only_reply(&mut parent, 0, "cmd=lookup_name service=svc\n");
    assert_eq!(r, "cmd=lookup_result rc=-1 msg=service_not_found\n");
}

/// A two-command spawn request as libmpich writes it.
fn spawn_request() -> String {
    let command = |name: &str, n| crate::SpawnCommand {
        command: name.to_owned(),
        args: vec!["-x".to_owned()],
        maxprocs: n,
        info: vec![],
    };
    let preput = [("PARENT_ROOT_PORT_NAME".to_owned(), "port".to_owned())];
    crate::spawn::format_request(&[command("a", 2), command("b", 1)], &preput)
        .unwrap()
        .concat()
}

/// Feeds `bytes` to `rank` cut into pieces at `cuts`, through a `LineBuffer` as mpiexec does.
fn feed_in_pieces(s: &mut Server, rank: u32, bytes: &[u8], cuts: &[usize]) -> Vec<Outcome> {
    let mut lines = crate::codec::LineBuffer::new();
    let mut outcomes = Vec::new();
    let mut start = 0;
    for &cut in cuts.iter().chain([bytes.len()].iter()) {
        let cut = cut.clamp(start, bytes.len());
        lines.extend(&bytes[start..cut]);
        start = cut;
        while let Some(line) = lines.next_line().unwrap() {
            outcomes.push(s.handle_line(rank, &line));
        }
    }
    outcomes
}

#[test]
fn spawn_is_one_event_after_the_last_endcmd_even_between_other_ranks_lines() {
    let mut s = Server::new("k", 2, 0, 2);
    let request = spawn_request();
    let (first, second) = request.split_at(request.find("endcmd\n").unwrap() + 7);
    for line in first.split_inclusive('\n') {
        assert_eq!(s.handle_line(1, line.as_bytes()), Outcome::default());
    }
    // Rank 0 keeps talking single-line PMI meanwhile.
    let r = only_reply(&mut s, 0, "cmd=get_appnum\n");
    assert_eq!(r, "cmd=appnum appnum=0\n");
    let outcomes: Vec<Outcome> = second
        .split_inclusive('\n')
        .map(|line| s.handle_line(1, line.as_bytes()))
        .collect();
    let (last, rest) = outcomes.split_last().unwrap();
    assert!(rest.iter().all(|o| *o == Outcome::default()));
    let Some(Event::Spawn { rank: 1, request }) = &last.event else {
        panic!("{last:?}");
    };
    assert_eq!(request.total_procs(), 3);
    assert_eq!(request.preput[0].1, "port");
    assert_eq!(request.commands[1].command, "b");
    let reply = s.spawn_reply(1, &crate::SpawnResult::success(3));
    assert_eq!(reply.line, "cmd=spawn_result rc=0 errcodes=0,0,0\n");
    // Afterwards the rank is back to single-line PMI.
    assert_eq!(
        only_reply(&mut s, 1, "cmd=get_appnum\n"),
        "cmd=appnum appnum=0\n"
    );
}

#[test]
fn malformed_or_oversized_spawns_are_protocol_errors() {
    let mut s = Server::new("k", 1, 0, 1);
    let bad = spawn_request().replace("nprocs=2", "nprocs=two");
    let outcomes = feed_in_pieces(&mut s, 0, bad.as_bytes(), &[]);
    let first = outcomes.iter().find_map(|o| o.event.as_ref());
    let Some(Event::ProtocolError { rank: 0, error }) = first else {
        panic!("{outcomes:?}");
    };
    assert!(error.contains("nprocs=\"two\" is not a count"), "{error}");
    // A block that never ends is cut off at the size limit, not buffered forever.
    s.handle_line(0, b"mcmd=spawn\n");
    let line = format!("arg1={}\n", "x".repeat(1000));
    let mut error = None;
    for i in 0..100 {
        let line = line.replacen("arg1", &format!("arg{i}"), 1);
        if let Some(Event::ProtocolError { error: e, .. }) = s.handle_line(0, line.as_bytes()).event
        {
            error = Some(e);
            break;
        }
    }
    assert!(error.unwrap().contains("longer than 65536 bytes"));
    // A rank that leaves mid-request leaves nothing behind.
    s.handle_line(0, b"mcmd=spawn\n");
    s.disconnect(0);
    assert!(s.spawns.is_empty());
}

proptest! {
    /// However the request is cut into reads, one spawn event comes out, at the very end.
    #[test]
    fn spawn_split_anywhere_is_the_same_request(cuts in proptest::collection::vec(0usize..400, 0..6)) {
        let mut cuts = cuts;
        cuts.sort_unstable();
        let mut s = Server::new("k", 1, 0, 1);
        let request = spawn_request();
        let outcomes = feed_in_pieces(&mut s, 0, request.as_bytes(), &cuts);
        let events: Vec<_> = outcomes.iter().filter_map(|o| o.event.as_ref()).collect();
        prop_assert_eq!(events.len(), 1);
        let last_is_spawn = matches!(outcomes.last().unwrap().event, Some(Event::Spawn { .. }));
        prop_assert!(last_is_spawn);
    }

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
