//! `MPI_Comm_spawn`, `MPI_Comm_spawn_multiple` and `MPI_Comm_get_parent` (MPI-4.0 §11.3): the C
//! arrays (commands, NULL-terminated argument vectors, infos) become the launcher's commands;
//! the engine runs the spawn (`reflex_engine::spawn`). Info keys go to the launcher as they are
//! (`wdir`, `path`, `host`, ... where it supports them).

use super::util::{c_string, raw_array, write, write_ints};
use crate::ffi::*;
use crate::handles;
use crate::info::InfoId;
use crate::state::Mpi;
use reflex_engine::spawn::SpawnCommand;
use reflex_engine::{CommId, ErrorClass, MpiError, Result};
use std::ffi::{c_char, c_int};

/// Most arguments read from one NULL-terminated `argv`: past this many the array is taken to
/// lack its terminator (`MPI_ERR_ARG`).
const MAX_ARGS: usize = 1 << 16;

/// The strings of a NULL-terminated `argv` (`MPI_ARGV_NULL`: none).
fn argv_strings(argv: *mut *mut c_char) -> Result<Vec<String>> {
    let mut args = Vec::new();
    if argv.is_null() {
        return Ok(args);
    }
    for i in 0..MAX_ARGS {
        // SAFETY: MPI requires a NULL-terminated array of strings; we stop at the NULL.
        let p = unsafe { *argv.add(i) };
        if p.is_null() {
            return Ok(args);
        }
        args.push(c_string(p, "argv entry")?);
    }
    Err(MpiError::new(
        ErrorClass::Arg,
        format!("argv has no NULL terminator in its first {MAX_ARGS} entries"),
    ))
}

fn info_pairs(w: &Mpi, info: Option<InfoId>) -> Vec<(String, String)> {
    info.map(|id| {
        w.objects
            .infos
            .get(id)
            .pairs()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    })
    .unwrap_or_default()
}

fn maxprocs_of(n: c_int) -> Result<u32> {
    u32::try_from(n).ok().filter(|&n| n > 0).ok_or_else(|| {
        MpiError::new(
            ErrorClass::Arg,
            format!("maxprocs {n} is not a positive count"),
        )
    })
}

/// Runs the spawn and writes the outputs (the error codes also when it failed).
fn spawn_and_write(
    w: &mut Mpi,
    commands: &[SpawnCommand],
    (root, comm): (c_int, CommId),
    intercomm: *mut MPI_Comm,
    errcodes: *mut c_int,
) -> Result<()> {
    let spawned = w.world.comm_spawn(commands, root as usize, comm)?;
    if !errcodes.is_null() {
        write_ints(errcodes, spawned.errcodes.iter().copied())?;
    }
    match (spawned.intercomm, spawned.error) {
        (Some(id), _) => {
            write(intercomm, handles::comm_handle(id));
            Ok(())
        }
        (None, error) => {
            write(intercomm, handles::COMM_NULL);
            Err(error.unwrap_or_else(|| MpiError::new(ErrorClass::Spawn, "the spawn failed")))
        }
    }
}

fn is_root(w: &Mpi, comm: CommId, root: c_int) -> Result<bool> {
    Ok(w.world.engine.comm(comm)?.rank as c_int == root)
}

/// `MPI_Comm_spawn`: `command`, `argv`, `maxprocs` and `info` are significant at `root` only.
pub fn comm_spawn(
    w: &mut Mpi,
    command: *const c_char,
    argv: *mut *mut c_char,
    maxprocs: c_int,
    info: Option<InfoId>,
    root: c_int,
    comm: CommId,
    intercomm: *mut MPI_Comm,
    errcodes: *mut c_int,
) -> Result<()> {
    let mut commands = Vec::new();
    if is_root(w, comm, root)? {
        commands.push(SpawnCommand {
            command: c_string(command, "command")?,
            args: argv_strings(argv)?,
            maxprocs: maxprocs_of(maxprocs)?,
            info: info_pairs(w, info),
        });
    }
    spawn_and_write(w, &commands, (root, comm), intercomm, errcodes)
}

/// `MPI_Comm_spawn_multiple`: the arrays are significant at `root` only.
pub fn comm_spawn_multiple(
    w: &mut Mpi,
    count: usize,
    commands: *mut *mut c_char,
    argvs: *mut *mut *mut c_char,
    maxprocs: *const c_int,
    infos: *const MPI_Info,
    root: c_int,
    comm: CommId,
    intercomm: *mut MPI_Comm,
    errcodes: *mut c_int,
) -> Result<()> {
    let mut list = Vec::new();
    if is_root(w, comm, root)? {
        let n = c_int::try_from(count)
            .map_err(|_| MpiError::new(ErrorClass::Count, format!("count {count} is too large")))?;
        let names = raw_array(commands as *const *mut c_char, n, "array_of_commands")?;
        let procs = raw_array(maxprocs, n, "array_of_maxprocs")?;
        let handles = raw_array(infos, n, "array_of_info")?;
        for i in 0..count {
            let argv = match argvs.is_null() {
                true => std::ptr::null_mut(),
                // SAFETY: MPI requires `count` argument vectors when the array is not
                // MPI_ARGVS_NULL.
                false => unsafe { *argvs.add(i) },
            };
            let info = crate::kinds::info(w, handles[i])?;
            list.push(SpawnCommand {
                command: c_string(names[i], "array_of_commands entry")?,
                args: argv_strings(argv)?,
                maxprocs: maxprocs_of(procs[i])?,
                info: info_pairs(w, info),
            });
        }
    }
    spawn_and_write(w, &list, (root, comm), intercomm, errcodes)
}

/// `MPI_Comm_get_parent`: the intercommunicator to the spawning job, or `MPI_COMM_NULL` for a
/// process that was not spawned or freed/disconnected its parent (MPI-4.0 §11.3.2).
pub fn comm_get_parent(w: &mut Mpi, parent: *mut MPI_Comm) -> Result<()> {
    let live = w.world.parent.filter(|&id| w.world.engine.comm(id).is_ok());
    write(
        parent,
        live.map_or(handles::COMM_NULL, handles::comm_handle),
    );
    Ok(())
}
