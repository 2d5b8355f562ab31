//! Schedules of the reductions: reduce, allreduce, reduce-scatter, scan and exscan.
//!
//! Each rank's input is packed once into a temporary (so derived datatypes of one basic type
//! reduce like arrays of it); partial results travel as packed temporaries and are combined with
//! [`Step::Combine`], always as `lower ranks op higher ranks`. The trees are fixed by the
//! communicator size alone, so a reduction is reproducible run to run, allreduce is bit-identical
//! on every rank, and non-commutative operations get the rank order the standard requires.

use super::sched::{Builder, Dst, Src, Step, TempId};
use super::spec::{check_blocks, check_root, RecvData, Reducer, SendData};
use crate::datatype::{Basic, Datatype};
use crate::error::{ErrorClass, MpiError, Result};

/// The shape of one reduction: element count, datatype and packed length.
pub(super) struct Operand {
    pub(super) count: usize,
    pub(super) len: usize,
}

/// Checks `op` against `dt` and installs it; returns the operand shape of `count` elements.
pub(super) fn setup(b: &mut Builder, op: Reducer, dt: &Datatype, count: usize) -> Result<Operand> {
    let basic = match &op {
        Reducer::Predefined(p) => Some(predefined_basic(*p, dt)?),
        Reducer::User(_) => None,
    };
    b.reducer(op, basic);
    Ok(Operand {
        count,
        len: dt.packed_len(count)?,
    })
}

/// The basic type a predefined operation works on, after checking that it applies to it.
pub(crate) fn predefined_basic(op: crate::op::ReduceOp, dt: &Datatype) -> Result<Basic> {
    let basic = dt.uniform().ok_or_else(|| {
        MpiError::new(
            ErrorClass::Op,
            "predefined reduction operations apply to datatypes of one basic type only \
             (MPI-3.1 5.9.2); use an operation from MPI_Op_create for this datatype",
        )
    })?;
    crate::op::check(op, &basic)?;
    Ok(basic)
}

/// Packs this rank's input into a new temporary.
pub(super) fn load(b: &mut Builder, input: SendData, len: usize) -> TempId {
    let t = b.temp(len);
    b.step(Step::Pack { from: input, to: t });
    t
}

/// `acc = acc op t` (acc holds lower ranks).
pub(super) fn absorb_upper(b: &mut Builder, acc: TempId, t: TempId, count: usize) {
    b.step(Step::Combine {
        lower: acc,
        upper: t,
        count,
        into_lower: true,
    });
}

/// `acc = t op acc` (t holds lower ranks).
pub(super) fn absorb_lower(b: &mut Builder, acc: TempId, t: TempId, count: usize) {
    b.step(Step::Combine {
        lower: t,
        upper: acc,
        count,
        into_lower: false,
    });
}

/// Binomial reduction of every rank's `acc` onto `tree_root`, in rank order relative to it.
/// Returns true on the tree root, whose `acc` then holds the result.
pub(super) fn reduce_tree(b: &mut Builder, acc: TempId, shape: &Operand, tree_root: usize) -> bool {
    let (me, n) = (b.rank, b.size);
    let rel = (me + n - tree_root) % n;
    let mut children = Vec::new();
    let mut mask = 1;
    while mask < n && rel & mask == 0 {
        if rel + mask < n {
            let t = b.temp(shape.len);
            b.recv((rel + mask + tree_root) % n, 0, Dst::Temp(t));
            children.push(t);
        }
        mask <<= 1;
    }
    b.end_round();
    for t in children {
        absorb_upper(b, acc, t, shape.count);
    }
    if rel == 0 {
        return true;
    }
    b.send((rel - mask + tree_root) % n, 0, Src::Temp(acc));
    b.end_round();
    false
}

/// `MPI_Reduce`. Commutative operations reduce along a tree rooted at the root; others along
/// one rooted at rank 0 (so that the order is rank order), which then forwards the result.
pub(crate) fn reduce(
    b: &mut Builder,
    send: Option<SendData>,
    recv: Option<RecvData>,
    op: Reducer,
    root: i32,
) -> Result<()> {
    let root = check_root(root, b.size)?;
    let here = b.rank == root;
    let input = match (send, &recv) {
        (Some(s), _) => s,
        (None, Some(r)) if here => r.as_send(),
        _ => return Err(in_place_at_root()),
    };
    let tree_root = if op.commutative() { root } else { 0 };
    let shape = setup(b, op, &input.dt, input.count)?;
    let acc = load(b, input, shape.len);
    let done = reduce_tree(b, acc, &shape, tree_root);
    match (done, here) {
        (true, true) => unpack_result(b, acc, recv)?,
        (true, false) => b.send(root, 1, Src::Temp(acc)),
        (false, true) => b.recv(tree_root, 1, Dst::User(result_buffer(recv)?)),
        (false, false) => {}
    }
    Ok(())
}

pub(super) fn result_buffer(recv: Option<RecvData>) -> Result<RecvData> {
    recv.ok_or_else(|| MpiError::new(ErrorClass::Buffer, "the root has no receive buffer"))
}

fn unpack_result(b: &mut Builder, acc: TempId, recv: Option<RecvData>) -> Result<()> {
    b.step(Step::Unpack {
        from: acc,
        offset: 0,
        to: result_buffer(recv)?,
    });
    Ok(())
}

fn in_place_at_root() -> MpiError {
    MpiError::new(
        ErrorClass::Buffer,
        "MPI_IN_PLACE is only valid at the root of a reduction",
    )
}

/// The fold that leaves a power of two of participants: with n = 2^k + rem, each even rank
/// below 2·rem hands its vector to the odd rank above it (`x[2i] op x[2i+1]`), waits, and gets
/// the result back at the end ([`unfold`]).
pub(super) struct Fold {
    /// Participants after the fold (2^k).
    pub(super) p2: usize,
    rem: usize,
    /// This rank's number among the participants; `None` for a rank that folded away.
    pub(super) newrank: Option<usize>,
}

impl Fold {
    /// The communicator rank of participant `p`.
    pub(super) fn peer(&self, p: usize) -> usize {
        if p < self.rem {
            2 * p + 1
        } else {
            p + self.rem
        }
    }
}

/// Runs the fold on `acc` (`count` elements, `len` bytes); see [`Fold`].
pub(super) fn fold(b: &mut Builder, acc: TempId, shape: &Operand) -> Fold {
    let (me, n) = (b.rank, b.size);
    let p2 = 1 << n.ilog2();
    let rem = n - p2;
    let newrank = if me >= 2 * rem {
        Some(me - rem)
    } else if me % 2 == 0 {
        b.send(me + 1, 0, Src::Temp(acc));
        b.end_round();
        None
    } else {
        let lower = b.temp(shape.len);
        b.recv(me - 1, 0, Dst::Temp(lower));
        b.end_round();
        absorb_lower(b, acc, lower, shape.count);
        Some(me / 2)
    };
    Fold { p2, rem, newrank }
}

/// The end of a [`fold`]: the ranks that folded away get the result in `acc`.
pub(super) fn unfold(b: &mut Builder, acc: TempId, fold: &Fold) {
    let me = b.rank;
    if me < 2 * fold.rem {
        match fold.newrank {
            None => b.recv(me + 1, 255, Dst::Temp(acc)),
            Some(_) => b.send(me - 1, 255, Src::Temp(acc)),
        }
        b.end_round();
    }
}

/// `MPI_Allreduce`: recursive doubling. After the [`fold`], 2^k participants exchange and
/// combine with partners at distance 1, 2, 4, …, always lower block first; the ranks that
/// folded away get the result at the end. Every rank evaluates the same expression tree:
/// bit-identical results.
pub(crate) fn allreduce(
    b: &mut Builder,
    send: Option<SendData>,
    recv: RecvData,
    op: Reducer,
) -> Result<()> {
    let input = send.unwrap_or_else(|| recv.as_send());
    let shape = setup(b, op, &input.dt, input.count)?;
    let acc = load(b, input, shape.len);
    let tmp = b.temp(shape.len);
    let fold = fold(b, acc, &shape);
    if let Some(nr) = fold.newrank {
        let mut mask = 1;
        let mut tag = 1u8;
        while mask < fold.p2 {
            let partner = nr ^ mask;
            let peer = fold.peer(partner);
            b.recv(peer, tag, Dst::Temp(tmp));
            b.send(peer, tag, Src::Temp(acc));
            b.end_round();
            if partner < nr {
                absorb_lower(b, acc, tmp, shape.count);
            } else {
                absorb_upper(b, acc, tmp, shape.count);
            }
            mask <<= 1;
            tag = tag.wrapping_add(1);
        }
    }
    unfold(b, acc, &fold);
    b.step(Step::Unpack {
        from: acc,
        offset: 0,
        to: recv,
    });
    Ok(())
}

/// `MPI_Reduce_scatter(_block)`: the whole vector is reduced to rank 0 (rank order), which
/// sends every rank its part.
pub(crate) fn reduce_scatter(
    b: &mut Builder,
    send: Option<SendData>,
    recv: RecvData,
    counts: &[usize],
    op: Reducer,
) -> Result<()> {
    let (me, n) = (b.rank, b.size);
    check_blocks(counts, n, "the reduce-scatter counts")?;
    let total: usize = counts.iter().sum();
    let input = match send {
        Some(s) => s,
        None => recv.first(total).as_send(),
    };
    if input.count != total {
        return Err(MpiError::new(
            ErrorClass::Count,
            format!(
                "the input has {} elements but the counts add up to {total}",
                input.count
            ),
        ));
    }
    let dt = input.dt.clone();
    let shape = setup(b, op, &dt, total)?;
    let mine = recv.first(counts[me]);
    let acc = load(b, input, shape.len);
    if reduce_tree(b, acc, &shape, 0) {
        scatter_result(b, acc, counts, dt.size(), mine);
    } else {
        b.recv(0, 1, Dst::User(mine));
    }
    Ok(())
}

/// Rank 0's part of a reduce-scatter whose result is in `acc` (elements of `elem` packed bytes):
/// its own block is unpacked into `mine`, rank r's is sent to it with step tag 1.
pub(super) fn scatter_result(
    b: &mut Builder,
    acc: TempId,
    counts: &[usize],
    elem: usize,
    mine: RecvData,
) {
    let mut offset = 0;
    for (r, &c) in counts.iter().enumerate() {
        if r == 0 {
            b.step(Step::Unpack {
                from: acc,
                offset: 0,
                to: mine.clone(),
            });
        } else {
            b.send(r, 1, Src::TempPart(acc, offset, c * elem));
        }
        offset += c * elem;
    }
}

/// `MPI_Scan` and `MPI_Exscan`: recursive doubling. In step k a rank exchanges its partial
/// (the reduction of a block of 2^k ranks ending at itself) with the rank 2^k away; what comes
/// from below is folded into both the partial and the result, what comes from above into the
/// partial only, always lower ranks first.
pub(crate) fn scan(
    b: &mut Builder,
    send: Option<SendData>,
    recv: RecvData,
    op: Reducer,
    exclusive: bool,
) -> Result<()> {
    let (me, n) = (b.rank, b.size);
    let input = send.unwrap_or_else(|| recv.as_send());
    let shape = setup(b, op, &input.dt, input.count)?;
    let partial = load(b, input, shape.len);
    let result = b.temp(shape.len);
    let tmp = b.temp(shape.len);
    let mut have_result = !exclusive;
    if have_result {
        b.step(Step::Dup {
            from: partial,
            to: result,
        });
    }
    let mut mask = 1;
    let mut tag = 0u8;
    while mask < n {
        let peer = me ^ mask;
        if peer < n {
            b.recv(peer, tag, Dst::Temp(tmp));
            b.send(peer, tag, Src::Temp(partial));
            b.end_round();
            if peer < me {
                if have_result {
                    absorb_lower(b, result, tmp, shape.count);
                } else {
                    b.step(Step::Dup {
                        from: tmp,
                        to: result,
                    });
                    have_result = true;
                }
                absorb_lower(b, partial, tmp, shape.count);
            } else {
                absorb_upper(b, partial, tmp, shape.count);
            }
        }
        mask <<= 1;
        tag = tag.wrapping_add(1);
    }
    if have_result {
        b.step(Step::Unpack {
            from: result,
            offset: 0,
            to: recv,
        });
    }
    Ok(())
}
