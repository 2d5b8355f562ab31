//! Attribute caching (MPI-3.1 section 6.7) as data: keyvals and the attributes set on objects.
//!
//! A keyval records the kind of object it applies to, its copy and delete callbacks (C function
//! pointers; NULL stands for `MPI_*_NULL_COPY_FN` / `MPI_*_NULL_DELETE_FN`) and its extra state.
//! Freeing a keyval only marks it: the record lives on until the last attribute using it is
//! deleted, because the standard keeps those attributes (and their callbacks) working. Each
//! object's attributes are kept in the order they were set: the C layer copies them in that
//! order at `MPI_Comm_dup` and deletes them in the reverse order when the object is freed (the
//! LIFO order MPI-2.2 fixed for `MPI_COMM_SELF` at `MPI_Finalize`). Calling the callbacks is the
//! C layer's job (`imp/attr.rs`); nothing here calls foreign code.
//!
//! Handles follow MPICH's layout: `0xa4000000 | object kind << 22 | index`, the object kind
//! being MPICH's (communicator 1, datatype 3, window 8), so a keyval of one kind used with another
//! kind of object is detected.

use reflex_engine::{CommId, ErrorClass, MpiError, Result};
use std::collections::HashMap;
use std::ffi::{c_int, c_void};

/// `MPI_KEYVAL_INVALID`.
pub const KEYVAL_INVALID: c_int = 0x2400_0000;
const KEYVAL_USER: u32 = 0xa400_0000;
const INDEX_BITS: u32 = 22;

/// The kinds of object attributes attach to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ObjKind {
    /// Communicators.
    Comm,
    /// Datatypes.
    Datatype,
    /// Windows.
    Win,
}

impl ObjKind {
    fn bits(self) -> u32 {
        match self {
            ObjKind::Comm => 1,
            ObjKind::Datatype => 3,
            ObjKind::Win => 8,
        }
    }
}

/// An object carrying attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Obj {
    /// A communicator.
    Comm(CommId),
    /// A datatype, by its C handle.
    Datatype(c_int),
    /// A window.
    Win(reflex_engine::WinId),
}

/// One keyval.
#[derive(Debug, Clone, Copy)]
pub struct Keyval {
    /// The kind of object it applies to.
    pub kind: ObjKind,
    /// Copy callback, NULL for "do not copy".
    pub copy: *const c_void,
    /// Delete callback, NULL for "nothing to do".
    pub delete: *const c_void,
    /// The extra state handed to both callbacks.
    pub extra: *mut c_void,
    /// Copy and delete proxies that call the callbacks for another language binding (MPICH's
    /// Fortran binding registers them through `MPII_Keyval_set_proxy`; see `mpich_fortran.rs`).
    pub proxy: Option<(*const c_void, *const c_void)>,
    /// Freed by the application (no longer usable for new attributes).
    freed: bool,
    /// Attributes currently set with this keyval.
    uses: usize,
}

/// One attribute: the keyval's index and the value (a pointer-sized word).
pub type Attr = (u32, *mut c_void);

/// Keyvals and the attributes of every object.
#[derive(Debug, Default)]
pub struct Attributes {
    keyvals: Vec<Option<Keyval>>,
    sets: HashMap<Obj, Vec<Attr>>,
}

fn keyval_error(message: String) -> MpiError {
    MpiError::new(ErrorClass::Keyval, message)
}

impl Attributes {
    /// A new keyval for objects of `kind`; returns its handle.
    pub fn create_keyval(
        &mut self,
        kind: ObjKind,
        copy: *const c_void,
        delete: *const c_void,
        extra: *mut c_void,
    ) -> Result<c_int> {
        let keyval = Keyval {
            kind,
            copy,
            delete,
            extra,
            proxy: None,
            freed: false,
            uses: 0,
        };
        let index = match self.keyvals.iter().position(Option::is_none) {
            Some(i) => i,
            None => {
                self.keyvals.push(None);
                self.keyvals.len() - 1
            }
        };
        if index >= 1 << INDEX_BITS {
            return Err(MpiError::new(ErrorClass::NoMem, "too many keyvals"));
        }
        self.keyvals[index] = Some(keyval);
        Ok((KEYVAL_USER | kind.bits() << INDEX_BITS | index as u32) as c_int)
    }

    /// The index of a live keyval handle of `kind` (`MPI_ERR_KEYVAL` otherwise).
    pub fn lookup(&self, handle: c_int, kind: ObjKind) -> Result<u32> {
        self.find(handle, kind, false)
    }

    /// The index of keyval `handle` of `kind` that attributes still use, freed or not: the
    /// attributes of a freed keyval may still be read and deleted through a saved copy of its
    /// handle (MPI-3.1 section 6.7.2, `MPI_COMM_FREE_KEYVAL`).
    pub fn lookup_in_use(&self, handle: c_int, kind: ObjKind) -> Result<u32> {
        self.find(handle, kind, true)
    }

    fn find(&self, handle: c_int, kind: ObjKind, freed_too: bool) -> Result<u32> {
        let h = handle as u32;
        let index = h & ((1 << INDEX_BITS) - 1);
        let valid = h & !((1 << INDEX_BITS) - 1) == KEYVAL_USER | kind.bits() << INDEX_BITS;
        match self.keyvals.get(index as usize).copied().flatten() {
            Some(k) if valid && (!k.freed || freed_too) => Ok(index),
            _ if h & 0xfc00_0000 == KEYVAL_USER & 0xfc00_0000 && !valid => Err(keyval_error(
                format!("keyval {handle:#x} belongs to another kind of object"),
            )),
            _ => Err(keyval_error(format!(
                "{handle:#x} is not a valid keyval (freed?)"
            ))),
        }
    }

    /// Has the callbacks of a live keyval `handle` (of any kind) called through `proxy`.
    pub fn set_proxy(
        &mut self,
        handle: c_int,
        proxy: (*const c_void, *const c_void),
    ) -> Result<()> {
        let kind = [ObjKind::Comm, ObjKind::Datatype, ObjKind::Win]
            .into_iter()
            .find(|k| {
                (handle as u32) >> INDEX_BITS
                    == (KEYVAL_USER | k.bits() << INDEX_BITS) >> INDEX_BITS
            })
            .ok_or_else(|| keyval_error(format!("{handle:#x} is not a valid keyval")))?;
        let index = self.lookup(handle, kind)?;
        if let Some(k) = self.keyvals[index as usize].as_mut() {
            k.proxy = Some(proxy);
        }
        Ok(())
    }

    /// The keyval record at `index` (also after it was freed, while attributes use it).
    pub fn keyval(&self, index: u32) -> Keyval {
        self.keyvals[index as usize].expect("keyval in use exists")
    }

    /// The handle of keyval `index`.
    pub fn handle(&self, index: u32) -> c_int {
        let kind = self.keyval(index).kind;
        (KEYVAL_USER | kind.bits() << INDEX_BITS | index) as c_int
    }

    /// Frees a keyval; the record is dropped once no attribute uses it.
    pub fn free_keyval(&mut self, index: u32) {
        if let Some(k) = self.keyvals[index as usize].as_mut() {
            k.freed = true;
        }
        self.release_if_unused(index);
    }

    fn release_if_unused(&mut self, index: u32) {
        let slot = &mut self.keyvals[index as usize];
        if slot.is_some_and(|k| k.freed && k.uses == 0) {
            *slot = None;
        }
    }

    /// The value of attribute `index` on `obj`.
    pub fn get(&self, obj: Obj, index: u32) -> Option<*mut c_void> {
        self.sets
            .get(&obj)?
            .iter()
            .find(|(k, _)| *k == index)
            .map(|&(_, v)| v)
    }

    /// Sets attribute `index` on `obj` (the caller already deleted a previous value).
    pub fn set(&mut self, obj: Obj, index: u32, value: *mut c_void) {
        let list = self.sets.entry(obj).or_default();
        match list.iter_mut().find(|(k, _)| *k == index) {
            Some(slot) => slot.1 = value,
            None => {
                list.push((index, value));
                if let Some(k) = self.keyvals[index as usize].as_mut() {
                    k.uses += 1;
                }
            }
        }
    }

    /// Removes attribute `index` from `obj`; returns whether it was set.
    pub fn remove(&mut self, obj: Obj, index: u32) -> bool {
        let Some(list) = self.sets.get_mut(&obj) else {
            return false;
        };
        let Some(at) = list.iter().position(|(k, _)| *k == index) else {
            return false;
        };
        list.remove(at);
        if list.is_empty() {
            self.sets.remove(&obj);
        }
        if let Some(k) = self.keyvals[index as usize].as_mut() {
            k.uses -= 1;
        }
        self.release_if_unused(index);
        true
    }

    /// Forgets every attribute of `obj` without calling anything (after its callbacks ran, or
    /// when a half-made object is thrown away).
    pub fn drop_all(&mut self, obj: Obj) {
        while let Some((index, _)) = self.last(obj) {
            self.remove(obj, index);
        }
    }

    /// The attributes of `obj`, in the order they were set.
    pub fn list(&self, obj: Obj) -> Vec<Attr> {
        self.sets.get(&obj).cloned().unwrap_or_default()
    }

    /// The attribute set last on `obj` (the next to delete when freeing it).
    pub fn last(&self, obj: Obj) -> Option<Attr> {
        self.sets.get(&obj)?.last().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(n: usize) -> *mut c_void {
        n as *mut c_void
    }

    #[test]
    fn keyvals_check_kind_and_outlive_their_attributes() {
        let mut a = Attributes::default();
        let null = std::ptr::null();
        let k = a
            .create_keyval(ObjKind::Comm, null, null, std::ptr::null_mut())
            .unwrap();
        assert_eq!(k as u32 & 0xffc0_0000, 0xa440_0000);
        let i = a.lookup(k, ObjKind::Comm).unwrap();
        assert_eq!(a.handle(i), k);
        assert_eq!(
            a.lookup(k, ObjKind::Datatype).unwrap_err().class,
            ErrorClass::Keyval
        );
        assert!(a.lookup(KEYVAL_INVALID, ObjKind::Comm).is_err());
        let obj = Obj::Comm(CommId(5));
        a.set(obj, i, value(7));
        a.free_keyval(i);
        assert!(a.lookup(k, ObjKind::Comm).is_err());
        // The attribute and its keyval record survive the free.
        assert_eq!(a.get(obj, i), Some(value(7)));
        assert_eq!(a.keyval(i).kind, ObjKind::Comm);
        assert!(a.remove(obj, i));
        assert!(!a.remove(obj, i));
        // Now the slot is reusable.
        let k2 = a
            .create_keyval(ObjKind::Datatype, null, null, std::ptr::null_mut())
            .unwrap();
        assert_eq!(a.lookup(k2, ObjKind::Datatype).unwrap(), i);
    }

    #[test]
    fn attributes_keep_set_order() {
        let mut a = Attributes::default();
        let null = std::ptr::null();
        let keys: Vec<u32> = (0..3)
            .map(|_| {
                let k = a
                    .create_keyval(ObjKind::Comm, null, null, std::ptr::null_mut())
                    .unwrap();
                a.lookup(k, ObjKind::Comm).unwrap()
            })
            .collect();
        let obj = Obj::Comm(CommId(2));
        for &k in [keys[2], keys[0], keys[1]].iter() {
            a.set(obj, k, value(k as usize));
        }
        a.set(obj, keys[2], value(9)); // replacing keeps the position
        let order: Vec<u32> = a.list(obj).iter().map(|&(k, _)| k).collect();
        assert_eq!(order, vec![keys[2], keys[0], keys[1]]);
        assert_eq!(a.last(obj).map(|(k, _)| k), Some(keys[1]));
    }
}
