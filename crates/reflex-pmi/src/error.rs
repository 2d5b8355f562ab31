//! The error type of the PMI client: what went wrong, with the OS error or the offending text.

use std::{fmt, io};

use crate::codec::CodecError;

/// Everything that can go wrong while talking PMI.
#[derive(Debug)]
pub enum PmiError {
    /// A PMI environment variable is present but unusable (`PMI_FD=abc`, `PMI_RANK` missing, ...).
    Env {
        var: &'static str,
        value: String,
        reason: String,
    },
    /// A system call on the PMI connection failed.
    Io {
        context: &'static str,
        source: io::Error,
    },
    /// The server closed the connection while a reply was expected.
    Disconnected { waiting_for: &'static str },
    /// A line could not be formatted or parsed.
    Codec(CodecError),
    /// The server answered with something other than the expected reply.
    UnexpectedReply {
        expected: &'static str,
        line: String,
    },
    /// The server answered with a non-zero `rc`.
    Failed {
        cmd: &'static str,
        rc: String,
        msg: String,
    },
    /// `get` of a key nobody put (before the last barrier).
    KeyNotFound { key: String },
    /// A key or value breaks a limit the server announced (`get_maxes`) or the line limit.
    Limit { what: String },
    /// `PMI_process_mapping` is not of the form `(vector,(start,count,ranks),...)`.
    BadMapping { mapping: String, reason: String },
    /// A value written with `put_large` is damaged (missing chunk, bad header).
    BadLargeValue { key: String, reason: String },
    /// `PMIX_NAMESPACE` is set but the PMIx library cannot be loaded.
    PmixUnavailable { library: String, reason: String },
    /// A request the client refuses to send (an empty spawn, a line break inside an argument).
    BadRequest { reason: String },
    /// The backend (PMIx, singleton) cannot do `what`.
    Unsupported {
        what: &'static str,
        backend: &'static str,
    },
    /// `lookup_name` or `unpublish_name` of a service nobody published.
    NameNotFound { service: String },
    /// A PMIx call failed with a status code.
    Pmix {
        call: &'static str,
        status: i32,
        text: String,
    },
}

impl fmt::Display for PmiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Env { var, value, reason } => {
                write!(f, "bad pmi environment: {var}={value:?}: {reason}")
            }
            Self::Io { context, source } => write!(f, "pmi {context}: {source}"),
            Self::Disconnected { waiting_for } => {
                write!(
                    f,
                    "pmi server closed the connection while waiting for {waiting_for}"
                )
            }
            Self::Codec(e) => e.fmt(f),
            Self::UnexpectedReply { expected, line } => {
                write!(
                    f,
                    "pmi server sent {:?} where {expected} was expected",
                    line.trim_end()
                )
            }
            Self::Failed { cmd, rc, msg } => write!(f, "pmi {cmd} failed with rc={rc}: {msg}"),
            Self::KeyNotFound { key } => write!(f, "pmi key {key:?} not found"),
            Self::Limit { what } => write!(f, "pmi limit exceeded: {what}"),
            Self::BadMapping { mapping, reason } => {
                write!(f, "bad PMI_process_mapping {mapping:?}: {reason}")
            }
            Self::BadLargeValue { key, reason } => {
                write!(f, "bad large pmi value {key:?}: {reason}")
            }
            Self::PmixUnavailable { library, reason } => write!(
                f,
                "PMIX_NAMESPACE is set (srun --mpi=pmix or Open MPI mpirun) but {library} cannot \
                 be loaded: {reason}; install the PMIx library (Debian: libpmix2) or launch with \
                 srun --mpi=pmi2 or Reflex's mpiexec"
            ),
            Self::BadRequest { reason } => write!(f, "pmi request refused: {reason}"),
            Self::Unsupported { what, backend } => {
                write!(f, "{what} is not supported under {backend}")
            }
            Self::NameNotFound { service } => {
                write!(f, "service name {service:?} is not published")
            }
            Self::Pmix { call, status, text } => write!(f, "{call} failed: {text} ({status})"),
        }
    }
}

impl std::error::Error for PmiError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            Self::Codec(e) => Some(e),
            _ => None,
        }
    }
}

impl From<CodecError> for PmiError {
    fn from(e: CodecError) -> Self {
        Self::Codec(e)
    }
}
