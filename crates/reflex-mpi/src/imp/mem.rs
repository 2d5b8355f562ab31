//! `MPI_Alloc_mem` and `MPI_Free_mem` (MPI-3.1 §8.2): memory from the Rust global allocator,
//! aligned to 64 bytes (whole cache lines for windows and vectorised reductions), and recorded,
//! so that freeing an address `MPI_Alloc_mem` did not return is `MPI_ERR_BASE` instead of heap
//! corruption. Info hints are accepted and ignored.

use super::util::write;
use crate::ffi::MPI_Aint;
use crate::info::InfoId;
use crate::state::Mpi;
use reflex_engine::{ErrorClass, MpiError, Result};
use std::alloc::Layout;
use std::ffi::c_void;

/// Alignment of every `MPI_Alloc_mem` block.
const ALIGN: usize = 64;

/// `MPI_Alloc_mem`.
pub fn alloc_mem(
    w: &mut Mpi,
    size: MPI_Aint,
    _info: Option<InfoId>,
    baseptr: *mut c_void,
) -> Result<()> {
    if baseptr.is_null() {
        return Err(MpiError::new(ErrorClass::Arg, "baseptr is NULL"));
    }
    let bytes = usize::try_from(size)
        .map_err(|_| MpiError::new(ErrorClass::Arg, format!("size {size} is negative")))?;
    let layout = Layout::from_size_align(bytes.max(1), ALIGN)
        .map_err(|_| MpiError::new(ErrorClass::NoMem, format!("cannot allocate {bytes} bytes")))?;
    // SAFETY: the layout has a non-zero size.
    let p = unsafe { std::alloc::alloc(layout) };
    if p.is_null() {
        return Err(MpiError::new(
            ErrorClass::NoMem,
            format!("out of memory allocating {bytes} bytes"),
        ));
    }
    w.objects.allocations.insert(p as usize, layout);
    write(baseptr.cast::<*mut c_void>(), p.cast());
    Ok(())
}

/// `MPI_Free_mem`.
pub fn free_mem(w: &mut Mpi, base: *mut c_void) -> Result<()> {
    if base.is_null() {
        return Ok(());
    }
    let layout = w
        .objects
        .allocations
        .remove(&(base as usize))
        .ok_or_else(|| {
            MpiError::new(
                ErrorClass::Base,
                format!("{base:p} was not returned by MPI_Alloc_mem (or was freed already)"),
            )
        })?;
    // SAFETY: `base` was returned by `std::alloc::alloc` with this layout (recorded above) and
    // is removed from the record, so it is freed once.
    unsafe { std::alloc::dealloc(base.cast(), layout) };
    Ok(())
}
