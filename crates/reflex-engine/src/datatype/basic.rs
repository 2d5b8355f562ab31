//! Datatypes as the engine sees them.
//!
//! This first version knows the predefined (basic) datatypes: their size, their extent, and what kind
//! of value they hold (which decides the reduction operations that apply). Every engine call takes a
//! [`Datatype`] and a count, so derived datatypes (their own issue) slot in behind the same calls:
//! [`Datatype::contiguous_span`] is where a non-contiguous layout will hand the transport a cursor
//! instead of one byte range.

use crate::error::{ErrorClass, MpiError, Result};

/// What kind of value a basic datatype holds (decides which reductions apply).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// Signed integer of the datatype's size.
    Signed,
    /// Unsigned integer of the datatype's size.
    Unsigned,
    /// IEEE float (4 or 8 bytes) or x87 long double (16 bytes of storage).
    Float,
    /// Complex number: two floats of half the size.
    Complex,
    /// Logical (C `_Bool`, C++ `bool`, Fortran `LOGICAL`).
    Logical,
    /// Raw bytes (`MPI_BYTE`, `MPI_PACKED`): no arithmetic.
    Byte,
    /// Characters (`MPI_CHAR`, `MPI_WCHAR`, `MPI_CHARACTER`): no arithmetic.
    Char,
    /// A value-index pair for `MPI_MINLOC`/`MPI_MAXLOC`: the value kind and size, then an int index.
    Pair {
        /// Kind of the value half.
        value: PairValue,
    },
    /// The `MPI_LB`/`MPI_UB` markers (size 0).
    Marker,
}

/// The value half of a MINLOC/MAXLOC pair type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairValue {
    /// `float` (MPI_FLOAT_INT).
    Float,
    /// `double` (MPI_DOUBLE_INT).
    Double,
    /// `long` (MPI_LONG_INT).
    Long,
    /// `short` (MPI_SHORT_INT).
    Short,
    /// `int` (MPI_2INT).
    Int,
    /// `long double` (MPI_LONG_DOUBLE_INT).
    LongDouble,
}

/// A predefined datatype: kind, size (bytes of data) and extent (stride between elements).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Basic {
    /// What the bytes mean.
    pub kind: ValueKind,
    /// `MPI_Type_size`: bytes of data per element.
    pub size: u32,
    /// `MPI_Type_get_extent`: distance between consecutive elements (pair types are padded structs).
    pub extent: u32,
}

impl Basic {
    /// A basic type whose extent equals its size.
    pub const fn plain(kind: ValueKind, size: u32) -> Self {
        Self {
            kind,
            size,
            extent: size,
        }
    }
}

/// A datatype handle as the engine uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Datatype {
    /// A predefined datatype.
    Basic(Basic),
}

impl Datatype {
    /// Bytes of data in one element.
    pub fn size(&self) -> usize {
        match self {
            Datatype::Basic(b) => b.size as usize,
        }
    }

    /// Distance in bytes between consecutive elements.
    pub fn extent(&self) -> usize {
        match self {
            Datatype::Basic(b) => b.extent as usize,
        }
    }

    /// The value kind when the type is basic (reductions need it).
    pub fn basic(&self) -> Option<Basic> {
        match self {
            Datatype::Basic(b) => Some(*b),
        }
    }

    /// The number of bytes `count` elements occupy in a contiguous buffer, or an error if it
    /// overflows. Padded pair types move their padding too, which keeps the layout exact.
    pub fn contiguous_span(&self, count: usize) -> Result<usize> {
        count.checked_mul(self.extent()).ok_or_else(|| {
            MpiError::new(
                ErrorClass::Count,
                format!("count {count} times extent {} overflows", self.extent()),
            )
        })
    }

    /// Element count for `bytes` received (`MPI_Get_count`): `None` when not a whole number.
    pub fn count_of(&self, bytes: usize) -> Option<usize> {
        let unit = self.extent();
        if unit == 0 {
            return Some(0);
        }
        bytes.is_multiple_of(unit).then_some(bytes / unit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pair_types_move_their_padding() {
        let double_int = Datatype::Basic(Basic {
            kind: ValueKind::Pair {
                value: PairValue::Double,
            },
            size: 12,
            extent: 16,
        });
        assert_eq!(double_int.contiguous_span(3).unwrap(), 48);
        assert_eq!(double_int.count_of(48), Some(3));
        assert_eq!(double_int.count_of(40), None);
    }

    #[test]
    fn overflowing_span_is_a_count_error() {
        let int = Datatype::Basic(Basic::plain(ValueKind::Signed, 4));
        assert_eq!(
            int.contiguous_span(usize::MAX).unwrap_err().class,
            ErrorClass::Count
        );
    }
}
