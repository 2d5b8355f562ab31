//! Windows (MPI-3.1 §11.2, §11.4, §11.6): creation in its four flavors, `MPI_Win_free`,
//! `MPI_Win_shared_query`, attach/detach, the window's group, attributes (the five predefined
//! ones and user keyvals), name, info hints and error handlers.
//!
//! `MPI_Win_allocate` asks the engine for shared memory first (all ranks map one segment, so
//! operations between them are direct copies); when the ranks cannot share one, it falls back to
//! `MPI_Alloc_mem` memory reached by messages, freed with the window.

use super::attr::{delete_all, delete_attr, get_attr, set_attr};
use super::info::{new_info, required};
use super::util::{write, write_string};
use crate::attr::{Obj, ObjKind};
use crate::ffi::*;
use crate::handles;
use crate::info::{Dict, InfoId};
use crate::objects::{WinAttrValues, WinExtra};
use crate::state::Mpi;
use reflex_base::buf::RecvBuf;
use reflex_engine::{Built, CommId, ErrorClass, Flavor, MpiError, Result, WinBuild, WinId};
use std::ffi::{c_char, c_int, c_void};

/// `MPI_WIN_UNIFIED`: public and private copies are the same memory.
const WIN_UNIFIED: c_int = 2;
/// Predefined window keyvals (MPICH's values).
pub(crate) const WIN_BASE: c_int = 0x6600_0001;
pub(crate) const WIN_SIZE: c_int = 0x6600_0003;
pub(crate) const WIN_DISP_UNIT: c_int = 0x6600_0005;
pub(crate) const WIN_CREATE_FLAVOR: c_int = 0x6600_0007;
pub(crate) const WIN_MODEL: c_int = 0x6600_0009;

fn size_arg(size: MPI_Aint) -> Result<usize> {
    usize::try_from(size)
        .map_err(|_| MpiError::new(ErrorClass::Size, format!("window size {size} is negative")))
}

fn unit_arg(disp_unit: MPI_Aint) -> Result<usize> {
    match usize::try_from(disp_unit) {
        Ok(u) if u > 0 => Ok(u),
        _ => Err(MpiError::new(
            ErrorClass::Disp,
            format!("displacement unit {disp_unit} is not positive"),
        )),
    }
}

/// The hints a window keeps from the info argument of its constructor (copied when the call
/// starts: the info object may be freed while the call waits for the other ranks).
fn hints_of(w: &Mpi, info: Option<InfoId>) -> Dict {
    info.map(|i| w.objects.infos.get(i).clone())
        .unwrap_or_default()
}

/// Makes a window: `build` advanced until it ends (under `MPI_THREAD_MULTIPLE` without the
/// library lock between steps, so that threads may make windows at once), then `finish`.
fn make(
    w: &mut Mpi,
    mut build: WinBuild,
    finish: impl FnOnce(&mut Mpi, Built) -> Result<()> + 'static,
) -> Result<()> {
    crate::threads::poll_on(w, move |e| e.win_build_step(&mut build), finish)
}

/// The window a build over given memory made.
fn made(built: Built) -> Result<WinId> {
    match built {
        Built::Window(id, _) => Ok(id),
        Built::Unshared(_) => Err(MpiError::new(
            ErrorClass::Intern,
            "a window over given memory ended without one",
        )),
    }
}

/// Records a new window and writes its handle.
fn register(w: &mut Mpi, id: WinId, hints: Dict, allocated: Option<usize>, out: *mut MPI_Win) {
    let attr_values = match w.world.engine.win_info(id) {
        Ok(i) => Box::new(WinAttrValues {
            base: i.base,
            size: i.size as MPI_Aint,
            disp_unit: i.disp_unit as c_int,
            flavor: i.flavor as c_int,
            model: WIN_UNIFIED,
        }),
        Err(_) => Box::default(),
    };
    let extra = WinExtra {
        errhandler: handles::ERRORS_ARE_FATAL,
        name: String::new(),
        hints,
        allocated,
        attr_values,
    };
    w.objects.wins.insert(id, extra);
    write(out, handles::win_handle(id));
}

/// `MPI_Win_create`.
pub fn win_create(
    w: &mut Mpi,
    base: *mut c_void,
    size: MPI_Aint,
    disp_unit: c_int,
    info: Option<InfoId>,
    comm: CommId,
    win: *mut MPI_Win,
) -> Result<()> {
    let (size, unit) = (size_arg(size)?, unit_arg(disp_unit as MPI_Aint)?);
    if base.is_null() && size > 0 {
        return Err(MpiError::new(
            ErrorClass::Base,
            "window base is NULL but its size is not 0",
        ));
    }
    // SAFETY: MPI-3.1 §11.2.1: the memory stays valid and is accessed only through RMA rules
    // until MPI_Win_free.
    let mem = unsafe { RecvBuf::from_raw(base.cast(), size) };
    let hints = hints_of(w, info);
    let engine = &mut w.world.engine;
    let build = engine.win_build_start(comm, (size, unit), Some(mem), Flavor::Create)?;
    make(w, build, move |w, built| {
        let id = made(built)?;
        register(w, id, hints, None, win);
        // MPI_WIN_BASE is the base given, also for an empty window (whose buffer of no bytes
        // has no address of its own).
        if let Some(extra) = w.objects.wins.get_mut(&id) {
            extra.attr_values.base = base as usize;
        }
        Ok(())
    })
}

/// `MPI_Win_create_c`.
pub fn win_create_c(
    w: &mut Mpi,
    base: *mut c_void,
    size: MPI_Aint,
    disp_unit: MPI_Aint,
    info: Option<InfoId>,
    comm: CommId,
    win: *mut MPI_Win,
) -> Result<()> {
    let unit = c_int::try_from(unit_arg(disp_unit)?)
        .map_err(|_| MpiError::new(ErrorClass::Disp, "displacement unit too large"))?;
    win_create(w, base, size, unit, info, comm, win)
}

/// `MPI_Win_create_dynamic`.
pub fn win_create_dynamic(
    w: &mut Mpi,
    info: Option<InfoId>,
    comm: CommId,
    win: *mut MPI_Win,
) -> Result<()> {
    let hints = hints_of(w, info);
    let engine = &mut w.world.engine;
    let build = engine.win_build_start(comm, (0, 1), Some(RecvBuf::empty()), Flavor::Dynamic)?;
    make(w, build, move |w, built| {
        register(w, made(built)?, hints, None, win);
        Ok(())
    })
}

/// `MPI_Win_allocate`: shared memory when the ranks can map one segment, else `MPI_Alloc_mem`.
pub fn win_allocate(
    w: &mut Mpi,
    size: MPI_Aint,
    disp_unit: c_int,
    info: Option<InfoId>,
    comm: CommId,
    baseptr: *mut c_void,
    win: *mut MPI_Win,
) -> Result<()> {
    allocate(
        w,
        (size, disp_unit as MPI_Aint),
        info,
        comm,
        baseptr,
        win,
        Flavor::Allocate,
    )
}

/// `MPI_Win_allocate_c`.
pub fn win_allocate_c(
    w: &mut Mpi,
    size: MPI_Aint,
    disp_unit: MPI_Aint,
    info: Option<InfoId>,
    comm: CommId,
    baseptr: *mut c_void,
    win: *mut MPI_Win,
) -> Result<()> {
    allocate(
        w,
        (size, disp_unit),
        info,
        comm,
        baseptr,
        win,
        Flavor::Allocate,
    )
}

/// `MPI_Win_allocate_shared`.
pub fn win_allocate_shared(
    w: &mut Mpi,
    size: MPI_Aint,
    disp_unit: c_int,
    info: Option<InfoId>,
    comm: CommId,
    baseptr: *mut c_void,
    win: *mut MPI_Win,
) -> Result<()> {
    allocate(
        w,
        (size, disp_unit as MPI_Aint),
        info,
        comm,
        baseptr,
        win,
        Flavor::Shared,
    )
}

/// `MPI_Win_allocate_shared_c`.
pub fn win_allocate_shared_c(
    w: &mut Mpi,
    size: MPI_Aint,
    disp_unit: MPI_Aint,
    info: Option<InfoId>,
    comm: CommId,
    baseptr: *mut c_void,
    win: *mut MPI_Win,
) -> Result<()> {
    allocate(
        w,
        (size, disp_unit),
        info,
        comm,
        baseptr,
        win,
        Flavor::Shared,
    )
}

fn allocate(
    w: &mut Mpi,
    (size, disp_unit): (MPI_Aint, MPI_Aint),
    info: Option<InfoId>,
    comm: CommId,
    baseptr: *mut c_void,
    win: *mut MPI_Win,
    flavor: Flavor,
) -> Result<()> {
    if baseptr.is_null() {
        return Err(MpiError::new(ErrorClass::Arg, "baseptr is NULL"));
    }
    let (bytes, unit) = (size_arg(size)?, unit_arg(disp_unit)?);
    let hints = hints_of(w, info);
    let build = w
        .world
        .engine
        .win_build_start(comm, (bytes, unit), None, flavor)?;
    let base_out = baseptr.cast::<*mut c_void>();
    make(w, build, move |w, built| match built {
        Built::Window(id, base) => {
            register(w, id, hints, None, win);
            write(base_out, base as *mut c_void);
            Ok(())
        }
        Built::Unshared(layout) => {
            let mut p: *mut c_void = std::ptr::null_mut();
            let out = (&mut p as *mut *mut c_void).cast();
            if let Err(e) = super::mem::alloc_mem(w, size, None, out) {
                w.world.engine.win_abandon(layout);
                return Err(e);
            }
            // SAFETY: `p` is a fresh block of `bytes` bytes owned by the window until
            // MPI_Win_free.
            let mem = unsafe { RecvBuf::from_raw(p.cast(), bytes) };
            let id = w.world.engine.win_install_private(layout, mem);
            register(w, id, hints, Some(p as usize), win);
            write(base_out, p);
            Ok(())
        }
    })
}

/// `MPI_Win_free`.
pub fn win_free(w: &mut Mpi, win: *mut MPI_Win) -> Result<()> {
    if win.is_null() {
        return Err(MpiError::new(ErrorClass::Arg, "win is NULL"));
    }
    // SAFETY: checked non-NULL; MPI requires a valid pointer.
    let h = unsafe { *win };
    let id = crate::kinds::win(w, h)?;
    // Under MPI_THREAD_MULTIPLE the barrier is waited for without the library lock, so that
    // threads may free their windows at once.
    let start = move |w: &mut Mpi| w.world.engine.win_free_start(id);
    crate::threads::block_on(w, start, move |w, done| {
        if let Some(e) = done.status.error {
            return Err(*e);
        }
        w.world.engine.win_free_finish(id)?;
        delete_all(w, Obj::Win(id), h)?;
        if let Some(extra) = w.objects.wins.remove(&id) {
            if let Some(p) = extra.allocated {
                super::mem::free_mem(w, p as *mut c_void)?;
            }
        }
        write(win, handles::WIN_NULL);
        Ok(())
    })
}

/// `MPI_Win_shared_query`.
pub fn win_shared_query(
    w: &mut Mpi,
    win: WinId,
    rank: c_int,
    size: *mut MPI_Aint,
    disp_unit: *mut c_int,
    baseptr: *mut c_void,
) -> Result<()> {
    let (bytes, unit, addr) = w.world.engine.win_shared_query(win, rank)?;
    if baseptr.is_null() {
        return Err(MpiError::new(ErrorClass::Arg, "baseptr is NULL"));
    }
    write(size, bytes as MPI_Aint);
    write(disp_unit, unit as c_int);
    write(baseptr.cast::<*mut c_void>(), addr as *mut c_void);
    Ok(())
}

/// `MPI_Win_shared_query_c`.
pub fn win_shared_query_c(
    w: &mut Mpi,
    win: WinId,
    rank: c_int,
    size: *mut MPI_Aint,
    disp_unit: *mut MPI_Aint,
    baseptr: *mut c_void,
) -> Result<()> {
    let mut unit: c_int = 0;
    win_shared_query(w, win, rank, size, &mut unit, baseptr)?;
    write(disp_unit, unit as MPI_Aint);
    Ok(())
}

/// `MPI_Win_attach`.
pub fn win_attach(w: &mut Mpi, win: WinId, base: *mut c_void, size: MPI_Aint) -> Result<()> {
    let bytes = size_arg(size)?;
    if base.is_null() && bytes > 0 {
        return Err(MpiError::new(
            ErrorClass::RmaAttach,
            "attached memory is NULL",
        ));
    }
    // SAFETY: MPI-3.1 §11.2.4: the memory stays valid until MPI_Win_detach.
    let mem = unsafe { RecvBuf::from_raw(base.cast(), bytes) };
    w.world.engine.win_attach(win, mem)
}

/// `MPI_Win_detach`.
pub fn win_detach(w: &mut Mpi, win: WinId, base: *const c_void) -> Result<()> {
    w.world.engine.win_detach(win, base as usize)
}

/// `MPI_Win_get_group`.
pub fn win_get_group(w: &mut Mpi, win: WinId, group: *mut MPI_Group) -> Result<()> {
    let comm = w.world.engine.win_comm(win)?;
    super::comm_group(w, comm, group)
}

/// `MPI_Win_get_attr`: the predefined attributes and user ones.
pub fn win_get_attr(
    w: &mut Mpi,
    win: WinId,
    win_keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
) -> Result<()> {
    let values = &w
        .objects
        .wins
        .get(&win)
        .expect("checked by the kind")
        .attr_values;
    let pointer: Option<*const c_void> = match win_keyval {
        WIN_BASE => Some(values.base as *const c_void),
        WIN_SIZE => Some((&values.size as *const MPI_Aint).cast()),
        WIN_DISP_UNIT => Some((&values.disp_unit as *const c_int).cast()),
        WIN_CREATE_FLAVOR => Some((&values.flavor as *const c_int).cast()),
        WIN_MODEL => Some((&values.model as *const c_int).cast()),
        _ => None,
    };
    match pointer {
        Some(p) if !attribute_val.is_null() => {
            write(attribute_val.cast::<*const c_void>(), p);
            write(flag, 1);
            Ok(())
        }
        _ => get_attr(
            w,
            Obj::Win(win),
            ObjKind::Win,
            win_keyval,
            attribute_val,
            flag,
        ),
    }
}

/// `MPI_Win_set_attr`.
pub fn win_set_attr(
    w: &mut Mpi,
    win: WinId,
    win_keyval: c_int,
    attribute_val: *mut c_void,
) -> Result<()> {
    set_attr(
        w,
        Obj::Win(win),
        handles::win_handle(win),
        ObjKind::Win,
        win_keyval,
        attribute_val,
    )
}

/// `MPI_Win_delete_attr`.
pub fn win_delete_attr(w: &mut Mpi, win: WinId, win_keyval: c_int) -> Result<()> {
    delete_attr(
        w,
        Obj::Win(win),
        handles::win_handle(win),
        ObjKind::Win,
        win_keyval,
    )
}

/// `MPI_Win_create_keyval`.
pub fn win_create_keyval(
    w: &mut Mpi,
    win_copy_attr_fn: *const c_void,
    win_delete_attr_fn: *const c_void,
    win_keyval: *mut c_int,
    extra_state: *mut c_void,
) -> Result<()> {
    let k = w.objects.attrs.create_keyval(
        ObjKind::Win,
        win_copy_attr_fn,
        win_delete_attr_fn,
        extra_state,
    )?;
    write(win_keyval, k);
    Ok(())
}

/// `MPI_Win_free_keyval`.
pub fn win_free_keyval(w: &mut Mpi, win_keyval: *mut c_int) -> Result<()> {
    super::attr::free_keyval(w, win_keyval, ObjKind::Win)
}

/// `MPI_Win_set_name`.
pub fn win_set_name(w: &mut Mpi, win: WinId, win_name: *const c_char) -> Result<()> {
    let text = super::util::c_string(win_name, "window name")?;
    let extra = w.objects.wins.get_mut(&win).expect("checked by the kind");
    extra.name = text.chars().take(super::env::MAX_OBJECT_NAME - 1).collect();
    Ok(())
}

/// `MPI_Win_get_name`.
pub fn win_get_name(
    w: &mut Mpi,
    win: WinId,
    win_name: *mut c_char,
    resultlen: *mut c_int,
) -> Result<()> {
    let text = w
        .objects
        .wins
        .get(&win)
        .map(|x| x.name.clone())
        .unwrap_or_default();
    write_string(win_name, resultlen, &text, super::env::MAX_OBJECT_NAME)
}

/// `MPI_Win_set_info`.
pub fn win_set_info(w: &mut Mpi, win: WinId, info: Option<InfoId>) -> Result<()> {
    let dict = w.objects.infos.get(required(info)?).clone();
    w.objects
        .wins
        .get_mut(&win)
        .expect("checked by the kind")
        .hints = dict;
    Ok(())
}

/// `MPI_Win_get_info`: the hints in effect, with the defaults Reflex applies.
pub fn win_get_info(w: &mut Mpi, win: WinId, info_used: *mut MPI_Info) -> Result<()> {
    let mut dict: Dict = w
        .objects
        .wins
        .get(&win)
        .map(|x| x.hints.clone())
        .unwrap_or_default();
    for (key, value) in [
        ("accumulate_ordering", "rar,raw,war,waw"),
        ("accumulate_ops", "same_op_no_op"),
        ("same_size", "false"),
        ("same_disp_unit", "false"),
    ] {
        if dict.get(key).is_none() {
            dict.set(key, value)?;
        }
    }
    new_info(w, dict, info_used)
}

/// `MPI_Win_set_errhandler`.
pub fn win_set_errhandler(w: &mut Mpi, win: WinId, errhandler: MPI_Errhandler) -> Result<()> {
    super::env::check_errhandler(w, errhandler)?;
    w.objects
        .wins
        .get_mut(&win)
        .expect("checked by the kind")
        .errhandler = errhandler;
    Ok(())
}

/// `MPI_Win_get_errhandler`.
pub fn win_get_errhandler(w: &mut Mpi, win: WinId, errhandler: *mut MPI_Errhandler) -> Result<()> {
    write(
        errhandler,
        w.objects
            .wins
            .get(&win)
            .expect("checked by the kind")
            .errhandler,
    );
    Ok(())
}

/// `MPI_Win_create_errhandler`.
pub fn win_create_errhandler(
    w: &mut Mpi,
    win_errhandler_fn: *const c_void,
    errhandler: *mut MPI_Errhandler,
) -> Result<()> {
    super::comm_create_errhandler(w, win_errhandler_fn, errhandler)
}

/// `MPI_Win_call_errhandler`.
pub fn win_call_errhandler(w: &mut Mpi, win: WinId, errorcode: c_int) -> Result<()> {
    crate::call::dispatch(
        w,
        "MPI_Win_call_errhandler",
        Some(handles::win_handle(win)),
        &crate::errors::existing(errorcode),
    );
    Ok(())
}

/// The window error-handler dispatch (called by [`crate::call::dispatch`]).
pub fn win_dispatch(
    w: &mut Mpi,
    name: &str,
    win: WinId,
    handler: MPI_Errhandler,
    code: c_int,
) -> c_int {
    crate::call::object_handler(w, name, handler, code, handles::win_handle(win))
}
