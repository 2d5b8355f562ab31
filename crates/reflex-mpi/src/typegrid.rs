//! Array datatypes: `MPI_Type_create_subarray` and `MPI_Type_create_darray` (MPI-3.1 §4.1.3-4).
//!
//! Both describe a part of an n-dimensional array of `old` elements stored in C (row-major) or
//! Fortran (column-major) order. They are built the same way: one strided dimension at a time,
//! from the fastest-varying one out, each dimension an hvector whose byte stride is that of the
//! array dimension (so the extents of the intermediate types never matter); the first selected
//! element is then placed at its byte offset, and the result is resized to the whole array
//! (`lb` 0, extent `product(sizes) × extent(old)`), as the standard's definition of both
//! constructors through `MPI_LB`/`MPI_UB` says. The darray distributions follow the standard's
//! (and ROMIO's) rules: BLOCK with `ceil(gsize / psize)` blocks by default, CYCLIC(k) dealing
//! blocks of k round-robin with a shorter last block, NONE as BLOCK over one process; process
//! coordinates are row-major whatever the array order. Bad arguments are `MPI_ERR_ARG`. Sizes
//! and starts are taken as `MPI_Count`, so the MPI-4 `_c` forms share this code unnarrowed.

use crate::ffi::MPI_Count;
use reflex_engine::datatype::{Block, Layout};
use reflex_engine::{Datatype, ErrorClass, MpiError, Result};
use std::ffi::c_int;
use std::fmt::Display;

/// `MPI_ORDER_C`.
pub const ORDER_C: c_int = 56;
/// `MPI_ORDER_FORTRAN`.
pub const ORDER_FORTRAN: c_int = 57;
/// `MPI_DISTRIBUTE_BLOCK`.
pub const DISTRIBUTE_BLOCK: c_int = 121;
/// `MPI_DISTRIBUTE_CYCLIC`.
pub const DISTRIBUTE_CYCLIC: c_int = 122;
/// `MPI_DISTRIBUTE_NONE`.
pub const DISTRIBUTE_NONE: c_int = 123;
/// `MPI_DISTRIBUTE_DFLT_DARG`.
pub const DISTRIBUTE_DFLT_DARG: c_int = -49767;

fn arg(message: String) -> MpiError {
    MpiError::new(ErrorClass::Arg, message)
}

fn overflow() -> MpiError {
    MpiError::new(
        ErrorClass::Count,
        "array datatype overflows the address space",
    )
}

/// One dimension's selection: `count` runs of `blocklen` consecutive indices, run `i` starting
/// `i × step` indices after the first selected index `start`; plus a shorter last run of `tail`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pick {
    start: usize,
    count: usize,
    blocklen: usize,
    step: usize,
    tail: usize,
}

impl Pick {
    fn range(start: usize, len: usize) -> Self {
        Self {
            start,
            count: 1,
            blocklen: len,
            step: 0,
            tail: 0,
        }
    }
}

/// The checked order: `true` for C.
fn order_is_c(order: c_int) -> Result<bool> {
    match order {
        ORDER_C => Ok(true),
        ORDER_FORTRAN => Ok(false),
        _ => Err(arg(format!(
            "order {order} is neither MPI_ORDER_C nor MPI_ORDER_FORTRAN"
        ))),
    }
}

/// Builds the type selecting `picks[d]` along each dimension `d` of an array of `sizes`.
fn build(sizes: &[usize], picks: &[Pick], c_order: bool, old: Datatype) -> Result<Datatype> {
    let extent = old.extent();
    // Dimensions from the fastest-varying one out.
    let dims: Vec<usize> = if c_order {
        (0..sizes.len()).rev().collect()
    } else {
        (0..sizes.len()).collect()
    };
    let (mut t, mut stride, mut offset) = (old, extent, 0isize);
    for d in dims {
        let p = picks[d];
        let step = |n: usize| {
            isize::try_from(n)
                .ok()
                .and_then(|n| n.checked_mul(stride))
                .ok_or_else(overflow)
        };
        let run = Datatype::derived(Layout::vector(p.blocklen, 1, stride, t.clone())?);
        let mut dim = Datatype::derived(Layout::vector(p.count, 1, step(p.step)?, run)?);
        if p.tail > 0 {
            let tail = Datatype::derived(Layout::vector(p.tail, 1, stride, t)?);
            let blocks = vec![
                Block {
                    count: 1,
                    disp: 0,
                    dt: dim,
                },
                Block {
                    count: 1,
                    disp: step(p.count * p.step)?,
                    dt: tail,
                },
            ];
            dim = Datatype::derived(Layout::blocks(blocks, false)?);
        }
        offset = offset.checked_add(step(p.start)?).ok_or_else(overflow)?;
        stride = step(sizes[d])?;
        t = dim;
    }
    let placed = Layout::blocks(
        vec![Block {
            count: 1,
            disp: offset,
            dt: t,
        }],
        false,
    )?;
    Ok(Datatype::derived(Layout::resized(
        Datatype::derived(placed),
        0,
        stride,
    )?))
}

fn positive<T: Copy + Display + TryInto<usize>>(values: &[T], what: &str) -> Result<Vec<usize>> {
    values
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            v.try_into()
                .ok()
                .filter(|&v| v > 0)
                .ok_or_else(|| arg(format!("{what}[{i}] is {v}, must be positive")))
        })
        .collect()
}

/// `MPI_Type_create_subarray`: the `subsizes` block at `starts` of an array of `sizes`.
pub fn subarray(
    sizes: &[MPI_Count],
    subsizes: &[MPI_Count],
    starts: &[MPI_Count],
    order: c_int,
    old: Datatype,
) -> Result<Datatype> {
    if sizes.is_empty() {
        return Err(arg("ndims is 0, must be positive".into()));
    }
    let c_order = order_is_c(order)?;
    let sizes_u = positive(sizes, "array_of_sizes")?;
    let mut picks = Vec::with_capacity(sizes.len());
    for d in 0..sizes.len() {
        let (sub, start) = (subsizes[d], starts[d]);
        if sub < 1 || sub > sizes[d] {
            return Err(arg(format!(
                "array_of_subsizes[{d}] is {sub}, must be in 1..={}",
                sizes[d]
            )));
        }
        if start < 0 || start > sizes[d] - sub {
            return Err(arg(format!(
                "array_of_starts[{d}] is {start}, must be in 0..={} for a subsize of {sub}",
                sizes[d] - sub
            )));
        }
        picks.push(Pick::range(start as usize, sub as usize));
    }
    build(&sizes_u, &picks, c_order, old)
}

/// The arguments of `MPI_Type_create_darray`.
#[derive(Debug, Clone, Copy)]
pub struct Darray<'a> {
    /// Processes in the grid.
    pub size: c_int,
    /// This process.
    pub rank: c_int,
    /// Global array sizes.
    pub gsizes: &'a [MPI_Count],
    /// `MPI_DISTRIBUTE_*` per dimension.
    pub distribs: &'a [c_int],
    /// Distribution arguments (`MPI_DISTRIBUTE_DFLT_DARG` or a block size).
    pub dargs: &'a [c_int],
    /// Process grid.
    pub psizes: &'a [c_int],
    /// `MPI_ORDER_C` or `MPI_ORDER_FORTRAN`.
    pub order: c_int,
}

/// `MPI_Type_create_darray`: this process's part of a distributed array.
pub fn darray(a: &Darray<'_>, old: Datatype) -> Result<Datatype> {
    let n = a.gsizes.len();
    if n == 0 {
        return Err(arg("ndims is 0, must be positive".into()));
    }
    let c_order = order_is_c(a.order)?;
    let gsizes = positive(a.gsizes, "array_of_gsizes")?;
    let psizes = positive(a.psizes, "array_of_psizes")?;
    let grid = psizes
        .iter()
        .try_fold(1usize, |acc, &p| acc.checked_mul(p))
        .ok_or_else(overflow)?;
    if a.size < 1 || grid != a.size as usize {
        return Err(arg(format!(
            "the process grid has {grid} processes but size is {}",
            a.size
        )));
    }
    if a.rank < 0 || a.rank >= a.size {
        return Err(arg(format!("rank {} is outside 0..{}", a.rank, a.size)));
    }
    // Row-major process coordinates, whatever the array order.
    let mut rest = a.rank as usize;
    let mut left = grid;
    let mut picks = Vec::with_capacity(n);
    for d in 0..n {
        left /= psizes[d];
        let coord = rest / left;
        rest %= left;
        picks.push(pick(d, gsizes[d], psizes[d], coord, a)?);
    }
    build(&gsizes, &picks, c_order, old)
}

/// The indices process coordinate `coord` of `p` holds along dimension `d`.
fn pick(d: usize, g: usize, p: usize, coord: usize, a: &Darray<'_>) -> Result<Pick> {
    let darg = a.dargs[d];
    let darg = match darg {
        DISTRIBUTE_DFLT_DARG => None,
        k if k > 0 => Some(k as usize),
        k => {
            return Err(arg(format!(
                "array_of_dargs[{d}] is {k}, must be positive or MPI_DISTRIBUTE_DFLT_DARG"
            )))
        }
    };
    match a.distribs[d] {
        DISTRIBUTE_NONE if p != 1 => Err(arg(format!(
            "dimension {d} is MPI_DISTRIBUTE_NONE over {p} processes (must be 1)"
        ))),
        DISTRIBUTE_NONE => Ok(Pick::range(0, g)),
        DISTRIBUTE_BLOCK => {
            let block = darg.unwrap_or(g.div_ceil(p));
            if block.checked_mul(p).is_none_or(|all| all < g) {
                return Err(arg(format!(
                    "block size {block} of dimension {d} times {p} processes does not cover \
                     its {g} elements"
                )));
            }
            let first = block * coord;
            let len = g.saturating_sub(first).min(block);
            Ok(Pick::range(if len == 0 { 0 } else { first }, len))
        }
        DISTRIBUTE_CYCLIC => {
            let block = darg.unwrap_or(1);
            let first = block.saturating_mul(coord);
            let round = block.saturating_mul(p);
            let mine = if first >= g {
                0
            } else {
                let span = g - first;
                (span / round) * block + (span % round).min(block)
            };
            if mine == 0 {
                return Ok(Pick::range(0, 0));
            }
            Ok(Pick {
                start: first,
                count: mine / block,
                blocklen: block,
                step: round,
                tail: mine % block,
            })
        }
        other => Err(arg(format!(
            "array_of_distribs[{d}] is {other}, not an MPI_DISTRIBUTE_* value"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reflex_engine::datatype::typed;
    use reflex_engine::{Basic, ValueKind};

    fn int() -> Datatype {
        Datatype::Basic(Basic::plain(ValueKind::Signed, 4))
    }

    /// The int indices (from the buffer address) that one element of `t` selects, in order.
    fn map(t: &Datatype) -> Vec<isize> {
        let (lo, len) = t.span(1).unwrap();
        let words: Vec<i32> = (0..len as i32 / 4).map(|i| i + lo as i32 / 4).collect();
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
        let src = reflex_base::buf::SendBuf::from_slice(Box::leak(bytes.into_boxed_slice()));
        let mut out = vec![0u8; t.size()];
        typed::pack(t, 1, &src, 0, &mut out);
        out.chunks(4)
            .map(|c| i32::from_ne_bytes(c.try_into().unwrap()) as isize)
            .collect()
    }

    fn bounds(t: &Datatype) -> (usize, isize, isize, isize, isize) {
        let b = t.bounds();
        (t.size(), b.lb, b.extent(), b.true_lb, b.true_ub - b.true_lb)
    }

    #[test]
    fn subarray_in_both_orders() {
        let c = subarray(&[4, 5], &[2, 3], &[1, 1], ORDER_C, int()).unwrap();
        assert_eq!(bounds(&c), (24, 0, 80, 24, 32));
        assert_eq!(map(&c), vec![6, 7, 8, 11, 12, 13]);
        let f = subarray(&[4, 5], &[2, 3], &[1, 1], ORDER_FORTRAN, int()).unwrap();
        assert_eq!(bounds(&f), (24, 0, 80, 20, 40));
        assert_eq!(map(&f), vec![5, 6, 9, 10, 13, 14]);
        let e = subarray(&[4, 5], &[5, 1], &[0, 0], ORDER_C, int()).unwrap_err();
        assert_eq!(e.class, ErrorClass::Arg);
        assert!(subarray(&[4, 5], &[2, 1], &[0, 0], 77, int()).is_err());
    }

    fn da<'a>(
        size: c_int,
        rank: c_int,
        g: &'a [MPI_Count],
        d: &'a [c_int],
        a: &'a [c_int],
        p: &'a [c_int],
        order: c_int,
    ) -> Darray<'a> {
        Darray {
            size,
            rank,
            gsizes: g,
            distribs: d,
            dargs: a,
            psizes: p,
            order,
        }
    }

    #[test]
    fn darray_block_cyclic_and_none() {
        let dflt = [DISTRIBUTE_DFLT_DARG];
        let block = [DISTRIBUTE_BLOCK];
        let cyc = [DISTRIBUTE_CYCLIC];
        let t = darray(&da(3, 1, &[10], &block, &dflt, &[3], ORDER_C), int()).unwrap();
        assert_eq!(
            (bounds(&t), map(&t)),
            ((16, 0, 40, 16, 16), vec![4, 5, 6, 7])
        );
        let t = darray(&da(3, 2, &[10], &block, &dflt, &[3], ORDER_C), int()).unwrap();
        assert_eq!(map(&t), vec![8, 9]);
        let t = darray(&da(3, 1, &[10], &cyc, &dflt, &[3], ORDER_C), int()).unwrap();
        assert_eq!((bounds(&t), map(&t)), ((12, 0, 40, 4, 28), vec![1, 4, 7]));
        let t = darray(&da(3, 1, &[10], &cyc, &[2], &[3], ORDER_C), int()).unwrap();
        assert_eq!(map(&t), vec![2, 3, 8, 9]);
        // cyclic(3) over 2 processes of 10: rank 0 holds 0 1 2, 6 7 8; rank 1 holds 3 4 5, 9
        let t = darray(&da(2, 1, &[10], &cyc, &[3], &[2], ORDER_C), int()).unwrap();
        assert_eq!(map(&t), vec![3, 4, 5, 9]);
        let g2 = [4, 6];
        let d2 = [DISTRIBUTE_BLOCK, DISTRIBUTE_CYCLIC];
        let a2 = [DISTRIBUTE_DFLT_DARG, 1];
        let t = darray(&da(4, 3, &g2, &d2, &a2, &[2, 2], ORDER_C), int()).unwrap();
        assert_eq!(
            (bounds(&t), map(&t)),
            ((24, 0, 96, 52, 44), vec![13, 15, 17, 19, 21, 23])
        );
        let dn = [DISTRIBUTE_BLOCK, DISTRIBUTE_NONE];
        let an = [DISTRIBUTE_DFLT_DARG; 2];
        let t = darray(&da(2, 1, &g2, &dn, &an, &[2, 1], ORDER_FORTRAN), int()).unwrap();
        assert_eq!(map(&t), vec![2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23]);
    }

    #[test]
    fn darray_rejects_bad_arguments() {
        let dflt = [DISTRIBUTE_DFLT_DARG];
        let block = [DISTRIBUTE_BLOCK];
        let bad = [
            da(4, 0, &[10], &block, &[2], &[4], ORDER_C), // 2 × 4 < 10
            da(3, 0, &[10], &block, &dflt, &[4], ORDER_C), // grid 4 != size 3
            da(4, 4, &[10], &block, &dflt, &[4], ORDER_C), // rank out of range
            da(4, 0, &[10], &[DISTRIBUTE_NONE], &dflt, &[4], ORDER_C),
            da(4, 0, &[10], &[7], &dflt, &[4], ORDER_C),
            da(4, 0, &[10], &block, &[0], &[4], ORDER_C),
            da(4, 0, &[10], &block, &dflt, &[4], 3),
        ];
        for a in bad {
            assert_eq!(
                darray(&a, int()).unwrap_err().class,
                ErrorClass::Arg,
                "{a:?}"
            );
        }
    }
}
