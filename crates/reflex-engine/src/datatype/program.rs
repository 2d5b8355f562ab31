//! The flat program a datatype compiles into: contiguous runs and counted loops.
//!
//! At commit the type tree becomes a list of two instructions: `Copy { disp, len }` (one contiguous
//! run, `disp` relative to the current base) and `Loop { count, stride, body }` (run the next `body`
//! instructions `count` times, moving the base by `stride` each time). Compilation merges adjacent
//! runs, turns a loop over a run whose stride equals its length into one longer run, inlines
//! single-iteration loops and folds three or more equally spaced equal runs (indexed types built
//! from regular data) into a loop, so a vector of any nesting costs one loop per dimension that
//! really is strided. The [`super::cursor::Cursor`] runs the program without recursion; a loop
//! whose body is one run is its fast path (VIRTUS's "regular stride" case, `seed000c.md` P1).
//!
//! Compilation also decides whether the runs of one element overlap (erroneous for a receive):
//! structurally when spans of loops and blocks are disjoint, else by sorting the runs when there are
//! at most [`EXACT_CHECK_RUNS`] of them, else it assumes they do not.

use super::basic::{Basic, PairValue, ValueKind};
use super::cursor::Cursor;
use super::layout::{Layout, Shape};
use super::Datatype;

/// Most runs the exact overlap check enumerates.
pub const EXACT_CHECK_RUNS: usize = 1 << 22;

/// One instruction of a compiled datatype.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Instr {
    /// `len` bytes at `base + disp`.
    Copy {
        /// Displacement from the current base.
        disp: isize,
        /// Bytes in the run (never 0).
        len: usize,
    },
    /// Runs the next `body` instructions `count` times, the base moving by `stride` each time.
    Loop {
        /// Iterations (at least 2).
        count: usize,
        /// Bytes the base moves per iteration.
        stride: isize,
        /// Instructions in the body.
        body: usize,
        /// Data bytes one iteration of the body moves.
        body_size: usize,
    },
}

/// The compile-time tree the program is flattened from (kept so parent types reuse it).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Item {
    Copy(isize, usize),
    Loop(usize, isize, Vec<Item>),
}

/// A compiled datatype: instructions for one element, and facts about them.
#[derive(Debug, Clone)]
pub struct Program {
    tree: Vec<Item>,
    pub(crate) instrs: Vec<Instr>,
    pub(crate) depth: usize,
    /// Contiguous runs in one element (saturating).
    pub(crate) runs: u64,
    /// Data bytes per element.
    pub(crate) size: usize,
    /// No two runs of one element overlap (as far as the check could tell).
    pub(crate) disjoint: bool,
    /// Per instruction: a loop whose body is runs only (walked by the flat-body fast path).
    pub(crate) flat: Vec<bool>,
    /// The element itself is runs only.
    pub(crate) flat_top: bool,
}

impl Program {
    /// Compiles a derived datatype.
    pub(crate) fn compile(layout: &Layout) -> Self {
        let mut items = Vec::new();
        match layout.shape() {
            Shape::Vector {
                count,
                blocklen,
                stride,
                child,
            } => {
                let mut block = Vec::new();
                emit(&mut block, child, *blocklen, 0);
                push_loop(&mut items, *count, *stride, block);
            }
            Shape::Blocks { blocks, .. } => {
                for b in blocks {
                    emit(&mut items, &b.dt, b.count, b.disp);
                }
                items = fold_regular_runs(items);
            }
            Shape::Resized { child, .. } => emit(&mut items, child, 1, 0),
        }
        Self::from_tree(items)
    }

    /// The program of a basic type (one run, or two for `MPI_SHORT_INT`'s inner padding).
    pub(crate) fn of_basic(b: &Basic) -> Self {
        Self::from_tree(basic_items(b))
    }

    /// A program received from another process (see [`super::wire`]): already validated.
    pub(crate) fn from_parts(instrs: Vec<Instr>, depth: usize, runs: u64, size: usize) -> Self {
        let (flat, flat_top) = flat_bodies(&instrs);
        Self {
            tree: Vec::new(),
            instrs,
            depth,
            runs,
            size,
            disjoint: true,
            flat,
            flat_top,
        }
    }

    fn from_tree(tree: Vec<Item>) -> Self {
        let mut instrs = Vec::new();
        let depth = flatten(&tree, &mut instrs);
        let size = tree_size(&tree);
        let runs = tree_runs(&tree);
        let mut program = Self {
            tree,
            ..Self::from_parts(instrs, depth, runs, size)
        };
        program.disjoint = match level_span(&program.tree) {
            Some(_) => true,
            None => program.exact_disjoint(1, 0).unwrap_or(true),
        };
        program
    }

    /// True when one element is a single run starting at displacement 0.
    pub(crate) fn is_one_run(&self) -> bool {
        matches!(self.instrs[..], [Instr::Copy { disp: 0, .. }])
    }

    /// Average bytes per contiguous run (what decides between iovecs and packing).
    pub fn average_run(&self) -> usize {
        if self.runs == 0 {
            return 0;
        }
        (self.size as u64 / self.runs) as usize
    }

    /// Whether `count` elements `extent` apart have overlapping runs; `None` when there are too
    /// many runs to tell.
    pub(crate) fn exact_disjoint(&self, count: usize, extent: isize) -> Option<bool> {
        let total = self.runs.saturating_mul(count as u64);
        if total > EXACT_CHECK_RUNS as u64 {
            return None;
        }
        let mut runs = Vec::with_capacity(total as usize);
        Cursor::new(self, count, extent, 0).runs(usize::MAX, |disp, len| runs.push((disp, len)));
        runs.sort_unstable();
        Some(
            runs.windows(2)
                .all(|w| w[0].0.saturating_add(w[0].1 as isize) <= w[1].0),
        )
    }
}

/// Which loops have bodies of runs only, and whether the whole program is runs only.
fn flat_bodies(instrs: &[Instr]) -> (Vec<bool>, bool) {
    let only_runs = |range: &[Instr]| range.iter().all(|i| matches!(i, Instr::Copy { .. }));
    let flat = instrs
        .iter()
        .enumerate()
        .map(|(pc, i)| match *i {
            Instr::Loop { body, .. } => instrs.get(pc + 1..pc + 1 + body).is_some_and(only_runs),
            Instr::Copy { .. } => false,
        })
        .collect();
    (flat, only_runs(instrs))
}

fn basic_items(b: &Basic) -> Vec<Item> {
    match b.kind {
        ValueKind::Pair {
            value: PairValue::Short,
        } => vec![Item::Copy(0, 2), Item::Copy(4, 4)],
        _ if b.size == 0 => Vec::new(),
        _ => vec![Item::Copy(0, b.size as usize)],
    }
}

/// Appends `n` elements of `dt` placed at `disp`.
fn emit(out: &mut Vec<Item>, dt: &Datatype, n: usize, disp: isize) {
    if n == 0 || dt.size() == 0 {
        return;
    }
    let (tree, extent) = match dt {
        Datatype::Basic(b) => (basic_items(b), b.extent as isize),
        Datatype::Derived(l) => (l.program().tree.clone(), l.bounds().extent()),
    };
    push_loop(out, n, extent, shifted(tree, disp));
}

fn shifted(mut items: Vec<Item>, by: isize) -> Vec<Item> {
    for item in &mut items {
        match item {
            Item::Copy(d, _) => *d = d.wrapping_add(by),
            Item::Loop(_, _, body) => *body = shifted(std::mem::take(body), by),
        }
    }
    items
}

/// Appends `count` repetitions of `body`, `stride` apart, simplifying as it goes.
fn push_loop(out: &mut Vec<Item>, count: usize, stride: isize, body: Vec<Item>) {
    if count == 0 || body.is_empty() {
        return;
    }
    if count == 1 {
        return body.into_iter().for_each(|i| push(out, i));
    }
    if let [Item::Copy(d, len)] = body[..] {
        if stride == len as isize {
            return push(out, Item::Copy(d, len * count));
        }
    }
    push(out, Item::Loop(count, stride, body));
}

/// Appends one item, merging it into a preceding adjacent run.
fn push(out: &mut Vec<Item>, item: Item) {
    if let (Some(Item::Copy(d, len)), Item::Copy(next, more)) = (out.last_mut(), &item) {
        if d.wrapping_add(*len as isize) == *next {
            *len += more;
            return;
        }
    }
    out.push(item);
}

/// Folds runs of three or more equal-length, equally spaced copies into loops.
fn fold_regular_runs(items: Vec<Item>) -> Vec<Item> {
    let mut out: Vec<Item> = Vec::with_capacity(items.len());
    let mut i = 0;
    while i < items.len() {
        let mut j = i + 1;
        if let (Item::Copy(d0, len), Some(Item::Copy(d1, len1))) = (&items[i], items.get(i + 1)) {
            let stride = d1.wrapping_sub(*d0);
            while let Some(Item::Copy(dj, lj)) = items.get(j) {
                let expected = d0.wrapping_add(stride.wrapping_mul((j - i) as isize));
                if lj != len || *dj != expected || len1 != len {
                    break;
                }
                j += 1;
            }
            if j - i >= 3 {
                push_loop(&mut out, j - i, stride, vec![Item::Copy(*d0, *len)]);
                i = j;
                continue;
            }
        }
        push(&mut out, items[i].clone());
        i += 1;
    }
    out
}

/// Writes the flat instructions of `items`; returns the loop nesting depth.
fn flatten(items: &[Item], out: &mut Vec<Instr>) -> usize {
    let mut depth = 0;
    for item in items {
        match item {
            Item::Copy(disp, len) => out.push(Instr::Copy {
                disp: *disp,
                len: *len,
            }),
            Item::Loop(count, stride, body) => {
                let at = out.len();
                out.push(Instr::Copy { disp: 0, len: 0 });
                depth = depth.max(1 + flatten(body, out));
                out[at] = Instr::Loop {
                    count: *count,
                    stride: *stride,
                    body: out.len() - at - 1,
                    body_size: tree_size(body),
                };
            }
        }
    }
    depth
}

fn tree_size(items: &[Item]) -> usize {
    items
        .iter()
        .map(|i| match i {
            Item::Copy(_, len) => *len,
            Item::Loop(count, _, body) => count.saturating_mul(tree_size(body)),
        })
        .fold(0usize, usize::saturating_add)
}

fn tree_runs(items: &[Item]) -> u64 {
    items
        .iter()
        .map(|i| match i {
            Item::Copy(..) => 1,
            Item::Loop(count, _, body) => (*count as u64).saturating_mul(tree_runs(body)),
        })
        .fold(0u64, u64::saturating_add)
}

/// The byte span of a level whose items provably do not overlap; `None` when not provable.
fn level_span(items: &[Item]) -> Option<(isize, isize)> {
    let mut spans = items.iter().map(item_span).collect::<Option<Vec<_>>>()?;
    spans.sort_unstable();
    let disjoint = spans.windows(2).all(|w| w[0].1 <= w[1].0);
    let lo = spans.first().map_or(0, |s| s.0);
    let hi = spans.iter().map(|s| s.1).max().unwrap_or(0);
    disjoint.then_some((lo, hi))
}

fn item_span(item: &Item) -> Option<(isize, isize)> {
    match item {
        Item::Copy(d, len) => Some((*d, d.checked_add(*len as isize)?)),
        Item::Loop(count, stride, body) => {
            let (lo, hi) = level_span(body)?;
            if stride.unsigned_abs() < (hi - lo) as usize {
                return None;
            }
            let last = stride.checked_mul(*count as isize - 1)?;
            Some((lo + last.min(0), hi + last.max(0)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::layout::Block;
    use std::sync::Arc;

    fn double() -> Datatype {
        Datatype::Basic(Basic::plain(ValueKind::Float, 8))
    }

    fn derived(l: Layout) -> Datatype {
        Datatype::Derived(Arc::new(l))
    }

    #[test]
    fn a_vector_is_one_loop_over_one_run() {
        let v = Layout::vector(4, 2, 32, double()).unwrap();
        let p = v.program();
        assert_eq!(
            p.instrs,
            vec![
                Instr::Loop {
                    count: 4,
                    stride: 32,
                    body: 1,
                    body_size: 16
                },
                Instr::Copy { disp: 0, len: 16 }
            ]
        );
        assert_eq!((p.runs, p.size, p.average_run()), (4, 64, 16));
        assert!(p.disjoint);
    }

    #[test]
    fn contiguous_nesting_collapses_into_one_run() {
        let c = derived(Layout::vector(3, 1, 8, double()).unwrap());
        let cc = Layout::vector(2, 1, 24, c).unwrap();
        assert_eq!(cc.program().instrs, vec![Instr::Copy { disp: 0, len: 48 }]);
        assert!(cc.program().is_one_run());
    }

    #[test]
    fn equally_spaced_blocks_fold_into_a_loop() {
        let blocks = (0..5)
            .map(|i| Block {
                count: 1,
                disp: 16 * i,
                dt: double(),
            })
            .collect();
        let l = Layout::blocks(blocks, false).unwrap();
        assert_eq!(l.program().instrs.len(), 2);
        assert_eq!(l.program().runs, 5);
    }

    #[test]
    fn overlapping_blocks_are_detected() {
        let blocks = vec![
            Block {
                count: 2,
                disp: 0,
                dt: double(),
            },
            Block {
                count: 1,
                disp: 8,
                dt: double(),
            },
        ];
        assert!(!Layout::blocks(blocks, false).unwrap().program().disjoint);
        let zero_stride = Layout::vector(3, 1, 0, double()).unwrap();
        assert!(!zero_stride.program().disjoint);
    }

    #[test]
    fn short_int_keeps_its_inner_padding() {
        let short_int = Basic {
            kind: ValueKind::Pair {
                value: PairValue::Short,
            },
            size: 6,
            extent: 8,
        };
        let p = Program::of_basic(&short_int);
        assert_eq!(
            p.instrs,
            vec![
                Instr::Copy { disp: 0, len: 2 },
                Instr::Copy { disp: 4, len: 4 }
            ]
        );
    }
}
