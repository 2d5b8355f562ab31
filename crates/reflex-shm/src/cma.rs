//! Single-copy transfers between processes with Cross Memory Attach (`process_vm_readv(2)`).
//!
//! For large messages the engine runs a rendezvous: the sender puts its pid and the addresses of
//! its buffer (one range per contiguous piece of a derived datatype) in a packet, and the receiver
//! copies straight from the sender's memory into its own buffer with [`read`], one copy in all, as
//! Open MPI `vader`/`sm` and MPICH ch4 IPC do with CMA (`seed002_003.md` §A4.4). Both sides are
//! vectors, so non-contiguous layouts need no packing.
//!
//! The kernel takes at most `UIO_MAXIOV` (1024) ranges per side per call and may stop early
//! (partial transfers happen at range granularity), so [`read`] and [`write`] walk both vectors with
//! cursors and loop until one side is exhausted. The kernel may forbid CMA (ptrace policy, seccomp
//! in containers): [`probe`] tells the engine up front, so that it can fall back to a pipelined copy
//! through the rings. The kernel copies forwards with `rep movsb`, which on AMD Zen3 runs 2-6x
//! slower when the destination is 1-63 bytes ahead of the source modulo 4 KiB; such a transfer
//! of one range each way goes through a bounce buffer instead (`bounced`).

use reflex_base::copy::{copy_bytes, runs_ahead};
use std::cell::RefCell;
use std::io;

/// Most ranges per side in one system call (`UIO_MAXIOV` in `<linux/uio.h>`).
const IOV_MAX: usize = libc::UIO_MAXIOV as usize;

/// The page size as far as address aliasing is concerned (the low 12 bits).
const PAGE: usize = 4096;

/// A position in a list of `(address, length)` ranges.
struct Cursor<'a> {
    ranges: &'a [(usize, usize)],
    index: usize,
    offset: usize,
}

impl<'a> Cursor<'a> {
    fn new(ranges: &'a [(usize, usize)]) -> Self {
        Self {
            ranges,
            index: 0,
            offset: 0,
        }
    }

    /// Fills `out` with the next ranges from the cursor (skipping empty ones); returns how many.
    fn peek(&self, out: &mut [libc::iovec]) -> usize {
        let mut n = 0;
        let mut offset = self.offset;
        for &(addr, len) in &self.ranges[self.index..] {
            if n == out.len() {
                break;
            }
            if len > offset {
                out[n] = libc::iovec {
                    iov_base: (addr + offset) as *mut libc::c_void,
                    iov_len: len - offset,
                };
                n += 1;
            }
            offset = 0;
        }
        n
    }

    /// Moves the cursor `bytes` further.
    fn advance(&mut self, mut bytes: usize) {
        while bytes > 0 && self.index < self.ranges.len() {
            let left = self.ranges[self.index].1 - self.offset;
            if bytes < left {
                self.offset += bytes;
                return;
            }
            bytes -= left;
            self.index += 1;
            self.offset = 0;
        }
    }
}

/// Which way a transfer goes.
#[derive(Clone, Copy)]
enum Direction {
    Read,
    Write,
}

/// A failed transfer: the OS error as the kernel gave it, and how far it got.
struct Failed {
    os: io::Error,
    done: usize,
}

/// Copies between `local` and the ranges `remote` of process `pid` until either side runs out;
/// returns the bytes copied. One range each way whose destination runs just ahead of its source
/// goes through [`bounced`].
fn transfer(
    pid: u32,
    dir: Direction,
    local: &[(usize, usize)],
    remote: &[(usize, usize)],
) -> Result<usize, Failed> {
    if let ([l], [r]) = (local, remote) {
        let (dst, src) = match dir {
            Direction::Read => (l.0, r.0),
            Direction::Write => (r.0, l.0),
        };
        if l.1.min(r.1) >= BOUNCE_MIN && runs_ahead(dst, src) {
            return bounced(pid, dir, (l.0, l.1.min(r.1)), r.0);
        }
    }
    kernel_copy(pid, dir, local, remote)
}

/// Smallest transfer worth a bounce (`bench/aliasprobe.c`: 3000 bytes at a bad offset take 1.8x
/// as long, 32 KiB 4x).
const BOUNCE_MIN: usize = 2048;

/// Bytes per step through the bounce buffer (half the L2 cache, so that the second copy reads it
/// from there).
const BOUNCE_STEP: usize = 128 << 10;

thread_local! {
    /// The bounce buffer of this thread: one step and a page, allocated at first use.
    static BOUNCE: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// A transfer of `len` bytes between the local range at `local` and `remote` whose kernel copy
/// would be 2-6x slower because its stores run a few bytes ahead of its loads modulo 4 KiB
/// (4K aliasing, see `reflex_base::copy`): in steps through a buffer placed at the remote
/// address's page offset, so that the kernel copies with no offset, and this process's copy
/// ([`copy_bytes`]) avoids the aliasing by going backwards. One more copy, of data in the cache:
/// 256 KiB in 34 µs instead of 116-170 (`bench/aliasprobe.c`, cma and backward columns).
fn bounced(
    pid: u32,
    dir: Direction,
    (local, len): (usize, usize),
    remote: usize,
) -> Result<usize, Failed> {
    BOUNCE.with_borrow_mut(|bounce| {
        bounce.resize(BOUNCE_STEP + PAGE, 0);
        let at = remote.wrapping_sub(bounce.as_ptr() as usize) % PAGE;
        let mut done = 0;
        while done < len {
            let n = BOUNCE_STEP.min(len - done);
            let (step, mine) = (&mut bounce[at..at + n], (local + done, n));
            let moved = match dir {
                Direction::Read => {
                    let moved = kernel_copy(
                        pid,
                        dir,
                        &[(step.as_ptr() as usize, n)],
                        &[(remote + done, n)],
                    )
                    .map_err(|f| f.after(done))?;
                    // SAFETY: `read`/`read_into` lend `local..local + len` for writing during the call.
                    let out = unsafe { std::slice::from_raw_parts_mut(mine.0 as *mut u8, moved) };
                    copy_bytes(out, &step[..moved]);
                    moved
                }
                Direction::Write => {
                    // SAFETY: `write` lends `local..local + len` for reading during the call.
                    let input = unsafe { std::slice::from_raw_parts(mine.0 as *const u8, n) };
                    copy_bytes(step, input);
                    kernel_copy(
                        pid,
                        dir,
                        &[(step.as_ptr() as usize, n)],
                        &[(remote + done, n)],
                    )
                    .map_err(|f| f.after(done))?
                }
            };
            done += moved;
            if moved < n {
                break;
            }
        }
        Ok(done)
    })
}

/// [`transfer`] by the system calls alone.
fn kernel_copy(
    pid: u32,
    dir: Direction,
    local: &[(usize, usize)],
    remote: &[(usize, usize)],
) -> Result<usize, Failed> {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return Err(Failed {
            os: io::Error::from_raw_os_error(libc::ESRCH),
            done: 0,
        });
    };
    let empty = libc::iovec {
        iov_base: std::ptr::null_mut(),
        iov_len: 0,
    };
    let mut liov = vec![empty; IOV_MAX.min(local.len().max(1))];
    let mut riov = vec![empty; IOV_MAX.min(remote.len().max(1))];
    let (mut lcur, mut rcur) = (Cursor::new(local), Cursor::new(remote));
    let mut total = 0;
    loop {
        let (nl, nr) = (lcur.peek(&mut liov), rcur.peek(&mut riov));
        if nl == 0 || nr == 0 {
            return Ok(total);
        }
        // SAFETY: the local iovecs are memory lent for this direction and alive for the call
        // (`read`: `&mut` slices; `read_into`: a `&mut RecvBuf`, each piece checked inside it;
        // `write`: shared slices); the kernel checks the remote ranges against the other process.
        let rc = unsafe {
            match dir {
                Direction::Read => {
                    libc::process_vm_readv(pid, liov.as_ptr(), nl as _, riov.as_ptr(), nr as _, 0)
                }
                Direction::Write => {
                    libc::process_vm_writev(pid, liov.as_ptr(), nl as _, riov.as_ptr(), nr as _, 0)
                }
            }
        };
        if rc < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(Failed { os: e, done: total });
        }
        if rc == 0 {
            // Cannot happen with non-empty vectors; never loop on it.
            return Err(Failed {
                os: io::Error::from_raw_os_error(libc::EFAULT),
                done: total,
            });
        }
        let n = rc as usize;
        lcur.advance(n);
        rcur.advance(n);
        total += n;
    }
}

/// Copies from the ranges `remote` (addresses in process `pid`) into the `local` slices, in order,
/// until either side is exhausted; returns the number of bytes copied.
pub fn read(pid: u32, remote: &[(usize, usize)], local: &mut [&mut [u8]]) -> io::Result<usize> {
    let local: Vec<(usize, usize)> = local
        .iter_mut()
        .map(|s| (s.as_mut_ptr() as usize, s.len()))
        .collect();
    transfer(pid, Direction::Read, &local, remote).map_err(|f| f.explain("read from", pid))
}

/// Copies from the ranges `remote` of process `pid` into the pieces `local` of `dst` (each an
/// `(offset, len)` inside `dst`, in order: the scattered blocks of a derived datatype), until either
/// side is exhausted; returns the number of bytes copied. A piece outside `dst` is refused.
pub fn read_into(
    pid: u32,
    remote: &[(usize, usize)],
    dst: &mut reflex_base::buf::RecvBuf,
    local: &[(usize, usize)],
) -> io::Result<usize> {
    let base = dst.addr();
    let local = local
        .iter()
        .map(|&(offset, len)| match offset.checked_add(len) {
            Some(end) if end <= dst.len() => Ok((base + offset, len)),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "piece {offset}+{len} lies outside a buffer of {} bytes",
                    dst.len()
                ),
            )),
        })
        .collect::<io::Result<Vec<_>>>()?;
    transfer(pid, Direction::Read, &local, remote).map_err(|f| f.explain("read from", pid))
}

/// Copies the `local` slices into the ranges `remote` (addresses in process `pid`), in order, until
/// either side is exhausted; returns the number of bytes copied.
///
/// Memory safety of *this* process does not depend on `remote`; the other process must expect the
/// write (the rendezvous protocol hands out the addresses).
pub fn write(pid: u32, local: &[&[u8]], remote: &[(usize, usize)]) -> io::Result<usize> {
    let local: Vec<(usize, usize)> = local
        .iter()
        .map(|s| (s.as_ptr() as usize, s.len()))
        .collect();
    transfer(pid, Direction::Write, &local, remote).map_err(|f| f.explain("write to", pid))
}

impl Failed {
    /// The same failure, `before` more bytes into the transfer.
    fn after(self, before: usize) -> Self {
        Failed {
            os: self.os,
            done: self.done + before,
        }
    }

    fn explain(self, verb: &str, pid: u32) -> io::Error {
        let Failed { os, done } = self;
        io::Error::new(
            os.kind(),
            format!("cannot {verb} process {pid} (after {done} bytes): {os}"),
        )
    }
}

/// Whether this process may use CMA on process `pid`; [`check`] gives the reason if not.
pub fn probe(pid: u32) -> bool {
    check(pid).is_ok()
}

/// Checks that this process may use CMA on process `pid`.
///
/// Reads one byte at address 0 of `pid`: the kernel checks the permission (`EPERM`), the process
/// (`ESRCH`) and the system call itself (`ENOSYS`) before it looks at the address, so `EFAULT`
/// (page 0 is never mapped) means that CMA works.
pub fn check(pid: u32) -> io::Result<()> {
    let mut byte = 0u8;
    let local = [(&mut byte as *mut u8 as usize, 1)];
    match transfer(pid, Direction::Read, &local, &[(0, 1)]) {
        Ok(_) => Ok(()),
        Err(f) if f.os.raw_os_error() == Some(libc::EFAULT) => Ok(()),
        Err(f) => Err(f.explain("use cross-memory attach on", pid)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn me() -> u32 {
        std::process::id()
    }

    #[test]
    fn reads_between_differently_cut_vectors() {
        let src: Vec<u8> = (0..=255).cycle().take(10_000).collect();
        // Remote ranges of 3, 5, 7, ... bytes; local pieces of 100 bytes.
        let mut remote = Vec::new();
        let (mut at, mut len) = (0, 3);
        while at < src.len() {
            let l = len.min(src.len() - at);
            remote.push((src.as_ptr() as usize + at, l));
            at += l;
            len += 2;
        }
        let mut dst = vec![0u8; src.len()];
        let mut pieces: Vec<&mut [u8]> = dst.chunks_mut(100).collect();
        assert_eq!(read(me(), &remote, &mut pieces).unwrap(), src.len());
        assert_eq!(dst, src);
    }

    #[test]
    fn splits_beyond_iov_max_and_stops_at_the_shorter_side() {
        let src: Vec<u8> = (0..5000u32).map(|i| i as u8).collect();
        let remote: Vec<(usize, usize)> =
            (0..5000).map(|i| (src.as_ptr() as usize + i, 1)).collect();
        let mut dst = vec![0u8; 3000];
        let mut pieces: Vec<&mut [u8]> = dst.chunks_mut(1).collect();
        assert_eq!(read(me(), &remote, &mut pieces).unwrap(), 3000);
        assert_eq!(read(me(), &[], &mut pieces).unwrap(), 0);
        assert_eq!(
            read(me(), &[(src.as_ptr() as usize, 0)], &mut pieces).unwrap(),
            0
        );
        assert_eq!(dst, src[..3000]);
    }

    #[test]
    fn reads_into_scattered_pieces_of_a_buffer() {
        let src: Vec<u8> = (0..32).collect();
        let mut dst = vec![0xeeu8; 40];
        // SAFETY: `dst` outlives `buf` and is not touched while `buf` is in use.
        let mut buf = unsafe { reflex_base::buf::RecvBuf::from_raw(dst.as_mut_ptr(), dst.len()) };
        let remote = [(src.as_ptr() as usize, 32)];
        let pieces = [(30, 10), (0, 6), (10, 16)];
        assert_eq!(read_into(me(), &remote, &mut buf, &pieces).unwrap(), 32);
        assert_eq!(&dst[30..40], &src[..10]);
        assert_eq!(&dst[0..6], &src[10..16]);
        assert_eq!(&dst[10..26], &src[16..32]);
        assert_eq!(dst[6..10], [0xee; 4]);
        let err = read_into(me(), &remote, &mut buf, &[(35, 6)]).unwrap_err();
        assert!(err.to_string().contains("outside"), "{err}");
    }

    #[test]
    fn writes_into_ranges() {
        let mut dst = vec![0u8; 64];
        let remote = [
            (dst.as_mut_ptr() as usize + 10, 4),
            (dst.as_mut_ptr() as usize + 40, 4),
        ];
        assert_eq!(write(me(), &[b"abcdef", b"gh"], &remote).unwrap(), 8);
        assert_eq!(&dst[10..14], b"abcd");
        assert_eq!(&dst[40..44], b"efgh");
    }

    #[test]
    fn bad_addresses_and_pids_are_errors_with_reasons() {
        let mut buf = [0u8; 8];
        let err = read(me(), &[(8, 8)], &mut [&mut buf]).unwrap_err();
        assert!(err.to_string().contains("Bad address"), "{err}");
        assert!(err.to_string().contains(&me().to_string()), "{err}");
        assert!(read(u32::MAX, &[(8, 8)], &mut [&mut buf]).is_err());
        assert!(!probe(i32::MAX as u32), "no such process");
        assert!(check(i32::MAX as u32)
            .unwrap_err()
            .to_string()
            .contains("No such process"));
        assert!(probe(me()));
    }

    /// Two disjoint regions of one allocation whose distance is a multiple of the page size, so
    /// that `(dst - src) mod 4096` is the difference of the offsets chosen in them.
    fn halves(len: usize) -> (Vec<u8>, usize) {
        let half = (len + 2 * PAGE).next_multiple_of(PAGE);
        let mem = (0..2 * half).map(|i| (i * 7 + i / 251) as u8).collect();
        (mem, half)
    }

    #[test]
    fn reads_and_writes_at_aliasing_offsets_copy_exactly() {
        for len in [
            BOUNCE_MIN - 1,
            BOUNCE_MIN,
            5000,
            BOUNCE_STEP + 4099,
            3 * BOUNCE_STEP,
        ] {
            for (so, dof) in [(0, 1), (5, 36), (0, 63), (0, 64), (64, 0), (100, 100)] {
                for write_side in [false, true] {
                    let (mut mem, half) = halves(len);
                    let mut want = mem.clone();
                    want.copy_within(so..so + len, half + dof);
                    let base = mem.as_mut_ptr() as usize;
                    let (src, dst) = (base + so, base + half + dof);
                    let (lo, hi) = mem.split_at_mut(half);
                    let moved = if write_side {
                        write(me(), &[&lo[so..so + len]], &[(dst, len)])
                    } else {
                        read(me(), &[(src, len)], &mut [&mut hi[dof..dof + len]])
                    };
                    assert_eq!(moved.unwrap(), len);
                    let case = format!("len {len}, offsets {so} -> {dof}, write {write_side}");
                    assert!(mem == want, "{case}");
                }
            }
        }
    }

    #[test]
    fn a_bounced_transfer_that_fails_is_an_error() {
        let mut buf = vec![0u8; 2 * BOUNCE_STEP];
        let dst = buf.as_mut_ptr() as usize;
        // In the never-mapped first pages, one byte behind `dst` modulo 4096: bounced.
        let bad = PAGE + (dst - 1) % PAGE;
        assert!(runs_ahead(dst, bad));
        let err = read(me(), &[(bad, buf.len())], &mut [&mut buf[..]]).unwrap_err();
        assert!(err.to_string().contains("after 0 bytes"), "{err}");
        let err = write(me(), &[&buf[..]], &[(PAGE + (dst + 1) % PAGE, buf.len())]).unwrap_err();
        assert!(err.to_string().contains("Bad address"), "{err}");
    }
}
