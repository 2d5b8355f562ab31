//! The open MPI-4.0 sessions (§11.3) and the process sets they offer.
//!
//! A session is a record of the C layer: its error handler and the thread level it was granted;
//! session handles are MPICH's "direct" session kind with the table index ([`crate::handles`]).
//! Every session shares the one engine with the World Model ([`crate::state::Phase`]): the
//! engine starts with the first of them and ends with the last, so this table's length is the
//! sessions' share of that count. The process sets are the two MPI-4.0 §11.3 requires,
//! `mpi://WORLD` and `mpi://SELF`; Reflex's launcher defines no others.

use crate::ffi::MPI_Errhandler;
use reflex_base::slots::Slots;
use reflex_engine::{ErrorClass, MpiError, Result};

/// The names of the thread levels, `MPI_THREAD_SINGLE` (0) to `MPI_THREAD_MULTIPLE` (3), as the
/// `thread_level` info key spells them (MPI-4.0 §11.3).
pub const THREAD_LEVEL_NAMES: [&str; 4] = [
    "MPI_THREAD_SINGLE",
    "MPI_THREAD_FUNNELED",
    "MPI_THREAD_SERIALIZED",
    "MPI_THREAD_MULTIPLE",
];

/// The level a `thread_level` info value asks for (`MPI_THREAD_SINGLE` when absent); a value
/// that names no level is an error (`MPI_ERR_INFO_VALUE`).
pub fn thread_level_of(value: Option<&str>) -> Result<i32> {
    let Some(v) = value else { return Ok(0) };
    THREAD_LEVEL_NAMES
        .iter()
        .position(|n| n.eq_ignore_ascii_case(v.trim()))
        .map(|i| i as i32)
        .ok_or_else(|| {
            MpiError::new(
                ErrorClass::InfoValue,
                format!(
                    "thread_level \"{v}\" is not one of {}",
                    THREAD_LEVEL_NAMES.join(", ")
                ),
            )
        })
}

/// A process set of every session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pset {
    /// `mpi://WORLD`: every process of the job.
    World,
    /// `mpi://SELF`: this process alone.
    SelfOnly,
}

impl Pset {
    /// Every process set, in the order `MPI_Session_get_nth_pset` numbers them.
    pub const ALL: [Pset; 2] = [Pset::World, Pset::SelfOnly];

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Pset::World => "mpi://WORLD",
            Pset::SelfOnly => "mpi://SELF",
        }
    }

    /// The set called `name` (matched without regard to case); an unknown name is
    /// `MPI_ERR_ARG`, MPICH's class for it.
    pub fn named(name: &str) -> Result<Pset> {
        Pset::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name))
            .ok_or_else(|| {
                MpiError::new(
                    ErrorClass::Arg,
                    format!("\"{name}\" is not a process set (mpi://WORLD, mpi://SELF)"),
                )
            })
    }
}

/// One open session.
#[derive(Debug, Clone, Copy)]
pub struct Session {
    /// The handler of errors raised on the session (`MPI_Session_set_errhandler`).
    pub errhandler: MPI_Errhandler,
    /// The thread level granted (`thread_level` of `MPI_Session_get_info`).
    pub thread_level: i32,
}

/// The table of open sessions.
#[derive(Debug, Default)]
pub struct Sessions {
    slots: Slots<Session>,
}

impl Sessions {
    /// Opens a session; returns its number (the lowest free one).
    pub fn insert(&mut self, session: Session) -> u32 {
        self.slots.insert(session) as u32
    }

    /// Session `index`.
    pub fn get(&self, index: u32) -> Result<&Session> {
        self.slots.get(index as usize).ok_or_else(|| invalid(index))
    }

    /// Session `index`, to change it.
    pub fn get_mut(&mut self, index: u32) -> Result<&mut Session> {
        self.slots
            .get_mut(index as usize)
            .ok_or_else(|| invalid(index))
    }

    /// Closes session `index`.
    pub fn remove(&mut self, index: u32) -> Result<Session> {
        self.slots
            .remove(index as usize)
            .ok_or_else(|| invalid(index))
    }

    /// The number of open sessions.
    pub fn open(&self) -> usize {
        self.slots.count()
    }
}

fn invalid(index: u32) -> MpiError {
    MpiError::new(
        ErrorClass::Session,
        format!("session {index} does not exist (finalized?)"),
    )
}

/// The tag under which the members of a group agree on a communicator for `stringtag`
/// (`MPI_Comm_create_from_group`, `MPI_Intercomm_create_from_groups`): 64-bit FNV-1a of the
/// operation's name and the string, folded into `0..=MPI_TAG_UB`. Concurrent creations over
/// overlapping groups must use different string tags (MPI-4.0, MPI_COMM_CREATE_FROM_GROUP); the engine tells their
/// exchanges apart by this tag, so two strings collide only when their hashes agree in 30 bits.
pub fn stringtag_tag(operation: &str, stringtag: &str) -> i32 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in operation.bytes().chain([0]).chain(stringtag.bytes()) {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    ((hash ^ (hash >> 32)) & u64::from(crate::kinds::TAG_UB as u32)) as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_levels_parse_by_name() {
        assert_eq!(thread_level_of(None).unwrap(), 0);
        assert_eq!(thread_level_of(Some("MPI_THREAD_MULTIPLE")).unwrap(), 3);
        assert_eq!(thread_level_of(Some(" mpi_thread_funneled")).unwrap(), 1);
        let e = thread_level_of(Some("fast")).unwrap_err();
        assert_eq!(e.class, ErrorClass::InfoValue);
    }

    #[test]
    fn psets_are_found_by_name() {
        assert_eq!(Pset::named("mpi://WORLD").unwrap(), Pset::World);
        assert_eq!(Pset::named("mpi://self").unwrap(), Pset::SelfOnly);
        assert_eq!(
            Pset::named("mpi://NODE").unwrap_err().class,
            ErrorClass::Arg
        );
    }

    #[test]
    fn session_slots_are_reused() {
        let mut t = Sessions::default();
        let s = Session {
            errhandler: 0,
            thread_level: 0,
        };
        let (a, b) = (t.insert(s), t.insert(s));
        assert_eq!((a, b, t.open()), (0, 1, 2));
        t.remove(a).unwrap();
        assert!(t.get(a).is_err());
        assert!(t.remove(a).is_err());
        assert_eq!(t.insert(s), a);
    }

    #[test]
    fn stringtags_map_to_distinct_valid_tags() {
        let a = stringtag_tag("comm", "alpha");
        let b = stringtag_tag("comm", "beta");
        let c = stringtag_tag("inter", "alpha");
        assert!(a != b && a != c);
        for t in [a, b, c] {
            assert!((0..=crate::kinds::TAG_UB).contains(&t));
        }
        assert_eq!(a, stringtag_tag("comm", "alpha"));
    }
}
