//! Client against the server state machine over real sockets (socketpair and TCP).

use super::*;
use crate::codec::LineBuffer;
use crate::server::Server;
use crate::spawn::{SpawnCommand, SpawnResult};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::thread;

/// Serves one connection: reads lines, feeds the shared server, writes every reply to its
/// rank's connection. Returns the events seen on this connection.
fn serve(
    rank: u32,
    mut conn: impl Read,
    server: Arc<Mutex<Server>>,
    writers: Arc<Vec<Mutex<UnixOrTcp>>>,
) -> Vec<crate::Event> {
    let mut lines = LineBuffer::new();
    let mut chunk = [0u8; 1024];
    let mut events = Vec::new();
    loop {
        while let Some(line) = lines.next_line().unwrap() {
            let mut outcome = server.lock().unwrap().handle_line(rank, &line);
            if let Some(crate::Event::Spawn { rank, request }) = &outcome.event {
                outcome
                    .replies
                    .push(fake_spawn(&server.lock().unwrap(), *rank, request));
            }
            for reply in outcome.replies {
                writers[reply.rank as usize]
                    .lock()
                    .unwrap()
                    .write_all(reply.line.as_bytes())
                    .unwrap();
            }
            events.extend(outcome.event);
        }
        match conn.read(&mut chunk) {
            Ok(0) | Err(_) => {
                events.extend(server.lock().unwrap().disconnect(rank).event);
                return events;
            }
            Ok(n) => lines.extend(&chunk[..n]),
        }
    }
}

type UnixOrTcp = Box<dyn Write + Send>;

/// A launcher's answer without a launcher: commands named `missing` fail, with MPI_ERR_SPAWN
/// (42) for each of their processes; anything else starts.
fn fake_spawn(server: &Server, rank: u32, request: &crate::SpawnRequest) -> crate::Reply {
    let codes: Vec<i32> = request
        .commands
        .iter()
        .flat_map(|c| vec![if c.command == "missing" { 42 } else { 0 }; c.maxprocs as usize])
        .collect();
    let result = if codes.iter().all(|&c| c == 0) {
        SpawnResult::success(codes.len())
    } else {
        SpawnResult::failure("missing: no such file", codes)
    };
    server.spawn_reply(rank, &result)
}

/// Starts a server for `size` ranks on socketpairs; returns the client ends and the server threads.
fn socketpair_job(size: u32) -> (Vec<UnixStream>, Vec<thread::JoinHandle<Vec<crate::Event>>>) {
    let server = Arc::new(Mutex::new(Server::new("kvs_test_job", size, 0, -1)));
    let (clients, servers): (Vec<_>, Vec<_>) =
        (0..size).map(|_| UnixStream::pair().unwrap()).unzip();
    let writers: Vec<Mutex<UnixOrTcp>> = servers
        .iter()
        .map(|s| Mutex::new(Box::new(s.try_clone().unwrap()) as UnixOrTcp))
        .collect();
    let writers = Arc::new(writers);
    let threads = servers
        .into_iter()
        .enumerate()
        .map(|(rank, conn)| {
            let (server, writers) = (server.clone(), writers.clone());
            thread::spawn(move || serve(rank as u32, conn, server, writers))
        })
        .collect();
    (clients, threads)
}

/// What every rank does: start up, exchange a small and a large value with its neighbour.
fn exchange(mut client: PmiClient) -> (u32, String, String) {
    let (rank, size) = (client.rank(), client.size());
    client
        .put(&format!("card-{rank}"), &format!("shm://{rank}"))
        .unwrap();
    let large = format!("{rank}:{}", "ab".repeat(1500 + rank as usize));
    client.put_large(&format!("big-{rank}"), &large).unwrap();
    client.barrier().unwrap();
    let peer = (rank + 1) % size;
    let small = client.get(&format!("card-{peer}")).unwrap();
    let big = client.get_large(&format!("big-{peer}")).unwrap();
    assert_eq!(big, format!("{peer}:{}", "ab".repeat(1500 + peer as usize)));
    assert!(matches!(
        client.get("nobody-put-this"),
        Err(PmiError::KeyNotFound { .. })
    ));
    client.finalize().unwrap();
    (rank, small, client.kvsname().to_owned())
}

#[test]
fn ranks_exchange_over_socketpairs() {
    const N: u32 = 6;
    let (clients, servers) = socketpair_job(N);
    let ranks: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(rank, stream)| {
            thread::spawn(move || {
                let client = PmiClient::over_unix(stream, rank as u32, N).unwrap();
                assert_eq!(client.process_mapping(), Some(&[0; N as usize][..]));
                assert_eq!((client.appnum(), client.universe_size()), (Some(0), None));
                exchange(client)
            })
        })
        .collect();
    for handle in ranks {
        let (rank, small, kvsname) = handle.join().unwrap();
        assert_eq!(small, format!("shm://{}", (rank + 1) % N));
        assert_eq!(kvsname, "kvs_test_job");
    }
    for handle in servers {
        let events = handle.join().unwrap();
        assert!(
            events
                .iter()
                .any(|e| matches!(e, crate::Event::Finalize { .. })),
            "{events:?}"
        );
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, crate::Event::BarrierBroken { .. })),
            "{events:?}"
        );
    }
}

#[test]
fn abort_reaches_the_server_as_an_event() {
    let (mut clients, servers) = socketpair_job(1);
    let mut client = PmiClient::over_unix(clients.remove(0), 0, 1).unwrap();
    client.abort(5, "input file missing").unwrap();
    drop(client);
    let events = servers.into_iter().next().unwrap().join().unwrap();
    let msg = Some("input file missing".to_owned());
    assert_eq!(
        events[0],
        crate::Event::Abort {
            rank: 0,
            code: 5,
            msg
        }
    );
}

#[test]
fn pmi_port_handshake_over_tcp() {
    const N: u32 = 2;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().to_string();
    let server = Arc::new(Mutex::new(Server::new("kvs_tcp", N, 0, 2)));
    let clients: Vec<_> = (0..N)
        .map(|id| {
            let port = port.clone();
            thread::spawn(move || {
                let client = PmiClient::over_tcp(&port, id).unwrap();
                assert_eq!(client.universe_size(), Some(2));
                exchange(client)
            })
        })
        .collect();
    // Accept both, read each initack, then serve.
    let mut conns = Vec::new();
    for _ in 0..N {
        let (mut conn, _) = listener.accept().unwrap();
        let mut lines = LineBuffer::new();
        let mut byte = [0u8; 1];
        let line = loop {
            if let Some(line) = lines.next_line().unwrap() {
                break line;
            }
            conn.read_exact(&mut byte).unwrap();
            lines.extend(&byte);
        };
        let (rank, replies) = server.lock().unwrap().accept_initack(&line).unwrap();
        conn.write_all(replies.as_bytes()).unwrap();
        conns.push((rank, conn));
    }
    conns.sort_by_key(|(rank, _)| *rank);
    let writers: Vec<Mutex<UnixOrTcp>> = conns
        .iter()
        .map(|(_, c)| Mutex::new(Box::new(c.try_clone().unwrap()) as UnixOrTcp))
        .collect();
    let writers = Arc::new(writers);
    let servers: Vec<_> = conns
        .into_iter()
        .map(|(rank, conn)| {
            let (server, writers) = (server.clone(), writers.clone());
            thread::spawn(move || serve(rank, conn, server, writers))
        })
        .collect();
    for handle in clients {
        let (rank, small, _) = handle.join().unwrap();
        assert_eq!(small, format!("shm://{}", (rank + 1) % N));
    }
    for handle in servers {
        handle.join().unwrap();
    }
}

#[test]
fn singleton_has_a_local_store_and_the_same_limits() {
    let mut client = PmiClient::singleton();
    assert!(client.is_singleton());
    assert_eq!((client.rank(), client.size()), (0, 1));
    assert!(client.kvsname().starts_with("singleton-"));
    client.put("a", "1").unwrap();
    client.barrier().unwrap();
    assert_eq!(client.get("a").unwrap(), "1");
    let long = "x".repeat(5000);
    client.put_large("card", &long).unwrap();
    assert_eq!(client.get_large("card").unwrap(), long);
    assert!(matches!(
        client.put("b", &long),
        Err(PmiError::Limit { .. })
    ));
    assert!(matches!(
        client.put("b", "has space"),
        Err(PmiError::Codec(_))
    ));
    assert!(matches!(
        client.put_large("b", "has space"),
        Err(PmiError::Limit { .. })
    ));
    assert!(matches!(
        client.put(&"k".repeat(64), "1"),
        Err(PmiError::Limit { .. })
    ));
    assert!(matches!(
        client.get_large("a"),
        Err(PmiError::BadLargeValue { .. })
    ));
    client.put("bad", "3:x").unwrap();
    assert!(matches!(
        client.get_large("bad"),
        Err(PmiError::BadLargeValue { .. })
    ));
    client.finalize().unwrap();
}

#[test]
fn put_large_pieces_fit_one_line_each() {
    let client = PmiClient::singleton();
    let value: String = "é".repeat(3000);
    let pieces = client.split_pieces("card", &value).unwrap();
    assert_eq!(pieces.concat(), value);
    for piece in &pieces {
        assert!(piece.len() <= client.max_value_len("card#65536"));
    }
    assert_eq!(client.split_pieces("k", "").unwrap(), [""]);
}

#[test]
fn server_closing_early_is_a_clear_error() {
    let (client_end, server_end) = UnixStream::pair().unwrap();
    drop(server_end);
    let err = PmiClient::over_unix(client_end, 0, 1).unwrap_err();
    assert!(
        matches!(err, PmiError::Disconnected { .. } | PmiError::Io { .. }),
        "{err}"
    );
    let (client_end, _server_end) = UnixStream::pair().unwrap();
    let err = PmiClient::over_unix(client_end, 3, 2).unwrap_err();
    assert!(err.to_string().contains("below the job size 2"), "{err}");
}

#[test]
fn a_pmix_launch_without_libpmix_says_what_to_install() {
    let err = PmiClient::over_pmix("libreflex-no-such-pmix.so.2").unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, PmiError::PmixUnavailable { .. }), "{text}");
    assert!(text.contains("PMIX_NAMESPACE is set"), "{text}");
    assert!(text.contains("libpmix2"), "{text}");
}

fn command(name: &str, maxprocs: u32) -> SpawnCommand {
    SpawnCommand {
        command: name.to_owned(),
        args: vec!["an arg".to_owned()],
        maxprocs,
        info: vec![("wdir".to_owned(), "/tmp".to_owned())],
    }
}

#[test]
fn spawn_names_and_optional_keys_over_the_wire() {
    let (mut clients, servers) = socketpair_job(1);
    let mut client = PmiClient::over_unix(clients.remove(0), 0, 1).unwrap();
    assert!(!client.spawned());
    let preput = [("PARENT_ROOT_PORT_NAME".to_owned(), "tag#0$x$".to_owned())];
    let ok = client.spawn(&[command("./child", 2), command("./other", 1)], &preput);
    assert_eq!(ok.unwrap(), SpawnResult::success(3));
    let failed = client
        .spawn(&[command("./child", 1), command("missing", 2)], &preput)
        .unwrap();
    assert!(!failed.all_started());
    assert_eq!((failed.rc, failed.errcodes), (-1, vec![0, 42, 42]));
    assert_eq!(failed.msg.as_deref(), Some("missing:_no_such_file"));
    let refused = client.spawn(&[], &preput).unwrap_err();
    assert!(matches!(refused, PmiError::BadRequest { .. }), "{refused}");

    client.publish_name("svc", "tag#1$").unwrap();
    assert_eq!(client.lookup_name("svc").unwrap(), "tag#1$");
    client.unpublish_name("svc").unwrap();
    let gone = client.lookup_name("svc").unwrap_err();
    assert!(matches!(gone, PmiError::NameNotFound { .. }), "{gone}");
    let gone = client.unpublish_name("svc").unwrap_err();
    assert!(matches!(gone, PmiError::NameNotFound { .. }), "{gone}");

    assert_eq!(client.get_optional("PARENT_ROOT_PORT_NAME").unwrap(), None);
    client.put("k", "v").unwrap();
    client.barrier().unwrap();
    assert_eq!(client.get_optional("k").unwrap().as_deref(), Some("v"));
    client.finalize().unwrap();
    drop(client);
    let events = servers.into_iter().next().unwrap().join().unwrap();
    let spawns = events
        .iter()
        .filter(|e| matches!(e, crate::Event::Spawn { .. }));
    assert_eq!(spawns.count(), 2, "{events:?}");
}

#[test]
fn singleton_names_are_local_and_spawn_is_unsupported() {
    let mut client = PmiClient::singleton();
    client.publish_name("svc", "p").unwrap();
    let twice = client.publish_name("svc", "q").unwrap_err();
    assert!(twice.to_string().contains("already published"), "{twice}");
    assert_eq!(client.lookup_name("svc").unwrap(), "p");
    client.unpublish_name("svc").unwrap();
    assert!(matches!(
        client.lookup_name("svc"),
        Err(PmiError::NameNotFound { .. })
    ));
    assert!(matches!(
        client.publish_name("a b", "p"),
        Err(PmiError::Codec(_))
    ));
    assert_eq!(client.get_optional("absent").unwrap(), None);
    let err = client.spawn(&[command("./child", 1)], &[]).unwrap_err();
    assert!(matches!(err, PmiError::Unsupported { .. }), "{err}");
    assert!(err.to_string().contains("singleton"), "{err}");
}
