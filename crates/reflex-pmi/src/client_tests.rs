//! Client against the server state machine over real sockets (socketpair and TCP).

use super::*;
use crate::codec::LineBuffer;
use crate::server::Server;
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
            let outcome = server.lock().unwrap().handle_line(rank, &line);
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
