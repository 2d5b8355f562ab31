//! MPI error classes (with MPICH's ABI values) and the engine's error type.
//!
//! Every fallible engine call returns [`Result`]; the error carries its MPI class and a precise,
//! lowercase message written where the error was decided. The C ABI layer turns it into an error
//! code and hands it to the communicator's error handler.

use std::fmt;

/// MPI error classes; the discriminants are the values of MPICH's `mpi.h` (the ABI we implement).
#[allow(missing_docs)] // each variant is the MPI class of the same name
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum ErrorClass {
    Success = 0,
    Buffer = 1,
    Count = 2,
    Type = 3,
    Tag = 4,
    Comm = 5,
    Rank = 6,
    Root = 7,
    Group = 8,
    Op = 9,
    Topology = 10,
    Dims = 11,
    Arg = 12,
    Unknown = 13,
    Truncate = 14,
    Other = 15,
    Intern = 16,
    InStatus = 17,
    Pending = 18,
    Request = 19,
    Info = 28,
    InfoKey = 29,
    InfoValue = 30,
    InfoNokey = 31,
    NoMem = 34,
    UnsupportedOperation = 44,
    Keyval = 48,
    ProcAborted = 76,
}

impl ErrorClass {
    /// The generic description of the class (what `MPI_Error_string` prints for a bare class).
    pub fn description(self) -> &'static str {
        use ErrorClass::*;
        match self {
            Success => "no error",
            Buffer => "invalid buffer pointer",
            Count => "invalid count argument",
            Type => "invalid datatype",
            Tag => "invalid tag",
            Comm => "invalid communicator",
            Rank => "invalid rank",
            Root => "invalid root",
            Group => "invalid group",
            Op => "invalid reduction operation",
            Topology => "invalid topology",
            Dims => "invalid dimension argument",
            Arg => "invalid argument",
            Unknown => "unknown error",
            Truncate => "message truncated",
            Other => "other error",
            Intern => "internal error",
            InStatus => "error code is in status",
            Pending => "pending request",
            Request => "invalid request",
            Info => "invalid info object",
            InfoKey => "invalid info key",
            InfoValue => "invalid info value",
            InfoNokey => "info key not defined",
            NoMem => "out of memory",
            UnsupportedOperation => "unsupported operation",
            Keyval => "invalid keyval",
            ProcAborted => "peer process aborted",
        }
    }

    /// Looks a class up by its numeric value.
    pub fn from_i32(value: i32) -> Option<ErrorClass> {
        use ErrorClass::*;
        const ALL: [ErrorClass; 28] = [
            Success,
            Buffer,
            Count,
            Type,
            Tag,
            Comm,
            Rank,
            Root,
            Group,
            Op,
            Topology,
            Dims,
            Arg,
            Unknown,
            Truncate,
            Other,
            Intern,
            InStatus,
            Pending,
            Request,
            Info,
            InfoKey,
            InfoValue,
            InfoNokey,
            NoMem,
            UnsupportedOperation,
            Keyval,
            ProcAborted,
        ];
        ALL.into_iter().find(|c| *c as i32 == value)
    }
}

/// An engine error: a class and a precise message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MpiError {
    /// The MPI error class.
    pub class: ErrorClass,
    /// What went wrong, precisely (lowercase, no trailing period).
    pub message: String,
}

impl MpiError {
    /// Builds an error of `class` with `message`.
    #[cold]
    pub fn new(class: ErrorClass, message: impl Into<String>) -> Self {
        Self {
            class,
            message: message.into(),
        }
    }
}

impl fmt::Display for MpiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.class.description(), self.message)
    }
}

impl std::error::Error for MpiError {}

/// Result of an engine call.
pub type Result<T> = std::result::Result<T, MpiError>;

/// Shorthand: `Err(MpiError::new(class, format!(...)))`.
#[macro_export]
macro_rules! mpi_bail {
    ($class:ident, $($arg:tt)*) => {
        return Err($crate::error::MpiError::new($crate::error::ErrorClass::$class, format!($($arg)*)))
    };
}
