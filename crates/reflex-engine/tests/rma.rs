//! One-sided communication on 1 to 4 ranks of the in-process transport, for both kinds of window:
//! private (`MPI_Win_create`: requests served by the target, small eager limit so that data also
//! travels in messages of its own) and shared (`MPI_Win_allocate_shared`: direct access).
//! Fence, PSCW and lock epochs; put, get, accumulate, get-accumulate, compare-and-swap, derived
//! target types; contended atomics; and the error classes of misuse.

use reflex_base::buf::{RecvBuf, SendBuf};
use reflex_engine::rma::origin::{Side, Target};
use reflex_engine::testing::{run_ranks, small_tuning, MemTransport};
use reflex_engine::*;

type E = Engine<MemTransport>;

const WORDS: usize = 64;

fn long() -> Datatype {
    Datatype::Basic(Basic::plain(ValueKind::Signed, 8))
}

fn leak(v: Vec<i64>) -> RecvBuf {
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_ne_bytes()).collect();
    RecvBuf::from_slice(Box::leak(bytes.into_boxed_slice()))
}

fn src(v: &[i64]) -> Side<SendBuf> {
    let b = leak(v.to_vec());
    Side {
        buf: b.as_send(),
        count: v.len(),
        dt: long(),
    }
}

fn dst(n: usize) -> Side<RecvBuf> {
    Side {
        buf: leak(vec![-7; n]),
        count: n,
        dt: long(),
    }
}

fn longs(b: &RecvBuf) -> Vec<i64> {
    b.as_slice()
        .chunks_exact(8)
        .map(|w| i64::from_ne_bytes(w.try_into().unwrap()))
        .collect()
}

fn at(rank: usize, disp: usize, count: usize) -> Target {
    Target {
        rank: rank as i32,
        disp: disp as isize,
        count,
        dt: long(),
    }
}

/// A window of WORDS longs set to -1, and a view of this rank's memory.
fn window(e: &mut E, shared: bool) -> (WinId, RecvBuf) {
    if shared {
        let (id, base) = e
            .win_allocate_shared(COMM_WORLD, WORDS * 8, 8, Flavor::Shared)
            .unwrap()
            .expect("threads of one process share memory");
        let info = e.win_info(id).unwrap();
        assert_eq!(
            (info.base, info.size, info.flavor),
            (base, WORDS * 8, Flavor::Shared)
        );
        let (_, _, addr) = e.win_shared_query(id, e.world_rank() as i32).unwrap();
        assert_eq!(addr, base);
        let me = e.world_rank();
        e.win_fence(id, 0).unwrap();
        e.rma_put(id, src(&[-1; WORDS]), at(me, 0, WORDS), false)
            .unwrap();
        e.win_fence(id, MODE_NOSUCCEED).unwrap();
        return (id, RecvBuf::empty());
    }
    let mem = leak(vec![-1; WORDS]);
    let id = e.win_create(COMM_WORLD, mem, 8, Flavor::Create).unwrap();
    (id, mem)
}

fn each_kind(n: usize, body: fn(&mut E, bool)) {
    for shared in [false, true] {
        run_ranks(n, 64, 1 << 12, small_tuning(), move |e| body(e, shared));
    }
}

fn fence_ops(e: &mut E, shared: bool) {
    let (me, n) = (e.world_rank(), e.world_size());
    let (win, mem) = window(e, shared);
    let right = (me + 1) % n;
    e.win_fence(win, 0).unwrap();
    // 40 words: more than a small-tuning request carries, so the data travels on its own.
    let words: Vec<i64> = (0..40).map(|i| (me * 1000 + i) as i64).collect();
    e.rma_put(win, src(&words), at(right, 8, 40), false)
        .unwrap();
    e.rma_accumulate(win, src(&[1, 2]), at(0, 0, 2), ReduceOp::Sum, false)
        .unwrap();
    e.win_fence(win, 0).unwrap();
    let got = dst(40);
    e.rma_get(win, got.clone(), at(right, 8, 40), false)
        .unwrap();
    let old = dst(2);
    e.rma_get_accumulate(
        win,
        src(&[5, 5]),
        old.clone(),
        at(0, 0, 2),
        ReduceOp::Max,
        false,
    )
    .unwrap();
    e.win_fence(win, 0).unwrap();
    assert_eq!(longs(&got.buf), words, "rank {me}: get after put");
    let left = (me + n - 1) % n;
    if !shared {
        let v = longs(&mem);
        assert_eq!(v[8], (left * 1000) as i64);
        if me == 0 {
            assert_eq!(v[..2], [5.max(n as i64 - 1), 5.max(2 * n as i64 - 1)]);
        }
    }
    let before = longs(&old.buf);
    assert!(
        before[0] == n as i64 - 1 || before[0] == 5,
        "rank {me}: {before:?}"
    );
    e.win_fence(win, MODE_NOSUCCEED).unwrap();
    e.win_free(win).unwrap();
}

fn contended_counter(e: &mut E, shared: bool) {
    let n = e.world_size();
    let (win, _) = window(e, shared);
    const ROUNDS: usize = 50;
    for i in 0..ROUNDS {
        let kind = if i % 2 == 0 {
            LockKind::Shared
        } else {
            LockKind::Exclusive
        };
        e.win_lock(win, kind, 0, 0).unwrap();
        let old = dst(1);
        e.rma_get_accumulate(win, src(&[1]), old, at(0, 3, 1), ReduceOp::Sum, false)
            .unwrap();
        e.rma_accumulate(win, src(&[2]), at(0, 4, 1), ReduceOp::Sum, false)
            .unwrap();
        e.win_unlock(win, 0).unwrap();
    }
    e.barrier(COMM_WORLD).unwrap();
    e.win_lock_all(win, 0).unwrap();
    let total = dst(2);
    e.rma_get(win, total.clone(), at(0, 3, 2), false).unwrap();
    e.win_flush(win, Some(0)).unwrap();
    e.win_unlock_all(win).unwrap();
    let want = (ROUNDS * n) as i64;
    assert_eq!(longs(&total.buf), [want - 1, 2 * want - 1]);
    e.barrier(COMM_WORLD).unwrap();
    e.win_free(win).unwrap();
}

fn compare_and_swap_mutex(e: &mut E, shared: bool) {
    let (me, n) = (e.world_rank(), e.world_size());
    let (win, _) = window(e, shared);
    e.win_lock_all(win, 0).unwrap();
    // Take a mutex (word 0: -1 free, else the holder), bump word 1, give it back.
    for _ in 0..20 {
        loop {
            let old = dst(1);
            e.rma_compare_and_swap(
                win,
                src(&[me as i64]).buf,
                src(&[-1]).buf,
                old.buf,
                long(),
                0,
                0,
            )
            .unwrap();
            e.win_flush(win, Some(0)).unwrap();
            if longs(&old.buf)[0] == -1 {
                break;
            }
        }
        let v = dst(1);
        e.rma_get(win, v.clone(), at(0, 1, 1), false).unwrap();
        e.win_flush(win, Some(0)).unwrap();
        let next = longs(&v.buf)[0] + 1;
        e.rma_put(win, src(&[next]), at(0, 1, 1), false).unwrap();
        e.win_flush(win, Some(0)).unwrap();
        let old = dst(1);
        e.rma_get_accumulate(win, src(&[-1]), old, at(0, 0, 1), ReduceOp::Replace, false)
            .unwrap();
        e.win_flush(win, Some(0)).unwrap();
    }
    e.win_unlock_all(win).unwrap();
    e.barrier(COMM_WORLD).unwrap();
    e.win_lock(win, LockKind::Shared, 0, 0).unwrap();
    let v = dst(1);
    e.rma_get(win, v.clone(), at(0, 1, 1), false).unwrap();
    e.win_unlock(win, 0).unwrap();
    assert_eq!(longs(&v.buf)[0], -1 + 20 * n as i64);
    e.barrier(COMM_WORLD).unwrap();
    e.win_free(win).unwrap();
}

fn pscw_ring(e: &mut E, shared: bool) {
    let (me, n) = (e.world_rank(), e.world_size());
    let (win, _) = window(e, shared);
    let (left, right) = ((me + n - 1) % n, (me + 1) % n);
    let world = e.comm_group(COMM_WORLD).unwrap();
    let from = e.group_select(world, &[left as i32], false).unwrap();
    let to = e.group_select(world, &[right as i32], false).unwrap();
    e.win_post(win, from, 0).unwrap();
    e.win_start(win, to, 0).unwrap();
    e.rma_put(win, src(&[me as i64]), at(right, 5, 1), false)
        .unwrap();
    e.win_complete(win).unwrap();
    e.win_wait(win).unwrap();
    e.win_lock(win, LockKind::Shared, me as i32, 0).unwrap();
    let v = dst(1);
    e.rma_get(win, v.clone(), at(me, 5, 1), false).unwrap();
    e.win_unlock(win, me as i32).unwrap();
    assert_eq!(longs(&v.buf)[0], left as i64);
    e.barrier(COMM_WORLD).unwrap();
    e.win_free(win).unwrap();
}

fn misuse(e: &mut E, shared: bool) {
    let n = e.world_size();
    let (win, _) = window(e, shared);
    let class = |r: Result<Option<RequestId>>| r.unwrap_err().class;
    assert_eq!(
        class(e.rma_put(win, src(&[1]), at(0, 0, 1), false)),
        ErrorClass::RmaSync
    );
    assert_eq!(e.win_unlock(win, 0).unwrap_err().class, ErrorClass::RmaSync);
    assert_eq!(e.win_complete(win).unwrap_err().class, ErrorClass::RmaSync);
    e.win_fence(win, 0).unwrap();
    let beyond = at(n - 1, WORDS - 1, 2);
    assert_eq!(
        class(e.rma_put(win, src(&[1, 2]), beyond, false)),
        ErrorClass::RmaRange
    );
    let bad_op = e.rma_accumulate(win, src(&[1]), at(0, 0, 1), ReduceOp::Minloc, false);
    assert_eq!(class(bad_op), ErrorClass::Op);
    assert_eq!(
        e.win_lock(win, LockKind::Shared, n as i32, 0)
            .unwrap_err()
            .class,
        ErrorClass::Rank
    );
    e.win_fence(win, 0).unwrap();
    if !shared {
        assert_eq!(
            e.win_shared_query(win, 0).unwrap_err().class,
            ErrorClass::RmaFlavor
        );
    }
    e.win_free(win).unwrap();
    assert_eq!(e.win_fence(win, 0).unwrap_err().class, ErrorClass::Win);
}

#[test]
fn fence_put_get_accumulate() {
    for n in 1..=4 {
        each_kind(n, fence_ops);
    }
}

#[test]
fn contended_atomics_lose_no_update() {
    for n in [1, 2, 4] {
        each_kind(n, contended_counter);
    }
}

#[test]
fn compare_and_swap_makes_a_mutex() {
    for n in [1, 3] {
        each_kind(n, compare_and_swap_mutex);
    }
}

#[test]
fn post_start_complete_wait_ring() {
    for n in 1..=4 {
        each_kind(n, pscw_ring);
    }
}

#[test]
fn misuse_gets_its_error_class() {
    for n in [1, 2] {
        each_kind(n, misuse);
    }
}

/// One element at window word `word` of rank 0 in `basic`'s own type.
fn element(word: usize, basic: Basic) -> Target {
    Target {
        rank: 0,
        disp: word as isize,
        count: 1,
        dt: Datatype::Basic(basic),
    }
}

/// `rma_accumulate_one_direct` against the general path (`rma_get_accumulate` on the next word,
/// same old value and operand) for every kind of hardware update it makes: one instruction
/// (integer SUM and bitwise ops, REPLACE, NO_OP), the float compare-and-swap loop and the packed
/// one (integer MIN/MAX/PROD, logical ops); then the cases it must decline, leaving memory as it
/// was: an operation undefined on the type, MPI_NO_OP without a result, no access epoch.
fn single_element_direct(e: &mut E, _shared: bool) {
    let (win, _) = window(e, true);
    let bits = |x: f64| x.to_bits() as i64;
    let float_bits = |x: f32| i64::from(x.to_bits());
    use ReduceOp::*;
    use ValueKind::{Float, Logical, Signed, Unsigned};
    let cases = [
        (Signed, 8, Sum, 40, 2, 42),
        (Signed, 8, Replace, 40, 2, 2),
        (Signed, 8, NoOp, 40, 2, 40),
        (Signed, 8, Min, 40, -2, -2),
        (Signed, 8, Max, 40, -2, 40),
        (Signed, 8, Prod, 40, 3, 120),
        (Signed, 4, Sum, 0x7fff_ffff, 1, 0x8000_0000),
        (Unsigned, 4, Bxor, 0b1100, 0b1010, 0b0110),
        (Unsigned, 8, Band, 0b1100, 0b1010, 0b1000),
        (Logical, 4, Lxor, 1, 1, 0),
        (Float, 8, Sum, bits(1.5), bits(2.25), bits(3.75)),
        (Float, 8, Max, bits(1.5), bits(-2.0), bits(1.5)),
        (
            Float,
            4,
            Prod,
            float_bits(1.5),
            float_bits(2.0),
            float_bits(3.0),
        ),
    ];
    e.win_lock_all(win, 0).unwrap();
    for (i, &(kind, size, op, old, operand, new)) in cases.iter().enumerate() {
        let basic = Basic::plain(kind, size);
        let dt = Datatype::Basic(basic);
        e.rma_put(win, src(&[old, old]), at(0, 0, 2), false)
            .unwrap();
        let input = leak(vec![operand]).as_send();
        let mut fast = leak(vec![-7]);
        let direct = (op, basic);
        assert!(
            e.rma_accumulate_one_direct(win, direct, &input, Some(&mut fast), (0, 0)),
            "case {i}: the direct path declined"
        );
        let slow = Side {
            buf: leak(vec![-7]),
            count: 1,
            dt: dt.clone(),
        };
        let origin = Side {
            buf: input,
            count: 1,
            dt,
        };
        e.rma_get_accumulate(win, origin, slow.clone(), element(1, basic), op, false)
            .unwrap();
        let mem = dst(2);
        e.rma_get(win, mem.clone(), at(0, 0, 2), false).unwrap();
        e.win_flush(win, Some(0)).unwrap();
        let mask = if size == 4 { 0xffff_ffff } else { -1 };
        assert_eq!(longs(&mem.buf)[0] & mask, new & mask, "case {i}: new value");
        assert_eq!(longs(&mem.buf)[0], longs(&mem.buf)[1], "case {i}: memory");
        assert_eq!(longs(&fast), longs(&slow.buf), "case {i}: old value");
        assert_eq!(longs(&fast)[0] & mask, old & mask, "case {i}: old value");
    }
    let float = Basic::plain(Float, 8);
    let input = leak(vec![3]).as_send();
    e.rma_put(win, src(&[5]), at(0, 0, 1), false).unwrap();
    assert!(!e.rma_accumulate_one_direct(win, (Band, float), &input, None, (0, 0)));
    let long = Basic::plain(Signed, 8);
    assert!(!e.rma_accumulate_one_direct(win, (NoOp, long), &input, None, (0, 0)));
    e.win_unlock_all(win).unwrap();
    assert!(!e.rma_accumulate_one_direct(win, (Sum, long), &input, None, (0, 0)));
    e.win_lock_all(win, 0).unwrap();
    let mem = dst(1);
    e.rma_get(win, mem.clone(), at(0, 0, 1), false).unwrap();
    e.win_unlock_all(win).unwrap();
    assert_eq!(longs(&mem.buf), [5], "a declined call changed memory");
    e.win_free(win).unwrap();
}

#[test]
fn single_element_direct_matches_the_general_path() {
    run_ranks(1, 64, 1 << 12, small_tuning(), |e| {
        single_element_direct(e, true)
    });
}

/// Rank 0 cannot create the segment (its name points into a directory that does not exist):
/// every rank learns it alike, `MPI_Win_allocate_shared` fails with `MPI_ERR_RMA_SHARED`, and
/// `MPI_Win_allocate`'s build ends unshared, whose layout takes memory of the caller's and then
/// works as a private window (a Put around the ring between fences).
fn unshared_fallback(e: &mut E) {
    let (me, n) = (e.world_rank(), e.world_size());
    if me == 0 {
        e.set_segment_base("reflex-no-such-directory/win".into());
    }
    let err = e
        .win_allocate_shared(COMM_WORLD, WORDS * 8, 8, Flavor::Shared)
        .unwrap_err();
    assert_eq!(err.class, ErrorClass::RmaShared, "rank {me}: {err}");
    let built = e
        .win_build(COMM_WORLD, (WORDS * 8, 8), None, Flavor::Allocate)
        .unwrap();
    let Built::Unshared(layout) = built else {
        panic!("rank {me}: a window was shared without a segment");
    };
    let mem = leak(vec![-1; WORDS]);
    let win = e.win_install_private(layout, mem);
    let info = e.win_info(win).unwrap();
    assert_eq!((info.flavor, info.size), (Flavor::Allocate, WORDS * 8));
    e.win_fence(win, 0).unwrap();
    e.rma_put(win, src(&[me as i64]), at((me + 1) % n, 3, 1), false)
        .unwrap();
    e.win_fence(win, 0).unwrap();
    assert_eq!(longs(&mem)[3], ((me + n - 1) % n) as i64, "rank {me}");
    e.win_free(win).unwrap();
}

#[test]
fn ranks_that_cannot_share_a_segment_fall_back_together() {
    for n in [1, 3] {
        run_ranks(n, 64, 1 << 12, small_tuning(), unshared_fallback);
    }
}
