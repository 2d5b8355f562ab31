//! Single-copy reads of a peer's memory for rendezvous (the kernel's cross-memory attach).

use crate::error::{ErrorClass, MpiError, Result};

/// Copies `dst.len()` bytes from address `addr` of process `pid` into `dst`.
pub(crate) fn read(pid: u32, addr: u64, dst: &mut [u8]) -> Result<()> {
    reflex_shm::cma::read(pid, &[(addr as usize, dst.len())], &mut [dst])
        .map_err(|e| {
            MpiError::new(
                ErrorClass::Other,
                format!("single-copy read from process {pid} failed: {e}"),
            )
        })
        .and_then(|n| {
            if n == dst.len() {
                Ok(())
            } else {
                Err(MpiError::new(
                    ErrorClass::Other,
                    format!(
                        "single-copy read from process {pid} moved {n} of {} bytes",
                        dst.len()
                    ),
                ))
            }
        })
}
