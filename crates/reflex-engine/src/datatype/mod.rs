//! Datatypes as the engine sees them: predefined ones and derived ones.
//!
//! A [`Datatype`] is either a [`Basic`] (predefined: kind, size, extent) or a shared [`Layout`]
//! (derived: the constructor tree plus the flat program compiled from it). The engine moves a
//! message as its *packed stream* (the data bytes in typemap order, `count × size` bytes): a
//! dense type (data filling its extent, no gaps) is its own packed stream and is copied as one
//! range; any other type goes through a [`cursor::Placement`], which gathers and scatters runs
//! straight between the application's memory and the transport's cells.
//!
//! Map: [`basic`] (predefined types) → [`layout`] (constructors, bounds, signature) →
//! [`program`] (compilation to runs and loops) → [`cursor`] (resumable walk, pack/unpack) →
//! [`typed`] (pack/unpack between application buffers and packed bytes) and [`wire`] (a program
//! described in a rendezvous packet).

pub mod basic;
pub mod cursor;
pub mod layout;
pub mod program;
pub mod typed;
pub mod wire;

pub use basic::{Basic, PairValue, ValueKind};
pub use layout::{Block, Bounds, Layout, Shape};
pub use program::Program;

use crate::error::{ErrorClass, MpiError, Result};
use std::sync::Arc;

/// A datatype handle as the engine uses it.
#[derive(Debug, Clone)]
pub enum Datatype {
    /// A predefined datatype.
    Basic(Basic),
    /// A derived datatype.
    Derived(Arc<Layout>),
}

impl PartialEq for Datatype {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Datatype::Basic(a), Datatype::Basic(b)) => a == b,
            (Datatype::Derived(a), Datatype::Derived(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Datatype {
    /// Wraps a constructed layout.
    pub fn derived(layout: Layout) -> Self {
        Datatype::Derived(Arc::new(layout))
    }

    /// Bytes of data in one element.
    pub fn size(&self) -> usize {
        match self {
            Datatype::Basic(b) => b.size as usize,
            Datatype::Derived(l) => l.size(),
        }
    }

    /// Bounds and true bounds of one element.
    pub fn bounds(&self) -> Bounds {
        match self {
            Datatype::Basic(b) => Bounds::of_basic(b),
            Datatype::Derived(l) => l.bounds(),
        }
    }

    /// Distance in bytes between consecutive elements (negative for some resized types).
    pub fn extent(&self) -> isize {
        match self {
            Datatype::Basic(b) => b.extent as isize,
            Datatype::Derived(l) => l.bounds().extent(),
        }
    }

    /// Strictest alignment of the basic types inside.
    pub fn align(&self) -> usize {
        match self {
            Datatype::Basic(b) => b.align(),
            Datatype::Derived(l) => l.align(),
        }
    }

    /// Basic elements per element (`MPI_Get_elements`); a predefined pair type
    /// (`MPI_DOUBLE_INT`, ...) is two, a value and an index, as the struct it stands for.
    pub fn elements(&self) -> u64 {
        match self {
            Datatype::Basic(b) if b.size == 0 => 0,
            Datatype::Basic(Basic {
                kind: ValueKind::Pair { .. },
                ..
            }) => 2,
            Datatype::Basic(_) => 1,
            Datatype::Derived(l) => l.elements(),
        }
    }

    /// The single basic type all the data has, if any.
    pub fn uniform(&self) -> Option<Basic> {
        match self {
            Datatype::Basic(b) if b.size == 0 => None,
            Datatype::Basic(b) => Some(*b),
            Datatype::Derived(l) => l.uniform(),
        }
    }

    /// The basic type reductions work on: the type itself, or the one basic type of a derived type.
    pub fn basic(&self) -> Option<Basic> {
        self.uniform()
    }

    /// The derived layout, if any.
    pub fn layout(&self) -> Option<&Arc<Layout>> {
        match self {
            Datatype::Basic(_) => None,
            Datatype::Derived(l) => Some(l),
        }
    }

    /// True when `count` elements are their own packed stream: one range of `count × size` bytes
    /// at the buffer address (a basic type, or a derived one without gaps).
    pub fn is_dense(&self) -> bool {
        match self {
            Datatype::Basic(b) => b.size == b.extent && !is_short_int(b),
            Datatype::Derived(l) => {
                l.program().is_one_run() && l.bounds().extent() == l.size() as isize
            }
        }
    }

    /// Bytes of `count` elements when they are one run starting at the buffer address (a
    /// predefined type whose extent is its size), else `None`: the test of the fast paths.
    #[inline]
    pub fn dense_basic_len(&self, count: usize) -> Option<usize> {
        match self {
            Datatype::Basic(b) if b.size == b.extent && !is_short_int(b) => {
                count.checked_mul(b.size as usize)
            }
            _ => None,
        }
    }

    /// Bytes of the packed stream of `count` elements.
    pub fn packed_len(&self, count: usize) -> Result<usize> {
        count.checked_mul(self.size()).ok_or_else(|| {
            MpiError::new(
                ErrorClass::Count,
                format!("count {count} times type size {} overflows", self.size()),
            )
        })
    }

    /// The memory `count` elements touch, as `(offset of the first byte from the buffer address,
    /// length)`; `(0, 0)` when they hold no data.
    pub fn span(&self, count: usize) -> Result<(isize, usize)> {
        if let Some(len) = self.dense_basic_len(count) {
            return Ok((0, len));
        }
        let b = self.bounds();
        if count == 0 || self.size() == 0 {
            return Ok((0, 0));
        }
        let overflow = || {
            MpiError::new(
                ErrorClass::Count,
                format!("{count} elements of extent {} overflow", b.extent()),
            )
        };
        let last = isize::try_from(count - 1)
            .ok()
            .and_then(|n| n.checked_mul(b.extent()))
            .ok_or_else(overflow)?;
        let lo = b.true_lb.checked_add(last.min(0)).ok_or_else(overflow)?;
        let hi = b.true_ub.checked_add(last.max(0)).ok_or_else(overflow)?;
        Ok((lo, (hi - lo) as usize))
    }

    /// The number of bytes `count` elements occupy in a contiguous buffer (collectives, which
    /// work on dense buffers), or an error if it overflows.
    pub fn contiguous_span(&self, count: usize) -> Result<usize> {
        let extent = self.extent().max(0) as usize;
        count.checked_mul(extent).ok_or_else(|| {
            MpiError::new(
                ErrorClass::Count,
                format!("count {count} times extent {extent} overflows"),
            )
        })
    }

    /// Element count for `bytes` of packed data (`MPI_Get_count`): `None` when not a whole number.
    pub fn count_of(&self, bytes: usize) -> Option<usize> {
        let unit = self.size();
        if unit == 0 {
            return Some(0);
        }
        bytes.is_multiple_of(unit).then_some(bytes / unit)
    }

    /// Basic elements in `bytes` of packed data (`MPI_Get_elements`): `None` when the bytes end
    /// inside a basic element.
    pub fn elements_of(&self, bytes: usize) -> Option<u64> {
        self.elements_in_run(usize::MAX, bytes)
    }

    /// The compiled program of a type that is not dense.
    pub fn program(&self) -> Option<std::borrow::Cow<'_, Program>> {
        match self {
            Datatype::Basic(b) => Some(std::borrow::Cow::Owned(Program::of_basic(b))),
            Datatype::Derived(l) => Some(std::borrow::Cow::Borrowed(l.program())),
        }
    }
}

fn is_short_int(b: &Basic) -> bool {
    matches!(
        b.kind,
        ValueKind::Pair {
            value: PairValue::Short
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int() -> Datatype {
        Datatype::Basic(Basic::plain(ValueKind::Signed, 4))
    }

    fn double() -> Datatype {
        Datatype::Basic(Basic::plain(ValueKind::Float, 8))
    }

    fn char_() -> Datatype {
        Datatype::Basic(Basic::plain(ValueKind::Char, 1))
    }

    #[test]
    fn pair_types_pack_without_their_padding() {
        let double_int = Datatype::Basic(Basic {
            kind: ValueKind::Pair {
                value: PairValue::Double,
            },
            size: 12,
            extent: 16,
        });
        assert!(!double_int.is_dense());
        assert_eq!(double_int.packed_len(3).unwrap(), 36);
        assert_eq!(double_int.contiguous_span(3).unwrap(), 48);
        assert_eq!(double_int.count_of(36), Some(3));
        assert_eq!(double_int.span(3).unwrap(), (0, 44));
    }

    #[test]
    fn overflowing_span_is_a_count_error() {
        assert_eq!(
            int().contiguous_span(usize::MAX).unwrap_err().class,
            ErrorClass::Count
        );
        assert_eq!(
            int().packed_len(usize::MAX).unwrap_err().class,
            ErrorClass::Count
        );
    }

    #[test]
    fn struct_extent_is_padded_to_alignment() {
        let s = Layout::blocks(
            vec![
                Block {
                    count: 1,
                    disp: 0,
                    dt: double(),
                },
                Block {
                    count: 1,
                    disp: 8,
                    dt: char_(),
                },
            ],
            true,
        )
        .unwrap();
        let b = s.bounds();
        assert_eq!((s.size(), b.lb, b.ub, b.true_ub), (9, 0, 16, 9));
        let s = Datatype::derived(s);
        assert_eq!(s.elements_of(9), Some(2));
        assert_eq!(s.elements_of(8), Some(1));
        assert_eq!(s.elements_of(4), None);
        assert_eq!(s.elements_of(18 + 8), Some(5));
    }

    #[test]
    fn negative_displacements_and_resized_bounds() {
        let v = Datatype::derived(Layout::vector(3, 1, -8, int()).unwrap());
        let b = v.bounds();
        assert_eq!((b.lb, b.ub, b.true_lb, b.true_ub), (-16, 4, -16, 4));
        assert_eq!(v.span(2).unwrap(), (-16, 40));
        let r = Datatype::derived(Layout::resized(v.clone(), -4, 32).unwrap());
        let b = r.bounds();
        assert_eq!((b.lb, b.ub, b.true_lb, b.true_ub), (-4, 28, -16, 4));
        assert_eq!(r.span(3).unwrap(), (-16, 84));
        assert!(!r.is_dense());
    }

    #[test]
    fn lb_and_ub_markers_are_sticky() {
        let marker = |kind| Datatype::Basic(Basic::plain(kind, 0));
        let s = Layout::blocks(
            vec![
                Block {
                    count: 1,
                    disp: -3,
                    dt: marker(ValueKind::LbMarker),
                },
                Block {
                    count: 2,
                    disp: 0,
                    dt: int(),
                },
                Block {
                    count: 1,
                    disp: 20,
                    dt: marker(ValueKind::UbMarker),
                },
            ],
            true,
        )
        .unwrap();
        let b = s.bounds();
        assert_eq!((b.lb, b.ub, b.true_lb, b.true_ub), (-3, 20, 0, 8));
        let v = Layout::vector(2, 1, 23, Datatype::derived(s)).unwrap();
        assert_eq!((v.bounds().lb, v.bounds().ub), (-3, 43));
    }

    #[test]
    fn nesting_four_levels_deep() {
        let mut t = int();
        for _ in 0..4 {
            t = Datatype::derived(Layout::vector(2, 1, 2 * t.extent(), t).unwrap());
        }
        assert_eq!(t.size(), 64);
        assert_eq!(t.extent(), 324); // ub = 216 + 72 + 24 + 8 + 4
        assert_eq!(t.elements(), 16);
    }

    #[test]
    fn zero_count_blocks_hold_nothing() {
        let s = Layout::blocks(
            vec![
                Block {
                    count: 0,
                    disp: -100,
                    dt: double(),
                },
                Block {
                    count: 2,
                    disp: 8,
                    dt: int(),
                },
            ],
            false,
        )
        .unwrap();
        let b = s.bounds();
        assert_eq!((s.size(), b.lb, b.ub), (8, 8, 16));
    }
}
