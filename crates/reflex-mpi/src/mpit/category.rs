//! Categories: the control and performance variables grouped by the part of Reflex they
//! concern, under one root category `reflex`.
//!
//! A control variable's category follows from its setting's name ([`of_cvar`]), so new settings
//! fall into place; a performance variable names its category in its own table
//! (`super::pvar`). The set never changes while the process runs, so
//! `MPI_T_category_changed` always reports the same number. The verbosity of a control
//! variable is its category's.

use super::{cvar, error, pvar};
use reflex_engine::{ErrorClass, Result};
use std::ffi::c_int;

/// `MPI_T_VERBOSITY_*` values used here.
pub const USER_BASIC: c_int = 221;
pub const TUNER_BASIC: c_int = 224;
pub const TUNER_DETAIL: c_int = 225;
pub const MPIDEV_DETAIL: c_int = 228;

/// One category.
#[derive(Debug, PartialEq, Eq)]
pub struct Category {
    pub name: &'static str,
    pub desc: &'static str,
    /// Verbosity of the control variables in it.
    pub verbosity: c_int,
}

/// Every category; the first is the root, whose subcategories are all the others.
pub const CATEGORIES: [Category; 8] = [
    Category {
        name: "reflex",
        desc: "Reflex: every variable of the library, by part",
        verbosity: USER_BASIC,
    },
    Category {
        name: "reflex_p2p",
        desc: "point-to-point messaging: eager and rendezvous protocols, large-message copies, \
               message and queue counters",
        verbosity: TUNER_BASIC,
    },
    Category {
        name: "reflex_copy",
        desc: "bytes the engine copied, by kind (which path messages took)",
        verbosity: TUNER_DETAIL,
    },
    Category {
        name: "reflex_coll",
        desc: "collective operations: the shared-memory board and the schedule selection \
               (writable while MPI runs)",
        verbosity: TUNER_BASIC,
    },
    Category {
        name: "reflex_progress",
        desc: "waiting and progress: spinning, yielding, sleeping, the progress thread",
        verbosity: TUNER_DETAIL,
    },
    Category {
        name: "reflex_shm",
        desc: "the shared-memory transport between ranks of one node",
        verbosity: TUNER_DETAIL,
    },
    Category {
        name: "reflex_tcp",
        desc: "the TCP transport between nodes",
        verbosity: TUNER_DETAIL,
    },
    Category {
        name: "reflex_misc",
        desc: "logging and the compiler wrappers",
        verbosity: MPIDEV_DETAIL,
    },
];

/// Index of category `name` in [`CATEGORIES`].
fn index(name: &str) -> usize {
    CATEGORIES
        .iter()
        .position(|c| c.name == name)
        .expect("a category of the table")
}

/// The category index of the control variable named `name`.
pub fn cvar_category(name: &str) -> usize {
    let setting = name.strip_prefix("REFLEX_").unwrap_or(name);
    let part = match setting {
        s if s.starts_with("COLL_") => "reflex_coll",
        s if s.starts_with("TCP_") => "reflex_tcp",
        s if s.starts_with("SHM_") => "reflex_shm",
        s if s.starts_with("PROGRESS_")
            || matches!(s, "SPIN_POLLS" | "YIELD_POLLS" | "SLEEP_US") =>
        {
            "reflex_progress"
        }
        "EAGER_LIMIT" | "SINGLE_COPY" | "COOP_CHUNK" | "PIPELINE_CHUNK" | "DIRECT_SEND"
        | "DIRECT_RECV" | "IOV_MIN_BLOCK" => "reflex_p2p",
        _ => "reflex_misc",
    };
    index(part)
}

/// The category of the control variable named `name`.
pub fn of_cvar(name: &str) -> &'static Category {
    &CATEGORIES[cvar_category(name)]
}

/// The category at `index` (`MPI_T_ERR_INVALID_INDEX` otherwise).
pub fn get(index: c_int) -> Result<usize> {
    usize::try_from(index)
        .ok()
        .filter(|&i| i < CATEGORIES.len())
        .ok_or_else(|| {
            error(
                ErrorClass::TInvalidIndex,
                format!(
                    "{index} is not a category index (there are {})",
                    CATEGORIES.len()
                ),
            )
        })
}

/// The index of the category named `name`.
pub fn index_of(name: &str) -> Option<usize> {
    CATEGORIES.iter().position(|c| c.name == name)
}

/// The control variables of category `cat`, by index.
pub fn cvars(cat: usize) -> Vec<usize> {
    let table = cvar::table();
    (0..table.len())
        .filter(|&i| cvar_category(table[i].name) == cat)
        .collect()
}

/// The performance variables of category `cat`, by index.
pub fn pvars(cat: usize) -> Vec<usize> {
    let table = pvar::TABLE;
    (0..table.len())
        .filter(|&i| index(table[i].category) == cat)
        .collect()
}

/// The subcategories of category `cat`: the root has all the others.
pub fn subcategories(cat: usize) -> Vec<usize> {
    match cat {
        0 => (1..CATEGORIES.len()).collect(),
        _ => Vec::new(),
    }
}

/// `MPI_T_category_changed`'s number: the set of variables and categories never changes.
pub const STAMP: c_int = 1;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variable_is_in_exactly_one_leaf_category() {
        let in_cats: usize = (0..CATEGORIES.len()).map(|c| cvars(c).len()).sum();
        assert_eq!(in_cats, cvar::table().len());
        let in_cats: usize = (0..CATEGORIES.len()).map(|c| pvars(c).len()).sum();
        assert_eq!(in_cats, pvar::TABLE.len());
        assert!(cvars(0).is_empty() && pvars(0).is_empty());
        assert_eq!(subcategories(0).len(), CATEGORIES.len() - 1);
        assert_eq!(
            CATEGORIES[cvar_category("REFLEX_COLL_BCAST")].name,
            "reflex_coll"
        );
        assert_eq!(
            CATEGORIES[cvar_category("REFLEX_SLEEP_US")].name,
            "reflex_progress"
        );
        assert_eq!(CATEGORIES[cvar_category("REFLEX_CC")].name, "reflex_misc");
        assert_eq!(index_of("reflex_tcp"), Some(6));
        assert!(get(8).is_err() && get(-1).is_err());
    }
}
