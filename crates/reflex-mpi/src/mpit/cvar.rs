//! Control variables: every `REFLEX_*` setting (`reflex_base::config`), named as in the
//! environment.
//!
//! The table is the configuration's own ([`Config::describe`]), so a new setting is a new
//! control variable with nothing to add here. Types by [`SettingKind`]: byte sizes are
//! `MPI_UNSIGNED_LONG`, whole numbers `MPI_UNSIGNED`, choices `MPI_INT` holding the index of
//! the word in the variable's `MPI_T_enum` (`REFLEX_COLL_BCAST`: 0 `auto`, 1 `binomial`, ...),
//! text `MPI_CHAR` (count: its length plus the NUL). All are bound to no object.
//!
//! Scope: settings the engine fixes at start-up are `MPI_T_SCOPE_READONLY` (a write is
//! `MPI_T_ERR_CVAR_SET_NEVER`). The collective selection (`REFLEX_COLL_*` except
//! `REFLEX_COLL_SHM`, which decides at start-up whether the boards exist) is read by the engine
//! at every collective it starts, so it is writable while the engine runs
//! (`MPI_T_ERR_CVAR_SET_NOT_NOW` before and after), with scope `MPI_T_SCOPE_ALL_EQ`: every
//! process must write the same value before its next collective, as the schedules of one
//! collective must agree.

use super::category;
use super::{error, live};
use reflex_base::config::{ByteSize, Config, SettingKind, SettingValue, SETTING_NAMES};
use reflex_engine::coll::select::CollTuning;
use reflex_engine::{ErrorClass, Result};
use std::ffi::c_int;

/// `MPI_UNSIGNED_LONG`, `MPI_UNSIGNED`, `MPI_INT`, `MPI_CHAR` (MPICH's handles).
pub const MPI_UNSIGNED_LONG: c_int = 0x4c00_0808;
pub const MPI_UNSIGNED: c_int = 0x4c00_0406;
pub const MPI_INT: c_int = 0x4c00_0405;
pub const MPI_CHAR: c_int = 0x4c00_0101;
/// `MPI_T_SCOPE_READONLY`, `MPI_T_SCOPE_ALL_EQ`.
pub const SCOPE_READONLY: c_int = 60439;
pub const SCOPE_ALL_EQ: c_int = 60444;
/// `MPI_T_BIND_NO_OBJECT`.
pub const BIND_NO_OBJECT: c_int = 9700;

/// One control variable, as `MPI_T_cvar_get_info` describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cvar {
    pub name: &'static str,
    /// The setting's documentation and its default.
    pub desc: String,
    pub kind: SettingKind,
    pub datatype: c_int,
    pub scope: c_int,
    pub verbosity: c_int,
}

impl Cvar {
    /// Whether a write takes effect (while the engine runs).
    pub fn writable(&self) -> bool {
        self.scope != SCOPE_READONLY
    }

    /// The words of a choice variable (its `MPI_T_enum`), empty otherwise.
    pub fn choices(&self) -> &'static [&'static str] {
        match self.kind {
            SettingKind::Choice(words) => words,
            _ => &[],
        }
    }
}

/// Whether the engine reads setting `name` again at every collective.
fn live_setting(name: &str) -> bool {
    name.starts_with("REFLEX_COLL_") && name != "REFLEX_COLL_SHM"
}

fn datatype_of(kind: SettingKind) -> c_int {
    match kind {
        SettingKind::Bytes => MPI_UNSIGNED_LONG,
        SettingKind::Number => MPI_UNSIGNED,
        SettingKind::Choice(_) => MPI_INT,
        SettingKind::Text => MPI_CHAR,
    }
}

/// Every control variable, in the configuration's order (built once).
pub fn table() -> &'static [Cvar] {
    static TABLE: std::sync::OnceLock<Vec<Cvar>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        Config::default()
            .describe()
            .into_iter()
            .map(|row| Cvar {
                name: row.name,
                desc: format!("{} (default {})", row.doc, row.default),
                kind: row.kind,
                datatype: datatype_of(row.kind),
                scope: if live_setting(row.name) {
                    SCOPE_ALL_EQ
                } else {
                    SCOPE_READONLY
                },
                verbosity: category::of_cvar(row.name).verbosity,
            })
            .collect()
    })
}

/// The variable at `index` (`MPI_T_ERR_INVALID_INDEX` otherwise).
pub fn get(index: c_int) -> Result<&'static Cvar> {
    usize::try_from(index)
        .ok()
        .and_then(|i| table().get(i))
        .ok_or_else(|| {
            error(
                ErrorClass::TInvalidIndex,
                format!(
                    "{index} is not a control variable index (there are {})",
                    table().len()
                ),
            )
        })
}

/// The index of the variable named `name`.
pub fn index_of(name: &str) -> Option<usize> {
    SETTING_NAMES.iter().position(|n| *n == name)
}

/// A variable's value, ready to be stored in the C buffer of its type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// `MPI_UNSIGNED_LONG`.
    Bytes(u64),
    /// `MPI_UNSIGNED`.
    Number(u32),
    /// `MPI_INT`: the index of the word.
    Choice(i32),
    /// `MPI_CHAR`: the text (without NUL).
    Text(String),
}

/// The value of `cvar` in `config`.
pub fn value_in(cvar: &Cvar, config: &Config) -> Value {
    let row = config
        .describe()
        .into_iter()
        .find(|r| r.name == cvar.name)
        .expect("the table is the configuration's");
    let text = row.value;
    match cvar.kind {
        SettingKind::Bytes => {
            Value::Bytes(ByteSize::parse_setting(&text).map_or(0, |b| b.get() as u64))
        }
        SettingKind::Number => Value::Number(text.parse().unwrap_or(0)),
        SettingKind::Choice(words) => Value::Choice(
            words
                .iter()
                .position(|w| w.eq_ignore_ascii_case(&text))
                .map_or(-1, |i| i as i32),
        ),
        SettingKind::Text => Value::Text(text),
    }
}

/// The value of `cvar` now (or the one `MPI_Init` will use).
pub fn read(cvar: &Cvar) -> Value {
    value_in(cvar, &live::config())
}

/// The text a setting would have to hold `value` (the inverse of [`value_in`]).
fn text_of(cvar: &Cvar, value: &Value) -> Result<String> {
    let invalid = |what: String| error(ErrorClass::TInvalid, what);
    match (cvar.kind, value) {
        (SettingKind::Bytes, Value::Bytes(n)) => Ok(n.to_string()),
        (SettingKind::Number, Value::Number(n)) => Ok(n.to_string()),
        (SettingKind::Choice(words), Value::Choice(i)) => usize::try_from(*i)
            .ok()
            .and_then(|i| words.get(i))
            .map(|w| (*w).to_owned())
            .ok_or_else(|| {
                invalid(format!(
                    "{i} is not a value of {} (0 to {})",
                    cvar.name,
                    words.len() - 1
                ))
            }),
        _ => Err(invalid(format!("{} is not written this way", cvar.name))),
    }
}

/// Writes `value` to `cvar`: the configuration in effect changes, and the engine's collective
/// selection with it, for the next collective this process starts.
pub fn write(cvar: &Cvar, value: &Value) -> Result<()> {
    if !cvar.writable() {
        return Err(error(
            ErrorClass::TCvarSetNever,
            format!("{} is fixed when MPI starts (scope read-only)", cvar.name),
        ));
    }
    let Some(mpi) = live::running_mpi() else {
        return Err(error(
            ErrorClass::TCvarSetNotNow,
            format!(
                "{} can be written only while MPI runs (between MPI_Init or \
                 MPI_Session_init and the last finalize); set it in the environment instead",
                cvar.name
            ),
        ));
    };
    let text = text_of(cvar, value)?;
    let mut config = mpi.world.config.clone();
    match config.set(cvar.name, &text) {
        Some(Ok(())) => {}
        Some(Err(bad)) => return Err(error(ErrorClass::TInvalid, bad.to_string())),
        None => unreachable!("the table is the configuration's"),
    }
    let engine = &mut mpi.world.engine;
    let now = engine.tuning().coll;
    engine.set_coll_tuning(CollTuning {
        oversubscribed: now.oversubscribed,
        cores: now.cores,
        ..CollTuning::from_config(&config)
    });
    mpi.world.config = config;
    Ok(())
}

/// The `count` of a handle of `cvar`: 1, or for text its length plus the NUL.
pub fn count(cvar: &Cvar) -> c_int {
    match read(cvar) {
        Value::Text(t) => c_int::try_from(t.len() + 1).unwrap_or(c_int::MAX),
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_types_and_scopes_every_setting() {
        let t = table();
        assert_eq!(t.len(), SETTING_NAMES.len());
        let eager = &t[index_of("REFLEX_EAGER_LIMIT").unwrap()];
        assert_eq!(
            (eager.datatype, eager.scope),
            (MPI_UNSIGNED_LONG, SCOPE_READONLY)
        );
        assert!(eager.desc.contains("(default 64K)"), "{}", eager.desc);
        let bcast = &t[index_of("REFLEX_COLL_BCAST").unwrap()];
        assert_eq!((bcast.datatype, bcast.scope), (MPI_INT, SCOPE_ALL_EQ));
        assert_eq!(bcast.choices()[1], "binomial");
        let shm = &t[index_of("REFLEX_COLL_SHM").unwrap()];
        assert!(!shm.writable());
        let cc = &t[index_of("REFLEX_CC").unwrap()];
        assert_eq!(cc.datatype, MPI_CHAR);
        assert!(get(-1).is_err() && get(t.len() as c_int).is_err());
    }

    #[test]
    fn values_read_from_a_configuration_and_convert_back() {
        let mut config = Config::default();
        config
            .set("REFLEX_COLL_BARRIER", "pairwise")
            .unwrap()
            .unwrap();
        config.set("REFLEX_EAGER_LIMIT", "8k").unwrap().unwrap();
        let cvar = |n| &table()[index_of(n).unwrap()];
        let barrier = cvar("REFLEX_COLL_BARRIER");
        assert_eq!(value_in(barrier, &config), Value::Choice(2));
        assert_eq!(
            text_of(barrier, &Value::Choice(1)).unwrap(),
            "dissemination"
        );
        assert!(text_of(barrier, &Value::Choice(3)).is_err());
        assert!(text_of(barrier, &Value::Number(1)).is_err());
        let eager = cvar("REFLEX_EAGER_LIMIT");
        assert_eq!(value_in(eager, &config), Value::Bytes(8192));
        assert_eq!(
            value_in(cvar("REFLEX_SPIN_POLLS"), &config),
            Value::Number(1000)
        );
        assert_eq!(
            value_in(cvar("REFLEX_CXX"), &config),
            Value::Text("c++".into())
        );
    }
}
