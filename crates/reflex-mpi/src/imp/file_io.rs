//! Data access (MPI-3.1 §13.4): explicit offsets, the individual and the shared file pointer,
//! each blocking, nonblocking, collective and split collective (`form!` writes each C entry
//! point as a call of the one access path).
//!
//! Every independent access is one [`access`]: the buffer is packed (writes) into the file's
//! staging buffer (unless its datatype is dense: then the memory itself is moved), which
//! `reflex_engine::file` moves between the view's file runs; reads unpack what was really read
//! (a short read at the end of the file sets the status's count to it). Collective forms go
//! through `file_aggregate` (aggregators, or the independent access) and end with an agreement
//! over the file's communicator (all ranks learn whether every rank succeeded).
//! Nonblocking forms complete before returning and hand out a completed request; a split
//! collective does its work in `_begin` and keeps the byte count for `_end`.
//!
//! The nonblocking collective forms (`MPI_File_iread_all`, `_iwrite_all`, `_iread_at_all`,
//! `_iwrite_at_all`) are each rank's independent access, with neither aggregators nor the
//! agreement: their initiation must not wait for the other ranks (MPI-3.1 §13.4.5; a program may
//! start one and then send what another rank waits for before it starts its own), and the
//! access itself needs nothing from them. Each rank reports its own errors, at the call, on the
//! file's error handler.

use super::file_rep::{check_external_len, coder};
use super::util::{write, write_status};
use crate::ffi::*;
use crate::files::FileId;
use crate::handles;
use crate::kinds::TypeArg;
use crate::state::Mpi;
use reflex_engine::file::{read_view, with_lock, write_view};
use reflex_engine::{Datatype, ErrorClass, MpiError, Result, Status};
use std::ffi::c_void;

/// Where an access starts.
#[derive(Debug, Clone, Copy)]
pub(super) enum At {
    /// An explicit offset, in etypes of the view.
    Offset(MPI_Offset),
    /// The individual file pointer (which the access advances).
    Pointer,
    /// A byte of view data.
    Data(u64),
    /// The shared file pointer (which the access advances under its lock).
    Shared,
    /// The shared file pointer, ranks in order (collective only: see `file_shared::ordered_start`).
    Ordered,
}

/// Which way the data goes, with the application's buffer.
#[derive(Debug, Clone, Copy)]
pub(super) enum Dir {
    /// From the file into the buffer.
    Read(*mut c_void),
    /// From the buffer into the file.
    Write(*const c_void),
}

/// Checks an access of `count` elements of `dt` at `at` and finds where it starts (bytes of view
/// data) and how long it is; advances the shared pointer when `at` is it.
pub(super) fn locate(
    w: &Mpi,
    fh: FileId,
    at: At,
    dir: Dir,
    count: usize,
    dt: &Datatype,
) -> Result<(u64, usize)> {
    let f = w.objects.files.get(fh)?;
    match dir {
        Dir::Read(_) => f.amode.check_read()?,
        Dir::Write(_) => f.amode.check_write()?,
    }
    if f.amode.sequential() && matches!(at, At::Offset(_) | At::Pointer) {
        return Err(MpiError::new(
            ErrorClass::UnsupportedOperation,
            "the file was opened with MPI_MODE_SEQUENTIAL: only shared file pointers may be used",
        ));
    }
    let esize = f.view.etype_size();
    let len = dt.packed_len(count)?;
    if !(len as u64).is_multiple_of(esize) {
        return Err(MpiError::new(
            ErrorClass::Type,
            format!("{len} bytes of data are not a whole number of etypes ({esize} bytes each)"),
        ));
    }
    let start = match at {
        At::Offset(o) => u64::try_from(o)
            .map_err(|_| MpiError::new(ErrorClass::Arg, format!("offset is negative ({o})")))?
            .checked_mul(esize)
            .ok_or_else(|| MpiError::new(ErrorClass::Arg, format!("offset {o} overflows")))?,
        At::Pointer => f.pointer,
        At::Data(d) => d,
        At::Shared => f.shared.fetch_add(len as u64)?,
        At::Ordered => {
            return Err(MpiError::new(
                ErrorClass::Intern,
                "an ordered access reached the independent path",
            ))
        }
    };
    Ok((start, len))
}

/// Moves the individual file pointer past an access that started at `start` (when it used it).
pub(super) fn advance(w: &mut Mpi, fh: FileId, at: At, start: u64, moved: usize) -> Result<()> {
    if let At::Pointer = at {
        w.objects.files.get_mut(fh)?.pointer = start + moved as u64;
    }
    Ok(())
}

/// One independent access of `count` elements of `t`; returns the bytes moved.
pub(super) fn access(
    w: &mut Mpi,
    fh: FileId,
    at: At,
    dir: Dir,
    count: usize,
    t: &TypeArg,
) -> Result<usize> {
    let dt = &t.dt;
    let coder = coder(w, fh, t)?;
    check_external_len(&coder, count, dt)?;
    let (start, len) = locate(w, fh, at, dir, count, dt)?;
    let f = w.objects.files.get_mut(fh)?;
    let mut buffers = std::mem::take(&mut f.buffers);
    let staging = buffers.staging(len);
    let mut io = || match dir {
        Dir::Read(buf) => coder.incoming(buf, count, dt, staging, |out| {
            read_view(&f.file, &f.view, start, out)
        }),
        Dir::Write(buf) => {
            write_view(
                &f.file,
                &f.view,
                start,
                coder.outgoing(buf, count, dt, staging)?,
            )?;
            Ok(len)
        }
    };
    let moved = match f.atomic {
        true => with_lock(&f.file, matches!(dir, Dir::Write(_)), io),
        false => io(),
    };
    f.buffers = buffers.trimmed();
    let moved = moved?;
    advance(w, fh, at, start, moved)?;
    Ok(moved)
}

/// An access by every rank of the file's group: the independent access, then the agreement.
fn collective(
    w: &mut Mpi,
    fh: FileId,
    at: At,
    dir: Dir,
    count: usize,
    dt: &TypeArg,
) -> Result<usize> {
    let comm = w.objects.files.get(fh)?.comm;
    let at = match at {
        At::Ordered => At::Data(super::file_shared::ordered_start(
            w, fh, comm, count, &dt.dt,
        )?),
        _ => at,
    };
    let moved = match w.objects.files.get(fh)?.atomic {
        true => access(w, fh, at, dir, count, dt),
        false => super::file_aggregate::access_all(w, fh, at, dir, count, dt),
    };
    w.world.engine.file_agree(comm, moved)
}

/// The status of an access that moved `bytes`.
fn status_of(status: *mut MPI_Status, bytes: usize) {
    write_status(
        status,
        &Status {
            bytes,
            ..Status::empty()
        },
    );
}

/// A completed request for an access that moved `bytes`.
fn request_of(w: &mut Mpi, request: *mut MPI_Request, bytes: usize) {
    let id = w.world.engine.file_request(bytes);
    write(request, handles::request_handle(id));
}

/// `_begin` of a split collective: the access now, its count kept for `_end`. Misuse (two
/// `_begin`s, an `_end` without one) is `MPI_ERR_IO`, as in MPICH.
fn begin(w: &mut Mpi, fh: FileId, at: At, dir: Dir, count: usize, dt: &TypeArg) -> Result<()> {
    if w.objects.files.get(fh)?.split.is_some() {
        return Err(MpiError::new(
            ErrorClass::Io,
            "a split collective is already active on this file (call its _end first)",
        ));
    }
    let moved = collective(w, fh, at, dir, count, dt)?;
    w.objects.files.get_mut(fh)?.split = Some(moved);
    Ok(())
}

/// `_end` of a split collective.
fn end(w: &mut Mpi, fh: FileId, status: *mut MPI_Status) -> Result<()> {
    let moved = w.objects.files.get_mut(fh)?.split.take().ok_or_else(|| {
        MpiError::new(
            ErrorClass::Io,
            "no split collective is active on this file (call its _begin first)",
        )
    })?;
    status_of(status, moved);
    Ok(())
}

/// One C entry point: `status` (blocking) runs `$op` (`access` or `collective`), `request`
/// (nonblocking, complete when it returns) runs `access`, for the collective forms too (see the
/// module documentation); `begin` starts a split collective. `[offset]` adds the
/// explicit-offset argument that `$at` uses. (`@fn` receives the parameter names from the arm
/// that uses them: a name a macro writes is another name in the expansion it calls.)
macro_rules! form {
    (status $op:ident, $dir:ident($buf:ty), [$($off:ident)?], $at:expr => $name:ident) => {
        form!(@fn $name(w, fh, [$($off)?], buf: $buf, count, datatype, [status: *mut MPI_Status])
            status_of(status, $op(w, fh, $at, Dir::$dir(buf), count, &datatype)?));
    };
    (request $dir:ident($buf:ty), [$($off:ident)?], $at:expr => $name:ident) => {
        form!(@fn $name(w, fh, [$($off)?], buf: $buf, count, datatype, [request: *mut MPI_Request])
            {
                let n = access(w, fh, $at, Dir::$dir(buf), count, &datatype)?;
                request_of(w, request, n)
            });
    };
    (begin $dir:ident($buf:ty), [$($off:ident)?], $at:expr => $name:ident) => {
        form!(@fn $name(w, fh, [$($off)?], buf: $buf, count, datatype, [])
            begin(w, fh, $at, Dir::$dir(buf), count, &datatype)?);
    };
    (@fn $name:ident($w:ident, $fh:ident, [$($off:ident)?], $buf:ident: $bt:ty, $count:ident,
        $dt:ident, [$($out:ident: $ot:ty)?]) $body:expr) => {
        #[doc = concat!("`", stringify!($name), "`: `MPI_File_` + the rest of the name.")]
        pub fn $name(
            $w: &mut Mpi,
            $fh: FileId,
            $($off: MPI_Offset,)?
            $buf: $bt,
            $count: usize,
            $dt: TypeArg,
            $($out: $ot)?
        ) -> Result<()> {
            $body;
            Ok(())
        }
    };
}

type Out = *mut c_void;
type In = *const c_void;

form!(status access, Read(Out), [offset], At::Offset(offset) => file_read_at);
form!(status access, Write(In), [offset], At::Offset(offset) => file_write_at);
form!(request Read(Out), [offset], At::Offset(offset) => file_iread_at);
form!(request Write(In), [offset], At::Offset(offset) => file_iwrite_at);
form!(status collective, Read(Out), [offset], At::Offset(offset) => file_read_at_all);
form!(status collective, Write(In), [offset], At::Offset(offset) => file_write_at_all);
form!(request Read(Out), [offset], At::Offset(offset) => file_iread_at_all);
form!(request Write(In), [offset], At::Offset(offset) => file_iwrite_at_all);
form!(begin Read(Out), [offset], At::Offset(offset) => file_read_at_all_begin);
form!(begin Write(In), [offset], At::Offset(offset) => file_write_at_all_begin);

form!(status access, Read(Out), [], At::Pointer => file_read);
form!(status access, Write(In), [], At::Pointer => file_write);
form!(request Read(Out), [], At::Pointer => file_iread);
form!(request Write(In), [], At::Pointer => file_iwrite);
form!(status collective, Read(Out), [], At::Pointer => file_read_all);
form!(status collective, Write(In), [], At::Pointer => file_write_all);
form!(request Read(Out), [], At::Pointer => file_iread_all);
form!(request Write(In), [], At::Pointer => file_iwrite_all);
form!(begin Read(Out), [], At::Pointer => file_read_all_begin);
form!(begin Write(In), [], At::Pointer => file_write_all_begin);

form!(status access, Read(Out), [], At::Shared => file_read_shared);
form!(status access, Write(In), [], At::Shared => file_write_shared);
form!(request Read(Out), [], At::Shared => file_iread_shared);
form!(request Write(In), [], At::Shared => file_iwrite_shared);
form!(status collective, Read(Out), [], At::Ordered => file_read_ordered);
form!(status collective, Write(In), [], At::Ordered => file_write_ordered);
form!(begin Read(Out), [], At::Ordered => file_read_ordered_begin);
form!(begin Write(In), [], At::Ordered => file_write_ordered_begin);

/// `MPI_File_read_all_end`, `MPI_File_read_at_all_end`, `MPI_File_read_ordered_end`.
pub fn file_read_all_end(
    w: &mut Mpi,
    fh: FileId,
    _buf: *mut c_void,
    status: *mut MPI_Status,
) -> Result<()> {
    end(w, fh, status)
}

/// `MPI_File_write_all_end`, `MPI_File_write_at_all_end`, `MPI_File_write_ordered_end`.
pub fn file_write_all_end(
    w: &mut Mpi,
    fh: FileId,
    _buf: *const c_void,
    status: *mut MPI_Status,
) -> Result<()> {
    end(w, fh, status)
}

pub use file_read_all_end as file_read_at_all_end;
pub use file_read_all_end as file_read_ordered_end;
pub use file_write_all_end as file_write_at_all_end;
pub use file_write_all_end as file_write_ordered_end;
