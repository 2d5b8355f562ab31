//! `MPI_T_*` (MPI-4.0 chapter 15), second part: performance variables, their sessions and
//! handles. The table is `crate::mpit::pvar`, the handle semantics `crate::mpit::session`;
//! these functions take the C arguments apart and read the counters once per call.

use crate::ffi::{MPI_Datatype, MPI_T_handle};
use crate::mpit::handle::{self, Kind};
use crate::mpit::session::Target;
use crate::mpit::text::{name_arg, put, put_string, required};
use crate::mpit::{cvar, error, live, null_argument, pvar, with_tool, Tool};
use reflex_engine::{ErrorClass, Result};
use std::ffi::{c_char, c_int, c_void};

/// `MPI_T_pvar_get_num`.
pub fn t_pvar_get_num(num_pvar: *mut c_int) -> Result<()> {
    with_tool(|_| required(num_pvar, "num_pvar", pvar::TABLE.len() as c_int))
}

/// `MPI_T_pvar_get_info`.
pub fn t_pvar_get_info(
    pvar_index: c_int,
    name: *mut c_char,
    name_len: *mut c_int,
    verbosity: *mut c_int,
    var_class: *mut c_int,
    datatype: *mut MPI_Datatype,
    enumtype: *mut MPI_T_handle,
    desc: *mut c_char,
    desc_len: *mut c_int,
    bind: *mut c_int,
    readonly: *mut c_int,
    continuous: *mut c_int,
    atomic: *mut c_int,
) -> Result<()> {
    with_tool(|_| {
        let (_, v) = pvar::get(pvar_index)?;
        put_string(v.name, name, name_len);
        let cat = crate::mpit::category::CATEGORIES
            .iter()
            .find(|c| c.name == v.category);
        put(verbosity, cat.map_or(0, |c| c.verbosity));
        put(var_class, v.class);
        put(datatype, pvar::MPI_UNSIGNED_LONG_LONG);
        put(enumtype, std::ptr::null_mut());
        put_string(v.desc, desc, desc_len);
        put(bind, cvar::BIND_NO_OBJECT);
        put(readonly, c_int::from(v.readonly));
        put(continuous, c_int::from(v.continuous));
        // Reads and resets happen under the interface's lock at one sampled value.
        put(atomic, 1);
        Ok(())
    })
}

/// `MPI_T_pvar_get_index`.
pub fn t_pvar_get_index(
    name: *const c_char,
    var_class: c_int,
    pvar_index: *mut c_int,
) -> Result<()> {
    with_tool(|_| {
        let name = name_arg(name)?;
        let found = pvar::index_of(&name, var_class).ok_or_else(|| {
            error(
                ErrorClass::TInvalidName,
                format!("no performance variable of class {var_class} is named {name:?}"),
            )
        })?;
        required(pvar_index, "pvar_index", found as c_int)
    })
}

/// `MPI_T_pvar_session_create`.
pub fn t_pvar_session_create(session: *mut MPI_T_handle) -> Result<()> {
    with_tool(|t| {
        if session.is_null() {
            return Err(null_argument("session"));
        }
        let id = t.new_handle(ErrorClass::TOutOfSessions)?;
        t.sessions.create(id);
        put(session, handle::make(Kind::Session, id));
        Ok(())
    })
}

/// The session number of `h` (`MPI_T_ERR_INVALID_SESSION` if it is none).
fn session_of(h: MPI_T_handle) -> Result<u32> {
    handle::number(h, Kind::Session).ok_or_else(|| {
        error(
            ErrorClass::TInvalidSession,
            "not a performance-variable session handle",
        )
    })
}

/// `MPI_T_pvar_session_free`: the session and its handles.
pub fn t_pvar_session_free(session: *mut MPI_T_handle) -> Result<()> {
    with_tool(|t| {
        if session.is_null() {
            return Err(null_argument("session"));
        }
        // SAFETY: a non-NULL `MPI_T_pvar_session *` (MPI's contract).
        let id = session_of(unsafe { *session })?;
        t.sessions.free(id)?;
        put(session, std::ptr::null_mut());
        Ok(())
    })
}

/// `MPI_T_pvar_handle_alloc` (every variable is bound to no object: `obj_handle` is ignored).
pub fn t_pvar_handle_alloc(
    session: MPI_T_handle,
    pvar_index: c_int,
    _obj_handle: *mut c_void,
    handle_out: *mut MPI_T_handle,
    count: *mut c_int,
) -> Result<()> {
    with_tool(|t| {
        let s = session_of(session)?;
        let (index, v) = pvar::get(pvar_index)?;
        if handle_out.is_null() || count.is_null() {
            return Err(null_argument("handle or count"));
        }
        let id = t.new_handle(ErrorClass::TOutOfHandles)?;
        t.sessions
            .alloc(s, id, index, (v.read)(&live::counters()))?;
        put(handle_out, handle::make(Kind::Pvar, id));
        put(count, 1);
        Ok(())
    })
}

/// The handle number of `h` (`MPI_T_ERR_INVALID_HANDLE` if it is none, or if it is
/// `MPI_T_PVAR_ALL_HANDLES`, which only start, stop and reset accept).
fn handle_of(h: MPI_T_handle) -> Result<u32> {
    handle::number(h, Kind::Pvar).ok_or_else(|| {
        let what = match handle::is_all_handles(h) {
            true => "MPI_T_PVAR_ALL_HANDLES is accepted only by start, stop and reset",
            false => "not a performance-variable handle",
        };
        error(ErrorClass::TInvalidHandle, what)
    })
}

/// `MPI_T_pvar_handle_free`.
pub fn t_pvar_handle_free(session: MPI_T_handle, handle_inout: *mut MPI_T_handle) -> Result<()> {
    with_tool(|t| {
        let s = session_of(session)?;
        if handle_inout.is_null() {
            return Err(null_argument("handle"));
        }
        // SAFETY: a non-NULL `MPI_T_pvar_handle *` (MPI's contract).
        let id = handle_of(unsafe { *handle_inout })?;
        t.sessions.free_handle(s, id)?;
        put(handle_inout, std::ptr::null_mut());
        Ok(())
    })
}

/// Runs `op` on the session's state with the variables' raw values, sampled once.
fn with_values<R>(
    session: MPI_T_handle,
    op: impl FnOnce(&mut Tool, u32, &dyn Fn(usize) -> u64) -> Result<R>,
) -> Result<R> {
    with_tool(|t| {
        let s = session_of(session)?;
        let counters = live::counters();
        let now = |i: usize| (pvar::TABLE[i].read)(&counters);
        op(t, s, &now)
    })
}

/// What start, stop and reset apply to.
fn target_of(h: MPI_T_handle) -> Result<Target> {
    match handle::is_all_handles(h) {
        true => Ok(Target::All),
        false => handle_of(h).map(Target::One),
    }
}

/// `MPI_T_pvar_start`.
pub fn t_pvar_start(session: MPI_T_handle, h: MPI_T_handle) -> Result<()> {
    with_values(session, |t, s, now| t.sessions.start(s, target_of(h)?, now))
}

/// `MPI_T_pvar_stop`.
pub fn t_pvar_stop(session: MPI_T_handle, h: MPI_T_handle) -> Result<()> {
    with_values(session, |t, s, now| t.sessions.stop(s, target_of(h)?, now))
}

/// `MPI_T_pvar_reset`.
pub fn t_pvar_reset(session: MPI_T_handle, h: MPI_T_handle) -> Result<()> {
    with_values(session, |t, s, now| t.sessions.reset(s, target_of(h)?, now))
}

/// Stores a value into the caller's `MPI_UNSIGNED_LONG_LONG` buffer.
fn put_value(buf: *mut c_void, value: u64) -> Result<()> {
    if buf.is_null() {
        return Err(null_argument("buf"));
    }
    // SAFETY: a non-NULL buffer for one `unsigned long long` (MPI's contract); unaligned writes
    // tolerate any address.
    unsafe { buf.cast::<u64>().write_unaligned(value) };
    Ok(())
}

/// `MPI_T_pvar_read`.
pub fn t_pvar_read(session: MPI_T_handle, h: MPI_T_handle, buf: *mut c_void) -> Result<()> {
    let value = with_values(session, |t, s, now| t.sessions.read(s, handle_of(h)?, now))?;
    put_value(buf, value)
}

/// `MPI_T_pvar_readreset`.
pub fn t_pvar_readreset(session: MPI_T_handle, h: MPI_T_handle, buf: *mut c_void) -> Result<()> {
    let value = with_values(session, |t, s, now| {
        let id = handle_of(h)?;
        if buf.is_null() {
            // Checked before the reset, which must not happen without the read.
            return Err(null_argument("buf"));
        }
        t.sessions.readreset(s, id, now)
    })?;
    put_value(buf, value)
}

/// `MPI_T_pvar_write`.
pub fn t_pvar_write(session: MPI_T_handle, h: MPI_T_handle, buf: *const c_void) -> Result<()> {
    with_values(session, |t, s, now| {
        let id = handle_of(h)?;
        if buf.is_null() {
            return Err(null_argument("buf"));
        }
        // SAFETY: a non-NULL buffer holding one `unsigned long long` (MPI's contract).
        let value = unsafe { buf.cast::<u64>().read_unaligned() };
        t.sessions.write(s, id, value, now)
    })
}
