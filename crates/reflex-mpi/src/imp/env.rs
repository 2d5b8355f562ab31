//! Environment management (MPI-3.1 chapter 8): start-up, shutdown, clocks, versions, error
//! strings, predefined attributes and error handlers.

use super::util::{write, write_string};
use crate::ffi::*;
use crate::handles;
use crate::state::{self, Mpi, WorldModel};
use reflex_engine::{CommId, ErrorClass, MpiError, Result};
use std::ffi::{c_char, c_int, c_void};
use std::sync::OnceLock;
use std::time::Instant;

const MAX_PROCESSOR_NAME: usize = 128;
const MAX_LIBRARY_VERSION_STRING: usize = 8192;
const MAX_ERROR_STRING: usize = 512;
pub(crate) const MAX_OBJECT_NAME: usize = 128;

fn init_with(caller: &str, required: c_int) -> Result<c_int> {
    match state::world_model() {
        WorldModel::NotStarted => {}
        WorldModel::Active => {
            return Err(MpiError::new(
                ErrorClass::Other,
                "MPI is already initialised",
            ))
        }
        WorldModel::Ended => {
            return Err(MpiError::new(
                ErrorClass::Other,
                "MPI cannot be initialised again after MPI_Finalize",
            ))
        }
    }
    let mpi = super::startup::engine_join(caller, required)?;
    mpi.main_thread = std::thread::current().id();
    let provided = mpi.thread_level;
    state::set_world_model(WorldModel::Active);
    // Last: the progress thread raises the level to MPI_THREAD_MULTIPLE (it shares the engine
    // under the lock), and the unlocked fast paths must then stay closed.
    // SAFETY: inside MPI_Init (an anytime frame, which holds the process lock under
    // MPI_THREAD_MULTIPLE); `mpi` is not used after this.
    unsafe { state::publish_fast() };
    Ok(provided)
}

/// `MPI_Init`.
pub fn init(_argc: *mut c_int, _argv: *mut *mut *mut c_char) -> Result<()> {
    init_with("MPI_Init", 0).map(|_| ())
}

/// `MPI_Init_thread`: grants the level asked for (`MPI_THREAD_MULTIPLE` at most), or the higher
/// one an open session already asked for.
pub fn init_thread(
    _argc: *mut c_int,
    _argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> Result<()> {
    if provided.is_null() {
        return Err(MpiError::new(
            ErrorClass::Arg,
            "output argument provided is NULL",
        ));
    }
    write(provided, init_with("MPI_Init_thread", required)?);
    Ok(())
}

/// `MPI_Initialized`: whether `MPI_Init` was called (sessions do not count, MPI-4.0 §11.2).
pub fn initialized(flag: *mut c_int) -> Result<()> {
    write_flag(flag, state::world_model() != WorldModel::NotStarted)
}

/// `MPI_Finalized`: whether `MPI_Finalize` was called (sessions may still be open).
pub fn finalized(flag: *mut c_int) -> Result<()> {
    write_flag(flag, state::world_model() == WorldModel::Ended)
}

fn write_flag(flag: *mut c_int, value: bool) -> Result<()> {
    if flag.is_null() {
        return Err(MpiError::new(
            ErrorClass::Arg,
            "output argument flag is NULL",
        ));
    }
    write(flag, c_int::from(value));
    Ok(())
}

/// `MPI_Finalize` (an "anytime" call: it may end the running phase, so it cannot run inside
/// it). The engine ends with it unless sessions are still open (then with the last of them).
pub fn finalize() -> Result<()> {
    match state::world_model() {
        WorldModel::Active => {}
        WorldModel::NotStarted => {
            return Err(MpiError::new(
                ErrorClass::Other,
                "MPI_Finalize called before MPI_Init",
            ))
        }
        WorldModel::Ended => {
            return Err(MpiError::new(
                ErrorClass::Other,
                "MPI_Finalize called twice",
            ))
        }
    }
    state::withdraw_fast();
    // SAFETY: inside an MPI call (an anytime frame, which holds the process lock under
    // MPI_THREAD_MULTIPLE); no other reference to the state is alive in an anytime call.
    if let Some(mpi) = unsafe { state::running() } {
        // MPI_COMM_SELF is freed first, while MPI still works (attribute delete callbacks).
        super::attr::finalize_attrs(mpi)?;
    }
    state::set_world_model(WorldModel::Ended);
    super::startup::engine_leave()
}

/// `MPI_Abort`.
pub fn abort(w: &mut Mpi, comm: CommId, errorcode: c_int) -> Result<()> {
    let rank = w.world.engine.world_rank();
    eprintln!(
        "reflex: rank {rank} called MPI_Abort on communicator {:#x} with code {errorcode}",
        handles::comm_handle(comm)
    );
    w.world.abort(
        errorcode,
        &format!("rank {rank} called MPI_Abort with code {errorcode}"),
    )
}

pub(super) fn clock_origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

/// `MPI_Wtime`: seconds on a monotonic clock (nanosecond resolution).
pub fn wtime() -> f64 {
    clock_origin().elapsed().as_secs_f64()
}

/// `MPI_Wtick`.
pub fn wtick() -> f64 {
    1e-9
}

/// `MPI_Get_processor_name`.
pub fn get_processor_name(_w: &mut Mpi, name: *mut c_char, resultlen: *mut c_int) -> Result<()> {
    write_string(
        name,
        resultlen,
        &reflex_engine::world::host_name(),
        MAX_PROCESSOR_NAME,
    )
}

/// `MPI_Get_version`: MPI 4.0.
pub fn get_version(version: *mut c_int, subversion: *mut c_int) -> Result<()> {
    if version.is_null() || subversion.is_null() {
        return Err(MpiError::new(ErrorClass::Arg, "output argument is NULL"));
    }
    write(version, 4);
    write(subversion, 0);
    Ok(())
}

/// `MPI_Get_library_version`.
pub fn get_library_version(version: *mut c_char, resultlen: *mut c_int) -> Result<()> {
    let text = format!(
        "Reflex {} (MPICH ABI, libmpi.so.12)",
        env!("CARGO_PKG_VERSION")
    );
    write_string(version, resultlen, &text, MAX_LIBRARY_VERSION_STRING)
}

/// `MPI_Error_string`.
pub fn error_string(errorcode: c_int, string: *mut c_char, resultlen: *mut c_int) -> Result<()> {
    let text = crate::errors::string_value(errorcode).ok_or_else(|| {
        MpiError::new(ErrorClass::Arg, format!("{errorcode} is not an error code"))
    })?;
    write_string(string, resultlen, &text, MAX_ERROR_STRING)
}

/// `MPI_Error_class`.
pub fn error_class(errorcode: c_int, errorclass: *mut c_int) -> Result<()> {
    let class = crate::errors::class_value(errorcode).ok_or_else(|| {
        MpiError::new(ErrorClass::Arg, format!("{errorcode} is not an error code"))
    })?;
    if errorclass.is_null() {
        return Err(MpiError::new(
            ErrorClass::Arg,
            "output argument errorclass is NULL",
        ));
    }
    write(errorclass, class);
    Ok(())
}

/// `MPI_Query_thread`.
pub fn query_thread(w: &mut Mpi, provided: *mut c_int) -> Result<()> {
    write(provided, w.thread_level);
    Ok(())
}

/// `MPI_Is_thread_main`.
pub fn is_thread_main(w: &mut Mpi, flag: *mut c_int) -> Result<()> {
    write(
        flag,
        c_int::from(std::thread::current().id() == w.main_thread),
    );
    Ok(())
}

/// The slot of `Mpi::attr_values` behind a predefined communicator keyval (`MPI_TAG_UB` ...).
pub(crate) fn predefined_slot(keyval: c_int) -> Option<usize> {
    match keyval as u32 {
        0x6440_0001 => Some(0),
        0x6440_0003 => Some(1),
        0x6440_0005 => Some(2),
        0x6440_0007 => Some(3),
        0x6440_0009 => Some(4),
        0x6440_000b => Some(5),
        0x6440_000d => Some(6),
        _ => None,
    }
}

/// `MPI_Comm_get_attr` of predefined attribute `slot`: the predefined attributes describe the
/// process, so every communicator reports them.
pub(crate) fn get_predefined(
    w: &mut Mpi,
    slot: usize,
    attribute_val: *mut c_void,
    flag: *mut c_int,
) -> Result<()> {
    w.attr_values[5] = crate::errors::last_used();
    let defined = !(slot == 6 && w.attr_values[6] < 0);
    if defined {
        let value: *const c_int = &w.attr_values[slot];
        write(attribute_val.cast::<*const c_int>(), value);
    }
    write(flag, c_int::from(defined));
    Ok(())
}

/// `MPI_Comm_set_errhandler`.
pub fn comm_set_errhandler(w: &mut Mpi, comm: CommId, errhandler: MPI_Errhandler) -> Result<()> {
    check_errhandler(w, errhandler)?;
    w.world.engine.comm_mut(comm)?.errhandler = errhandler;
    Ok(())
}

/// `MPI_Comm_get_errhandler`.
pub fn comm_get_errhandler(
    w: &mut Mpi,
    comm: CommId,
    errhandler: *mut MPI_Errhandler,
) -> Result<()> {
    write(errhandler, w.world.engine.comm(comm)?.errhandler);
    Ok(())
}

pub(crate) fn check_errhandler(w: &Mpi, h: MPI_Errhandler) -> Result<()> {
    let known = matches!(
        h,
        handles::ERRORS_ARE_FATAL | handles::ERRORS_RETURN | handles::ERRORS_ABORT
    ) || handles::errhandler_index(h)
        .is_some_and(|i| w.errhandlers.get(i as usize).is_some_and(Option::is_some));
    if known {
        Ok(())
    } else {
        Err(MpiError::new(
            ErrorClass::Arg,
            format!("{h:#x} is not a valid error handler"),
        ))
    }
}

/// `MPI_Comm_create_errhandler`.
pub fn comm_create_errhandler(
    w: &mut Mpi,
    function: *const c_void,
    errhandler: *mut MPI_Errhandler,
) -> Result<()> {
    if function.is_null() {
        return Err(MpiError::new(
            ErrorClass::Arg,
            "error handler function is NULL",
        ));
    }
    w.errhandlers.push(Some(function));
    write(
        errhandler,
        handles::errhandler_handle(w.errhandlers.len() as u32 - 1),
    );
    Ok(())
}

/// `MPI_Errhandler_free`.
pub fn errhandler_free(w: &mut Mpi, errhandler: *mut MPI_Errhandler) -> Result<()> {
    // SAFETY: the kinds check made sure the pointer is non-NULL.
    let h = unsafe { *errhandler };
    check_errhandler(w, h)?;
    // Handlers still attached to communicators keep working: predefined ones are never freed and
    // user slots are only marked reusable when no communicator names them (kept simple: never reused).
    write(errhandler, handles::ERRHANDLER_NULL);
    Ok(())
}

/// `MPI_Comm_call_errhandler`.
pub fn comm_call_errhandler(w: &mut Mpi, comm: CommId, errorcode: c_int) -> Result<()> {
    // The handler receives exactly `errorcode` (user-defined codes included).
    crate::call::dispatch(
        w,
        "MPI_Comm_call_errhandler",
        Some(handles::comm_handle(comm)),
        &crate::errors::existing(errorcode),
    );
    Ok(())
}

/// `MPI_Comm_set_name`.
pub fn comm_set_name(w: &mut Mpi, comm: CommId, name: *const c_char) -> Result<()> {
    if name.is_null() {
        return Err(MpiError::new(ErrorClass::Arg, "communicator name is NULL"));
    }
    // SAFETY: MPI requires a NUL-terminated string.
    let text = unsafe { std::ffi::CStr::from_ptr(name) }.to_string_lossy();
    w.world.engine.comm_mut(comm)?.name = text.chars().take(MAX_OBJECT_NAME - 1).collect();
    Ok(())
}

/// `MPI_Comm_get_name`.
pub fn comm_get_name(
    w: &mut Mpi,
    comm: CommId,
    name: *mut c_char,
    resultlen: *mut c_int,
) -> Result<()> {
    let text = w.world.engine.comm(comm)?.name.clone();
    write_string(name, resultlen, &text, MAX_OBJECT_NAME)
}

/// `MPI_Pcontrol`: profiling control; Reflex has no profiling levels, so every level is accepted.
pub fn pcontrol(_level: c_int) -> Result<()> {
    Ok(())
}

/// `MPI_Aint_add`.
pub fn aint_add(base: MPI_Aint, disp: MPI_Aint) -> MPI_Aint {
    base.wrapping_add(disp)
}

/// `MPI_Aint_diff`.
pub fn aint_diff(addr1: MPI_Aint, addr2: MPI_Aint) -> MPI_Aint {
    addr1.wrapping_sub(addr2)
}
