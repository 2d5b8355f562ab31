//! Byte copies for the data paths: tiny copies inline, and large copies that dodge the 4K-aliasing
//! slow path of the C library's `memcpy`.
//!
//! [`copy_bytes`] is `dst.copy_from_slice(src)` with two differences:
//!
//! - **Up to [`INLINE_MAX`] bytes it copies inline**, as two overlapping fixed-size moves (the
//!   technique of glibc's own small-size `memcpy`), with no call: a shared-memory `MPI_Put` of 8
//!   bytes is otherwise a third call deeper for about a dozen instructions (callgrind, 2026-11-26).
//! - **It avoids a forward copy whose stores run just ahead of its loads modulo 4 KiB.** The CPU
//!   compares a load with the older stores still in flight by the low 12 address bits only; when
//!   `(dst - src) mod 4096` is small and positive, every load of a forward copy looks as if it
//!   depended on a store issued a moment before (4K aliasing) and waits for it. glibc 2.36's
//!   `memcpy` copies 2113 bytes .. 512 KiB (the L2 size on AMD) with `rep movsb`, and on this AMD
//!   Zen3 (EPYC, KVM) that copy runs 20-30 times slower at a relative offset of 1..31 bytes: 32 KiB
//!   take 11-17 µs instead of 0.7 (`bench/aliasprobe.c`, 2026-11-26; also 1.5-2x at some
//!   offsets up to 63). Below and above that range glibc uses vector loops, which lose far less
//!   (1.5-3x below it, nothing above). In that case this copy runs **backwards** in 64-byte
//!   blocks, whose destination is 64-byte aligned: a load then never follows a store to a higher
//!   address, so nothing aliases (0.8-1.1 µs for 32 KiB at every offset, 6.5-9.9 µs for 256 KiB,
//!   against 0.65-0.8 and 6.3-7.4 for `memcpy` at good offsets).
//!
//! The kernel's copies (`process_vm_readv`) show the same 2-6x slow-down at those offsets;
//! `reflex-shm`'s `cma.rs` asks [`runs_ahead`] and then copies through a buffer of its own.
//! `bench/aliasprobe.c` measures all of these.

/// Largest copy done inline (two overlapping moves of at most 64 bytes).
pub const INLINE_MAX: usize = 128;

/// Smallest and largest copy that `memcpy` does with `rep movsb` (glibc 2.36 on AMD with FSRM:
/// above 2112 bytes, below the 512 KiB L2 size), where 4K aliasing costs 20x. Below and above,
/// `memcpy` is left alone: its vector loops handle the aliasing, and at 1 MiB and beyond its
/// non-temporal stores beat the backward loop by up to 1.4x. (2048-2112 bytes went backwards
/// until 2026-11-27: a 2 KiB `MPI_Get` 16 bytes ahead took 42-48 ns that way against 22-33 for
/// `memcpy`'s vector loop, `bench/rmaloop.c get 200000 2048`.)
const ALIAS_RANGE: std::ops::Range<usize> = 2113..512 * 1024;

/// Relative offsets `(dst - src) mod 4096` copied backwards (1..31 measured 20x slower, up to 63
/// sometimes 2x; the backward loop costs the same as `memcpy` at good offsets).
const ALIAS_SPAN: usize = 64;

/// A vector register's worth of bytes (SSE2, which every x86_64 has), moved by one instruction.
#[cfg(target_arch = "x86_64")]
pub(crate) type Lane = std::arch::x86_64::__m128i;
/// A vector register's worth of bytes (elsewhere a pair of registers).
#[cfg(not(target_arch = "x86_64"))]
pub(crate) type Lane = u128;

/// Bytes per [`Lane`].
pub(crate) const LANE: usize = std::mem::size_of::<Lane>();

/// Bytes per block of the backward copy (one cache line).
pub(crate) const BLOCK: usize = 64;

/// Copies `src` into `dst` (`dst.copy_from_slice(src)`, see the module documentation).
///
/// # Panics
/// When the lengths differ, as `copy_from_slice` does.
#[inline(always)] // a jump on the length and a few moves; large copies call out
pub fn copy_bytes(dst: &mut [u8], src: &[u8]) {
    assert_eq!(dst.len(), src.len(), "copy_bytes: lengths differ");
    match dst.len() {
        0 => {}
        n @ 1..=3 => {
            dst[0] = src[0];
            dst[n / 2] = src[n / 2];
            dst[n - 1] = src[n - 1];
        }
        4..=7 => ends::<u32>(dst, src),
        8..=16 => ends::<u64>(dst, src),
        17..=32 => ends_lanes::<1>(dst, src),
        33..=64 => ends_lanes::<2>(dst, src),
        65..=INLINE_MAX => ends_lanes::<4>(dst, src),
        _ => copy_large(dst, src),
    }
}

/// Copies `k <= len <= 2k` bytes (`k` the size of the integer type `T`) as the first `k` and the
/// last `k` (overlapping in the middle).
#[inline(always)]
fn ends<T: Copy>(dst: &mut [u8], src: &[u8]) {
    let (n, k) = (dst.len(), std::mem::size_of::<T>());
    let (head, tail) = (load::<T>(src, 0), load::<T>(src, n - k));
    store(dst, 0, head);
    store(dst, n - k, tail);
}

/// [`ends`] with `k = 16 L` bytes moved as `L` vector lanes each (all loads, then the stores;
/// lanes rather than one array type so that the values stay in registers).
#[inline(always)]
fn ends_lanes<const L: usize>(dst: &mut [u8], src: &[u8]) {
    let (n, k) = (dst.len(), LANE * L);
    let (head, tail) = (lanes::<Lane, L>(src, 0), lanes::<Lane, L>(src, n - k));
    store_lanes(dst, 0, head);
    store_lanes(dst, n - k, tail);
}

/// The `L` lanes of type `T` (a vector type) at byte `at` of `src`.
#[inline(always)]
pub(crate) fn lanes<T: Copy, const L: usize>(src: &[u8], at: usize) -> [T; L] {
    // (`array::from_fn` is not always inlined, and then the lanes go through the stack.)
    let width = std::mem::size_of::<T>();
    let mut v = [load::<T>(src, at); L];
    for (i, lane) in v.iter_mut().enumerate().skip(1) {
        *lane = load(src, at + width * i);
    }
    v
}

/// Writes `L` lanes of type `T` at byte `at` of `dst`.
#[inline(always)]
fn store_lanes<T: Copy, const L: usize>(dst: &mut [u8], at: usize, v: [T; L]) {
    let width = std::mem::size_of::<T>();
    for (i, lane) in v.into_iter().enumerate() {
        store(dst, at + width * i, lane);
    }
}

/// The `T` (an integer or vector type) at byte `at` of `src`, read unaligned.
#[inline(always)]
fn load<T: Copy>(src: &[u8], at: usize) -> T {
    let last = src.len().checked_sub(std::mem::size_of::<T>());
    assert!(last.is_some_and(|last| at <= last), "load past the end");
    // SAFETY: the bytes `at..at + size_of::<T>()` are inside `src` (checked); the read is
    // unaligned, and `T` (integers, vectors of them) has no invalid bit patterns.
    unsafe { src.as_ptr().add(at).cast::<T>().read_unaligned() }
}

/// Writes `v` at byte `at` of `dst`, unaligned.
#[inline(always)]
fn store<T: Copy>(dst: &mut [u8], at: usize, v: T) {
    let last = dst.len().checked_sub(std::mem::size_of::<T>());
    assert!(last.is_some_and(|last| at <= last), "store past the end");
    // SAFETY: the bytes `at..at + size_of::<T>()` are inside `dst` (checked), which we may write.
    unsafe { dst.as_mut_ptr().add(at).cast::<T>().write_unaligned(v) }
}

/// A copy of more than [`INLINE_MAX`] bytes.
#[inline(never)] // keeps the inline cases small at every call site
fn copy_large(dst: &mut [u8], src: &[u8]) {
    if aliases(dst.as_ptr() as usize, src.as_ptr() as usize, dst.len()) {
        copy_backward(dst, src);
    } else {
        dst.copy_from_slice(src);
    }
}

/// Whether `memcpy` of `len` bytes from `src` to `dst` would hit 4K aliasing.
fn aliases(dst: usize, src: usize, len: usize) -> bool {
    ALIAS_RANGE.contains(&len) && runs_ahead(dst, src)
}

/// Whether a forward copy from address `src` to address `dst` has its stores a little ahead of
/// its loads modulo 4 KiB (`(dst - src) mod 4096` in 1..63), where copies that go forward in
/// large steps (`rep movsb`, also the kernel's `process_vm_readv`) hit 4K aliasing.
pub fn runs_ahead(dst: usize, src: usize) -> bool {
    (1..ALIAS_SPAN).contains(&(dst.wrapping_sub(src) % 4096))
}

/// Copies `src` into `dst` from the end to the start (see [`copy_backward_in`]), with 32-byte
/// AVX moves where the CPU has them: on this project's AMD EPYC the 16-byte SSE2 loop takes
/// 1.6-1.8x as long (16 KiB: 437-445 ns against 271-277, 2026-11-27), its stores being the limit.
fn copy_backward(dst: &mut [u8], src: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx") {
        // SAFETY: the CPU has AVX (checked just above), all `copy_backward_avx` requires.
        return unsafe { copy_backward_avx(dst, src) };
    }
    copy_backward_in::<Lane, { BLOCK / LANE }>(dst, src);
}

/// [`copy_backward_in`] with 32-byte AVX lanes.
///
/// # Safety
/// The CPU must have AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn copy_backward_avx(dst: &mut [u8], src: &[u8]) {
    copy_backward_in::<std::arch::x86_64::__m256i, 2>(dst, src);
}

/// Copies `src` into `dst` from the end to the start (see [`backward_blocks`]), each block as
/// `L` lanes of `T`, all loads, then all stores.
#[inline(always)]
fn copy_backward_in<T: Copy, const L: usize>(dst: &mut [u8], src: &[u8]) {
    debug_assert_eq!(L * std::mem::size_of::<T>(), BLOCK, "a block is L lanes");
    backward_blocks(dst, src, |d, s| store_lanes(d, 0, lanes::<T, L>(s, 0)));
}

/// Copies `src` into `dst` from the end to the start: the bytes past the last 64-byte boundary
/// of `dst`, then whole aligned blocks downwards with `block`, then the bytes before the first
/// boundary.
#[inline(always)]
pub(crate) fn backward_blocks(
    dst: &mut [u8],
    src: &[u8],
    mut block: impl FnMut(&mut [u8; BLOCK], &[u8; BLOCK]),
) {
    let n = dst.len();
    let tail = ((dst.as_ptr() as usize + n) % BLOCK).min(n);
    let body = n - tail;
    dst[body..].copy_from_slice(&src[body..]);
    let head = body % BLOCK;
    let (d_head, d_blocks) = dst[..body].split_at_mut(head);
    let (s_head, s_blocks) = src[..body].split_at(head);
    let (d_blocks, _) = d_blocks.as_chunks_mut::<BLOCK>();
    let (s_blocks, _) = s_blocks.as_chunks::<BLOCK>();
    for (d, s) in d_blocks.iter_mut().zip(s_blocks).rev() {
        block(d, s);
    }
    d_head.copy_from_slice(s_head);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A buffer of `n` bytes whose content depends on `seed` and the position.
    fn pattern(n: usize, seed: u8) -> Vec<u8> {
        (0..n)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 8) as u8)
            .collect()
    }

    /// Copies `len` bytes from offset `so` to offset `do_` of two halves of one allocation whose
    /// distance is a multiple of 4096, so that `(dst - src) mod 4096` is `do_ - so` exactly, and
    /// checks every byte, including the guard bytes around the destination.
    fn check(len: usize, so: usize, do_: usize) {
        let half = (len + 128).next_multiple_of(4096);
        let mut mem = pattern(2 * half, 7);
        let mut want = mem.clone();
        want.copy_within(so..so + len, half + do_);
        let (src, dst) = mem.split_at_mut(half);
        copy_bytes(&mut dst[do_..do_ + len], &src[so..so + len]);
        assert!(mem == want, "len {len}, src offset {so}, dst offset {do_}");
    }

    #[test]
    fn every_small_length_at_every_alignment_copies_exactly() {
        for len in 0..=2 * INLINE_MAX + 3 {
            for so in 0..16 {
                for do_ in [0, 1, 3, 8, 15, 33, 63] {
                    check(len, so, do_);
                }
            }
        }
    }

    #[test]
    fn large_copies_at_aliasing_offsets_copy_exactly() {
        // (dst - src) mod 4096 is the offset difference: the backward path (1..63 ahead) and the
        // memcpy path (0, 64, behind) alike.
        let lens = [
            2047,
            2048,
            2049,
            2113,
            3000,
            4096,
            4159,
            32768,
            32768 + 37,
            70001,
        ];
        for len in lens {
            for (so, do_) in [
                (0, 1),
                (0, 31),
                (5, 36),
                (0, 63),
                (3, 0),
                (0, 64),
                (0, 0),
                (64, 1),
            ] {
                check(len, so, do_);
            }
        }
    }

    #[test]
    fn the_backward_copy_is_chosen_exactly_for_small_positive_offsets_in_the_memcpy_range() {
        let page = 1 << 20;
        assert!(aliases(page + 1, page, 32768));
        assert!(aliases(page + 63, page, 2113));
        assert!(aliases(page + 4096 * 3 + 8, page, 256 * 1024));
        assert!(!aliases(page + 64, page, 32768));
        assert!(!aliases(page, page, 32768));
        assert!(!aliases(page - 8, page, 32768)); // stores behind the loads: no aliasing
        assert!(!aliases(page + 1, page, 2112));
        assert!(!aliases(page + 16, page, 2048));
        assert!(!aliases(page + 1, page, 512 * 1024));
    }

    #[test]
    fn the_backward_copy_itself_copies_every_length_and_alignment() {
        for len in (0..300).chain([1000, 4096, 4097, 9999]) {
            for (so, do_) in [(0, 0), (0, 1), (7, 0), (13, 50), (64, 63)] {
                let src = pattern(so + len, 3);
                let mut dst = pattern(do_ + len + 5, 200);
                let mut want = dst.clone();
                want[do_..do_ + len].copy_from_slice(&src[so..]);
                copy_backward(&mut dst[do_..do_ + len], &src[so..]);
                assert!(dst == want, "len {len}, src offset {so}, dst offset {do_}");
                let mut dst = pattern(do_ + len + 5, 200);
                copy_backward_in::<Lane, { BLOCK / LANE }>(&mut dst[do_..do_ + len], &src[so..]);
                assert!(dst == want, "16-byte lanes: len {len}, offsets {so}, {do_}");
            }
        }
    }

    #[test]
    #[should_panic(expected = "lengths differ")]
    fn different_lengths_panic_as_copy_from_slice_does() {
        copy_bytes(&mut [0u8; 4], &[0u8; 5]);
    }
}
