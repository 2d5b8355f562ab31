//! Error type of the simulator: every fallible operation returns [`SimError`], whose `Display`
//! is a lowercase, precise message (with the file line for bad input and the OS error for I/O).

use std::fmt;

/// Errors reported by `reflex-sim`; nothing in the crate panics on bad input.
#[derive(Debug)]
pub enum SimError {
    /// A topology/routing/configuration file is malformed: `line` is 1-based (0 = whole file).
    Parse {
        /// Name of the file or format being read.
        what: String,
        /// 1-based line number (0 when the error concerns the whole input).
        line: usize,
        /// What is wrong, lowercase.
        reason: String,
    },
    /// An I/O operation failed (includes the OS error).
    Io {
        /// What was being done, e.g. `writing report.md`.
        context: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// A request is inconsistent with the network (unknown switch, too many ports, ...).
    Invalid(String),
    /// A correctness check failed (cyclic channel dependencies, unreachable pair, ...).
    Check(String),
    /// The simulator's watchdog saw no progress while packets were in the network.
    Deadlock(String),
}

impl SimError {
    /// Shorthand for [`SimError::Invalid`].
    pub fn invalid(msg: impl Into<String>) -> Self {
        SimError::Invalid(msg.into())
    }

    /// Shorthand for [`SimError::Parse`].
    pub fn parse(what: &str, line: usize, reason: impl Into<String>) -> Self {
        SimError::Parse {
            what: what.to_string(),
            line,
            reason: reason.into(),
        }
    }

    /// Wraps an I/O error with what was being done.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        SimError::Io {
            context: context.into(),
            source,
        }
    }
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Parse {
                what,
                line: 0,
                reason,
            } => write!(f, "{what}: {reason}"),
            SimError::Parse { what, line, reason } => write!(f, "{what}: line {line}: {reason}"),
            SimError::Io { context, source } => write!(f, "{context}: {source}"),
            SimError::Invalid(m) => write!(f, "invalid request: {m}"),
            SimError::Check(m) => write!(f, "check failed: {m}"),
            SimError::Deadlock(m) => write!(f, "deadlock: {m}"),
        }
    }
}

impl std::error::Error for SimError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SimError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Result alias used throughout the crate.
pub type Result<T> = std::result::Result<T, SimError>;
