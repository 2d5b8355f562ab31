//! Single-copy reads of a peer's memory for rendezvous (the kernel's cross-memory attach).
use crate::error::{ErrorClass, MpiError, Result};
pub(crate) fn read(pid: u32, _addr: u64, _dst: &mut [u8]) -> Result<()> {
    Err(MpiError::new(
        ErrorClass::Other,
        format!("single copy from {pid} unavailable"),
    ))
}
