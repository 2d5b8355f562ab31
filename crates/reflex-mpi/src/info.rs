//! Info objects (MPI-3.1 chapter 9): ordered (key, value) lists, the table of user objects, and
//! the predefined `MPI_INFO_ENV`.
//!
//! An info object keeps its keys in insertion order, so `MPI_Info_get_nthkey` is stable while
//! the object is unchanged, as the standard asks; setting an existing key replaces its value in
//! place. Keys and values are case-sensitive strings of at most `MPI_MAX_INFO_KEY` (255) and
//! `MPI_MAX_INFO_VAL` (1024) characters. Handles follow MPICH: `MPI_INFO_NULL` is `0x1c000000`,
//! `MPI_INFO_ENV` `0x5c000001`, user objects `0x9c000000 | index`.

use crate::ffi::MPI_Info;
use reflex_base::slots::Slots;
use reflex_engine::{ErrorClass, MpiError, Result};

/// `MPI_MAX_INFO_KEY`.
pub const MAX_INFO_KEY: usize = 255;
/// `MPI_MAX_INFO_VAL`.
pub const MAX_INFO_VAL: usize = 1024;
/// `MPI_INFO_NULL`.
pub const INFO_NULL: MPI_Info = 0x1c00_0000;
/// `MPI_INFO_ENV`.
pub const INFO_ENV: MPI_Info = 0x5c00_0001;
const INFO_USER: u32 = 0x9c00_0000;
const INDEX_LIMIT: u32 = 1 << 23;

/// An ordered list of (key, value) pairs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dict(Vec<(String, String)>);

/// Checks a key's length (`MPI_ERR_INFO_KEY`).
pub fn check_key(key: &str) -> Result<()> {
    if key.is_empty() || key.len() > MAX_INFO_KEY {
        return Err(MpiError::new(
            ErrorClass::InfoKey,
            format!(
                "info key of {} characters is empty or longer than MPI_MAX_INFO_KEY ({MAX_INFO_KEY})",
                key.len()
            ),
        ));
    }
    Ok(())
}

impl Dict {
    /// The pairs, in order.
    pub fn pairs(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// A dictionary with these pairs, in order.
    pub fn from_pairs(pairs: impl IntoIterator<Item = (String, String)>) -> Dict {
        let mut d = Dict::default();
        for (k, v) in pairs {
            d.put(k, v);
        }
        d
    }

    /// Sets `key` to `value` (replacing an existing value in place), after checking both.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        check_key(key)?;
        if value.len() > MAX_INFO_VAL {
            return Err(MpiError::new(
                ErrorClass::InfoValue,
                format!(
                    "info value of {} characters is longer than MPI_MAX_INFO_VAL ({MAX_INFO_VAL})",
                    value.len()
                ),
            ));
        }
        self.put(key.to_string(), value.to_string());
        Ok(())
    }

    fn put(&mut self, key: String, value: String) {
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.0.push((key, value)),
        }
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Removes `key` (`MPI_ERR_INFO_NOKEY` when absent).
    pub fn delete(&mut self, key: &str) -> Result<()> {
        check_key(key)?;
        let at = self.0.iter().position(|(k, _)| k == key).ok_or_else(|| {
            MpiError::new(
                ErrorClass::InfoNokey,
                format!("info key \"{key}\" is not set"),
            )
        })?;
        self.0.remove(at);
        Ok(())
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether no key is set.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The `n`-th key (`MPI_ERR_ARG` when out of range).
    pub fn nth_key(&self, n: i32) -> Result<&str> {
        usize::try_from(n)
            .ok()
            .and_then(|i| self.0.get(i))
            .map(|(k, _)| k.as_str())
            .ok_or_else(|| {
                MpiError::new(
                    ErrorClass::Arg,
                    format!("key number {n} is outside 0..{}", self.0.len()),
                )
            })
    }
}

/// Which info object a valid, non-null handle names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InfoId {
    /// `MPI_INFO_ENV` (read-only).
    Env,
    /// A user object.
    User(u32),
}

/// The user info objects and `MPI_INFO_ENV`.
#[derive(Debug, Default)]
pub struct Infos {
    slots: Slots<Dict>,
    env: Dict,
}

fn info_error(message: String) -> MpiError {
    MpiError::new(ErrorClass::Info, message)
}

impl Infos {
    /// Sets the contents of `MPI_INFO_ENV` (at initialisation).
    pub fn set_env(&mut self, env: Dict) {
        self.env = env;
    }

    /// The object a handle names: `None` for `MPI_INFO_NULL`, an error for anything invalid.
    pub fn lookup(&self, h: MPI_Info) -> Result<Option<InfoId>> {
        match h {
            INFO_NULL => Ok(None),
            INFO_ENV => Ok(Some(InfoId::Env)),
            _ => {
                let index = (h as u32)
                    .checked_sub(INFO_USER)
                    .filter(|&i| i < INDEX_LIMIT)
                    .filter(|&i| self.slots.get(i as usize).is_some())
                    .ok_or_else(|| info_error(format!("{h:#x} is not an info object (freed?)")))?;
                Ok(Some(InfoId::User(index)))
            }
        }
    }

    /// The C handle of `id`.
    pub fn handle(id: InfoId) -> MPI_Info {
        match id {
            InfoId::Env => INFO_ENV,
            InfoId::User(i) => (INFO_USER | i) as MPI_Info,
        }
    }

    /// The contents of `id`.
    pub fn get(&self, id: InfoId) -> &Dict {
        match id {
            InfoId::Env => &self.env,
            InfoId::User(i) => self
                .slots
                .get(i as usize)
                .expect("looked-up info object exists"),
        }
    }

    /// Mutable contents of a user object; `MPI_INFO_ENV` is read-only.
    pub fn get_mut(&mut self, id: InfoId) -> Result<&mut Dict> {
        match id {
            InfoId::Env => Err(info_error("MPI_INFO_ENV cannot be modified".into())),
            InfoId::User(i) => Ok(self
                .slots
                .get_mut(i as usize)
                .expect("looked-up info object exists")),
        }
    }

    /// A new user object holding `dict`.
    pub fn insert(&mut self, dict: Dict) -> Result<InfoId> {
        let index = self
            .slots
            .insert_below(dict, INDEX_LIMIT as usize)
            .map_err(|_| MpiError::new(ErrorClass::NoMem, "too many info objects"))?;
        Ok(InfoId::User(index as u32))
    }

    /// Frees a user object; `MPI_INFO_ENV` cannot be freed.
    pub fn remove(&mut self, id: InfoId) -> Result<()> {
        match id {
            InfoId::Env => Err(info_error("MPI_INFO_ENV cannot be freed".into())),
            InfoId::User(i) => {
                self.slots.remove(i as usize);
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dict_keeps_order_and_checks_sizes() {
        let mut d = Dict::default();
        d.set("b", "1").unwrap();
        d.set("a", "2").unwrap();
        d.set("b", "3").unwrap();
        assert_eq!((d.nth_key(0).unwrap(), d.get("b")), ("b", Some("3")));
        assert_eq!(d.nth_key(2).unwrap_err().class, ErrorClass::Arg);
        assert_eq!(d.set("", "x").unwrap_err().class, ErrorClass::InfoKey);
        assert_eq!(
            d.set(&"k".repeat(256), "x").unwrap_err().class,
            ErrorClass::InfoKey
        );
        assert_eq!(
            d.set("k", &"v".repeat(1025)).unwrap_err().class,
            ErrorClass::InfoValue
        );
        assert_eq!(d.delete("zz").unwrap_err().class, ErrorClass::InfoNokey);
        d.delete("b").unwrap();
        assert_eq!(d.len(), 1);
    }

    #[test]
    fn handles_round_trip_and_env_is_read_only() {
        let mut infos = Infos::default();
        let id = infos.insert(Dict::default()).unwrap();
        let h = Infos::handle(id);
        assert_eq!(infos.lookup(h).unwrap(), Some(id));
        assert_eq!(infos.lookup(INFO_NULL).unwrap(), None);
        assert_eq!(infos.lookup(INFO_ENV).unwrap(), Some(InfoId::Env));
        infos.remove(id).unwrap();
        assert_eq!(infos.lookup(h).unwrap_err().class, ErrorClass::Info);
        assert_eq!(infos.lookup(0x1234).unwrap_err().class, ErrorClass::Info);
        assert!(infos.get_mut(InfoId::Env).is_err());
        assert!(infos.remove(InfoId::Env).is_err());
    }
}
