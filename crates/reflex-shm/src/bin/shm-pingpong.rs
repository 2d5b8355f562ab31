//! `shm-pingpong`: one-way latency and streaming bandwidth of the shared-memory transport between
//! two processes (forked, pinned to two cores, one segment), for each wake ordering.
//!
//! - latency: half the round trip of a packet echoed back, 8 B to 4 KiB, the fastest of 5 batches;
//!   the receiver copies every payload out (as the engine's eager path does), the sender copies in;
//! - message rate: a stream of 8-byte packets; bandwidth: a stream of maximum packets, copied out
//!   by the receiver, timed until its acknowledgement;
//! - the floor: a bare flag bounced through one shared line (the cache-line handoff).
//!
//! `--block` makes both sides sleep on their doorbell whenever idle, so every message pays a futex
//! wake-up (the block half of spin-then-block).
//!
//! Usage: `shm-pingpong [--iters N] [--stream-mib M] [--ring BYTES] [--ordering fence|membarrier|both]
//! [--sizes A,B,..] [--block] [--cpus A,B | --no-pin]`

use reflex_base::cache::CACHE_PAD;
use reflex_base::segment::{segment_name, unlink, Segment};
use reflex_base::transport::Transport;
use reflex_shm::{ShmParams, ShmSegment, ShmTransport, WakeOrdering};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Packet sizes of the latency table unless `--sizes` says otherwise.
const SIZES: [usize; 7] = [8, 64, 128, 256, 1024, 2048, 4096];

#[derive(Debug, Clone)]
struct Options {
    iters: u64,
    sizes: Vec<usize>,
    stream_mib: u64,
    ring_bytes: usize,
    orderings: Vec<WakeOrdering>,
    block: bool,
    /// Cores for the leader and the echo process (`None`: not pinned).
    cpus: Option<(usize, usize)>,
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options {
        iters: 100_000,
        sizes: SIZES.to_vec(),
        stream_mib: 512,
        ring_bytes: reflex_shm::DEFAULT_RING_BYTES,
        orderings: vec![WakeOrdering::Fence, WakeOrdering::Membarrier],
        block: false,
        cpus: Some((0, 1)),
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match a.as_str() {
            "--iters" => o.iters = number(&value("--iters")?)?,
            "--sizes" => {
                o.sizes = value("--sizes")?
                    .split(',')
                    .map(|v| number(v).map(|n| n as usize))
                    .collect::<Result<_, _>>()?
            }
            "--stream-mib" => o.stream_mib = number(&value("--stream-mib")?)?,
            "--ring" => o.ring_bytes = number(&value("--ring")?)? as usize,
            "--ordering" => {
                o.orderings = match value("--ordering")?.as_str() {
                    "fence" => vec![WakeOrdering::Fence],
                    "membarrier" => vec![WakeOrdering::Membarrier],
                    "both" => vec![WakeOrdering::Fence, WakeOrdering::Membarrier],
                    other => {
                        return Err(format!(
                            "unknown ordering {other:?}: want fence, membarrier or both"
                        ))
                    }
                }
            }
            "--block" => o.block = true,
            "--no-pin" => o.cpus = None,
            "--cpus" => {
                let v = value("--cpus")?;
                let (a, b) = v
                    .split_once(',')
                    .ok_or_else(|| format!("--cpus wants A,B, not {v:?}"))?;
                o.cpus = Some((number(a)? as usize, number(b)? as usize));
            }
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if let Some(bad) = o
        .sizes
        .iter()
        .find(|&&s| s > reflex_shm::ring::max_packet(o.ring_bytes))
    {
        return Err(format!(
            "size {bad} exceeds the largest packet of a {}-byte ring",
            o.ring_bytes
        ));
    }
    if o.iters == 0 {
        return Err("--iters must be at least 1".into());
    }
    Ok(o)
}

fn number(s: &str) -> Result<u64, String> {
    s.parse().map_err(|_| format!("not a number: {s:?}"))
}

/// One side: the transport, its peer, a source buffer to copy in and a sink to copy out.
struct Side {
    t: ShmTransport,
    peer: usize,
    src: Vec<u8>,
    sink: Vec<u8>,
    block: bool,
}

impl Side {
    fn idle(&mut self) {
        if self.block {
            self.t.sleep(Duration::from_secs(1));
        } else {
            std::hint::spin_loop();
        }
    }

    fn send(&mut self, len: usize) {
        loop {
            let src = &self.src[..len];
            if self
                .t
                .try_send(self.peer, len, |b| b.copy_from_slice(src))
                .is_ok()
            {
                return;
            }
            // Free our own incoming rings meanwhile (nothing is expected there while streaming).
            self.idle();
        }
    }

    /// Receives `count` packets, copying each out; returns the bytes received.
    fn recv(&mut self, count: u64) -> usize {
        let (mut got, mut bytes) = (0, 0);
        while got < count {
            let sink = &mut self.sink;
            let n = self.t.poll(|_, b| {
                sink[..b.len()].copy_from_slice(b);
                bytes += b.len();
            });
            got += n as u64;
            if n == 0 {
                self.idle();
            }
        }
        bytes
    }
}

/// What the leader measured in one run.
struct Report {
    /// Nanoseconds per packet sent to and received from the own ring (no transfer between cores).
    self_ns: f64,
    /// One-way time of a bare flag through shared memory: the physical floor.
    floor_us: f64,
    one_way_us: Vec<f64>,
    /// 8-byte packets per second, streamed.
    rate_mpps: f64,
    stream_gbs: f64,
    stats: reflex_shm::ShmStats,
}

fn pin(cpu: usize) {
    // SAFETY: cpu_set_t is plain data; zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    if cpu >= libc::CPU_SETSIZE as usize {
        eprintln!("shm-pingpong: cpu {cpu} out of range");
        return;
    }
    // SAFETY: CPU_SET writes one bit of `set`; `cpu` is below CPU_SETSIZE (checked).
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: pid 0 is this thread; `set` is a valid cpu set of the size given.
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) } != 0 {
        eprintln!(
            "shm-pingpong: cannot pin to cpu {cpu}: {}",
            std::io::Error::last_os_error()
        );
    }
}

/// Batches per latency point; the fastest batch is reported (the least disturbed by other load).
const BATCHES: u64 = 5;

/// The whole exchange, run by both processes: rank 0 leads and measures, rank 1 echoes.
fn latencies(side: &mut Side, rank: usize, o: &Options) -> Vec<f64> {
    let per_batch = (o.iters / BATCHES).max(1);
    let mut one_way = Vec::new();
    for &size in &o.sizes {
        let mut best = f64::INFINITY;
        for batch in 0..=BATCHES {
            let start = Instant::now();
            for _ in 0..per_batch {
                if rank == 0 {
                    side.send(size);
                    side.recv(1);
                } else {
                    side.recv(1);
                    side.send(size);
                }
            }
            let us = start.elapsed().as_secs_f64() * 1e6 / (2 * per_batch) as f64;
            if batch > 0 {
                best = best.min(us); // batch 0 warms up
            }
        }
        one_way.push(best);
    }
    one_way
}

/// Streams `count` packets of `len` bytes to the peer, which acknowledges the last; returns the
/// seconds taken.
fn stream(side: &mut Side, rank: usize, len: usize, count: u64) -> f64 {
    let start = Instant::now();
    if rank == 0 {
        for _ in 0..count {
            side.send(len);
        }
        side.recv(1);
    } else {
        side.recv(count);
        side.send(8);
    }
    start.elapsed().as_secs_f64()
}

/// The floor: a bare 64-bit flag bounced between the two processes through a shared line.
fn flag_ping_pong(lines: &[AtomicU64], rank: usize, iters: u64) -> f64 {
    let start = Instant::now();
    for i in 1..=iters {
        if rank == 0 {
            lines[0].store(i, Ordering::Release);
            while lines[CACHE_PAD / 8].load(Ordering::Acquire) != i {
                std::hint::spin_loop();
            }
        } else {
            while lines[0].load(Ordering::Acquire) != i {
                std::hint::spin_loop();
            }
            lines[CACHE_PAD / 8].store(i, Ordering::Release);
        }
    }
    start.elapsed().as_secs_f64() * 1e6 / (2 * iters) as f64
}

/// The fast path's cost without any cache-line transfer: 8-byte packets sent to this rank's own
/// ring and received back in batches, in nanoseconds per packet.
fn self_loop(side: &mut Side, iters: u64) -> f64 {
    let me = side.t.rank();
    let batch = reflex_shm::POLL_BURST as u64;
    let start = Instant::now();
    for _ in 0..iters / batch {
        for _ in 0..batch {
            let sent = side.t.try_send(me, 8, |b| b.copy_from_slice(&[1; 8]));
            debug_assert!(sent.is_ok());
        }
        let got = side.t.poll(|_, b| {
            std::hint::black_box(b);
        });
        assert_eq!(
            got as u64, batch,
            "self ring: every packet comes back in one poll"
        );
    }
    start.elapsed().as_secs_f64() * 1e9 / (iters / batch * batch) as f64
}

/// Everything both processes run, in the same order.
fn exchange(side: &mut Side, rank: usize, o: &Options, flags: &[AtomicU64]) -> Report {
    let max = side.t.max_packet();
    let self_ns = if rank == 0 {
        self_loop(side, o.iters * 10)
    } else {
        0.0
    };
    let floor_us = flag_ping_pong(flags, rank, o.iters);
    let one_way_us = latencies(side, rank, o);
    let small = o.iters * 20;
    let rate_mpps = small as f64 / stream(side, rank, 8, small) / 1e6;
    let count = (o.stream_mib << 20) / max as u64;
    let stream_gbs = (count * max as u64) as f64 / stream(side, rank, max, count) / 1e9;
    Report {
        self_ns,
        floor_us,
        one_way_us,
        rate_mpps,
        stream_gbs,
        stats: side.t.stats(),
    }
}

fn run(o: &Options, ordering: WakeOrdering) -> Result<Report, String> {
    let name = segment_name(&format!("pingpong{}", std::process::id()), 0);
    let seg = ShmSegment::create(
        &name,
        2,
        &ShmParams {
            ring_bytes: o.ring_bytes,
        },
    )
    .map_err(|e| e.to_string())?;
    let max = seg.max_packet();
    // Two lines for the floor measurement, inherited by the child: the name is removed at once.
    let flag_name = format!("{name}.flag");
    let flag_seg = Segment::create(&flag_name, 4096).map_err(|e| e.to_string())?;
    unlink(&flag_name).map_err(|e| e.to_string())?;
    // SAFETY: the mapping is 4096 zeroed, page-aligned bytes, alive until the end of this function
    // in both processes, and accessed only as atomics.
    let flags =
        unsafe { std::slice::from_raw_parts(flag_seg.as_ptr().cast::<AtomicU64>(), 4096 / 8) };
    let side = |t, peer| Side {
        t,
        peer,
        src: vec![7; max],
        sink: vec![0; max],
        block: o.block,
    };
    // SAFETY: single-threaded here; the child runs plain Rust code and ends in _exit.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        let _ = unlink(&name);
        return Err(format!("fork failed: {}", std::io::Error::last_os_error()));
    }
    if pid == 0 {
        // SAFETY: prctl with PR_SET_PDEATHSIG takes a signal number and touches no memory.
        unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
        drop(seg);
        let code = std::panic::catch_unwind(|| {
            if let Some((_, cpu)) = o.cpus {
                pin(cpu);
            }
            let t =
                ShmTransport::with_ordering(ShmSegment::open(&name).unwrap(), 1, ordering).unwrap();
            let mut me = side(t, 0);
            me.send(8);
            exchange(&mut me, 1, o, flags);
        })
        .map_or(1, |()| 0);
        // SAFETY: ends the child without running the parent's exit handlers.
        unsafe { libc::_exit(code) };
    }
    if let Some((cpu, _)) = o.cpus {
        pin(cpu);
    }
    let t = ShmTransport::with_ordering(seg, 0, ordering);
    let mut me = side(t.map_err(|e| e.to_string())?, 1);
    me.recv(1);
    unlink(&name).map_err(|e| e.to_string())?;
    let report = exchange(&mut me, 0, o, flags);
    let mut status = 0;
    // SAFETY: waits for our own child; `status` is a valid out-pointer.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
        return Err(format!("echo process failed (status {status:#x})"));
    }
    Ok(report)
}

fn main() {
    let o = match parse_args() {
        Ok(o) => o,
        Err(msg) => {
            if !msg.is_empty() {
                eprintln!("shm-pingpong: {msg}");
            }
            eprintln!("usage: shm-pingpong [--iters N] [--stream-mib M] [--ring BYTES] [--ordering fence|membarrier|both] [--sizes A,B,..] [--block] [--cpus A,B | --no-pin]");
            std::process::exit(2);
        }
    };
    let mut reports = Vec::new();
    for &ordering in &o.orderings {
        match run(&o, ordering) {
            Ok(r) => reports.push((ordering, r)),
            Err(e) => {
                eprintln!("shm-pingpong: {ordering:?}: {e}");
                std::process::exit(1);
            }
        }
    }
    let mode = if o.block {
        "sleep when idle (futex wake per message)"
    } else {
        "spin"
    };
    println!(
        "shm-pingpong: ring {} B, {} iterations, {mode}, {}",
        o.ring_bytes,
        o.iters,
        o.cpus.map_or("not pinned".to_string(), |(a, b)| format!(
            "pinned to cpus {a}/{b}"
        ))
    );
    print!("{:>10}", "size (B)");
    for (ordering, _) in &reports {
        print!("{:>24}", format!("one-way us, {ordering:?}"));
    }
    println!();
    for (i, size) in o.sizes.iter().enumerate() {
        print!("{size:>10}");
        for (_, r) in &reports {
            print!("{:>24.3}", r.one_way_us[i]);
        }
        println!();
    }
    let row = |label: &str, f: &dyn Fn(&Report) -> f64| {
        print!("{label:>10}");
        for (_, r) in &reports {
            print!("{:>24.3}", f(r));
        }
        println!();
    };
    row("Mpkt/s 8B", &|r| r.rate_mpps);
    row("GB/s max", &|r| r.stream_gbs);
    row("flag (us)", &|r| r.floor_us);
    row("self (ns)", &|r| r.self_ns);
    for (ordering, r) in &reports {
        println!("leader's slow paths ({ordering:?}): {:?}", r.stats);
    }
}
