//! Two real processes over one segment: `fork()`, then packets both ways (ping-pong and a stream
//! that fills the ring), sleeping whenever idle, and a single-copy read of the parent's memory.
//!
//! This file holds one test, so the test binary has no other threads working when it forks. The
//! child reports through its exit status; it dies with its parent (`PR_SET_PDEATHSIG`).

use reflex_base::segment::{segment_name, unlink};
use reflex_base::transport::Transport;
use reflex_shm::{cma, testkit, ShmParams, ShmSegment, ShmTransport};
use std::collections::VecDeque;
use std::time::Duration;

/// A sleep longer than any wake-up takes: a sleep that times out means a lost wake-up (or a dead
/// peer, which the idle loops check then).
const IDLE: Duration = Duration::from_secs(5);
const PING_PONGS: u64 = 5_000;
const STREAM: u64 = 100_000;
const BIG: usize = 3 << 20;

/// One side of the conversation: the transport, packets received but not yet looked at, and how
/// to tell whether the other process still runs.
struct Side<'a> {
    t: ShmTransport,
    peer: usize,
    inbox: VecDeque<Vec<u8>>,
    alive: &'a dyn Fn() -> bool,
}

impl Side<'_> {
    /// Sleeps until something may have happened; after a sleep that timed out, checks the peer.
    fn idle(&mut self) {
        let before = self.t.stats().timeouts;
        self.t.sleep(IDLE);
        assert!(
            self.t.stats().timeouts == before || (self.alive)(),
            "the peer process died"
        );
    }

    /// The next packet from the peer.
    fn recv(&mut self) -> Vec<u8> {
        loop {
            if let Some(p) = self.inbox.pop_front() {
                return p;
            }
            let (peer, inbox) = (self.peer, &mut self.inbox);
            let n = self.t.poll(|src, b| {
                assert_eq!(src, peer);
                inbox.push_back(b.to_vec());
            });
            if n == 0 {
                self.idle();
            }
        }
    }

    /// Sends packet `seq` of `len` bytes, sleeping while the ring is full (the receiver wakes us
    /// when it frees room).
    fn send(&mut self, len: usize, seq: u64) {
        while self
            .t
            .try_send(self.peer, len, |b| testkit::fill(b, seq))
            .is_err()
        {
            self.idle();
        }
    }
}

fn child(name: &str, parent: u32, big_addr: usize) {
    let t = ShmTransport::new(ShmSegment::open(name).unwrap(), 1).unwrap();
    // SAFETY: getppid has no preconditions.
    let alive = || unsafe { libc::getppid() } as u32 == parent;
    let mut me = Side {
        t,
        peer: 0,
        inbox: VecDeque::new(),
        alive: &alive,
    };
    me.send(5, 0);
    let max = me.t.max_packet();
    let mut rng = testkit::Rng::new(1);
    for seq in 0..PING_PONGS {
        let got = me.recv();
        assert_eq!(got.len(), rng.packet_len(max));
        assert!(testkit::check(&got, seq));
        me.send(got.len(), seq);
    }
    for seq in 0..STREAM {
        let got = me.recv();
        assert!(testkit::check(&got, seq), "stream packet {seq}");
    }
    // Single copy: the parent's buffer, read into three pieces.
    assert_eq!(me.t.peer_pid(0), Some(parent));
    assert!(cma::probe(parent));
    let mut copy = vec![0u8; BIG];
    let (a, rest) = copy.split_at_mut(1000);
    let (b, c) = rest.split_at_mut(BIG / 2);
    assert_eq!(
        cma::read(parent, &[(big_addr, BIG)], &mut [a, b, c]).unwrap(),
        BIG
    );
    assert!(testkit::check(&copy, 99));
    me.send(2, 0);
    assert_eq!(
        me.t.stats().timeouts,
        0,
        "child: lost wake-up: {:?}",
        me.t.stats()
    );
}

#[test]
fn two_processes_exchange_packets_and_copy_once() {
    let name = segment_name(&format!("shmfork{}", std::process::id()), 0);
    let seg = ShmSegment::create(&name, 2, &ShmParams { ring_bytes: 4096 }).unwrap();
    let mut big = vec![0u8; BIG];
    testkit::fill(&mut big, 99);
    let parent = std::process::id();
    // SAFETY: this test binary has no other test and thus no other thread doing work; the child
    // only runs Rust code that allocates (glibc's malloc is fork-safe) and ends in _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed: {}", std::io::Error::last_os_error());
    if pid == 0 {
        // SAFETY: prctl with PR_SET_PDEATHSIG takes a signal number and touches no memory.
        unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
        let ok = std::panic::catch_unwind(|| child(&name, parent, big.as_ptr() as usize)).is_ok();
        // SAFETY: _exit ends the child at once, without running the parent's atexit handlers.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    let child_alive = || {
        let mut status = 0;
        // SAFETY: WNOHANG polls our own child; `status` is a valid out-pointer.
        unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) == 0 }
    };
    let t = ShmTransport::new(seg, 0).unwrap();
    let mut me = Side {
        t,
        peer: 1,
        inbox: VecDeque::new(),
        alive: &child_alive,
    };
    assert_eq!(me.recv().len(), 5, "hello");
    unlink(&name).unwrap(); // both attached: nothing may be left behind from here on
    let max = me.t.max_packet();
    let mut rng = testkit::Rng::new(1);
    for seq in 0..PING_PONGS {
        me.send(rng.packet_len(max), seq);
        assert!(testkit::check(&me.recv(), seq));
    }
    for seq in 0..STREAM {
        me.send((seq % 200) as usize, seq);
    }
    assert_eq!(me.recv().len(), 2, "copy done");
    let mut status = 0;
    // SAFETY: waits for our own child; `status` is a valid out-pointer.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "child failed: status {status:#x}"
    );
    assert_eq!(
        me.t.stats().timeouts,
        0,
        "parent: lost wake-up: {:?}",
        me.t.stats()
    );
}
