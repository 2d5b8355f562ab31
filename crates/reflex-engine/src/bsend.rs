//! The buffer of buffered sends (`MPI_Buffer_attach`/`MPI_Bsend`).
//!
//! The standard lets a buffered send complete at once by copying the message into space the
//! application attached. Reflex keeps the copy in an engine-owned allocation and uses the attached
//! buffer for what the application can observe: its capacity. Each buffered message holds
//! `len + MPI_BSEND_OVERHEAD` bytes of it until the message is on the wire, so a program that
//! overruns its buffer gets `MPI_ERR_BUFFER` exactly where MPICH would.

use crate::error::{ErrorClass, MpiError, Result};

/// Per-message bookkeeping charged against the attached buffer (MPICH's `MPI_BSEND_OVERHEAD`).
pub const BSEND_OVERHEAD: usize = 96;

/// The attached buffer and how much of it is in use.
#[derive(Debug, Default)]
pub(crate) struct BsendPool {
    attached: Option<(usize, usize)>,
    pub(crate) used: usize,
}

impl BsendPool {
    pub(crate) fn attach(&mut self, addr: usize, size: usize) -> Result<()> {
        if let Some((_, old)) = self.attached {
            return Err(MpiError::new(
                ErrorClass::Buffer,
                format!("a buffer of {old} bytes is already attached; detach it first"),
            ));
        }
        self.attached = Some((addr, size));
        Ok(())
    }

    /// Removes the buffer (the caller first waited for `used == 0`).
    pub(crate) fn detach(&mut self) -> Option<(usize, usize)> {
        self.attached.take()
    }

    /// Charges a message of `len` bytes; returns the amount to give back later.
    pub(crate) fn reserve(&mut self, len: usize) -> Result<usize> {
        let need = len + BSEND_OVERHEAD;
        let Some((_, size)) = self.attached else {
            return Err(MpiError::new(
                ErrorClass::Buffer,
                format!("buffered send of {len} bytes with no buffer attached"),
            ));
        };
        if self.used + need > size {
            return Err(MpiError::new(
                ErrorClass::Buffer,
                format!(
                    "buffered send of {len} bytes needs {need} bytes of the attached buffer, but only {} of {size} are free",
                    size - self.used
                ),
            ));
        }
        self.used += need;
        Ok(need)
    }

    pub(crate) fn give_back(&mut self, reserved: usize) {
        self.used -= reserved;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_respect_capacity_and_overhead() {
        let mut pool = BsendPool::default();
        assert_eq!(pool.reserve(1).unwrap_err().class, ErrorClass::Buffer);
        pool.attach(0x1000, 2 * (100 + BSEND_OVERHEAD)).unwrap();
        assert!(pool.attach(0x2000, 10).is_err());
        let a = pool.reserve(100).unwrap();
        let b = pool.reserve(100).unwrap();
        assert_eq!(pool.reserve(1).unwrap_err().class, ErrorClass::Buffer);
        pool.give_back(a);
        pool.give_back(b);
        assert_eq!(pool.used, 0);
        assert_eq!(pool.detach(), Some((0x1000, 392)));
    }
}
