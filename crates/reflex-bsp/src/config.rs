//! BSPlib's one setting, `REFLEX_BSP_DEBUG`, read at `bsp_begin` (no recompilation needed).
//!
//! | value | meaning |
//! |---|---|
//! | unset, `0`, `off` | no checks beyond the always-on ones (bounds, unknown registrations, registration counts) |
//! | `1`, `on`, `abort` | check every superstep; report errors with their source lines, then stop the job |
//! | `warn` | check every superstep; report, and carry on |

use crate::loc::{usage, BspResult};

/// The environment variable that switches the debug mode on.
pub const DEBUG_VAR: &str = "REFLEX_BSP_DEBUG";

/// What the debug mode does with the errors it finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DebugMode {
    Off,
    /// Report, then stop the job (exit status 1).
    Abort,
    /// Report and carry on.
    Warn,
}

impl DebugMode {
    /// Parses a value of `REFLEX_BSP_DEBUG`; unknown values are rejected.
    pub fn parse(value: Option<&str>) -> BspResult<DebugMode> {
        match value.map(str::trim) {
            None | Some("" | "0" | "off") => Ok(DebugMode::Off),
            Some("1" | "on" | "abort") => Ok(DebugMode::Abort),
            Some("warn") => Ok(DebugMode::Warn),
            Some(other) => usage(format!(
                "{DEBUG_VAR}={other} is not a setting: use 0 (off), 1 (check, stop on errors) or warn (check, carry on)"
            )),
        }
    }

    /// The mode the environment asks for.
    pub fn from_env() -> BspResult<DebugMode> {
        DebugMode::parse(std::env::var(DEBUG_VAR).ok().as_deref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values() {
        assert_eq!(DebugMode::parse(None), Ok(DebugMode::Off));
        assert_eq!(DebugMode::parse(Some("0")), Ok(DebugMode::Off));
        assert_eq!(DebugMode::parse(Some("1")), Ok(DebugMode::Abort));
        assert_eq!(DebugMode::parse(Some("warn")), Ok(DebugMode::Warn));
        assert!(DebugMode::parse(Some("yes")).is_err());
    }
}
