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
    Access = 20,
    Amode = 21,
    BadFile = 22,
    Conversion = 23,
    DupDatarep = 24,
    FileExists = 25,
    FileInUse = 26,
    File = 27,
    Info = 28,
    InfoKey = 29,
    InfoValue = 30,
    InfoNokey = 31,
    Io = 32,
    Name = 33,
    NoMem = 34,
    NotSame = 35,
    NoSpace = 36,
    NoSuchFile = 37,
    Port = 38,
    Quota = 39,
    ReadOnly = 40,
    Service = 41,
    Spawn = 42,
    UnsupportedDatarep = 43,
    UnsupportedOperation = 44,
    Win = 45,
    Base = 46,
    Locktype = 47,
    Keyval = 48,
    RmaConflict = 49,
    RmaSync = 50,
    Size = 51,
    Disp = 52,
    Assert = 53,
    RmaRange = 55,
    RmaAttach = 56,
    RmaShared = 57,
    RmaFlavor = 58,
    TMemory = 59,
    TNotInitialized = 60,
    TCannotInit = 61,
    TInvalidIndex = 62,
    TInvalidItem = 63,
    TInvalidHandle = 64,
    TOutOfHandles = 65,
    TOutOfSessions = 66,
    TInvalidSession = 67,
    TCvarSetNotNow = 68,
    TCvarSetNever = 69,
    TPvarNoStartstop = 70,
    TPvarNoWrite = 71,
    TPvarNoAtomic = 72,
    TInvalidName = 73,
    TInvalid = 74,
    Session = 75,
    ProcAborted = 76,
    ValueTooLarge = 77,
    TNotSupported = 78,
}

/// Every class, for lookups by value.
const ALL: [ErrorClass; 78] = {
    use ErrorClass::*;
    [
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
        Access,
        Amode,
        BadFile,
        Conversion,
        DupDatarep,
        FileExists,
        FileInUse,
        File,
        Info,
        InfoKey,
        InfoValue,
        InfoNokey,
        Io,
        Name,
        NoMem,
        NotSame,
        NoSpace,
        NoSuchFile,
        Port,
        Quota,
        ReadOnly,
        Service,
        Spawn,
        UnsupportedDatarep,
        UnsupportedOperation,
        Win,
        Base,
        Locktype,
        Keyval,
        RmaConflict,
        RmaSync,
        Size,
        Disp,
        Assert,
        RmaRange,
        RmaAttach,
        RmaShared,
        RmaFlavor,
        TMemory,
        TNotInitialized,
        TCannotInit,
        TInvalidIndex,
        TInvalidItem,
        TInvalidHandle,
        TOutOfHandles,
        TOutOfSessions,
        TInvalidSession,
        TCvarSetNotNow,
        TCvarSetNever,
        TPvarNoStartstop,
        TPvarNoWrite,
        TPvarNoAtomic,
        TInvalidName,
        TInvalid,
        Session,
        ProcAborted,
        ValueTooLarge,
        TNotSupported,
    ]
};

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
            Access => "permission denied",
            Amode => "invalid file access mode",
            BadFile => "invalid file name",
            Conversion => "data conversion error",
            DupDatarep => "data representation already defined",
            FileExists => "file exists",
            FileInUse => "file in use",
            File => "invalid file handle",
            Info => "invalid info object",
            InfoKey => "invalid info key",
            InfoValue => "invalid info value",
            InfoNokey => "info key not defined",
            Io => "i/o error",
            Name => "invalid service name",
            NoMem => "out of memory",
            NotSame => "collective arguments not identical",
            NoSpace => "no space left",
            NoSuchFile => "no such file",
            Port => "invalid port name",
            Quota => "quota exceeded",
            ReadOnly => "read-only file or file system",
            Service => "unknown service name",
            Spawn => "could not spawn processes",
            UnsupportedDatarep => "unsupported data representation",
            UnsupportedOperation => "unsupported operation",
            Win => "invalid window",
            Base => "invalid base address",
            Locktype => "invalid lock type",
            Keyval => "invalid keyval",
            RmaConflict => "conflicting accesses to a window",
            RmaSync => "wrong synchronisation of RMA calls",
            Size => "invalid size argument",
            Disp => "invalid displacement argument",
            Assert => "invalid assert argument",
            RmaRange => "target memory is not part of the window",
            RmaAttach => "memory cannot be attached",
            RmaShared => "memory cannot be shared",
            RmaFlavor => "wrong window flavor",
            TMemory => "tool interface: out of memory",
            TNotInitialized => "tool interface not initialised",
            TCannotInit => "tool interface cannot be initialised now",
            TInvalidIndex => "tool interface: invalid index",
            TInvalidItem => "tool interface: invalid item",
            TInvalidHandle => "tool interface: invalid handle",
            TOutOfHandles => "tool interface: out of handles",
            TOutOfSessions => "tool interface: out of sessions",
            TInvalidSession => "tool interface: invalid session",
            TCvarSetNotNow => "control variable cannot be set now",
            TCvarSetNever => "control variable cannot be set",
            TPvarNoStartstop => "performance variable cannot be started or stopped",
            TPvarNoWrite => "performance variable cannot be written",
            TPvarNoAtomic => "performance variable cannot be read and written atomically",
            TInvalidName => "tool interface: invalid name",
            TInvalid => "tool interface: invalid use",
            Session => "invalid session",
            ProcAborted => "peer process aborted",
            ValueTooLarge => "value too large to store",
            TNotSupported => "tool interface: not supported",
        }
    }

    /// Looks a class up by its numeric value.
    pub fn from_i32(value: i32) -> Option<ErrorClass> {
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
