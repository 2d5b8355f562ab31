//! Collective data access through aggregators (two-phase I/O, `reflex_engine::file::aggregate`):
//! the hints that steer it and the choice between it and the independent access.
//!
//! Every rank locates its access and offers its extent; the ranks agree on a plan (or on none:
//! contiguous or disjoint accesses, `romio_cb_read`/`romio_cb_write` = `disable`, atomic mode,
//! or a rank whose arguments were wrong, which then reports its error after the others did
//! their independent accesses). Hints, read when the access runs: `romio_cb_read`,
//! `romio_cb_write` (`enable`, `disable`, `automatic`), `cb_nodes` (how many ranks aggregate;
//! every rank by default) and `cb_buffer_size` (bytes per aggregator per round, 16 MiB by
//! default); values that do not parse are ignored, as hints may be.

use super::file_io::{access, advance, locate, At, Dir};
use super::file_rep::{check_external_len, coder};
use crate::files::FileId;
use crate::info::Dict;
use crate::kinds::TypeArg;
use crate::state::Mpi;
use reflex_engine::file::{Buffering, Direction, Hints};
use reflex_engine::Result;

/// The collective-buffering hints of a file for reads or writes.
fn hints(dict: &Dict, dir: Dir) -> Hints {
    let key = match dir {
        Dir::Read(_) => "romio_cb_read",
        Dir::Write(_) => "romio_cb_write",
    };
    let mut h = Hints {
        buffering: match dict.get(key).map(str::trim) {
            Some("enable") => Buffering::Enable,
            Some("disable") => Buffering::Disable,
            _ => Buffering::Automatic,
        },
        ..Hints::default()
    };
    let number = |k: &str| dict.get(k).and_then(|v| v.trim().parse::<u64>().ok());
    if let Some(n) = number("cb_nodes") {
        h.aggregators = u32::try_from(n).unwrap_or(u32::MAX);
    }
    if let Some(b) = number("cb_buffer_size").filter(|&b| b > 0) {
        h.buffer = b;
    }
    h
}

/// The hints of a file as `MPI_File_get_info` reports them: those given, and the
/// collective-buffering ones in effect where none was given (`nranks`: the file's group size,
/// the default number of aggregators).
pub(super) fn hints_in_use(dict: &Dict, nranks: usize) -> Result<Dict> {
    let mut out = dict.clone();
    let defaults = [
        ("romio_cb_read", "automatic".to_string()),
        ("romio_cb_write", "automatic".to_string()),
        ("cb_buffer_size", Hints::default().buffer.to_string()),
        ("cb_nodes", nranks.to_string()),
    ];
    for (key, value) in defaults {
        if dict.get(key).is_none() {
            out.set(key, &value)?;
        }
    }
    Ok(out)
}

/// A collective access by every rank of the file's group (without the final agreement):
/// through aggregators when the ranks agree on a plan, independently otherwise.
pub(super) fn access_all(
    w: &mut Mpi,
    fh: FileId,
    at: At,
    dir: Dir,
    count: usize,
    t: &TypeArg,
) -> Result<usize> {
    let dt = &t.dt;
    // A rank whose arguments are wrong still takes part in agreeing on the plan (as none).
    let coder = coder(w, fh, t).and_then(|c| check_external_len(&c, count, dt).map(|()| c));
    let located = match &coder {
        Ok(_) => locate(w, fh, at, dir, count, dt),
        Err(e) => Err(e.clone()),
    };
    let f = w.objects.files.get(fh)?;
    let (runs, mine) = match &located {
        Ok((start, len)) => (f.view.runs(*start, *len), hints(&f.hints, dir)),
        Err(_) => (
            Vec::new(),
            Hints {
                buffering: Buffering::Disable,
                ..Hints::default()
            },
        ),
    };
    let way = match dir {
        Dir::Read(_) => Direction::Read,
        Dir::Write(_) => Direction::Write,
    };
    let plan = w.world.engine.file_plan(f.comm, &runs, mine, way)?;
    let (start, len) = located?;
    let coder = coder?;
    let Some(plan) = plan else {
        return access(w, fh, at, dir, count, t);
    };
    let f = w.objects.files.get_mut(fh)?;
    let mut buffers = std::mem::take(&mut f.buffers);
    let mut collective = std::mem::take(&mut buffers.collective);
    let staging = buffers.staging(len);
    let (engine, comm, file) = (&mut w.world.engine, f.comm, &f.file);
    let moved = match dir {
        Dir::Write(buf) => coder
            .outgoing(buf, count, dt, staging)
            .and_then(|data| {
                engine.file_write_aggregated(comm, file, &plan, &runs, data, &mut collective)
            })
            .map(|()| len),
        Dir::Read(buf) => coder.incoming(buf, count, dt, staging, |out| {
            engine.file_read_aggregated(comm, file, &plan, &runs, out, &mut collective)
        }),
    };
    buffers.collective = collective;
    f.buffers = buffers.trimmed();
    let moved = moved?;
    advance(w, fh, at, start, moved)?;
    Ok(moved)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_are_read_for_their_direction_and_bad_values_ignored() {
        let mut d = Dict::default();
        d.set("romio_cb_write", "enable").unwrap();
        d.set("romio_cb_read", "disable").unwrap();
        d.set("cb_nodes", "3").unwrap();
        d.set("cb_buffer_size", "lots").unwrap();
        let w = hints(&d, Dir::Write(std::ptr::null()));
        assert_eq!(w.buffering, Buffering::Enable);
        assert_eq!((w.aggregators, w.buffer), (3, Hints::default().buffer));
        let r = hints(&d, Dir::Read(std::ptr::null_mut()));
        assert_eq!(r.buffering, Buffering::Disable);
        let none = hints(&Dict::default(), Dir::Read(std::ptr::null_mut()));
        assert_eq!(none, Hints::default());
        let used = hints_in_use(&d, 4).unwrap();
        assert_eq!(used.get("romio_cb_write"), Some("enable"));
        assert_eq!(used.get("cb_nodes"), Some("3"));
        assert_eq!(used.get("cb_buffer_size"), Some("lots"));
        let defaults = hints_in_use(&Dict::default(), 4).unwrap();
        assert_eq!(defaults.get("romio_cb_read"), Some("automatic"));
        assert_eq!(defaults.get("cb_nodes"), Some("4"));
        assert_eq!(defaults.get("cb_buffer_size"), Some("16777216"));
    }
}
