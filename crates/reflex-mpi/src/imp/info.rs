//! Info objects (MPI-3.1 chapter 9, MPI-4.0 `MPI_Info_get_string` and `MPI_Info_create_env`)
//! and the info hints of communicators (`MPI_Comm_set_info` / `MPI_Comm_get_info`). The
//! objects themselves are in `crate::info`.

use super::util::{c_string, write, write_string};
use crate::ffi::*;
use crate::info::{Dict, InfoId, Infos, MAX_INFO_KEY};
use crate::objects::Objects;
use crate::state::Mpi;
use reflex_engine::{CommId, ErrorClass, MpiError, Result};
use std::ffi::{c_char, c_int};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The C layer's object tables when the engine starts: the info objects made before (and
/// `MPI_INFO_ENV`) are taken over.
pub fn objects_at_init() -> Objects {
    Objects {
        infos: std::mem::take(&mut *detached()),
        ..Objects::default()
    }
}

/// The info objects while no MPI runs (before `MPI_Init` or `MPI_Session_init`, and after the
/// engine ended): MPI-4.0 §9 lets the `MPI_Info_*` calls run then. The engine takes them over
/// when it starts ([`objects_at_init`]) and gives them back when it ends ([`give_back`]), so a
/// handle made before `MPI_Session_init` names the same object after it.
static DETACHED: Mutex<Option<Infos>> = Mutex::new(None);

/// The table of [`DETACHED`] (the process lock makes its mutex uncontended; a panic inside an
/// info call cannot leave a table half-changed, so a poisoned lock is taken over).
fn detached() -> impl std::ops::DerefMut<Target = Infos> {
    struct Table(MutexGuard<'static, Option<Infos>>);
    impl std::ops::Deref for Table {
        type Target = Infos;
        fn deref(&self) -> &Infos {
            self.0.as_ref().expect("filled when taken")
        }
    }
    impl std::ops::DerefMut for Table {
        fn deref_mut(&mut self) -> &mut Infos {
            self.0.as_mut().expect("filled when taken")
        }
    }
    let mut guard = DETACHED.lock().unwrap_or_else(PoisonError::into_inner);
    guard.get_or_insert_with(|| {
        let mut infos = Infos::default();
        infos.set_env(process_env());
        infos
    });
    Table(guard)
}

/// `MPI_INFO_ENV` (MPI-4.0 §11.2.4): how this process was started, the same before, during and
/// after MPI: the command and its arguments, the number of processes the launcher started
/// (`maxprocs`, when it says), the host, the architecture and the working directory.
/// (`thread_level` is left out: no launcher option asks for one.)
fn process_env() -> Dict {
    let cmdline = std::fs::read("/proc/self/cmdline").unwrap_or_default();
    let mut args = cmdline
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned());
    let command = args.next().unwrap_or_default();
    let argv = args.collect::<Vec<_>>().join(" ");
    let wdir = std::env::current_dir().map(|d| d.to_string_lossy().into_owned());
    let maxprocs = std::env::var("PMI_SIZE")
        .ok()
        .filter(|v| v.parse::<u32>().is_ok());
    let pairs = [
        ("command", Some(command)),
        ("argv", Some(argv)),
        ("maxprocs", maxprocs),
        ("host", Some(reflex_engine::world::host_name())),
        ("arch", Some(std::env::consts::ARCH.to_string())),
        ("wdir", Some(wdir.unwrap_or_default())),
    ];
    Dict::from_pairs((pairs.into_iter()).filter_map(|(k, v)| v.map(|v| (k.to_string(), v))))
}

/// Hands the running MPI's info objects back to the table kept while none runs (the engine is
/// ending).
pub(crate) fn give_back(mpi: &mut Mpi) {
    let infos = std::mem::take(&mut mpi.objects.infos);
    *DETACHED.lock().unwrap_or_else(PoisonError::into_inner) = Some(infos);
}

/// Runs the info call `name` on the table of info objects: the running MPI's (an error then
/// goes to its error handler first, as for any call) or the one kept while none runs (errors
/// are returned).
fn with_infos<R>(name: &str, body: impl FnOnce(&mut Infos) -> Result<R>) -> Result<R> {
    // SAFETY: inside an MPI call (an anytime frame, which holds the process lock under
    // MPI_THREAD_MULTIPLE); no other reference to the state is alive in an anytime call.
    match unsafe { crate::state::running() } {
        Some(mpi) => body(&mut mpi.objects.infos).inspect_err(|e| {
            crate::call::dispatch(mpi, name, None, e);
        }),
        None => body(&mut detached()),
    }
}

/// The value of `key` in info object `info` (`MPI_INFO_NULL`: none), whether MPI runs or not
/// (`MPI_Session_init`'s info); an invalid handle is an error, returned.
pub(crate) fn value_anytime(info: MPI_Info, key: &str) -> Result<Option<String>> {
    let read = |t: &Infos| -> Result<Option<String>> {
        Ok(t.lookup(info)?
            .and_then(|id| t.get(id).get(key).map(str::to_string)))
    };
    // SAFETY: inside an MPI call (an anytime frame, which holds the process lock under
    // MPI_THREAD_MULTIPLE); no other reference to the state is alive in an anytime call.
    match unsafe { crate::state::running() } {
        Some(mpi) => read(&mpi.objects.infos),
        None => read(&detached()),
    }
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

/// The non-null info object `h` names in `infos`.
fn object(infos: &Infos, h: MPI_Info) -> Result<InfoId> {
    required(infos.lookup(h)?)
}

/// Stores `dict` as a new object and its handle in `out` (checked).
fn store(infos: &mut Infos, dict: Dict, out: *mut MPI_Info) -> Result<()> {
    crate::kinds::out_ptr(out, "info")?;
    let id = infos.insert(dict)?;
    write(out, Infos::handle(id));
    Ok(())
}

pub(crate) fn new_info(w: &mut Mpi, dict: Dict, out: *mut MPI_Info) -> Result<()> {
    store(&mut w.objects.infos, dict, out)
}

/// `MPI_Info_create` (callable at any time, as every `MPI_Info_*` call).
pub fn info_create(info: *mut MPI_Info) -> Result<()> {
    with_infos("MPI_Info_create", |t| store(t, Dict::default(), info))
}

/// `MPI_Info_create_env` (MPI-4.0): a copy of `MPI_INFO_ENV`.
pub fn info_create_env(_argc: c_int, _argv: *mut *mut c_char, info: *mut MPI_Info) -> Result<()> {
    with_infos("MPI_Info_create_env", |t| {
        let env = t.get(InfoId::Env).clone();
        store(t, env, info)
    })
}

/// `MPI_Info_dup`.
pub fn info_dup(info: MPI_Info, newinfo: *mut MPI_Info) -> Result<()> {
    with_infos("MPI_Info_dup", |t| {
        let dict = t.get(object(t, info)?).clone();
        store(t, dict, newinfo)
    })
}

/// `MPI_Info_free`.
pub fn info_free(info: *mut MPI_Info) -> Result<()> {
    crate::kinds::out_ptr(info, "info")?;
    with_infos("MPI_Info_free", |t| {
        // SAFETY: checked non-NULL above; the caller passes a valid handle location.
        t.remove(object(t, unsafe { *info })?)?;
        write(info, crate::info::INFO_NULL);
        Ok(())
    })
}

/// `MPI_Info_set`.
pub fn info_set(info: MPI_Info, key: *const c_char, value: *const c_char) -> Result<()> {
    with_infos("MPI_Info_set", |t| {
        let (key, value) = (c_string(key, "key")?, c_string(value, "value")?);
        t.get_mut(object(t, info)?)?.set(&key, &value)
    })
}

/// `MPI_Info_delete`.
pub fn info_delete(info: MPI_Info, key: *const c_char) -> Result<()> {
    with_infos("MPI_Info_delete", |t| {
        let key = c_string(key, "key")?;
        t.get_mut(object(t, info)?)?.delete(&key)
    })
}

/// The value of `key` in `info`, after checking the key.
fn value_of(t: &Infos, info: MPI_Info, key: *const c_char) -> Result<Option<String>> {
    let key = c_string(key, "key")?;
    crate::info::check_key(&key)?;
    Ok(t.get(object(t, info)?).get(&key).map(str::to_string))
}

/// `MPI_Info_get`: at most `valuelen` characters (plus the NUL) are stored.
pub fn info_get(
    info: MPI_Info,
    key: *const c_char,
    valuelen: c_int,
    value: *mut c_char,
    flag: *mut c_int,
) -> Result<()> {
    with_infos("MPI_Info_get", |t| {
        crate::kinds::out_ptr(flag, "flag")?;
        let room = usize::try_from(valuelen).map_err(|_| {
            MpiError::new(ErrorClass::Arg, format!("valuelen {valuelen} is negative"))
        })?;
        let found = value_of(t, info, key)?;
        if let Some(v) = &found {
            write_string(value, std::ptr::null_mut(), v, room + 1)?;
        }
        write(flag, c_int::from(found.is_some()));
        Ok(())
    })
}

/// `MPI_Info_get_valuelen`.
pub fn info_get_valuelen(
    info: MPI_Info,
    key: *const c_char,
    valuelen: *mut c_int,
    flag: *mut c_int,
) -> Result<()> {
    with_infos("MPI_Info_get_valuelen", |t| {
        crate::kinds::out_ptr(valuelen, "valuelen")?;
        crate::kinds::out_ptr(flag, "flag")?;
        let found = value_of(t, info, key)?;
        if let Some(v) = &found {
            write(valuelen, v.len() as c_int);
        }
        write(flag, c_int::from(found.is_some()));
        Ok(())
    })
}

/// `MPI_Info_get_string` (MPI-4.0): `*buflen` in is the buffer size, out the value's size with
/// its NUL; a zero `*buflen` only asks for the size.
pub fn info_get_string(
    info: MPI_Info,
    key: *const c_char,
    buflen: *mut c_int,
    value: *mut c_char,
    flag: *mut c_int,
) -> Result<()> {
    with_infos("MPI_Info_get_string", |t| {
        crate::kinds::out_ptr(buflen, "buflen")?;
        crate::kinds::out_ptr(flag, "flag")?;
        let found = value_of(t, info, key)?;
        if let Some(v) = &found {
            // SAFETY: checked non-NULL above.
            let room = unsafe { *buflen };
            if room > 0 {
                write_string(value, std::ptr::null_mut(), v, room as usize)?;
            }
            write(buflen, v.len() as c_int + 1);
        }
        write(flag, c_int::from(found.is_some()));
        Ok(())
    })
}

/// `MPI_Info_get_nkeys`.
pub fn info_get_nkeys(info: MPI_Info, nkeys: *mut c_int) -> Result<()> {
    with_infos("MPI_Info_get_nkeys", |t| {
        crate::kinds::out_ptr(nkeys, "nkeys")?;
        write(nkeys, t.get(object(t, info)?).len() as c_int);
        Ok(())
    })
}

/// `MPI_Info_get_nthkey`.
pub fn info_get_nthkey(info: MPI_Info, n: c_int, key: *mut c_char) -> Result<()> {
    with_infos("MPI_Info_get_nthkey", |t| {
        let dict = t.get(object(t, info)?);
        write_string(
            key,
            std::ptr::null_mut(),
            dict.nth_key(n)?,
            MAX_INFO_KEY + 1,
        )
    })
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
