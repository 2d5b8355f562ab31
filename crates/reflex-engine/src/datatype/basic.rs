//! The predefined (basic) datatypes: what kind of value they hold, their size and extent.
//!
//! The kind decides which reduction operations apply; the size and extent give the memory layout.
//! Pair types with padding inside (`MPI_SHORT_INT`, `MPI_DOUBLE_INT`, ...) are described here for
//! reductions, and built as small structs (see [`super::Layout::pair`]) for data movement.

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
    /// The `MPI_LB` marker (size 0): sets a struct's lower bound.
    LbMarker,
    /// The `MPI_UB` marker (size 0): sets a struct's upper bound.
    UbMarker,
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

impl PairValue {
    /// Bytes of the value half.
    pub fn value_size(self) -> usize {
        match self {
            PairValue::Float | PairValue::Int => 4,
            PairValue::Double | PairValue::Long => 8,
            PairValue::Short => 2,
            PairValue::LongDouble => 16,
        }
    }

    /// Offset of the int index in memory (after the value, aligned to 4 bytes).
    pub fn index_offset(self) -> usize {
        self.value_size().max(4)
    }
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
    /// The natural alignment of the type in C (what a struct containing it is padded to).
    pub fn align(&self) -> usize {
        let size = self.size as usize;
        match self.kind {
            ValueKind::Complex => size / 2,
            ValueKind::Pair { value } => match value {
                PairValue::Double | PairValue::Long => 8,
                PairValue::LongDouble => 16,
                _ => 4,
            },
            ValueKind::LbMarker | ValueKind::UbMarker => 1,
            _ => size.clamp(1, 16),
        }
    }

    /// A basic type whose extent equals its size.
    pub const fn plain(kind: ValueKind, size: u32) -> Self {
        Self {
            kind,
            size,
            extent: size,
        }
    }
}
