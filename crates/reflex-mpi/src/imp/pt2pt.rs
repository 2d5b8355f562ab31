//! Point-to-point calls (MPI-3.1 chapter 3): sends, receives, probes, persistent requests.
//!
//! Blocking calls keep the engine's own blocking paths (the request-free eager send and direct
//! receive) unless [`threads::deferring`]: under `MPI_THREAD_MULTIPLE` they start their
//! nonblocking form and leave the wait to the call frame, which waits without the process lock.

use super::util::{recv_buf, send_buf, write, write_status};
use crate::ffi::*;
use crate::handles;
use crate::state::Mpi;
use crate::threads::{self, try_retire};
use reflex_engine::fabric::Fabric;
use reflex_engine::Engine;
use reflex_engine::{
    CommId, Completion, Datatype, ErrorClass, MpiError, RequestId, Result, SendMode, Status,
};
use std::ffi::{c_int, c_void};

fn send_mode(
    w: &mut Mpi,
    buf: *const c_void,
    count: usize,
    dt: Datatype,
    dest: c_int,
    tag: c_int,
    comm: CommId,
    mode: SendMode,
) -> Result<()> {
    let buf = send_buf(buf, count, &dt)?;
    if threads::deferring(w) {
        return send_deferred(w, buf, count, dt, dest, tag, comm, mode);
    }
    w.world.engine.send(buf, count, dt, dest, tag, comm, mode)
}

/// A blocking send under `MPI_THREAD_MULTIPLE` (out of line: the single-threaded path stays as is).
#[cold]
#[inline(never)]
#[allow(clippy::too_many_arguments)] // the MPI call's own parameter list
fn send_deferred(
    w: &mut Mpi,
    buf: reflex_base::buf::SendBuf,
    count: usize,
    dt: Datatype,
    dest: c_int,
    tag: c_int,
    comm: CommId,
    mode: SendMode,
) -> Result<()> {
    let start = move |w: &mut Mpi| w.world.engine.isend(buf, count, dt, dest, tag, comm, mode);
    threads::block_on(w, start, |_, _| Ok(()))
}

/// Writes a receive's status and returns its error (truncation...), if any.
fn received(status: *mut MPI_Status, st: Status) -> Result<()> {
    write_status(status, &st);
    st.error.map_or(Ok(()), |e| Err(*e))
}

/// The end of a receive a fast path (`crate::fast`) completed: the status is written; an error
/// (`MPI_ERR_TRUNCATE`) goes to `comm`'s handler through the ordinary frame of `MPI_Recv`.
#[inline]
pub fn recv_done(comm: MPI_Comm, status: *mut MPI_Status, st: Status) -> c_int {
    if st.error.is_none() {
        write_status(status, &st);
        return SUCCESS;
    }
    recv_failed(comm, status, st)
}

#[cold]
#[inline(never)]
fn recv_failed(comm: MPI_Comm, status: *mut MPI_Status, st: Status) -> c_int {
    crate::call::world("MPI_Recv", Some(comm), |_| received(status, st))
}

/// Finishes a receive that [`threads::block_on`] waited for.
fn finish_recv(status: *mut MPI_Status) -> impl FnOnce(&mut Mpi, Completion) -> Result<()> {
    move |_, c| received(status, c.status)
}

/// Creates a send request: started at once (`MPI_Isend` family) or persistent (`MPI_Send_init`).
fn request_mode(
    w: &mut Mpi,
    buf: *const c_void,
    count: usize,
    dt: Datatype,
    dest: c_int,
    tag: c_int,
    comm: CommId,
    request: *mut MPI_Request,
    (mode, persistent): (SendMode, bool),
) -> Result<()> {
    let buf = send_buf(buf, count, &dt)?;
    let engine = &mut w.world.engine;
    let id = if persistent {
        engine.send_init(buf, count, dt, dest, tag, comm, mode)?
    } else {
        engine.isend(buf, count, dt, dest, tag, comm, mode)?
    };
    write(request, handles::request_handle(id));
    Ok(())
}

macro_rules! blocking_send {
    ($($name:ident, $mode:ident, $doc:literal;)+) => {$(
        #[doc = $doc]
        pub fn $name(w: &mut Mpi, buf: *const c_void, count: usize, dt: Datatype, dest: c_int, tag: c_int, comm: CommId) -> Result<()> {
            send_mode(w, buf, count, dt, dest, tag, comm, SendMode::$mode)
        }
    )+};
}

blocking_send! {
    send, Standard, "`MPI_Send`.";
    ssend, Synchronous, "`MPI_Ssend`.";
    bsend, Buffered, "`MPI_Bsend`.";
    rsend, Ready, "`MPI_Rsend`.";
}

macro_rules! nonblocking_send {
    ($($name:ident, $mode:ident, $persistent:literal, $doc:literal;)+) => {$(
        #[doc = $doc]
        pub fn $name(
            w: &mut Mpi, buf: *const c_void, count: usize, dt: Datatype, dest: c_int, tag: c_int, comm: CommId,
            request: *mut MPI_Request,
        ) -> Result<()> {
            request_mode(w, buf, count, dt, dest, tag, comm, request, (SendMode::$mode, $persistent))
        }
    )+};
}

nonblocking_send! {
    isend, Standard, false, "`MPI_Isend`.";
    issend, Synchronous, false, "`MPI_Issend`.";
    ibsend, Buffered, false, "`MPI_Ibsend`.";
    irsend, Ready, false, "`MPI_Irsend`.";
    send_init, Standard, true, "`MPI_Send_init`.";
    ssend_init, Synchronous, true, "`MPI_Ssend_init`.";
    bsend_init, Buffered, true, "`MPI_Bsend_init`.";
    rsend_init, Ready, true, "`MPI_Rsend_init`.";
}

/// `MPI_Recv`.
#[allow(clippy::too_many_arguments)] // the MPI call's own parameter list
pub fn recv(
    w: &mut Mpi,
    buf: *mut c_void,
    count: usize,
    dt: Datatype,
    source: c_int,
    tag: c_int,
    comm: CommId,
    status: *mut MPI_Status,
) -> Result<()> {
    let rbuf = recv_buf(buf, count, &dt)?;
    if threads::deferring(w) {
        return recv_deferred(w, rbuf, count, dt, (source, tag, comm), status);
    }
    let st = w.world.engine.recv(rbuf, count, dt, source, tag, comm)?;
    received(status, st)
}

/// A blocking receive under `MPI_THREAD_MULTIPLE` (out of line, as [`send_deferred`]).
#[cold]
#[inline(never)]
fn recv_deferred(
    w: &mut Mpi,
    rbuf: reflex_base::buf::RecvBuf,
    count: usize,
    dt: Datatype,
    (source, tag, comm): (c_int, c_int, CommId),
    status: *mut MPI_Status,
) -> Result<()> {
    let start = move |w: &mut Mpi| w.world.engine.irecv(rbuf, count, dt, source, tag, comm);
    threads::block_on(w, start, finish_recv(status))
}

/// `MPI_Irecv`.
#[allow(clippy::too_many_arguments)] // the MPI call's own parameter list
pub fn irecv(
    w: &mut Mpi,
    buf: *mut c_void,
    count: usize,
    dt: Datatype,
    source: c_int,
    tag: c_int,
    comm: CommId,
    request: *mut MPI_Request,
) -> Result<()> {
    let rbuf = recv_buf(buf, count, &dt)?;
    let id = w.world.engine.irecv(rbuf, count, dt, source, tag, comm)?;
    write(request, handles::request_handle(id));
    Ok(())
}

/// `MPI_Recv_init`.
#[allow(clippy::too_many_arguments)] // the MPI call's own parameter list
pub fn recv_init(
    w: &mut Mpi,
    buf: *mut c_void,
    count: usize,
    dt: Datatype,
    source: c_int,
    tag: c_int,
    comm: CommId,
    request: *mut MPI_Request,
) -> Result<()> {
    let rbuf = recv_buf(buf, count, &dt)?;
    let id = w
        .world
        .engine
        .recv_init(rbuf, count, dt, source, tag, comm)?;
    write(request, handles::request_handle(id));
    Ok(())
}

/// `MPI_Sendrecv`: both posted, then both completed.
#[allow(clippy::too_many_arguments)] // the MPI call's own parameter list
pub fn sendrecv(
    w: &mut Mpi,
    sendbuf: *const c_void,
    sendcount: usize,
    sendtype: Datatype,
    dest: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: usize,
    recvtype: Datatype,
    source: c_int,
    recvtag: c_int,
    comm: CommId,
    status: *mut MPI_Status,
) -> Result<()> {
    let e = &mut w.world.engine;
    let r = e.irecv(
        recv_buf(recvbuf, recvcount, &recvtype)?,
        recvcount,
        recvtype,
        source,
        recvtag,
        comm,
    )?;
    let s = e.isend(
        send_buf(sendbuf, sendcount, &sendtype)?,
        sendcount,
        sendtype,
        dest,
        sendtag,
        comm,
        SendMode::Standard,
    )?;
    wait_pair(w, s, r, status, ())
}

/// Completes the send `s` and the receive `r` of a send-receive; `keep` (the copy a send reads
/// from) lives until both are done.
fn wait_pair<K: 'static>(
    w: &mut Mpi,
    s: reflex_engine::RequestId,
    r: reflex_engine::RequestId,
    status: *mut MPI_Status,
    keep: K,
) -> Result<()> {
    if !threads::deferring(w) {
        let e = &mut w.world.engine;
        e.wait(s)?;
        drop(keep);
        return received(status, e.wait(r)?);
    }
    let (mut sent, mut recvd) = (false, None);
    threads::defer(move |w| {
        let _ = &keep;
        if !sent {
            sent = try_retire(w, s)?.is_some();
        }
        if recvd.is_none() {
            recvd = try_retire(w, r)?;
        }
        match (recvd.take(), sent) {
            (Some(c), true) => received(status, c.status).map(|()| true),
            (c, _) => {
                recvd = c;
                Ok(false)
            }
        }
    })
}

/// `MPI_Sendrecv_replace`: the outgoing message is copied first, so the buffer can take the reply.
#[allow(clippy::too_many_arguments)] // the MPI call's own parameter list
pub fn sendrecv_replace(
    w: &mut Mpi,
    buf: *mut c_void,
    count: usize,
    dt: Datatype,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
    comm: CommId,
    status: *mut MPI_Status,
) -> Result<()> {
    let copy: Vec<u8> = send_buf(buf, count, &dt)?.as_slice().to_vec();
    let e = &mut w.world.engine;
    let rbuf = recv_buf(buf, count, &dt)?;
    let r = e.irecv(rbuf, count, dt.clone(), source, recvtag, comm)?;
    // SAFETY: `copy` outlives the send: `wait_pair` keeps it until the send is complete (moving
    // the vector does not move its heap buffer).
    let sbuf = unsafe { reflex_base::buf::SendBuf::from_raw(copy.as_ptr(), copy.len()) };
    let s = e.isend(sbuf, count, dt, dest, sendtag, comm, SendMode::Standard)?;
    wait_pair(w, s, r, status, copy)
}

/// `MPI_Isendrecv`: the receive and the send start at once and complete as one request, whose
/// status is the receive's.
#[allow(clippy::too_many_arguments)] // the MPI call's own parameter list
pub fn isendrecv(
    w: &mut Mpi,
    sendbuf: *const c_void,
    sendcount: usize,
    sendtype: Datatype,
    dest: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: usize,
    recvtype: Datatype,
    source: c_int,
    recvtag: c_int,
    comm: CommId,
    request: *mut MPI_Request,
) -> Result<()> {
    let (rbuf, sbuf) = (
        recv_buf(recvbuf, recvcount, &recvtype)?,
        send_buf(sendbuf, sendcount, &sendtype)?,
    );
    let e = &mut w.world.engine;
    let r = e.irecv(rbuf, recvcount, recvtype, source, recvtag, comm)?;
    let mode = SendMode::Standard;
    let s = e
        .isend(sbuf, sendcount, sendtype, dest, sendtag, comm, mode)
        .inspect_err(|_| drop_part(e, r, true))?;
    write(request, handles::request_handle(e.pair(s, r)));
    Ok(())
}

/// Abandons one part of a send-receive whose other part could not start (a receive is
/// cancelled first); the engine releases it once it is done.
fn drop_part(e: &mut Engine<Fabric>, id: RequestId, recv: bool) {
    if recv {
        let _ = e.cancel(id);
    }
    let _ = e.request_free(id);
}

/// `MPI_Isendrecv_replace`: the send takes a copy of `buf` when it starts, so the reply may land
/// in `buf` whenever it comes.
#[allow(clippy::too_many_arguments)] // the MPI call's own parameter list
pub fn isendrecv_replace(
    w: &mut Mpi,
    buf: *mut c_void,
    count: usize,
    dt: Datatype,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
    comm: CommId,
    request: *mut MPI_Request,
) -> Result<()> {
    let (sbuf, rbuf) = (send_buf(buf, count, &dt)?, recv_buf(buf, count, &dt)?);
    let e = &mut w.world.engine;
    let s = e.isend_copied(sbuf, count, dt.clone(), (dest, sendtag), comm)?;
    let r = e
        .irecv(rbuf, count, dt, source, recvtag, comm)
        .inspect_err(|_| drop_part(e, s, false))?;
    write(request, handles::request_handle(e.pair(s, r)));
    Ok(())
}

/// `MPI_Probe`.
pub fn probe(
    w: &mut Mpi,
    source: c_int,
    tag: c_int,
    comm: CommId,
    status: *mut MPI_Status,
) -> Result<()> {
    if threads::deferring(w) {
        return threads::defer(move |w| {
            let found = w.world.engine.iprobe(source, tag, comm)?;
            Ok(found.map(|st| write_status(status, &st)).is_some())
        });
    }
    let st = w.world.engine.probe(source, tag, comm)?;
    write_status(status, &st);
    Ok(())
}

/// `MPI_Iprobe`.
pub fn iprobe(
    w: &mut Mpi,
    source: c_int,
    tag: c_int,
    comm: CommId,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> Result<()> {
    let found = w.world.engine.iprobe(source, tag, comm)?;
    if let Some(st) = &found {
        write_status(status, st);
    }
    write(flag, c_int::from(found.is_some()));
    Ok(())
}

/// `MPI_Mprobe`.
pub fn mprobe(
    w: &mut Mpi,
    source: c_int,
    tag: c_int,
    comm: CommId,
    message: *mut MPI_Message,
    status: *mut MPI_Status,
) -> Result<()> {
    let matched = move |(m, st): (reflex_engine::Message, Status)| {
        write(message, handles::message_handle(m));
        write_status(status, &st);
    };
    if threads::deferring(w) {
        // The message is taken in the same lock hold that finds it: no other thread can steal it.
        return threads::defer(move |w| {
            let found = w.world.engine.improbe(source, tag, comm)?;
            Ok(found.map(matched).is_some())
        });
    }
    matched(w.world.engine.mprobe(source, tag, comm)?);
    Ok(())
}

/// `MPI_Improbe`.
pub fn improbe(
    w: &mut Mpi,
    source: c_int,
    tag: c_int,
    comm: CommId,
    flag: *mut c_int,
    message: *mut MPI_Message,
    status: *mut MPI_Status,
) -> Result<()> {
    let found = w.world.engine.improbe(source, tag, comm)?;
    if let Some((m, st)) = &found {
        write(message, handles::message_handle(*m));
        write_status(status, st);
    }
    write(flag, c_int::from(found.is_some()));
    Ok(())
}

fn take_message(message: *mut MPI_Message) -> Result<reflex_engine::Message> {
    if message.is_null() {
        return Err(MpiError::new(ErrorClass::Arg, "message argument is NULL"));
    }
    // SAFETY: non-NULL, and MPI requires a valid MPI_Message* here.
    let h = unsafe { *message };
    let m = handles::message_id(h).ok_or_else(|| {
        MpiError::new(
            ErrorClass::Request,
            format!("{h:#x} is not a message handle"),
        )
    })?;
    write(message, handles::REQUEST_NULL);
    Ok(m)
}

/// `MPI_Mrecv`.
pub fn mrecv(
    w: &mut Mpi,
    buf: *mut c_void,
    count: usize,
    dt: Datatype,
    message: *mut MPI_Message,
    status: *mut MPI_Status,
) -> Result<()> {
    let m = take_message(message)?;
    let rbuf = recv_buf(buf, count, &dt)?;
    let start = move |w: &mut Mpi| w.world.engine.imrecv(rbuf, count, dt, m);
    threads::block_on(w, start, finish_recv(status))
}

/// `MPI_Imrecv`.
pub fn imrecv(
    w: &mut Mpi,
    buf: *mut c_void,
    count: usize,
    dt: Datatype,
    message: *mut MPI_Message,
    request: *mut MPI_Request,
) -> Result<()> {
    let m = take_message(message)?;
    let id = w
        .world
        .engine
        .imrecv(recv_buf(buf, count, &dt)?, count, dt, m)?;
    write(request, handles::request_handle(id));
    Ok(())
}

/// `MPI_Buffer_attach`.
pub fn buffer_attach(w: &mut Mpi, buffer: *mut c_void, size: c_int) -> Result<()> {
    attach(w, buffer, size.into())
}

/// Attaches `size` bytes at `buffer` (`MPI_Buffer_attach` and its large-count form).
pub(super) fn attach(w: &mut Mpi, buffer: *mut c_void, size: i64) -> Result<()> {
    let size = usize::try_from(size)
        .map_err(|_| MpiError::new(ErrorClass::Arg, format!("buffer size {size} is negative")))?;
    w.world.engine.buffer_attach(buffer as usize, size)
}

/// `MPI_Buffer_detach`: `buffer_addr` receives the address passed to attach.
pub fn buffer_detach(w: &mut Mpi, buffer_addr: *mut c_void, size: *mut c_int) -> Result<()> {
    detach(w, buffer_addr, move |len| write(size, len as c_int))
}

/// Detaches the buffer once every buffered message is on its way (under
/// `MPI_THREAD_MULTIPLE` waiting without the lock: the receive may be another thread's): its
/// address goes to `buffer_addr`, its size to `write_size`.
pub(super) fn detach(
    w: &mut Mpi,
    buffer_addr: *mut c_void,
    write_size: impl FnOnce(usize) + 'static,
) -> Result<()> {
    let poll = |e: &mut Engine<Fabric>| e.buffer_detach_try();
    threads::poll_on(w, poll, move |_, (addr, len)| {
        if !buffer_addr.is_null() {
            write(buffer_addr.cast::<usize>(), addr);
        }
        write_size(len);
        Ok(())
    })
}
