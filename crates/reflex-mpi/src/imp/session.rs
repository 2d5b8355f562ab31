//! The Sessions Model (MPI-4.0 §11.3): sessions, their process sets, and the communicators built
//! from groups alone (`MPI_Comm_create_from_group`, `MPI_Intercomm_create_from_groups`).
//!
//! A session joins the engine the World Model uses ([`super::startup`]); the last of them to
//! end ends it. The constructors have no parent communicator: they run over the library's own
//! duplicate of the world (`reflex_engine::COMM_SESSIONS`, hidden from the application), as
//! `MPI_Comm_create_group` does over its parent, under a tag derived from the string tag
//! ([`crate::sessions::stringtag_tag`]), so that concurrent creations with different string
//! tags over overlapping groups never take each other's messages, and none of them meets the
//! application's `MPI_Comm_create_group` on `MPI_COMM_WORLD`.

use super::info::new_info;
use super::util::{c_string, write, write_string};
use crate::ffi::*;
use crate::handles;
use crate::info::{Dict, InfoId};
use crate::sessions::{stringtag_tag, thread_level_of, Pset, Session, THREAD_LEVEL_NAMES};
use crate::state::{self, Mpi};
use reflex_engine::{CommId, ErrorClass, GroupId, MpiError, Result, COMM_SESSIONS};
use std::ffi::{c_char, c_int, c_void};

const MAX_STRINGTAG_LEN: usize = 256;

/// `MPI_Session_init` (an "anytime" call: it may start the engine). The thread level comes from
/// the `thread_level` key of `info`; every level is provided. An error goes to `errhandler`
/// (MPI-4.0 §11.3) when it is a valid handler of the running engine; it is returned otherwise.
pub fn session_init(
    info: MPI_Info,
    errhandler: MPI_Errhandler,
    session: *mut MPI_Session,
) -> Result<()> {
    session_open(info, errhandler, session).map_err(|e| init_handler(errhandler, e))
}

/// Runs `MPI_Session_init`'s own handler on `e`; returns the error the call then returns.
#[cold]
fn init_handler(errhandler: MPI_Errhandler, e: MpiError) -> MpiError {
    // SAFETY: inside MPI_Session_init (an anytime frame, which holds the process lock under
    // MPI_THREAD_MULTIPLE); no other reference to the state is alive here.
    let Some(mpi) = (unsafe { state::running() }) else {
        return e;
    };
    if super::env::check_errhandler(mpi, errhandler).is_err() {
        return e;
    }
    let name = "MPI_Session_init";
    let code = crate::errors::register(name, &e);
    crate::call::object_handler(mpi, name, errhandler, code, handles::SESSION_NULL);
    crate::errors::existing(code)
}

fn session_open(
    info: MPI_Info,
    errhandler: MPI_Errhandler,
    session: *mut MPI_Session,
) -> Result<()> {
    crate::kinds::out_ptr(session, "session")?;
    // Info objects exist before the engine starts too (`super::info`).
    let asked = super::info::value_anytime(info, "thread_level")?;
    let level = thread_level_of(asked.as_deref())?;
    // SAFETY: inside an MPI call (an anytime frame, which holds the process lock under
    // MPI_THREAD_MULTIPLE); the reference ends before `engine_join` takes the state.
    match unsafe { state::running() } {
        Some(mpi) => super::env::check_errhandler(mpi, errhandler)?,
        // No user error handler exists before the engine starts.
        None => predefined_handler(errhandler)?,
    }
    let mpi = super::startup::engine_join("MPI_Session_init", level)?;
    let index = mpi.objects.sessions.insert(Session {
        errhandler,
        thread_level: level.max(mpi.thread_level),
    });
    write(session, handles::session_handle(index));
    Ok(())
}

/// Before the engine starts, only the predefined error handlers exist.
fn predefined_handler(errhandler: MPI_Errhandler) -> Result<()> {
    if !matches!(
        errhandler,
        handles::ERRORS_ARE_FATAL | handles::ERRORS_RETURN | handles::ERRORS_ABORT
    ) {
        return Err(MpiError::new(
            ErrorClass::Arg,
            format!("{errhandler:#x} is not a valid error handler"),
        ));
    }
    Ok(())
}

/// `MPI_Session_finalize` (an "anytime" call: the last session to end ends the engine when the
/// World Model does not use it).
pub fn session_finalize(session: *mut MPI_Session) -> Result<()> {
    crate::kinds::out_ptr(session, "session")?;
    // SAFETY: inside an MPI call (an anytime frame, which holds the process lock under
    // MPI_THREAD_MULTIPLE); the reference ends before `engine_leave` takes the state.
    let Some(mpi) = (unsafe { state::running() }) else {
        return Err(MpiError::new(ErrorClass::Session, "no session is open"));
    };
    // SAFETY: checked non-NULL above; MPI requires it to point to a session handle.
    let index = crate::kinds::session(mpi, unsafe { *session })?;
    mpi.objects.sessions.remove(index)?;
    write(session, handles::SESSION_NULL);
    super::startup::engine_leave()
}

/// `MPI_Session_get_num_psets`.
pub fn session_get_num_psets(
    _w: &mut Mpi,
    _session: u32,
    _info: Option<InfoId>,
    npset_names: *mut c_int,
) -> Result<()> {
    write(npset_names, Pset::ALL.len() as c_int);
    Ok(())
}

/// `MPI_Session_get_nth_pset`: a `pset_len` of 0 asks for the length only; the length written
/// back counts the terminating NUL (MPI-4.0 §11.3).
pub fn session_get_nth_pset(
    _w: &mut Mpi,
    _session: u32,
    _info: Option<InfoId>,
    n: c_int,
    pset_len: *mut c_int,
    pset_name: *mut c_char,
) -> Result<()> {
    let pset = usize::try_from(n)
        .ok()
        .and_then(|i| Pset::ALL.get(i))
        .ok_or_else(|| {
            MpiError::new(
                ErrorClass::Arg,
                format!(
                    "n = {n} is not in 0..{} (the number of process sets)",
                    Pset::ALL.len()
                ),
            )
        })?;
    let name = pset.name();
    // SAFETY: the kinds check made sure pset_len is non-NULL.
    let room = unsafe { *pset_len };
    if room > 0 {
        write_string(pset_name, std::ptr::null_mut(), name, room as usize)?;
    }
    write(pset_len, name.len() as c_int + 1);
    Ok(())
}

/// `MPI_Session_get_pset_info`: `mpi_size`, the number of processes of the set.
pub fn session_get_pset_info(
    w: &mut Mpi,
    _session: u32,
    pset_name: *const c_char,
    info: *mut MPI_Info,
) -> Result<()> {
    let pset = Pset::named(&c_string(pset_name, "pset_name")?)?;
    let size = match pset {
        Pset::World => w.world.engine.world_size(),
        Pset::SelfOnly => 1,
    };
    new_info(
        w,
        Dict::from_pairs([("mpi_size".into(), size.to_string())]),
        info,
    )
}

/// `MPI_Session_get_info`: the thread level granted, as `thread_level`.
pub fn session_get_info(w: &mut Mpi, session: u32, info_used: *mut MPI_Info) -> Result<()> {
    let level = w.objects.sessions.get(session)?.thread_level;
    let name = THREAD_LEVEL_NAMES[level.clamp(0, 3) as usize];
    new_info(
        w,
        Dict::from_pairs([("thread_level".into(), name.into())]),
        info_used,
    )
}

/// `MPI_Group_from_session_pset`.
pub fn group_from_session_pset(
    w: &mut Mpi,
    _session: u32,
    pset_name: *const c_char,
    newgroup: *mut MPI_Group,
) -> Result<()> {
    let comm = match Pset::named(&c_string(pset_name, "pset_name")?)? {
        Pset::World => reflex_engine::COMM_WORLD,
        Pset::SelfOnly => reflex_engine::COMM_SELF,
    };
    let id = w.world.engine.comm_group(comm)?;
    write(newgroup, handles::group_handle(id));
    Ok(())
}

/// `MPI_Session_create_errhandler`: handlers of every kind share one table.
pub fn session_create_errhandler(
    w: &mut Mpi,
    session_errhandler_fn: *const c_void,
    errhandler: *mut MPI_Errhandler,
) -> Result<()> {
    super::env::comm_create_errhandler(w, session_errhandler_fn, errhandler)
}

/// `MPI_Session_set_errhandler`.
pub fn session_set_errhandler(w: &mut Mpi, session: u32, errhandler: MPI_Errhandler) -> Result<()> {
    super::env::check_errhandler(w, errhandler)?;
    w.objects.sessions.get_mut(session)?.errhandler = errhandler;
    Ok(())
}

/// `MPI_Session_get_errhandler`.
pub fn session_get_errhandler(
    w: &mut Mpi,
    session: u32,
    errhandler: *mut MPI_Errhandler,
) -> Result<()> {
    write(errhandler, w.objects.sessions.get(session)?.errhandler);
    Ok(())
}

/// `MPI_Session_call_errhandler`: the handler receives exactly `errorcode`.
pub fn session_call_errhandler(w: &mut Mpi, session: u32, errorcode: c_int) -> Result<()> {
    crate::call::dispatch(
        w,
        "MPI_Session_call_errhandler",
        Some(handles::session_handle(session)),
        &crate::errors::existing(errorcode),
    );
    Ok(())
}

/// The string tag of a constructor, checked (`MPI_MAX_STRINGTAG_LEN` with its NUL).
fn stringtag_of(p: *const c_char) -> Result<String> {
    let tag = c_string(p, "stringtag")?;
    if tag.len() >= MAX_STRINGTAG_LEN {
        return Err(MpiError::new(
            ErrorClass::Arg,
            format!(
                "stringtag is {} bytes long, more than MPI_MAX_STRINGTAG_LEN - 1 ({})",
                tag.len(),
                MAX_STRINGTAG_LEN - 1
            ),
        ));
    }
    Ok(tag)
}

/// The handler a constructor attaches (`MPI_ERRHANDLER_NULL`: the default, fatal).
fn errhandler_of(w: &Mpi, h: MPI_Errhandler) -> Result<MPI_Errhandler> {
    if h == handles::ERRHANDLER_NULL {
        return Ok(handles::ERRORS_ARE_FATAL);
    }
    super::env::check_errhandler(w, h)?;
    Ok(h)
}

/// Attaches the constructor's handler and hints to a new communicator.
fn adopt(w: &mut Mpi, id: CommId, errhandler: MPI_Errhandler, info: Option<InfoId>) -> Result<()> {
    w.world.engine.comm_mut(id)?.errhandler = errhandler;
    super::info::set_hints(w, id, info);
    Ok(())
}

/// `MPI_Comm_create_from_group`: collective over `group` only. A caller outside the group gets
/// `MPI_COMM_NULL`, as from `MPI_Comm_create_group`.
pub fn comm_create_from_group(
    w: &mut Mpi,
    group: GroupId,
    stringtag: *const c_char,
    info: Option<InfoId>,
    errhandler: MPI_Errhandler,
    newcomm: *mut MPI_Comm,
) -> Result<()> {
    let tag = stringtag_tag("MPI_Comm_create_from_group", &stringtag_of(stringtag)?);
    let errhandler = errhandler_of(w, errhandler)?;
    let start = move |w: &mut Mpi| (w.world.engine).comm_icreate_group(COMM_SESSIONS, group, tag);
    let then = move |w: &mut Mpi, id| adopt(w, id, errhandler, info);
    super::comm::wait_made(w, start, then, newcomm)
}

/// A leader's rank in its group, checked (`MPI_ERR_RANK`).
fn leader_in(w: &Mpi, group: GroupId, leader: c_int, what: &str) -> Result<u32> {
    let members = &w.world.engine.group(group)?.members;
    usize::try_from(leader)
        .ok()
        .and_then(|r| members.get(r).copied())
        .ok_or_else(|| {
            MpiError::new(
                ErrorClass::Rank,
                format!(
                    "{what} {leader} is not a rank of its group of size {}",
                    members.len()
                ),
            )
        })
}

/// `MPI_Intercomm_create_from_groups`: the local group first agrees on an intracommunicator
/// (over the hidden world duplicate), the leaders then meet over that duplicate as the peer
/// communicator of `MPI_Intercomm_create`; the temporary intracommunicator is freed.
pub fn intercomm_create_from_groups(
    w: &mut Mpi,
    local_group: GroupId,
    local_leader: c_int,
    remote_group: GroupId,
    remote_leader: c_int,
    stringtag: *const c_char,
    info: Option<InfoId>,
    errhandler: MPI_Errhandler,
    newintercomm: *mut MPI_Comm,
) -> Result<()> {
    let tag = stringtag_tag(
        "MPI_Intercomm_create_from_groups",
        &stringtag_of(stringtag)?,
    );
    let errhandler = errhandler_of(w, errhandler)?;
    leader_in(w, local_group, local_leader, "local_leader")?;
    let remote_world = leader_in(w, remote_group, remote_leader, "remote_leader")?;
    let engine = &mut w.world.engine;
    let local = engine
        .comm_create_group(COMM_SESSIONS, local_group, tag)?
        .ok_or_else(|| {
            MpiError::new(
                ErrorClass::Group,
                "the calling process is not a member of local_group",
            )
        })?;
    // Ranks of the hidden duplicate are world ranks.
    let created = engine.intercomm_create(
        local,
        local_leader as usize,
        COMM_SESSIONS,
        remote_world as c_int,
        tag,
    );
    engine.comm_free(local)?;
    let id = created?;
    adopt(w, id, errhandler, info)?;
    write(newintercomm, handles::comm_handle(id));
    Ok(())
}
