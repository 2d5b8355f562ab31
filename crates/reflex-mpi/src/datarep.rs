//! Data representations of MPI-IO (MPI-4.0 §14.5): which one a file view uses, and the
//! registry of the representations the application defines with `MPI_Register_datarep`.
//!
//! "native" and "internal" (the same here) store the bytes as they are in memory; "external32"
//! is big-endian IEEE with the sizes of MPI's Table 14.2 (`crate::external32`); a registered
//! representation calls the application's conversion functions (or stores native bytes where it
//! gave `MPI_CONVERSION_FN_NULL`) and its extent function gives each predefined type's size in
//! the file. The conversions themselves run in `imp/file_rep.rs`.

use crate::ffi::{MPI_Aint, MPI_Count, MPI_Datatype, MPI_Offset};
use reflex_engine::{ErrorClass, MpiError, Result};
use std::ffi::{c_int, c_void};

/// `MPI_MAX_DATAREP_STRING` (MPICH's value, the terminating NUL included).
pub const MAX_DATAREP_STRING: usize = 128;

/// `MPI_Datarep_conversion_function`.
pub type ConversionFn = unsafe extern "C" fn(
    *mut c_void,
    MPI_Datatype,
    c_int,
    *mut c_void,
    MPI_Offset,
    *mut c_void,
) -> c_int;
/// `MPI_Datarep_conversion_function_c` (the count is an `MPI_Count`).
pub type ConversionFnC = unsafe extern "C" fn(
    *mut c_void,
    MPI_Datatype,
    MPI_Count,
    *mut c_void,
    MPI_Offset,
    *mut c_void,
) -> c_int;
/// `MPI_Datarep_extent_function`.
pub type ExtentFn = unsafe extern "C" fn(MPI_Datatype, *mut MPI_Aint, *mut c_void) -> c_int;

/// A conversion function of a registered representation, in either C binding.
#[derive(Debug, Clone, Copy)]
pub enum Conversion {
    /// From `MPI_Register_datarep`.
    Int(ConversionFn),
    /// From `MPI_Register_datarep_c`.
    Count(ConversionFnC),
}

impl Conversion {
    /// Calls the function on `count` elements of `datatype` at `userbuf` (position 0: one call
    /// converts the whole access), with the file-side bytes at `filebuf`; returns its error code.
    ///
    /// # Safety
    /// `userbuf` holds `count` elements of `datatype` and `filebuf` their bytes in the file
    /// representation, as the registered function expects.
    pub unsafe fn call(
        self,
        userbuf: *mut c_void,
        datatype: MPI_Datatype,
        count: usize,
        filebuf: *mut c_void,
        extra: *mut c_void,
    ) -> Result<c_int> {
        Ok(match self {
            Conversion::Int(f) => {
                let n = c_int::try_from(count).map_err(|_| {
                    MpiError::new(
                        ErrorClass::Count,
                        format!("{count} elements do not fit the int count of the conversion function (register it with MPI_Register_datarep_c)"),
                    )
                })?;
                // SAFETY: the caller's contract.
                unsafe { f(userbuf, datatype, n, filebuf, 0, extra) }
            }
            // SAFETY: the caller's contract.
            Conversion::Count(f) => unsafe {
                f(userbuf, datatype, count as MPI_Count, filebuf, 0, extra)
            },
        })
    }
}

/// A representation the application registered.
#[derive(Debug, Clone)]
pub struct UserRep {
    /// Its name.
    pub name: String,
    /// File to memory (`None`: `MPI_CONVERSION_FN_NULL`, the file holds native bytes).
    pub read: Option<Conversion>,
    /// Memory to file (`None`: `MPI_CONVERSION_FN_NULL`).
    pub write: Option<Conversion>,
    /// The size of a predefined type in the file.
    pub extent: ExtentFn,
    /// The `extra_state` argument handed to every function.
    pub extra: *mut c_void,
}

impl UserRep {
    /// The extent of predefined type `h` in files of this representation.
    pub fn file_extent(&self, h: MPI_Datatype) -> Result<usize> {
        let mut extent: MPI_Aint = 0;
        // SAFETY: the application registered `extent` for this; it writes one MPI_Aint.
        let rc = unsafe { (self.extent)(h, &mut extent, self.extra) };
        if rc != 0 {
            return Err(MpiError::new(
                ErrorClass::Conversion,
                format!(
                    "the extent function of data representation \"{}\" returned error {rc}",
                    self.name
                ),
            ));
        }
        usize::try_from(extent).map_err(|_| {
            MpiError::new(
                ErrorClass::Conversion,
                format!(
                    "the extent function of data representation \"{}\" gave a negative extent ({extent})",
                    self.name
                ),
            )
        })
    }
}

/// The representation of a file view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Rep {
    /// "native".
    #[default]
    Native,
    /// "internal" (native bytes here).
    Internal,
    /// "external32".
    External32,
    /// A registered one, by its index in [`Datareps`].
    User(usize),
}

/// The registered representations (they live as long as the process: MPI has no way to
/// unregister one).
#[derive(Debug, Default)]
pub struct Datareps {
    reps: Vec<UserRep>,
}

impl Datareps {
    /// Registers `rep`: `MPI_ERR_DUP_DATAREP` when its name is taken (the three predefined
    /// names included), `MPI_ERR_ARG` when it is empty or too long.
    pub fn register(&mut self, rep: UserRep) -> Result<()> {
        if rep.name.is_empty() || rep.name.len() >= MAX_DATAREP_STRING {
            return Err(MpiError::new(
                ErrorClass::Arg,
                format!(
                    "a data representation name must have 1 to {} characters (\"{}\" has {})",
                    MAX_DATAREP_STRING - 1,
                    rep.name,
                    rep.name.len()
                ),
            ));
        }
        if self.find(&rep.name).is_ok() {
            return Err(MpiError::new(
                ErrorClass::DupDatarep,
                format!("data representation \"{}\" is already defined", rep.name),
            ));
        }
        self.reps.push(rep);
        Ok(())
    }

    /// The representation called `name`.
    pub fn find(&self, name: &str) -> Result<Rep> {
        match name {
            "native" => return Ok(Rep::Native),
            "internal" => return Ok(Rep::Internal),
            "external32" => return Ok(Rep::External32),
            _ => {}
        }
        self.reps
            .iter()
            .position(|r| r.name == name)
            .map(Rep::User)
            .ok_or_else(|| {
                MpiError::new(
                    ErrorClass::UnsupportedDatarep,
                    format!(
                        "unknown data representation \"{name}\" (\"native\", \"internal\", \"external32\" or one registered with MPI_Register_datarep)"
                    ),
                )
            })
    }

    /// A registered representation.
    pub fn user(&self, index: usize) -> &UserRep {
        &self.reps[index]
    }

    /// The name of `rep`.
    pub fn name(&self, rep: Rep) -> &str {
        match rep {
            Rep::Native => "native",
            Rep::Internal => "internal",
            Rep::External32 => "external32",
            Rep::User(i) => &self.reps[i].name,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    unsafe extern "C" fn extent_of_8(_: MPI_Datatype, e: *mut MPI_Aint, _: *mut c_void) -> c_int {
        // SAFETY: the caller passes a valid pointer.
        unsafe { *e = 8 };
        0
    }

    fn rep(name: &str) -> UserRep {
        UserRep {
            name: name.into(),
            read: None,
            write: None,
            extent: extent_of_8,
            extra: std::ptr::null_mut(),
        }
    }

    #[test]
    fn names_are_unique_and_predefined_ones_taken() {
        let mut reps = Datareps::default();
        reps.register(rep("mine")).unwrap();
        assert_eq!(reps.find("mine").unwrap(), Rep::User(0));
        assert_eq!(reps.name(Rep::User(0)), "mine");
        for taken in ["mine", "native", "internal", "external32"] {
            let e = reps.register(rep(taken)).unwrap_err();
            assert_eq!(e.class, ErrorClass::DupDatarep, "{taken}");
        }
        assert_eq!(reps.register(rep("")).unwrap_err().class, ErrorClass::Arg);
        let long = "x".repeat(MAX_DATAREP_STRING);
        assert_eq!(
            reps.register(rep(&long)).unwrap_err().class,
            ErrorClass::Arg
        );
        assert_eq!(reps.find("external32").unwrap(), Rep::External32);
        assert_eq!(
            reps.find("other").unwrap_err().class,
            ErrorClass::UnsupportedDatarep
        );
        assert_eq!(reps.user(0).file_extent(3).unwrap(), 8);
    }
}
