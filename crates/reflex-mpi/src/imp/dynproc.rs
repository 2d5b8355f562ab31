//! Dynamic process management (MPI-4.0 §11.4 and §11.4.6, `docs/dynamic-processes.md`): ports,
//! accept/connect, disconnect, join and the name service. The engine does the exchanges
//! (`reflex_engine::dynproc`); this layer reads the C strings, the info key `timeout` and the
//! user's socket.

use super::util::{c_string, write, write_string};
use crate::ffi::*;
use crate::handles;
use crate::info::InfoId;
use crate::state::Mpi;
use reflex_engine::coll::Coll;
use reflex_engine::dynproc::port::MAX_PORT_NAME;
use reflex_engine::{CommId, ErrorClass, MpiError, Result};
use std::ffi::{c_char, c_int};
use std::time::Duration;

/// The info key of accept/connect that bounds their wait, in seconds (Reflex's own key).
const TIMEOUT_KEY: &str = "timeout";

/// How long accept/connect wait: the info key `timeout`, else `REFLEX_PORT_TIMEOUT`; 0 or
/// neither is no limit.
fn port_timeout(w: &Mpi, info: Option<InfoId>) -> Result<Option<Duration>> {
    let from_info = info.and_then(|id| w.objects.infos.get(id).get(TIMEOUT_KEY).map(str::to_owned));
    let seconds = match from_info {
        Some(text) => text
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|s| *s >= 0.0)
            .ok_or_else(|| {
                MpiError::new(
                    ErrorClass::Info,
                    format!("info key {TIMEOUT_KEY:?} is {text:?}, not a number of seconds"),
                )
            })?,
        None => f64::from(w.world.config.port_timeout),
    };
    Ok((seconds > 0.0).then(|| Duration::from_secs_f64(seconds)))
}

/// A port name argument that is significant here.
fn port_arg(port_name: *const c_char) -> Result<String> {
    let name = c_string(port_name, "port_name")?;
    if name.len() >= MAX_PORT_NAME {
        return Err(MpiError::new(
            ErrorClass::Port,
            format!(
                "a port name of {} bytes (MPI_MAX_PORT_NAME is {MAX_PORT_NAME})",
                name.len()
            ),
        ));
    }
    Ok(name)
}

/// `MPI_Open_port`: `port_name` must hold `MPI_MAX_PORT_NAME` bytes.
pub fn open_port(w: &mut Mpi, _info: Option<InfoId>, port_name: *mut c_char) -> Result<()> {
    let name = w.world.engine.open_port()?;
    write_string(port_name, std::ptr::null_mut(), &name, MAX_PORT_NAME)
}

/// `MPI_Close_port`.
pub fn close_port(w: &mut Mpi, port_name: *const c_char) -> Result<()> {
    let name = port_arg(port_name)?;
    w.world.engine.close_port(&name)
}

/// Which of the two calls.
#[derive(Clone, Copy)]
enum Role {
    Accept,
    Connect,
}

fn accept_or_connect(
    w: &mut Mpi,
    role: Role,
    port_name: *const c_char,
    info: Option<InfoId>,
    (root, comm): (c_int, CommId),
    newcomm: *mut MPI_Comm,
) -> Result<()> {
    let is_root = w.world.engine.comm(comm)?.rank as c_int == root;
    // The port name and info are significant at the root only; a bad one there is every
    // process's error (the engine passes it on), so that no process waits for the root.
    let args = match is_root {
        true => port_arg(port_name).and_then(|p| Ok((p, port_timeout(w, info)?))),
        false => Ok((String::new(), None)),
    };
    let (port, timeout) = match &args {
        Ok((p, t)) => (Ok(p.as_str()), *t),
        Err(e) => (Err(e.clone()), None),
    };
    let engine = &mut w.world.engine;
    let id = match role {
        Role::Accept => engine.comm_accept(port, root as usize, comm, timeout)?,
        Role::Connect => engine.comm_connect(port, root as usize, comm, timeout)?,
    };
    write(newcomm, handles::comm_handle(id));
    Ok(())
}

/// `MPI_Comm_accept`.
pub fn comm_accept(
    w: &mut Mpi,
    port_name: *const c_char,
    info: Option<InfoId>,
    root: c_int,
    comm: CommId,
    newcomm: *mut MPI_Comm,
) -> Result<()> {
    accept_or_connect(w, Role::Accept, port_name, info, (root, comm), newcomm)
}

/// `MPI_Comm_connect`.
pub fn comm_connect(
    w: &mut Mpi,
    port_name: *const c_char,
    info: Option<InfoId>,
    root: c_int,
    comm: CommId,
    newcomm: *mut MPI_Comm,
) -> Result<()> {
    accept_or_connect(w, Role::Connect, port_name, info, (root, comm), newcomm)
}

/// `MPI_Comm_disconnect`: waits for the communicator's traffic, then frees it as
/// `MPI_Comm_free` does.
pub fn comm_disconnect(w: &mut Mpi, comm: *mut MPI_Comm) -> Result<()> {
    // SAFETY: the kinds check made sure the pointer is non-NULL.
    let h = unsafe { *comm };
    let id = crate::kinds::comm(w, h)?;
    if id == reflex_engine::COMM_WORLD || id == reflex_engine::COMM_SELF {
        return Err(MpiError::new(
            ErrorClass::Comm,
            "MPI_COMM_WORLD and MPI_COMM_SELF cannot be disconnected",
        ));
    }
    // The barrier is waited for without the lock under MPI_THREAD_MULTIPLE: other threads may
    // be disconnecting other communicators at once.
    let start = move |w: &mut Mpi| w.world.engine.coll_start(id, Coll::Barrier);
    crate::threads::block_on(w, start, move |w, done| {
        if let Some(e) = done.status.error {
            return Err(*e);
        }
        w.world.engine.comm_drain(id)?;
        super::comm_free(w, comm)
    })
}

/// `MPI_Comm_join`: `fd` is a connected stream socket; both ends call it.
pub fn comm_join(w: &mut Mpi, fd: c_int, intercomm: *mut MPI_Comm) -> Result<()> {
    use std::os::fd::FromRawFd;
    if fd < 0 {
        return Err(MpiError::new(
            ErrorClass::Arg,
            format!("fd {fd} is not a socket descriptor"),
        ));
    }
    // SAFETY: MPI requires `fd` to be a connected socket open for the duration of the call; the
    // file is never dropped (ManuallyDrop), so the descriptor stays the caller's.
    let mut socket = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd) });
    let id = w.world.engine.comm_join(&mut *socket)?;
    write(intercomm, handles::comm_handle(id));
    Ok(())
}

/// `MPI_Publish_name`.
pub fn publish_name(
    w: &mut Mpi,
    service_name: *const c_char,
    _info: Option<InfoId>,
    port_name: *const c_char,
) -> Result<()> {
    let service = c_string(service_name, "service_name")?;
    let port = port_arg(port_name)?;
    w.world.publish_name(&service, &port)
}

/// `MPI_Lookup_name`: `port_name` must hold `MPI_MAX_PORT_NAME` bytes.
pub fn lookup_name(
    w: &mut Mpi,
    service_name: *const c_char,
    _info: Option<InfoId>,
    port_name: *mut c_char,
) -> Result<()> {
    let service = c_string(service_name, "service_name")?;
    let port = w.world.lookup_name(&service)?;
    write_string(port_name, std::ptr::null_mut(), &port, MAX_PORT_NAME)
}

/// `MPI_Unpublish_name`.
pub fn unpublish_name(
    w: &mut Mpi,
    service_name: *const c_char,
    _info: Option<InfoId>,
    _port_name: *const c_char,
) -> Result<()> {
    let service = c_string(service_name, "service_name")?;
    w.world.unpublish_name(&service)
}
