//! Events and event sources (MPI-4.0 §15.3.8).
//!
//! Reflex raises no events (the standard allows none), so every call naming an event index
//! answers `MPI_T_ERR_INVALID_INDEX`, every call naming an event registration or instance
//! `MPI_T_ERR_INVALID_HANDLE` (none can exist), lookups by name `MPI_T_ERR_INVALID_NAME`.
//! There is one source, so that tools can still take timestamps on the clock events would
//! use: the monotonic clock in nanoseconds since the process first looked at it (ordered).

use super::error;
use reflex_engine::{ErrorClass, MpiError, Result};
use std::ffi::c_int;
use std::sync::OnceLock;
use std::time::Instant;

/// The one source.
pub const SOURCE_NAME: &str = "reflex_monotonic_clock";
pub const SOURCE_DESC: &str = "the monotonic clock (CLOCK_MONOTONIC), in nanoseconds since \
                               this process first read it";
/// Ticks per second of the source.
pub const TICKS_PER_SECOND: i64 = 1_000_000_000;
/// `MPI_T_SOURCE_ORDERED`.
pub const ORDERED: c_int = 0;

/// The source at `index` (there is one: index 0).
pub fn source(index: c_int) -> Result<()> {
    match index {
        0 => Ok(()),
        _ => Err(error(
            ErrorClass::TInvalidIndex,
            format!("{index} is not an event source index (there is 1 source: 0)"),
        )),
    }
}

/// The source's time now, in ticks.
pub fn timestamp() -> i64 {
    static START: OnceLock<Instant> = OnceLock::new();
    let nanos = START.get_or_init(Instant::now).elapsed().as_nanos();
    i64::try_from(nanos).unwrap_or(i64::MAX)
}

/// The error of every call that names an event type.
pub fn no_event(index: c_int) -> MpiError {
    error(
        ErrorClass::TInvalidIndex,
        format!("{index} is not an event index: Reflex raises no events"),
    )
}

/// The error of every call that names an event registration or instance.
pub fn no_handle(what: &str) -> MpiError {
    error(
        ErrorClass::TInvalidHandle,
        format!("not a valid {what}: Reflex raises no events, so none exists"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_source_whose_clock_moves_forward() {
        assert!(source(0).is_ok());
        assert_eq!(source(1).unwrap_err().class, ErrorClass::TInvalidIndex);
        let (a, b) = (timestamp(), timestamp());
        assert!(a >= 0 && b >= a);
        assert_eq!(no_event(0).class, ErrorClass::TInvalidIndex);
        assert_eq!(no_handle("x").class, ErrorClass::TInvalidHandle);
    }
}
