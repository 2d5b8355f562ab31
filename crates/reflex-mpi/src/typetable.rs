//! Derived datatype handles: the table of user datatypes and what each one remembers.
//!
//! A user datatype is a [`Record`]: the engine's [`Datatype`] (what communication uses), the
//! combiner and the constructor's arguments (`MPI_Type_get_envelope`/`get_contents`), and whether
//! it was committed. Records are shared (`Rc`): a type built from another one keeps the inner
//! record alive after the application freed the inner handle, so `get_contents` can still return
//! it, as a *new* handle the caller frees (MPI-3.1 §4.1.13; MPICH returns the same handle with a
//! reference count, which the caller cannot tell apart). Names are per handle.
//!
//! Handles: predefined types keep MPICH's values (`0x4c......`, the pair types `0x8c00000N`; see
//! [`crate::datatypes`]). User types use MPICH's "indirect datatype" range, `0xcc000000` and up,
//! where MPICH also puts its user types (after eight direct ones, `0x8c000005..`): bits 0..20 are
//! the slot, bits 20..26 a generation that changes each time a slot is reused, so a freed handle
//! is reported as freed (`MPI_ERR_TYPE`) rather than silently naming a newer type.
//!
//! Lookup costs a shift, a bounds check and a compare, with no lock (the C layer's state is
//! unlocked, see [`crate::state`]); predefined types never get here.

use crate::ffi::{MPI_Aint, MPI_Count, MPI_Datatype};
use crate::handles::DATATYPE_NULL;
use reflex_engine::{Datatype, ErrorClass, MpiError, Result};
use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::c_int;
use std::rc::Rc;

const USER: u32 = 0xcc00_0000;
const SLOT_BITS: u32 = 20;
const SLOT_MASK: u32 = (1 << SLOT_BITS) - 1;
const GEN_MASK: u32 = 0x3f;

/// `MPI_COMBINER_*`: how a datatype was made (values of MPICH's `mpi.h`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum Combiner {
    /// A predefined type.
    Named = 1,
    /// `MPI_Type_dup`.
    Dup = 2,
    /// `MPI_Type_contiguous`.
    Contiguous = 3,
    /// `MPI_Type_vector`.
    Vector = 4,
    /// `MPI_Type_hvector` (MPI-1 name, as MPICH records it from C).
    HvectorInteger = 5,
    /// `MPI_Type_create_hvector`.
    Hvector = 6,
    /// `MPI_Type_indexed`.
    Indexed = 7,
    /// `MPI_Type_hindexed` (MPI-1 name).
    HindexedInteger = 8,
    /// `MPI_Type_create_hindexed`.
    Hindexed = 9,
    /// `MPI_Type_create_indexed_block`.
    IndexedBlock = 10,
    /// `MPI_Type_struct` (MPI-1 name).
    StructInteger = 11,
    /// `MPI_Type_create_struct`.
    Struct = 12,
    /// `MPI_Type_create_subarray`.
    Subarray = 13,
    /// `MPI_Type_create_darray`.
    Darray = 14,
    /// `MPI_Type_create_f90_real`.
    F90Real = 15,
    /// `MPI_Type_create_f90_complex`.
    F90Complex = 16,
    /// `MPI_Type_create_f90_integer`.
    F90Integer = 17,
    /// `MPI_Type_create_resized`.
    Resized = 18,
    /// `MPI_Type_create_hindexed_block`.
    HindexedBlock = 19,
}

/// A datatype named as a constructor argument: predefined (by handle) or a user type's record.
#[derive(Debug, Clone)]
pub enum TypeRef {
    /// A predefined type.
    Named(MPI_Datatype),
    /// A user type (kept alive here even after its handle is freed).
    Derived(Rc<Record>),
}

impl TypeRef {
    /// The engine datatype.
    pub fn datatype(&self) -> Datatype {
        match self {
            TypeRef::Named(h) => crate::datatypes::builtin(*h)
                .map(Datatype::Basic)
                .expect("named type refs hold predefined handles"),
            TypeRef::Derived(r) => r.dt.clone(),
        }
    }
}

/// One user datatype: the engine's type and how it was constructed.
#[derive(Debug)]
pub struct Record {
    /// What communication uses.
    pub dt: Datatype,
    /// `MPI_Type_get_envelope`'s combiner.
    pub combiner: Combiner,
    /// The integer arguments, in `MPI_Type_get_contents` order.
    pub ints: Vec<c_int>,
    /// The address arguments.
    pub addrs: Vec<MPI_Aint>,
    /// The datatype arguments.
    pub types: Vec<TypeRef>,
    /// The large-count (`MPI_Count`) arguments of a type made by an MPI-4 `_c` constructor, in
    /// `MPI_Type_get_contents_c` order (empty for every other type).
    pub counts: Vec<MPI_Count>,
    committed: Cell<bool>,
}

impl Record {
    /// A new, uncommitted record.
    pub fn new(
        dt: Datatype,
        combiner: Combiner,
        ints: Vec<c_int>,
        addrs: Vec<MPI_Aint>,
        types: Vec<TypeRef>,
    ) -> Self {
        Self {
            dt,
            combiner,
            ints,
            addrs,
            types,
            counts: Vec::new(),
            committed: Cell::new(false),
        }
    }

    /// Whether `MPI_Type_commit` was called (on any handle of this record).
    pub fn committed(&self) -> bool {
        self.committed.get()
    }

    /// Marks the record committed (compiling its program).
    pub fn commit(&self) {
        if let Some(layout) = self.dt.layout() {
            layout.commit();
        }
        self.committed.set(true);
    }
}

/// A live user handle.
#[derive(Debug)]
struct Entry {
    record: Rc<Record>,
    name: String,
    /// Returned by `MPI_Type_create_f90_*`: predefined in all but value, never freed.
    permanent: bool,
}

#[derive(Debug, Default)]
struct Slot {
    generation: u32,
    entry: Option<Entry>,
}

/// A datatype argument checked to be valid: its handle and the engine type it names.
#[derive(Debug, Clone)]
pub struct TypeArg {
    /// The C handle.
    pub handle: MPI_Datatype,
    /// The engine datatype.
    pub dt: Datatype,
}

/// Every user datatype handle, and the names given to predefined ones.
#[derive(Debug, Default)]
pub struct TypeTable {
    slots: Vec<Slot>,
    free: Vec<u32>,
    f90: HashMap<(Combiner, c_int, c_int), MPI_Datatype>,
    renamed: HashMap<MPI_Datatype, String>,
}

fn type_error(message: String) -> MpiError {
    MpiError::new(ErrorClass::Type, message)
}

fn slot_of(h: MPI_Datatype) -> Option<(usize, u32)> {
    let h = h as u32;
    (h & 0xfc00_0000 == USER).then_some(((h & SLOT_MASK) as usize, (h >> SLOT_BITS) & GEN_MASK))
}

impl TypeTable {
    fn entry(&self, h: MPI_Datatype) -> Option<&Entry> {
        let (slot, generation) = slot_of(h)?;
        let s = self.slots.get(slot)?;
        s.entry.as_ref().filter(|_| s.generation == generation)
    }

    fn entry_mut(&mut self, h: MPI_Datatype) -> Option<&mut Entry> {
        let (slot, generation) = slot_of(h)?;
        let s = self.slots.get_mut(slot)?;
        s.entry.as_mut().filter(|_| s.generation == generation)
    }

    fn missing(h: MPI_Datatype) -> MpiError {
        if h == DATATYPE_NULL {
            type_error("MPI_DATATYPE_NULL is not a valid datatype here".into())
        } else if slot_of(h).is_some() {
            type_error(format!("datatype {h:#x} was freed (or never created)"))
        } else {
            type_error(format!("{h:#x} is not a datatype handle"))
        }
    }

    /// The record of user handle `h`.
    pub fn record(&self, h: MPI_Datatype) -> Result<&Rc<Record>> {
        self.entry(h)
            .map(|e| &e.record)
            .ok_or_else(|| Self::missing(h))
    }

    /// Any valid datatype: predefined or a live user handle, committed or not.
    pub fn any(&self, h: MPI_Datatype) -> Result<TypeArg> {
        let dt = match crate::datatypes::builtin(h) {
            Some(b) => Datatype::Basic(b),
            None => self.record(h)?.dt.clone(),
        };
        Ok(TypeArg { handle: h, dt })
    }

    /// A datatype communication may use: predefined, or a committed user type.
    pub fn committed(&self, h: MPI_Datatype) -> Result<Datatype> {
        let record = self.record(h)?;
        if !record.committed() {
            return Err(type_error(format!(
                "datatype {h:#x} is not committed (call MPI_Type_commit before communicating with it)"
            )));
        }
        Ok(record.dt.clone())
    }

    /// The constructor argument `h`: predefined by handle, a user type by its record.
    pub fn type_ref(&self, h: MPI_Datatype) -> Result<TypeRef> {
        if crate::datatypes::builtin(h).is_some() {
            return Ok(TypeRef::Named(h));
        }
        Ok(TypeRef::Derived(self.record(h)?.clone()))
    }

    /// Registers a record under a new handle.
    pub fn insert(&mut self, record: Rc<Record>) -> Result<MPI_Datatype> {
        let entry = Entry {
            record,
            name: String::new(),
            permanent: false,
        };
        let slot = match self.free.pop() {
            Some(s) => s,
            None if self.slots.len() <= SLOT_MASK as usize => {
                self.slots.push(Slot::default());
                (self.slots.len() - 1) as u32
            }
            None => {
                return Err(MpiError::new(
                    ErrorClass::NoMem,
                    format!("more than {} datatypes exist at once", SLOT_MASK + 1),
                ))
            }
        };
        let s = &mut self.slots[slot as usize];
        s.entry = Some(entry);
        Ok((USER | s.generation << SLOT_BITS | slot) as MPI_Datatype)
    }

    /// A handle for a constructor argument returned by `get_contents` (predefined handles are
    /// returned as they are; a user record gets a new handle the caller frees).
    pub fn handle_for(&mut self, r: &TypeRef) -> Result<MPI_Datatype> {
        match r {
            TypeRef::Named(h) => Ok(*h),
            TypeRef::Derived(record) => self.insert(record.clone()),
        }
    }

    /// Frees user handle `h` (the record lives on while other types or operations use it).
    pub fn remove(&mut self, h: MPI_Datatype) -> Result<()> {
        if crate::datatypes::builtin(h).is_some() {
            return Err(type_error(format!(
                "{} is predefined and cannot be freed",
                crate::datatypes::name(h).unwrap_or("the datatype")
            )));
        }
        if self.entry(h).ok_or_else(|| Self::missing(h))?.permanent {
            return Ok(());
        }
        let (slot, _) = slot_of(h).expect("a live entry has a user handle");
        let s = &mut self.slots[slot];
        s.entry = None;
        s.generation = (s.generation + 1) & GEN_MASK;
        self.free.push(slot as u32);
        Ok(())
    }

    /// Whether `h` is one of the parameterised Fortran types, which freeing leaves alone.
    pub fn is_permanent(&self, h: MPI_Datatype) -> bool {
        self.entry(h).is_some_and(|e| e.permanent)
    }

    /// The cached handle of an `MPI_Type_create_f90_*` type, creating it on first use.
    pub fn f90(
        &mut self,
        key: (Combiner, c_int, c_int),
        make: impl FnOnce() -> Record,
    ) -> Result<MPI_Datatype> {
        if let Some(&h) = self.f90.get(&key) {
            return Ok(h);
        }
        let record = make();
        record.commit();
        let h = self.insert(Rc::new(record))?;
        if let Some(e) = self.entry_mut(h) {
            e.permanent = true;
        }
        self.f90.insert(key, h);
        Ok(h)
    }

    /// The name of a datatype (`MPI_Type_get_name`): set by the application, the MPI name of a
    /// predefined type, or empty.
    pub fn name(&self, h: MPI_Datatype) -> Result<String> {
        if let Some(n) = self.renamed.get(&h) {
            return Ok(n.clone());
        }
        if let Some(n) = crate::datatypes::name(h) {
            return Ok(n.to_string());
        }
        Ok(self.entry(h).ok_or_else(|| Self::missing(h))?.name.clone())
    }

    /// Names a datatype (`MPI_Type_set_name`).
    pub fn set_name(&mut self, h: MPI_Datatype, name: String) -> Result<()> {
        if crate::datatypes::builtin(h).is_some() {
            self.renamed.insert(h, name);
            return Ok(());
        }
        self.entry_mut(h).ok_or_else(|| Self::missing(h))?.name = name;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reflex_engine::datatype::Layout;

    const INT: MPI_Datatype = 0x4c000405;

    fn contiguous(n: usize, of: &TypeRef) -> Rc<Record> {
        let child = of.datatype();
        let dt = Datatype::derived(Layout::vector(n, 1, child.extent(), child).unwrap());
        Rc::new(Record::new(
            dt,
            Combiner::Contiguous,
            vec![n as c_int],
            vec![],
            vec![of.clone()],
        ))
    }

    #[test]
    fn handles_are_in_the_indirect_datatype_range_and_freed_ones_stay_invalid() {
        let mut t = TypeTable::default();
        let h = t.insert(contiguous(2, &TypeRef::Named(INT))).unwrap();
        assert_eq!(h as u32 & 0xfc00_0000, 0xcc00_0000);
        assert!(crate::datatypes::builtin(h).is_none());
        assert_eq!(t.any(h).unwrap().dt.size(), 8);
        t.remove(h).unwrap();
        let err = t.any(h).unwrap_err();
        assert_eq!(err.class, ErrorClass::Type);
        assert!(err.message.contains("freed"), "{}", err.message);
        // The slot is reused under another generation: the old handle stays invalid.
        let h2 = t.insert(contiguous(3, &TypeRef::Named(INT))).unwrap();
        assert_eq!(h2 as u32 & SLOT_MASK, h as u32 & SLOT_MASK);
        assert_ne!(h2, h);
        assert!(t.any(h).is_err());
        assert_eq!(t.remove(INT).unwrap_err().class, ErrorClass::Type);
        assert!(t.any(DATATYPE_NULL).unwrap_err().message.contains("NULL"));
    }

    #[test]
    fn communication_needs_a_commit_and_contents_outlive_inner_handles() {
        let mut t = TypeTable::default();
        let inner = t.insert(contiguous(2, &TypeRef::Named(INT))).unwrap();
        let inner_ref = t.type_ref(inner).unwrap();
        let outer = t.insert(contiguous(3, &inner_ref)).unwrap();
        let err = t.committed(outer).unwrap_err();
        assert!(err.message.contains(&format!("{outer:#x}")));
        t.record(outer).unwrap().commit();
        assert_eq!(t.committed(outer).unwrap().size(), 24);
        t.remove(inner).unwrap();
        // get_contents hands out a new handle for the (freed) inner type.
        let arg = t.record(outer).unwrap().types[0].clone();
        let again = t.handle_for(&arg).unwrap();
        assert_ne!(again, inner);
        assert_eq!(t.record(again).unwrap().combiner, Combiner::Contiguous);
        assert_eq!(t.handle_for(&TypeRef::Named(INT)).unwrap(), INT);
    }

    #[test]
    fn names_default_to_the_mpi_name_or_empty() {
        let mut t = TypeTable::default();
        assert_eq!(t.name(INT).unwrap(), "MPI_INT");
        let h = t.insert(contiguous(1, &TypeRef::Named(INT))).unwrap();
        assert_eq!(t.name(h).unwrap(), "");
        t.set_name(h, "mine".into()).unwrap();
        t.set_name(INT, "an int".into()).unwrap();
        assert_eq!(
            (t.name(h).unwrap(), t.name(INT).unwrap()),
            ("mine".into(), "an int".into())
        );
    }

    #[test]
    fn f90_types_are_cached_and_never_freed() {
        let mut t = TypeTable::default();
        let make = || {
            Record::new(
                Datatype::Basic(crate::datatypes::builtin(INT).unwrap()),
                Combiner::F90Integer,
                vec![9],
                vec![],
                vec![],
            )
        };
        let a = t.f90((Combiner::F90Integer, 9, 0), make).unwrap();
        let b = t.f90((Combiner::F90Integer, 9, 0), make).unwrap();
        assert_eq!(a, b);
        assert!(t.record(a).unwrap().committed());
        t.remove(a).unwrap();
        assert!(t.any(a).is_ok());
    }
}
