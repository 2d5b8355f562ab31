//! The process space: every process this one can address, by index, and its global identity.
//!
//! Indices `0..world` are the ranks of this process's own job (`MPI_COMM_WORLD`), as they always
//! were; a process of another job (met through `MPI_Comm_accept`/`connect`/`join`, see
//! `docs/dynamic-processes.md`) gets the next free index when it first becomes known, and keeps
//! it for the life of this process. Groups, routes and per-peer state all use these indices, so
//! the hot paths do not change; the identity (job id, rank in that job) is what travels between
//! jobs, since another job numbers the same processes differently. A job's id is a 64-bit hash
//! of its PMI key-value-space name, which every process of the job reads from the launcher.

use std::collections::HashMap;

/// A process of any job: its job's id and its rank in that job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GlobalId {
    /// The job (a hash of its PMI key-value-space name).
    pub job: u64,
    /// The rank in that job's `MPI_COMM_WORLD`.
    pub rank: u32,
}

/// Bytes of an encoded [`GlobalId`].
pub const GLOBAL_ID_LEN: usize = 12;

impl GlobalId {
    /// Little-endian job then rank.
    pub fn encode(self) -> [u8; GLOBAL_ID_LEN] {
        let mut out = [0u8; GLOBAL_ID_LEN];
        out[..8].copy_from_slice(&self.job.to_le_bytes());
        out[8..].copy_from_slice(&self.rank.to_le_bytes());
        out
    }

    /// The inverse of [`GlobalId::encode`]; `None` when `b` is too short.
    pub fn decode(b: &[u8]) -> Option<GlobalId> {
        let job = u64::from_le_bytes(b.get(..8)?.try_into().ok()?);
        let rank = u32::from_le_bytes(b.get(8..GLOBAL_ID_LEN)?.try_into().ok()?);
        Some(GlobalId { job, rank })
    }
}

/// The id of the job whose PMI key-value space is `kvsname` (FNV-1a, 64 bits; never 0).
pub fn job_id(kvsname: &str) -> u64 {
    let hash = kvsname.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    hash.max(1)
}

/// The table of processes: index ↔ global identity.
#[derive(Debug, Clone, Default)]
pub struct Procs {
    job: u64,
    world: usize,
    /// Identity of index `world + i`.
    foreign: Vec<GlobalId>,
    /// Index of each foreign identity.
    index: HashMap<GlobalId, usize>,
}

impl Procs {
    /// The processes of a job `job` of `world` ranks (no foreign one yet).
    pub fn new(job: u64, world: usize) -> Self {
        Self {
            job,
            world,
            ..Self::default()
        }
    }

    /// This job's id.
    pub fn job(&self) -> u64 {
        self.job
    }

    /// Sets this job's id (before any foreign process is known).
    pub fn set_job(&mut self, job: u64) {
        debug_assert!(
            self.foreign.is_empty(),
            "the job id changes before foreign processes"
        );
        self.job = job;
    }

    /// Ranks of this job.
    pub fn world(&self) -> usize {
        self.world
    }

    /// Every index in use (this job's ranks, then the foreign processes).
    pub fn len(&self) -> usize {
        self.world + self.foreign.len()
    }

    /// Whether the table is empty (a job of no processes: never, once built).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `index` is a process of another job.
    pub fn is_foreign(&self, index: usize) -> bool {
        index >= self.world
    }

    /// The identity of process `index` (`None` when no process has it).
    pub fn id_of(&self, index: usize) -> Option<GlobalId> {
        if index < self.world {
            return Some(GlobalId {
                job: self.job,
                rank: index as u32,
            });
        }
        self.foreign.get(index - self.world).copied()
    }

    /// The index of the process `id`, if it is known.
    pub fn index_of(&self, id: GlobalId) -> Option<usize> {
        if id.job == self.job {
            let rank = id.rank as usize;
            return (rank < self.world).then_some(rank);
        }
        self.index.get(&id).copied()
    }

    /// The index of `id`, adding it as a foreign process if it is new; `true` with a new one.
    pub fn add(&mut self, id: GlobalId) -> Option<(usize, bool)> {
        if let Some(index) = self.index_of(id) {
            return Some((index, false));
        }
        if id.job == self.job {
            return None; // a rank this job does not have
        }
        let index = self.len();
        self.foreign.push(id);
        self.index.insert(id, index);
        Some((index, true))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(job: u64, rank: u32) -> GlobalId {
        GlobalId { job, rank }
    }

    #[test]
    fn world_ranks_stay_and_foreign_processes_follow() {
        let mut p = Procs::new(5, 3);
        assert_eq!(p.index_of(id(5, 2)), Some(2));
        assert_eq!(p.index_of(id(5, 3)), None);
        assert_eq!(p.add(id(5, 1)), Some((1, false)));
        assert_eq!(p.add(id(5, 7)), None);
        assert_eq!(p.add(id(9, 0)), Some((3, true)));
        assert_eq!(p.add(id(8, 0)), Some((4, true)));
        assert_eq!(p.add(id(9, 0)), Some((3, false)));
        assert_eq!(p.len(), 5);
        assert_eq!(p.id_of(4), Some(id(8, 0)));
        assert_eq!(p.id_of(0), Some(id(5, 0)));
        assert_eq!(p.id_of(5), None);
        assert!(p.is_foreign(3) && !p.is_foreign(2));
    }

    #[test]
    fn identities_round_trip_and_jobs_differ() {
        let g = id(0x0102_0304_0506_0708, 77);
        assert_eq!(GlobalId::decode(&g.encode()), Some(g));
        assert_eq!(GlobalId::decode(&g.encode()[..11]), None);
        assert_ne!(job_id("reflex-1-00000001"), job_id("reflex-1-00000002"));
        assert_ne!(job_id(""), 0);
    }
}
