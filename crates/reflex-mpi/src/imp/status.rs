//! Status conversions between the C and Fortran bindings (MPI-3.1 §17.2.5, MPI-4.0 §19.3.5):
//! `MPI_Status_c2f`, `_f2c`, `_c2f08`, `_f082c`, `_f082f`, `_f2f08`.
//!
//! In MPICH's ABI all three forms hold the same five ints in the same order (`MPI_F_STATUS_SIZE`
//! is 5; `MPI_F08_status` is a struct of five `MPI_Fint`s, field for field the C status), so a
//! conversion is a copy. The `MPI_STATUS_IGNORE` and `MPI_F_STATUS_IGNORE` markers are not
//! statuses and are rejected (`MPI_ERR_ARG`), as are NULL pointers. Legal at any time, like the
//! other language-interoperability functions.

use crate::extras::{MPI_F08_STATUS_IGNORE, MPI_F_STATUS_IGNORE};
use crate::ffi::*;
use reflex_engine::{ErrorClass, MpiError, Result};

/// The five ints of every status form.
type Words = [MPI_Fint; 5];

const _: () = assert!(std::mem::size_of::<MPI_Status>() == std::mem::size_of::<Words>());

fn bad(what: &str) -> MpiError {
    MpiError::new(
        ErrorClass::Arg,
        format!("{what} is NULL or a STATUS_IGNORE marker, not a status"),
    )
}

/// Reads the status at `p` as its five ints (`what` names it in the error).
fn read(p: *const Words, what: &str) -> Result<Words> {
    let ignore = p.is_null()
        || p as usize == STATUS_IGNORE
        || std::ptr::eq(p.cast(), MPI_F_STATUS_IGNORE.get())
        || std::ptr::eq(p.cast(), MPI_F08_STATUS_IGNORE.get());
    if ignore {
        return Err(bad(what));
    }
    // SAFETY: not NULL nor a marker; MPI requires the argument to be a status (five ints).
    Ok(unsafe { p.read_unaligned() })
}

/// Writes `words` to the status at `p` (`what` names it in the error).
fn store(p: *mut Words, words: Words, what: &str) -> Result<()> {
    if p.is_null() || p as usize == STATUS_IGNORE {
        return Err(bad(what));
    }
    // SAFETY: not NULL nor the marker; MPI requires the argument to be a writable status.
    unsafe { p.write_unaligned(words) };
    Ok(())
}

/// Copies one status form into another.
fn convert<A, B>(from: *const A, to: *mut B) -> Result<()> {
    let words = read(from.cast(), "the input status")?;
    store(to.cast(), words, "the output status")
}

/// `MPI_Status_c2f`.
pub fn status_c2f(c_status: *const MPI_Status, f_status: *mut MPI_Fint) -> Result<()> {
    convert(c_status, f_status)
}

/// `MPI_Status_f2c`.
pub fn status_f2c(f_status: *const MPI_Fint, c_status: *mut MPI_Status) -> Result<()> {
    convert(f_status, c_status)
}

/// `MPI_Status_c2f08`.
pub fn status_c2f08(c_status: *const MPI_Status, f08_status: *mut MPI_F08_status) -> Result<()> {
    convert(c_status, f08_status)
}

/// `MPI_Status_f082c`.
pub fn status_f082c(f08_status: *const MPI_F08_status, c_status: *mut MPI_Status) -> Result<()> {
    convert(f08_status, c_status)
}

/// `MPI_Status_f082f`.
pub fn status_f082f(f08_status: *const MPI_F08_status, f_status: *mut MPI_Fint) -> Result<()> {
    convert(f08_status, f_status)
}

/// `MPI_Status_f2f08`.
pub fn status_f2f08(f_status: *const MPI_Fint, f08_status: *mut MPI_F08_status) -> Result<()> {
    convert(f_status, f08_status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_round_trip_through_every_form() {
        let c = MPI_Status {
            count_lo: 7,
            count_hi_and_cancelled: 3,
            MPI_SOURCE: 2,
            MPI_TAG: 9,
            MPI_ERROR: 0,
        };
        let mut f = [0 as MPI_Fint; 5];
        status_c2f(&c, f.as_mut_ptr()).unwrap();
        assert_eq!(f, [7, 3, 2, 9, 0]);
        let mut f08 = MPI_Status { MPI_TAG: 0, ..c };
        status_f2f08(f.as_ptr(), &mut f08).unwrap();
        let mut back = MPI_Status { MPI_TAG: 0, ..c };
        status_f082c(&f08, &mut back).unwrap();
        assert_eq!(back.MPI_TAG, 9);
        assert_eq!(back.count_hi_and_cancelled, 3);
    }

    #[test]
    fn ignore_markers_are_not_statuses() {
        let mut f = [0 as MPI_Fint; 5];
        let ignore = STATUS_IGNORE as *const MPI_Status;
        assert!(status_c2f(ignore, f.as_mut_ptr()).is_err());
        let mut c = MPI_Status::default();
        assert!(status_f2c(MPI_F_STATUS_IGNORE.get().cast(), &mut c).is_err());
        assert!(status_f2c(f.as_ptr(), std::ptr::null_mut()).is_err());
    }
}
