//! `tcp-pingpong`: one-way latency of the TCP transport alone, with no MPI engine above it,
//! between two processes over loopback (rank 0 and a child it starts, pinned to two cores).
//!
//! Each message is sent as the engine sends an eager one (`try_send_parts` of a 32-byte head
//! and the payload) and received by spinning on `poll`, as a rank waiting in `MPI_Recv` does.
//! Beside a C ping-pong over the same loopback (the kernel's floor) and `pt2pt -t latency`
//! over `REFLEX_TCP_LOCAL=1` (the whole library), it says how much of Reflex's TCP latency is
//! the transport's and how much the engine's.
//!
//! Usage: `tcp-pingpong [ITERS [BYTES]]` (default 20000 round trips of 8 bytes, best of 5
//! batches; the cores are 0 and 1).

use reflex_base::transport::Transport;
use reflex_tcp::{TcpParams, TcpTransport};
use std::time::Instant;

const HEAD: usize = 32;
const BATCHES: usize = 5;

fn pin(core: usize) {
    let mut set = nix::sched::CpuSet::new();
    if set.set(core).is_ok() {
        let _ = nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set);
    }
}

/// Sends one message of `body` bytes to `peer`, polling while the socket is full.
fn send(t: &mut TcpTransport, peer: usize, head: &[u8], body: &[u8]) {
    while t.try_send_parts(peer, head, body).is_err() {
        t.poll(|_, _| {});
    }
}

/// Spins until one message arrives; returns its length.
fn recv(t: &mut TcpTransport) -> usize {
    let mut got = None;
    while got.is_none() {
        t.poll(|_, b| got = Some(b.len()));
    }
    got.unwrap_or(0)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let iters: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let bytes: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(8);
    let (head, body) = ([0u8; HEAD], vec![1u8; bytes]);
    if let Ok(card) = std::env::var("REFLEX_TCP_PINGPONG_CARD") {
        pin(1);
        let mut t = TcpTransport::bind(1, 2, TcpParams::default()).expect("bind");
        t.set_card(0, &card).expect("card");
        for _ in 0..(iters * BATCHES + 1) {
            send(&mut t, 0, &head, &body);
            recv(&mut t);
        }
        return;
    }
    pin(0);
    let mut t = TcpTransport::bind(0, 2, TcpParams::default()).expect("bind");
    let exe = std::env::current_exe().expect("own path");
    let mut child = std::process::Command::new(exe)
        .args([iters.to_string(), bytes.to_string()])
        .env("REFLEX_TCP_PINGPONG_CARD", t.card())
        .spawn()
        .expect("start the peer");
    assert_eq!(recv(&mut t), HEAD + bytes, "the first message");
    let mut best = f64::MAX;
    for _ in 0..BATCHES {
        let start = Instant::now();
        for _ in 0..iters {
            send(&mut t, 1, &head, &body);
            recv(&mut t);
        }
        best = best.min(start.elapsed().as_secs_f64() / iters as f64 / 2.0);
    }
    send(&mut t, 1, &head, &body);
    let _ = child.wait();
    println!(
        "tcp transport, {bytes} B: {:.3} us one way (best of {BATCHES} x {iters})",
        best * 1e6
    );
}
