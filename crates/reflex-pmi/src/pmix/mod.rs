//! PMIx client backend: what `srun --mpi=pmix` and Open MPI's `mpirun` (PMIx only) give a rank.
//!
//! PMIx's wire protocol is binary and version-negotiated, so the client goes through Debian's
//! `libpmix.so.2`, loaded at run time ([`ffi`]); a Reflex built anywhere needs it only when
//! launched by a PMIx launcher (`PMIX_NAMESPACE` set). Start-up reads job-level data from the
//! local store: `PMIX_JOB_SIZE`, `PMIX_UNIV_SIZE`, `PMIX_APPNUM`, and `PMIX_NODEID` of every rank,
//! which gives the node layout (renumbered densely in rank order, like `PMI_process_mapping`).
//! Node ids, not host names: two emulated Slurm nodes share one host name (launchers.md §1.6).
//! Slurm 22.05 publishes `PMIX_NODEID` only for the ranks of the reader's own node (Open MPI's
//! `mpirun` for all); should some rank have no node id, every rank publishes the lowest rank of
//! its `PMIX_LOCAL_PEERS` (its node's leader) and one fence tells everyone the layout; without
//! that either, the layout is left unknown and the engine groups ranks by host itself.
//!
//! PMIx keys values by (process, key), PMI-1 by key alone. A put here is a global put of this
//! rank; a get looks first at the rank named by the key's `-<rank>` suffix (every key Reflex
//! puts ends so, before an optional `#<piece>`), then at this rank, then at every rank. All gets
//! read the local store only (`PMIX_OPTIONAL`): after a fence with `PMIX_COLLECT_DATA` every
//! committed put is there, and a missing key is an immediate "not found", never a wait.

#[allow(unsafe_code)] // the libpmix calls; see the module's SAFETY notes
mod ffi;

use std::ffi::{c_int, CString};

use crate::PmiError;
use ffi::{keys, Pmix, Value, RANK_WILDCARD};

/// The library that Debian's `libpmix2` installs on the default loader path.
pub const LIBRARY: &str = "libpmix.so.2";

/// Longest key PMIx accepts, NUL included (`PMIX_MAX_KEYLEN + 1`).
pub(crate) const KEYLEN_MAX: usize = ffi::KEY_BYTES;

/// Key of the node-leader exchange (the fallback layout when `PMIX_NODEID` is missing).
const LEADER_KEY: &str = "reflex-pmix-leader";

/// Largest value the client puts in one piece; longer ones go through `put_large`'s pieces.
pub(crate) const VALLEN_MAX: usize = 1 << 20;

/// What start-up learned about the job.
#[derive(Debug)]
pub(crate) struct JobFacts {
    pub(crate) rank: u32,
    pub(crate) size: u32,
    pub(crate) appnum: Option<u32>,
    pub(crate) universe_size: Option<u32>,
    pub(crate) nspace: String,
    pub(crate) mapping: Option<Vec<u32>>,
}

/// A connected PMIx client.
#[derive(Debug)]
pub(crate) struct PmixJob {
    lib: Pmix,
    nspace: String,
    rank: u32,
    size: u32,
}

impl PmixJob {
    /// Loads `library`, runs `PMIx_Init` and reads the job's facts.
    pub(crate) fn connect(library: &str) -> Result<(Self, JobFacts), PmiError> {
        let lib = Pmix::load(library).map_err(|reason| PmiError::PmixUnavailable {
            library: library.to_owned(),
            reason,
        })?;
        let (nspace, rank) = lib.init().map_err(|rc| {
            status_error(
                &lib,
                "PMIx_Init (PMIX_NAMESPACE is set but the launcher's PMIx server did not accept \
                 this process; a variable left over from an outer launcher?)",
                rc,
            )
        })?;
        let mut job = Self {
            lib,
            nspace,
            rank,
            size: 1,
        };
        let size = job
            .job_u32(RANK_WILDCARD, keys::JOB_SIZE)?
            .ok_or_else(|| PmiError::Pmix {
                call: "PMIx_Get(PMIX_JOB_SIZE)",
                status: ffi::ERR_NOT_FOUND,
                text: "the launcher gave no job size".to_owned(),
            })?;
        if size == 0 || rank >= size {
            return Err(PmiError::Env {
                var: "PMIX_RANK",
                value: rank.to_string(),
                reason: format!("must be below the job size {size}"),
            });
        }
        job.size = size;
        let appnum = match job.job_u32(rank, keys::APPNUM)? {
            Some(n) => Some(n),
            None => job.job_u32(RANK_WILDCARD, keys::APPNUM)?,
        };
        let facts = JobFacts {
            rank,
            size,
            appnum,
            universe_size: job.job_u32(RANK_WILDCARD, keys::UNIV_SIZE)?,
            nspace: job.nspace.clone(),
            mapping: job.node_layout()?,
        };
        Ok((job, facts))
    }

    /// Node index of every rank from `PMIX_NODEID`, else from the node leaders that every rank
    /// publishes (collective: all ranks see the same job data, so all take the same path).
    fn node_layout(&mut self) -> Result<Option<Vec<u32>>, PmiError> {
        let ids: Vec<Option<u32>> = (0..self.size)
            .map(|rank| self.job_u32(rank, keys::NODEID))
            .collect::<Result<_, _>>()?;
        if let Some(ids) = ids.into_iter().collect::<Option<Vec<u32>>>() {
            return Ok(Some(dense_nodes(&ids)));
        }
        let leader = self
            .local_leader()?
            .map_or("none".to_owned(), |l| l.to_string());
        self.put(&format!("{LEADER_KEY}-{}", self.rank), &leader)?;
        self.fence()?;
        let mut leaders = Vec::with_capacity(self.size as usize);
        for rank in 0..self.size {
            match self.get(&format!("{LEADER_KEY}-{rank}"))?.parse::<u32>() {
                Ok(leader) => leaders.push(leader),
                Err(_) => return Ok(None),
            }
        }
        Ok(Some(dense_nodes(&leaders)))
    }

    /// The lowest rank in this rank's `PMIX_LOCAL_PEERS` ("0,1,2"), if published.
    fn local_leader(&self) -> Result<Option<u32>, PmiError> {
        let ckey = CString::new(keys::LOCAL_PEERS).unwrap_or_default();
        match self.lib.get(&self.nspace, RANK_WILDCARD, &ckey) {
            Ok(Some(Value::Str(peers))) => Ok(parse_peers(&peers).into_iter().min()),
            Ok(_) => Ok(None),
            Err(rc) => Err(status_error(&self.lib, "PMIx_Get(PMIX_LOCAL_PEERS)", rc)),
        }
    }

    /// A job-level number (size, node id, ...) of `rank`, if the launcher published it.
    fn job_u32(&self, rank: u32, key: &'static str) -> Result<Option<u32>, PmiError> {
        let ckey = CString::new(key).unwrap_or_default();
        match self.lib.get(&self.nspace, rank, &ckey) {
            Ok(value) => Ok(value.as_ref().and_then(Value::as_u32)),
            Err(rc) => Err(status_error(&self.lib, "PMIx_Get", rc)),
        }
    }

    /// Stores `key=value` for this rank (visible to others after [`PmixJob::fence`]).
    pub(crate) fn put(&mut self, key: &str, value: &str) -> Result<(), PmiError> {
        let ckey = c_string("key", key)?;
        let cvalue = c_string("value", value)?;
        self.lib
            .put_string(&ckey, &cvalue)
            .map_err(|rc| status_error(&self.lib, "PMIx_Put", rc))
    }

    /// Reads `key` as put by any rank before the last fence.
    pub(crate) fn get(&mut self, key: &str) -> Result<String, PmiError> {
        let ckey = c_string("key", key)?;
        for rank in lookup_order(key, self.rank, self.size) {
            match self.lib.get(&self.nspace, rank, &ckey) {
                Ok(Some(Value::Str(value))) => return Ok(value),
                Ok(Some(other)) => {
                    return Err(PmiError::UnexpectedReply {
                        expected: "a string value",
                        line: format!("{key} of rank {rank} = {other:?}"),
                    })
                }
                Ok(None) => {}
                Err(rc) => return Err(status_error(&self.lib, "PMIx_Get", rc)),
            }
        }
        Err(PmiError::KeyNotFound {
            key: key.to_owned(),
        })
    }

    /// Commit, then a fence of the whole job that collects every process's data.
    pub(crate) fn fence(&mut self) -> Result<(), PmiError> {
        self.lib
            .commit()
            .map_err(|rc| status_error(&self.lib, "PMIx_Commit", rc))?;
        self.lib
            .fence()
            .map_err(|rc| status_error(&self.lib, "PMIx_Fence", rc))
    }

    /// Asks the launcher to end the job (usually does not return).
    pub(crate) fn abort(&mut self, code: i32, msg: &str) -> Result<(), PmiError> {
        self.lib
            .abort(code, msg)
            .map_err(|rc| status_error(&self.lib, "PMIx_Abort", rc))
    }

    /// Disconnects from the PMIx server.
    pub(crate) fn finalize(&mut self) -> Result<(), PmiError> {
        self.lib
            .finalize()
            .map_err(|rc| status_error(&self.lib, "PMIx_Finalize", rc))
    }
}

fn status_error(lib: &Pmix, call: &'static str, status: c_int) -> PmiError {
    PmiError::Pmix {
        call,
        status,
        text: lib.error_string(status),
    }
}

fn c_string(what: &str, text: &str) -> Result<CString, PmiError> {
    CString::new(text).map_err(|_| PmiError::Limit {
        what: format!("pmix {what} {text:?} contains a NUL byte"),
    })
}

/// The ranks of a `PMIX_LOCAL_PEERS` list; unparsable entries are dropped.
pub(crate) fn parse_peers(peers: &str) -> Vec<u32> {
    peers
        .split(',')
        .filter_map(|p| p.trim().parse().ok())
        .collect()
}

/// Node ids renumbered 0, 1, ... in order of first appearance by rank.
pub(crate) fn dense_nodes(ids: &[u32]) -> Vec<u32> {
    let mut seen: Vec<u32> = Vec::new();
    ids.iter()
        .map(|id| match seen.iter().position(|s| s == id) {
            Some(index) => index as u32,
            None => {
                seen.push(*id);
                seen.len() as u32 - 1
            }
        })
        .collect()
}

/// The rank named by a key's `-<rank>` suffix, ignoring a `#<piece>` suffix of `put_large`.
pub(crate) fn rank_hint(key: &str) -> Option<u32> {
    let base = match key.rsplit_once('#') {
        Some((base, piece)) if !piece.is_empty() && piece.bytes().all(|b| b.is_ascii_digit()) => {
            base
        }
        _ => key,
    };
    let (_, rank) = base.rsplit_once('-')?;
    if rank.is_empty() || !rank.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    rank.parse().ok()
}

/// Ranks to look at for `key`: the hinted rank, this rank, then every other rank once.
pub(crate) fn lookup_order(key: &str, me: u32, size: u32) -> Vec<u32> {
    let mut order: Vec<u32> = Vec::with_capacity(size as usize);
    let first = rank_hint(key).filter(|&r| r < size);
    for rank in first.into_iter().chain([me]).chain(0..size) {
        if !order.contains(&rank) {
            order.push(rank);
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_ids_become_dense_indexes() {
        assert_eq!(dense_nodes(&[0, 0, 1, 1]), [0, 0, 1, 1]);
        assert_eq!(dense_nodes(&[7, 3, 7, 3, 9]), [0, 1, 0, 1, 2]);
        assert_eq!(dense_nodes(&[5]), [0]);
        assert!(dense_nodes(&[]).is_empty());
    }

    #[test]
    fn local_peers_lists_are_parsed() {
        assert_eq!(parse_peers("0,1,2,3"), [0, 1, 2, 3]);
        assert_eq!(parse_peers("2, 3"), [2, 3]);
        assert_eq!(parse_peers("5,x,"), [5]);
        assert!(parse_peers("").is_empty());
    }

    #[test]
    fn keys_name_the_rank_that_put_them() {
        assert_eq!(rank_hint("reflex-tcp-3"), Some(3));
        assert_eq!(rank_hint("reflex-host-12"), Some(12));
        assert_eq!(rank_hint("big-1#4"), Some(1));
        assert_eq!(rank_hint("card-0"), Some(0));
        for none in [
            "plain",
            "a-",
            "a-b",
            "a-1x",
            "#3",
            "a-1#",
            "a-1#x",
            "a-99999999999",
        ] {
            assert_eq!(rank_hint(none), None, "{none}");
        }
    }

    #[test]
    fn lookups_start_at_the_hinted_rank_and_visit_each_rank_once() {
        assert_eq!(lookup_order("reflex-tcp-2", 0, 4), [2, 0, 1, 3]);
        assert_eq!(lookup_order("reflex-tcp-1", 1, 3), [1, 0, 2]);
        assert_eq!(lookup_order("other", 3, 4), [3, 0, 1, 2]);
        assert_eq!(
            lookup_order("x-9", 0, 2),
            [0, 1],
            "a hint past the job is ignored"
        );
    }
}
