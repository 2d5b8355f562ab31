//! Info objects (MPI-3.1 chapter 9, MPI-4.0 `MPI_Info_get_string` and `MPI_Info_create_env`)
//! and the info hints of communicators (`MPI_Comm_set_info` / `MPI_Comm_get_info`). The
//! objects themselves are in `crate::info`.

use super::util::{c_string, write, write_string};
use crate::ffi::*;
use crate::info::{Dict, InfoId, Infos, MAX_INFO_KEY};
use crate::objects::Objects;
use crate::state::Mpi;
use reflex_engine::world::World;
use reflex_engine::{CommId, ErrorClass, MpiError, Result};
use std::ffi::{c_char, c_int};

/// The C layer's object tables at `MPI_Init`, with `MPI_INFO_ENV` describing this process.
pub fn objects_at_init(world: &World, thread_level: c_int) -> Objects {
    let cmdline = std::fs::read("/proc/self/cmdline").unwrap_or_default();
    let mut args = cmdline
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned());
    let command = args.next().unwrap_or_default();
    let argv = args.collect::<Vec<_>>().join(" ");
    let level = [
        "MPI_THREAD_SINGLE",
        "MPI_THREAD_FUNNELED",
        "MPI_THREAD_SERIALIZED",
        "MPI_THREAD_MULTIPLE",
    ]
    .get(thread_level as usize)
    .copied()
    .unwrap_or("MPI_THREAD_MULTIPLE");
    let wdir = std::env::current_dir()
        .map(|d| d.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut objects = Objects::default();
    objects.infos.set_env(Dict::from_pairs([
        ("command".to_string(), command),
        ("argv".to_string(), argv),
        (
            "maxprocs".to_string(),
            world.engine.world_size().to_string(),
        ),
        ("host".to_string(), reflex_engine::world::host_name()),
        ("arch".to_string(), std::env::consts::ARCH.to_string()),
        ("wdir".to_string(), wdir),
        ("thread_level".to_string(), level.to_string()),
    ]));
    objects
}

/// A non-null info object.
pub(crate) fn required(info: Option<InfoId>) -> Result<InfoId> {
    info.ok_or_else(|| {
        MpiError::new(
            ErrorClass::Info,
            "MPI_INFO_NULL is not a valid info object here",
        )
    })
}

pub(crate) fn new_info(w: &mut Mpi, dict: Dict, out: *mut MPI_Info) -> Result<()> {
    let id = w.objects.infos.insert(dict)?;
    write(out, Infos::handle(id));
    Ok(())
}

/// `MPI_Info_create`.
pub fn info_create(w: &mut Mpi, info: *mut MPI_Info) -> Result<()> {
    new_info(w, Dict::default(), info)
}

/// `MPI_Info_create_env` (MPI-4.0): a copy of `MPI_INFO_ENV`.
pub fn info_create_env(
    w: &mut Mpi,
    _argc: c_int,
    _argv: *mut *mut c_char,
    info: *mut MPI_Info,
) -> Result<()> {
    let env = w.objects.infos.get(InfoId::Env).clone();
    new_info(w, env, info)
}

/// `MPI_Info_dup`.
pub fn info_dup(w: &mut Mpi, info: Option<InfoId>, newinfo: *mut MPI_Info) -> Result<()> {
    let dict = w.objects.infos.get(required(info)?).clone();
    new_info(w, dict, newinfo)
}

/// `MPI_Info_free`.
pub fn info_free(w: &mut Mpi, info: *mut MPI_Info) -> Result<()> {
    // SAFETY: the kinds check made sure the pointer is non-NULL.
    let id = required(w.objects.infos.lookup(unsafe { *info })?)?;
    w.objects.infos.remove(id)?;
    write(info, crate::info::INFO_NULL);
    Ok(())
}

/// `MPI_Info_set`.
pub fn info_set(
    w: &mut Mpi,
    info: Option<InfoId>,
    key: *const c_char,
    value: *const c_char,
) -> Result<()> {
    let (key, value) = (c_string(key, "key")?, c_string(value, "value")?);
    w.objects.infos.get_mut(required(info)?)?.set(&key, &value)
}

/// `MPI_Info_delete`.
pub fn info_delete(w: &mut Mpi, info: Option<InfoId>, key: *const c_char) -> Result<()> {
    let key = c_string(key, "key")?;
    w.objects.infos.get_mut(required(info)?)?.delete(&key)
}

/// The value of `key` in `info`, after checking the key.
fn value_of(w: &Mpi, info: Option<InfoId>, key: *const c_char) -> Result<Option<String>> {
    let key = c_string(key, "key")?;
    crate::info::check_key(&key)?;
    let dict = w.objects.infos.get(required(info)?);
    Ok(dict.get(&key).map(str::to_string))
}

/// `MPI_Info_get`: at most `valuelen` characters (plus the NUL) are stored.
pub fn info_get(
    w: &mut Mpi,
    info: Option<InfoId>,
    key: *const c_char,
    valuelen: c_int,
    value: *mut c_char,
    flag: *mut c_int,
) -> Result<()> {
    let room = usize::try_from(valuelen)
        .map_err(|_| MpiError::new(ErrorClass::Arg, format!("valuelen {valuelen} is negative")))?;
    let found = value_of(w, info, key)?;
    if let Some(v) = &found {
        write_string(value, std::ptr::null_mut(), v, room + 1)?;
    }
    write(flag, c_int::from(found.is_some()));
    Ok(())
}

/// `MPI_Info_get_valuelen`.
pub fn info_get_valuelen(
    w: &mut Mpi,
    info: Option<InfoId>,
    key: *const c_char,
    valuelen: *mut c_int,
    flag: *mut c_int,
) -> Result<()> {
    let found = value_of(w, info, key)?;
    if let Some(v) = &found {
        write(valuelen, v.len() as c_int);
    }
    write(flag, c_int::from(found.is_some()));
    Ok(())
}

/// `MPI_Info_get_string` (MPI-4.0): `*buflen` in is the buffer size, out the value's size with
/// its NUL; a zero `*buflen` only asks for the size.
pub fn info_get_string(
    w: &mut Mpi,
    info: Option<InfoId>,
    key: *const c_char,
    buflen: *mut c_int,
    value: *mut c_char,
    flag: *mut c_int,
) -> Result<()> {
    let found = value_of(w, info, key)?;
    if let Some(v) = &found {
        // SAFETY: the kinds check made sure buflen is non-NULL.
        let room = unsafe { *buflen };
        if room > 0 {
            write_string(value, std::ptr::null_mut(), v, room as usize)?;
        }
        write(buflen, v.len() as c_int + 1);
    }
    write(flag, c_int::from(found.is_some()));
    Ok(())
}

/// `MPI_Info_get_nkeys`.
pub fn info_get_nkeys(w: &mut Mpi, info: Option<InfoId>, nkeys: *mut c_int) -> Result<()> {
    write(nkeys, w.objects.infos.get(required(info)?).len() as c_int);
    Ok(())
}

/// `MPI_Info_get_nthkey`.
pub fn info_get_nthkey(
    w: &mut Mpi,
    info: Option<InfoId>,
    n: c_int,
    key: *mut c_char,
) -> Result<()> {
    let dict = w.objects.infos.get(required(info)?);
    write_string(
        key,
        std::ptr::null_mut(),
        dict.nth_key(n)?,
        MAX_INFO_KEY + 1,
    )
}

/// `MPI_Comm_set_info`: the hints replace those set before (Reflex acts on none of them, so
/// all are kept and reported back).
pub fn comm_set_info(w: &mut Mpi, comm: CommId, info: Option<InfoId>) -> Result<()> {
    let dict = w.objects.infos.get(required(info)?).clone();
    w.objects.comm_hints.insert(comm, dict);
    Ok(())
}

/// `MPI_Comm_get_info`: a new info object with the communicator's hints.
pub fn comm_get_info(w: &mut Mpi, comm: CommId, info_used: *mut MPI_Info) -> Result<()> {
    let dict = w.objects.comm_hints.get(&comm).cloned().unwrap_or_default();
    new_info(w, dict, info_used)
}

/// `MPI_Comm_dup`: the duplicate starts with its parent's hints.
pub fn copy_hints(w: &mut Mpi, parent: CommId, child: CommId) {
    if let Some(d) = w.objects.comm_hints.get(&parent).cloned() {
        w.objects.comm_hints.insert(child, d);
    }
}

/// `MPI_Comm_dup_with_info` and friends: the new communicator gets `info`'s hints (none for
/// `MPI_INFO_NULL`).
pub fn set_hints(w: &mut Mpi, comm: CommId, info: Option<InfoId>) {
    match info {
        Some(id) => {
            let d = w.objects.infos.get(id).clone();
            w.objects.comm_hints.insert(comm, d);
        }
        None => {
            w.objects.comm_hints.remove(&comm);
        }
    }
}
