//! `MPI_T_*` (MPI-4.0 chapter 15), third part: events and event sources. Reflex raises no
//! events and has one source, the monotonic clock (`crate::mpit::event`): the event calls
//! answer as the standard says for an index or handle that does not exist.

use crate::ffi::{MPI_Aint, MPI_Count, MPI_Datatype, MPI_Info, MPI_T_handle};
use crate::mpit::event::{self, no_event, no_handle};
use crate::mpit::text::{name_arg, put, put_string, required};
use crate::mpit::{error, with_tool};
use reflex_engine::{ErrorClass, Result};
use std::ffi::{c_char, c_int, c_void};

/// `MPI_INFO_NULL` (MPICH's handle).
const INFO_NULL: MPI_Info = 0x1c00_0000;

/// `MPI_T_source_get_num`.
pub fn t_source_get_num(num_sources: *mut c_int) -> Result<()> {
    with_tool(|_| required(num_sources, "num_sources", 1))
}

/// `MPI_T_source_get_info` (the source has no info: `MPI_INFO_NULL`).
pub fn t_source_get_info(
    source_index: c_int,
    name: *mut c_char,
    name_len: *mut c_int,
    desc: *mut c_char,
    desc_len: *mut c_int,
    ordering: *mut c_int,
    ticks_per_second: *mut MPI_Count,
    max_ticks: *mut MPI_Count,
    info: *mut MPI_Info,
) -> Result<()> {
    with_tool(|_| {
        event::source(source_index)?;
        put_string(event::SOURCE_NAME, name, name_len);
        put_string(event::SOURCE_DESC, desc, desc_len);
        put(ordering, event::ORDERED);
        put(ticks_per_second, event::TICKS_PER_SECOND);
        put(max_ticks, i64::MAX);
        put(info, INFO_NULL);
        Ok(())
    })
}

/// `MPI_T_source_get_timestamp`.
pub fn t_source_get_timestamp(source_index: c_int, timestamp: *mut MPI_Count) -> Result<()> {
    with_tool(|_| {
        event::source(source_index)?;
        required(timestamp, "timestamp", event::timestamp())
    })
}

/// `MPI_T_event_get_num`.
pub fn t_event_get_num(num_events: *mut c_int) -> Result<()> {
    with_tool(|_| required(num_events, "num_events", 0))
}

/// `MPI_T_event_get_info`.
pub fn t_event_get_info(
    event_index: c_int,
    _name: *mut c_char,
    _name_len: *mut c_int,
    _verbosity: *mut c_int,
    _array_of_datatypes: *mut MPI_Datatype,
    _array_of_displacements: *mut MPI_Aint,
    _num_elements: *mut c_int,
    _enumtype: *mut MPI_T_handle,
    _info: *mut MPI_Info,
    _desc: *mut c_char,
    _desc_len: *mut c_int,
    _bind: *mut c_int,
) -> Result<()> {
    with_tool(|_| Err(no_event(event_index)))
}

/// `MPI_T_event_get_index`.
pub fn t_event_get_index(name: *const c_char, _event_index: *mut c_int) -> Result<()> {
    with_tool(|_| {
        let name = name_arg(name)?;
        Err(error(
            ErrorClass::TInvalidName,
            format!("no event is named {name:?}: Reflex raises no events"),
        ))
    })
}

/// `MPI_T_event_handle_alloc`.
pub fn t_event_handle_alloc(
    event_index: c_int,
    _obj_handle: *mut c_void,
    _info: MPI_Info,
    _event_registration: *mut MPI_T_handle,
) -> Result<()> {
    with_tool(|_| Err(no_event(event_index)))
}

/// The error of the calls that take an event registration.
fn no_registration() -> Result<()> {
    with_tool(|_| Err(no_handle("event registration")))
}

/// The error of the calls that take an event instance.
fn no_instance() -> Result<()> {
    with_tool(|_| Err(no_handle("event instance")))
}

/// `MPI_T_event_handle_free`.
pub fn t_event_handle_free(
    _r: MPI_T_handle,
    _user_data: *mut c_void,
    _cb: *const c_void,
) -> Result<()> {
    no_registration()
}

/// `MPI_T_event_handle_get_info`.
pub fn t_event_handle_get_info(_r: MPI_T_handle, _info_used: *mut MPI_Info) -> Result<()> {
    no_registration()
}

/// `MPI_T_event_handle_set_info`.
pub fn t_event_handle_set_info(_r: MPI_T_handle, _info: MPI_Info) -> Result<()> {
    no_registration()
}

/// `MPI_T_event_register_callback`.
pub fn t_event_register_callback(
    _r: MPI_T_handle,
    _cb_safety: c_int,
    _info: MPI_Info,
    _user_data: *mut c_void,
    _cb: *const c_void,
) -> Result<()> {
    no_registration()
}

/// `MPI_T_event_callback_get_info`.
pub fn t_event_callback_get_info(
    _r: MPI_T_handle,
    _cb_safety: c_int,
    _info_used: *mut MPI_Info,
) -> Result<()> {
    no_registration()
}

/// `MPI_T_event_callback_set_info`.
pub fn t_event_callback_set_info(
    _r: MPI_T_handle,
    _cb_safety: c_int,
    _info: MPI_Info,
) -> Result<()> {
    no_registration()
}

/// `MPI_T_event_set_dropped_handler`.
pub fn t_event_set_dropped_handler(_r: MPI_T_handle, _cb: *const c_void) -> Result<()> {
    no_registration()
}

/// `MPI_T_event_copy`.
pub fn t_event_copy(_e: MPI_T_handle, _buffer: *mut c_void) -> Result<()> {
    no_instance()
}

/// `MPI_T_event_read`.
pub fn t_event_read(_e: MPI_T_handle, _element_index: c_int, _buffer: *mut c_void) -> Result<()> {
    no_instance()
}

/// `MPI_T_event_get_source`.
pub fn t_event_get_source(_e: MPI_T_handle, _source_index: *mut c_int) -> Result<()> {
    no_instance()
}

/// `MPI_T_event_get_timestamp`.
pub fn t_event_get_timestamp(_e: MPI_T_handle, _event_timestamp: *mut MPI_Count) -> Result<()> {
    no_instance()
}
