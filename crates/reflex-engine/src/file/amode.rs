//! File access modes (`MPI_MODE_*`, MPI-3.1 §13.2.1) and the combinations the standard forbids.

use crate::error::{ErrorClass, MpiError, Result};

/// `MPI_MODE_CREATE`.
pub const CREATE: i32 = 1;
/// `MPI_MODE_RDONLY`.
pub const RDONLY: i32 = 2;
/// `MPI_MODE_WRONLY`.
pub const WRONLY: i32 = 4;
/// `MPI_MODE_RDWR`.
pub const RDWR: i32 = 8;
/// `MPI_MODE_DELETE_ON_CLOSE`.
pub const DELETE_ON_CLOSE: i32 = 16;
/// `MPI_MODE_UNIQUE_OPEN`.
pub const UNIQUE_OPEN: i32 = 32;
/// `MPI_MODE_EXCL`.
pub const EXCL: i32 = 64;
/// `MPI_MODE_APPEND`.
pub const APPEND: i32 = 128;
/// `MPI_MODE_SEQUENTIAL`.
pub const SEQUENTIAL: i32 = 256;

const ALL: i32 =
    CREATE | RDONLY | WRONLY | RDWR | DELETE_ON_CLOSE | UNIQUE_OPEN | EXCL | APPEND | SEQUENTIAL;

/// A checked access mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Amode(i32);

impl Amode {
    /// Checks `bits`: exactly one of `RDONLY`, `RDWR`, `WRONLY`; no `CREATE` or `EXCL` with
    /// `RDONLY`; no `SEQUENTIAL` with `RDWR`; no unknown bits.
    pub fn new(bits: i32) -> Result<Self> {
        let bad = |why: &str| {
            Err(MpiError::new(
                ErrorClass::Amode,
                format!("access mode {bits:#x}: {why}"),
            ))
        };
        if bits & !ALL != 0 {
            return bad("unknown mode bits");
        }
        let access = [RDONLY, WRONLY, RDWR]
            .iter()
            .filter(|&&b| bits & b != 0)
            .count();
        if access != 1 {
            return bad(
                "exactly one of MPI_MODE_RDONLY, MPI_MODE_RDWR, MPI_MODE_WRONLY is required",
            );
        }
        if bits & RDONLY != 0 && bits & (CREATE | EXCL) != 0 {
            return bad("MPI_MODE_RDONLY with MPI_MODE_CREATE or MPI_MODE_EXCL");
        }
        if bits & RDWR != 0 && bits & SEQUENTIAL != 0 {
            return bad("MPI_MODE_RDWR with MPI_MODE_SEQUENTIAL");
        }
        Ok(Self(bits))
    }

    /// The bits as given.
    pub fn bits(self) -> i32 {
        self.0
    }

    fn has(self, bit: i32) -> bool {
        self.0 & bit != 0
    }

    /// `MPI_MODE_RDONLY`.
    pub fn read_only(self) -> bool {
        self.has(RDONLY)
    }

    /// `MPI_MODE_WRONLY`.
    pub fn write_only(self) -> bool {
        self.has(WRONLY)
    }

    /// `MPI_MODE_CREATE`.
    pub fn create(self) -> bool {
        self.has(CREATE)
    }

    /// `MPI_MODE_EXCL`.
    pub fn excl(self) -> bool {
        self.has(EXCL)
    }

    /// `MPI_MODE_APPEND`: the file pointers start at the end of the file.
    pub fn append(self) -> bool {
        self.has(APPEND)
    }

    /// `MPI_MODE_DELETE_ON_CLOSE`.
    pub fn delete_on_close(self) -> bool {
        self.has(DELETE_ON_CLOSE)
    }

    /// `MPI_MODE_SEQUENTIAL`: only shared file pointers may be used.
    pub fn sequential(self) -> bool {
        self.has(SEQUENTIAL)
    }

    /// Fails with `MPI_ERR_READ_ONLY` when the file may not be written.
    pub fn check_write(self) -> Result<()> {
        if self.read_only() {
            return Err(MpiError::new(
                ErrorClass::ReadOnly,
                "the file was opened with MPI_MODE_RDONLY",
            ));
        }
        Ok(())
    }

    /// Fails with `MPI_ERR_ACCESS` when the file may not be read.
    pub fn check_read(self) -> Result<()> {
        if self.write_only() {
            return Err(MpiError::new(
                ErrorClass::Access,
                "the file was opened with MPI_MODE_WRONLY",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_forbidden_combinations_are_amode_errors() {
        for bits in [
            0,
            RDONLY | RDWR,
            RDONLY | WRONLY | RDWR,
            RDONLY | CREATE,
            RDONLY | EXCL,
            RDWR | SEQUENTIAL,
            RDWR | 1 << 12,
        ] {
            assert_eq!(
                Amode::new(bits).unwrap_err().class,
                ErrorClass::Amode,
                "{bits:#x}"
            );
        }
        for bits in [
            RDONLY,
            WRONLY | CREATE | EXCL,
            RDWR | CREATE | DELETE_ON_CLOSE | APPEND | UNIQUE_OPEN,
            WRONLY | SEQUENTIAL,
        ] {
            assert_eq!(Amode::new(bits).unwrap().bits(), bits);
        }
    }

    #[test]
    fn access_is_checked_by_direction() {
        let r = Amode::new(RDONLY).unwrap();
        assert_eq!(r.check_write().unwrap_err().class, ErrorClass::ReadOnly);
        assert!(r.check_read().is_ok());
        let w = Amode::new(WRONLY).unwrap();
        assert_eq!(w.check_read().unwrap_err().class, ErrorClass::Access);
    }
}
