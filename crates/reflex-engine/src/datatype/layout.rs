//! Derived datatypes: the type tree a constructor builds, with its size, bounds and signature.
//!
//! Every MPI constructor maps onto three shapes: a [`Shape::Vector`] (contiguous, vector, hvector:
//! equal blocks at a fixed stride), [`Shape::Blocks`] (indexed, hindexed, the `_block` forms and
//! struct: blocks of any type at any displacement) and [`Shape::Resized`] (new lower bound and
//! extent). Size, bounds (with MPI-1's sticky `MPI_LB`/`MPI_UB` markers and the struct alignment
//! padding of MPI-3.1 §4.1.6) and the number of basic elements are computed once, at construction.
//! Queries walk the tree; the data path never does: it runs the flat [`Program`] compiled from the
//! tree at commit (see [`super::program`]).

use super::basic::{Basic, ValueKind};
use super::program::Program;
use super::Datatype;
use crate::error::{ErrorClass, MpiError, Result};
use std::sync::OnceLock;

/// `count` elements of `dt` at byte displacement `disp`: one block of an indexed or struct type.
#[derive(Debug, Clone)]
pub struct Block {
    /// Elements in the block.
    pub count: usize,
    /// Byte displacement of the block's first element.
    pub disp: isize,
    /// The block's element type.
    pub dt: Datatype,
}

/// How a derived datatype was built.
#[derive(Debug, Clone)]
pub enum Shape {
    /// `count` blocks of `blocklen` elements of `child`, block `i` at `i * stride` bytes.
    Vector {
        /// Number of blocks.
        count: usize,
        /// Elements per block.
        blocklen: usize,
        /// Bytes between block starts (may be negative).
        stride: isize,
        /// Element type.
        child: Datatype,
    },
    /// Blocks in typemap order; `padded` (struct) rounds the extent up to the alignment.
    Blocks {
        /// The blocks.
        blocks: Vec<Block>,
        /// Apply the struct alignment rule to the extent.
        padded: bool,
    },
    /// `child` with lower bound `lb` and extent `extent`.
    Resized {
        /// New lower bound.
        lb: isize,
        /// New extent.
        extent: isize,
        /// The type resized.
        child: Datatype,
    },
}

/// Lower/upper bounds (extent = ub - lb) and true bounds (where data really lies).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Lower bound.
    pub lb: isize,
    /// Upper bound.
    pub ub: isize,
    /// Lowest byte holding data (0 for a type without data).
    pub true_lb: isize,
    /// One past the highest byte holding data.
    pub true_ub: isize,
    /// `lb` comes from an `MPI_LB` marker or a resize, and wins over data bounds in a struct.
    pub sticky_lb: bool,
    /// `ub` comes from an `MPI_UB` marker or a resize.
    pub sticky_ub: bool,
}

impl Bounds {
    /// The bounds of a basic type.
    pub fn of_basic(b: &Basic) -> Self {
        let (lb, sticky_lb, sticky_ub) = match b.kind {
            ValueKind::LbMarker => (0, true, false),
            ValueKind::UbMarker => (0, false, true),
            _ => (0, false, false),
        };
        // A pair's data ends with its index, after any padding inside (MPI_SHORT_INT).
        let data_end = match b.kind {
            ValueKind::Pair { value } => value.index_offset() + 4,
            _ => b.size as usize,
        };
        Self {
            lb,
            ub: b.extent as isize,
            true_lb: 0,
            true_ub: data_end as isize,
            sticky_lb,
            sticky_ub,
        }
    }

    /// Bytes between consecutive elements.
    pub fn extent(&self) -> isize {
        self.ub - self.lb
    }

    /// The bounds of `n >= 1` consecutive elements placed at `disp`.
    fn repeated(&self, n: usize, step: isize, disp: isize) -> Option<Self> {
        let last = step.checked_mul(isize::try_from(n - 1).ok()?)?;
        let (lo, hi) = (
            last.min(0).checked_add(disp)?,
            last.max(0).checked_add(disp)?,
        );
        Some(Self {
            lb: self.lb.checked_add(lo)?,
            ub: self.ub.checked_add(hi)?,
            true_lb: self.true_lb.checked_add(lo)?,
            true_ub: self.true_ub.checked_add(hi)?,
            ..*self
        })
    }
}

/// Combines the bounds of blocks laid side by side (MPI-1 rules for sticky markers).
#[derive(Default)]
struct Merge {
    data: Option<(isize, isize)>,
    bounds: Option<(isize, isize)>,
    sticky_lb: Option<isize>,
    sticky_ub: Option<isize>,
}

impl Merge {
    fn add(&mut self, b: Bounds, has_data: bool) {
        if has_data {
            let d = self.data.get_or_insert((b.true_lb, b.true_ub));
            *d = (d.0.min(b.true_lb), d.1.max(b.true_ub));
        }
        let m = self.bounds.get_or_insert((b.lb, b.ub));
        *m = (m.0.min(b.lb), m.1.max(b.ub));
        if b.sticky_lb {
            self.sticky_lb = Some(self.sticky_lb.map_or(b.lb, |s| s.min(b.lb)));
        }
        if b.sticky_ub {
            self.sticky_ub = Some(self.sticky_ub.map_or(b.ub, |s| s.max(b.ub)));
        }
    }

    fn finish(self, align: Option<usize>) -> Bounds {
        let (data_lb, data_ub) = self.data.unwrap_or((0, 0));
        let (lb, ub) = self.bounds.unwrap_or((0, 0));
        let lb = self.sticky_lb.unwrap_or(lb);
        let mut ub = self.sticky_ub.unwrap_or(ub);
        if let (Some(align), None) = (align, self.sticky_ub) {
            let extent = (ub - lb).max(0) as usize;
            ub = lb + extent.next_multiple_of(align.max(1)) as isize;
        }
        Bounds {
            lb,
            ub,
            true_lb: data_lb,
            true_ub: data_ub,
            sticky_lb: self.sticky_lb.is_some(),
            sticky_ub: self.sticky_ub.is_some(),
        }
    }
}

/// A derived datatype: its tree, the facts computed from it, and the compiled program.
#[derive(Debug)]
pub struct Layout {
    shape: Shape,
    size: usize,
    bounds: Bounds,
    align: usize,
    elements: u64,
    uniform: Option<Basic>,
    program: OnceLock<Program>,
}

fn overflow(what: &str) -> MpiError {
    MpiError::new(
        ErrorClass::Count,
        format!("datatype {what} overflows the address space"),
    )
}

impl Layout {
    /// `count` blocks of `blocklen` elements of `child`, `stride` bytes apart (vector, hvector,
    /// contiguous as `Vector { count, 1, extent }`).
    pub fn vector(count: usize, blocklen: usize, stride: isize, child: Datatype) -> Result<Self> {
        let n = count
            .checked_mul(blocklen)
            .ok_or_else(|| overflow("size"))?;
        let size = n
            .checked_mul(child.size())
            .ok_or_else(|| overflow("size"))?;
        let bounds = if n == 0 {
            Merge::default().finish(None)
        } else {
            let cb = child.bounds();
            let block = cb
                .repeated(blocklen, cb.extent(), 0)
                .ok_or_else(|| overflow("extent"))?;
            block
                .repeated(count, stride, 0)
                .ok_or_else(|| overflow("extent"))?
        };
        let elements = (n as u64).saturating_mul(child.elements());
        let uniform = if n == 0 { None } else { child.uniform() };
        let align = child.align();
        let shape = Shape::Vector {
            count,
            blocklen,
            stride,
            child,
        };
        Ok(Self::new(shape, size, bounds, align, elements, uniform))
    }

    /// Blocks of any types at any displacements (indexed family and struct); `padded` applies the
    /// struct rule that rounds the extent up to the strictest alignment inside.
    pub fn blocks(blocks: Vec<Block>, padded: bool) -> Result<Self> {
        let mut merge = Merge::default();
        let (mut size, mut elements, mut align) = (0usize, 0u64, 1usize);
        let mut uniform: Option<Option<Basic>> = None;
        for b in blocks.iter().filter(|b| b.count > 0) {
            let cb = b.dt.bounds();
            let placed = cb
                .repeated(b.count, cb.extent(), b.disp)
                .ok_or_else(|| overflow("extent"))?;
            let bytes = b
                .count
                .checked_mul(b.dt.size())
                .ok_or_else(|| overflow("size"))?;
            merge.add(placed, bytes > 0);
            size = size.checked_add(bytes).ok_or_else(|| overflow("size"))?;
            elements = elements.saturating_add((b.count as u64).saturating_mul(b.dt.elements()));
            align = align.max(b.dt.align());
            if bytes > 0 {
                let u = b.dt.uniform();
                uniform = Some(match uniform {
                    None => u,
                    Some(prev) if prev == u => u,
                    Some(_) => None,
                });
            }
        }
        let bounds = merge.finish(padded.then_some(align));
        let shape = Shape::Blocks { blocks, padded };
        Ok(Self::new(
            shape,
            size,
            bounds,
            align,
            elements,
            uniform.flatten(),
        ))
    }

    /// `child` with a new lower bound and extent (`MPI_Type_create_resized`).
    pub fn resized(child: Datatype, lb: isize, extent: isize) -> Result<Self> {
        let cb = child.bounds();
        let ub = lb.checked_add(extent).ok_or_else(|| overflow("extent"))?;
        let bounds = Bounds {
            lb,
            ub,
            sticky_lb: true,
            sticky_ub: true,
            ..cb
        };
        let (size, align, elements, uniform) = (
            child.size(),
            child.align(),
            child.elements(),
            child.uniform(),
        );
        let shape = Shape::Resized { lb, extent, child };
        Ok(Self::new(shape, size, bounds, align, elements, uniform))
    }

    fn new(
        shape: Shape,
        size: usize,
        bounds: Bounds,
        align: usize,
        elements: u64,
        uniform: Option<Basic>,
    ) -> Self {
        Self {
            shape,
            size,
            bounds,
            align,
            elements,
            uniform,
            program: OnceLock::new(),
        }
    }

    /// How the type was built.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// Bytes of data in one element.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Bounds and true bounds.
    pub fn bounds(&self) -> Bounds {
        self.bounds
    }

    /// Strictest alignment of the basic types inside.
    pub fn align(&self) -> usize {
        self.align
    }

    /// Basic elements in one element (saturating).
    pub fn elements(&self) -> u64 {
        self.elements
    }

    /// The one basic type every element of data has, if there is one (reductions need it).
    pub fn uniform(&self) -> Option<Basic> {
        self.uniform
    }

    /// The compiled program (compiled on first use: `MPI_Type_commit` or the first transfer).
    pub fn program(&self) -> &Program {
        self.program.get_or_init(|| Program::compile(self))
    }

    /// Compiles the program now (`MPI_Type_commit`).
    pub fn commit(&self) {
        self.program();
    }

    /// The parts of one element in typemap order: `(count, displacement, type)`.
    pub fn parts(&self) -> Vec<(usize, isize, &Datatype)> {
        match &self.shape {
            Shape::Vector {
                count,
                blocklen,
                stride,
                child,
            } => (0..*count)
                .map(|i| (*blocklen, stride.wrapping_mul(i as isize), child))
                .collect(),
            Shape::Blocks { blocks, .. } => {
                blocks.iter().map(|b| (b.count, b.disp, &b.dt)).collect()
            }
            Shape::Resized { child, .. } => vec![(1, 0, child)],
        }
    }

    /// Basic elements in the first `bytes` of one element's data; `None` when `bytes` ends inside
    /// a basic element (`MPI_Get_elements` then reports `MPI_UNDEFINED`).
    pub fn elements_within(&self, mut bytes: usize) -> Option<u64> {
        let mut found = 0u64;
        let (count, child) = match &self.shape {
            Shape::Vector {
                count,
                blocklen,
                child,
                ..
            } => (count.saturating_mul(*blocklen), child),
            Shape::Resized { child, .. } => (1, child),
            Shape::Blocks { blocks, .. } => {
                for b in blocks {
                    let whole = b.count.saturating_mul(b.dt.size());
                    if bytes < whole {
                        return Some(found + b.dt.elements_in_run(b.count, bytes)?);
                    }
                    found += (b.count as u64).saturating_mul(b.dt.elements());
                    bytes -= whole;
                }
                return (bytes == 0).then_some(found);
            }
        };
        child.elements_in_run(count, bytes)
    }
}

impl Datatype {
    /// Basic elements in the first `bytes` of `n` consecutive elements of this type.
    pub(crate) fn elements_in_run(&self, n: usize, bytes: usize) -> Option<u64> {
        let size = self.size();
        if size == 0 {
            return (bytes == 0).then_some(0);
        }
        let whole = (bytes / size).min(n);
        let rest = bytes - whole * size;
        let partial = match self {
            _ if rest == 0 => 0,
            _ if whole == n => return None,
            // A pair's value without its index (packed: the value comes first).
            Datatype::Basic(Basic {
                kind: ValueKind::Pair { value },
                ..
            }) if rest == value.value_size() => 1,
            Datatype::Basic(_) => return None,
            Datatype::Derived(l) => l.elements_within(rest)?,
        };
        Some((whole as u64).saturating_mul(self.elements()) + partial)
    }
}
