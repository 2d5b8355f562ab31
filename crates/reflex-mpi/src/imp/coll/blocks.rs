//! Collective buffer arguments cut into per-rank blocks: `count` elements of a datatype at a
//! displacement from the buffer address, for the regular (`count`, one type), v (`counts[]`,
//! `displs[]` in extents) and w (`counts[]`, `displs[]` in bytes, `types[]`) forms alike. Count
//! and displacement arrays may be `int` or, for the MPI-4 `_c` calls, `MPI_Count`/`MPI_Aint`.

use super::super::util::{recv_buf, send_buf};
use crate::ffi::MPI_Datatype;
use crate::state::Mpi;
use reflex_engine::coll::{RecvData, SendData};
use reflex_engine::{Datatype, ErrorClass, MpiError, Result};
use std::ffi::c_void;
use std::fmt::Display;

/// An element count as C passes it (`int` or `MPI_Count`).
pub trait Count: Copy + TryInto<usize> + Display {}
impl<T: Copy + TryInto<usize> + Display> Count for T {}

/// A displacement as C passes it (`int` or `MPI_Aint`).
pub trait Displ: Copy + TryInto<isize> + Display {}
impl<T: Copy + TryInto<isize> + Display> Displ for T {}

/// Where one block lies: `count` elements of `dt` from `disp` bytes past the buffer address.
#[derive(Debug, Clone)]
pub struct Block {
    disp: isize,
    count: usize,
    dt: Datatype,
}

/// `count` elements of `dt` to be sent from `p`.
pub fn send_one(p: *const c_void, count: usize, dt: &Datatype) -> Result<SendData> {
    Ok(SendData {
        buf: send_buf(p, count, dt)?,
        count,
        dt: dt.clone(),
    })
}

/// `count` elements of `dt` to be received at `p`.
pub fn recv_one(p: *mut c_void, count: usize, dt: &Datatype) -> Result<RecvData> {
    Ok(RecvData {
        buf: recv_buf(p, count, dt)?,
        count,
        dt: dt.clone(),
    })
}

fn overflow(what: &str) -> MpiError {
    MpiError::new(
        ErrorClass::Count,
        format!("{what} overflows the address space"),
    )
}

/// `n` blocks of `count` elements of `dt`, one after the other.
pub fn regular(n: usize, count: usize, dt: &Datatype) -> Result<Vec<Block>> {
    let stride = isize::try_from(count)
        .ok()
        .and_then(|c| c.checked_mul(dt.extent()))
        .ok_or_else(|| overflow("the block size"))?;
    (0..n)
        .map(|r| {
            let disp = stride
                .checked_mul(r as isize)
                .ok_or_else(|| overflow("a block displacement"))?;
            Ok(Block {
                disp,
                count,
                dt: dt.clone(),
            })
        })
        .collect()
}

/// The `n` entries of C array `p` (`what` names it in errors).
fn array<'a, T>(p: *const T, n: usize, what: &str) -> Result<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(MpiError::new(ErrorClass::Arg, format!("{what} is NULL")));
    }
    // SAFETY: MPI requires the array to hold one entry per rank (or neighbour) of the
    // communicator for the duration of the call.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

fn count_at<C: Count>(counts: &[C], r: usize, what: &str) -> Result<usize> {
    crate::kinds::count(counts[r], &format!("{what}[{r}]"))
}

fn displ_at<D: Displ>(displs: &[D], r: usize, what: &str) -> Result<isize> {
    displs[r]
        .try_into()
        .map_err(|_| overflow(&format!("{what}[{r}] = {}", displs[r])))
}

/// `n` blocks of `counts[r]` elements of `dt` at `displs[r]` extents (the v forms).
pub fn varying<C: Count, D: Displ>(
    n: usize,
    counts: *const C,
    displs: *const D,
    dt: &Datatype,
) -> Result<Vec<Block>> {
    let (counts, displs) = (array(counts, n, "counts")?, array(displs, n, "displs")?);
    (0..n)
        .map(|r| {
            let disp = displ_at(displs, r, "displs")?
                .checked_mul(dt.extent())
                .ok_or_else(|| overflow("a block displacement"))?;
            Ok(Block {
                disp,
                count: count_at(counts, r, "counts")?,
                dt: dt.clone(),
            })
        })
        .collect()
}

/// `n` blocks of `counts[r]` elements of `types[r]` at `displs[r]` bytes (the w forms).
pub fn typed<C: Count, D: Displ>(
    w: &Mpi,
    n: usize,
    counts: *const C,
    displs: *const D,
    types: *const MPI_Datatype,
) -> Result<Vec<Block>> {
    let (counts, displs) = (array(counts, n, "counts")?, array(displs, n, "displs")?);
    let types = array(types, n, "types")?;
    (0..n)
        .map(|r| {
            Ok(Block {
                disp: displ_at(displs, r, "displs")?,
                count: count_at(counts, r, "counts")?,
                dt: crate::kinds::datatype(w, types[r])?,
            })
        })
        .collect()
}

/// The blocks of the send buffer at `p`.
pub fn send_blocks(p: *const c_void, blocks: Vec<Block>) -> Result<Vec<SendData>> {
    blocks
        .into_iter()
        .map(|b| {
            send_one(
                p.cast::<u8>().wrapping_offset(b.disp).cast(),
                b.count,
                &b.dt,
            )
        })
        .collect()
}

/// The blocks of the receive buffer at `p`.
pub fn recv_blocks(p: *mut c_void, blocks: Vec<Block>) -> Result<Vec<RecvData>> {
    blocks
        .into_iter()
        .map(|b| {
            recv_one(
                p.cast::<u8>().wrapping_offset(b.disp).cast(),
                b.count,
                &b.dt,
            )
        })
        .collect()
}

/// The `n` counts of C array `p`, checked non-negative.
pub fn counts<C: Count>(p: *const C, n: usize, what: &str) -> Result<Vec<usize>> {
    let counts = array(p, n, what)?;
    (0..n).map(|r| count_at(counts, r, what)).collect()
}
