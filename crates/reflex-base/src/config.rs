//! Every `REFLEX_*` setting, typed, with its default and one-line doc, in ONE table.
//!
//! The table at the bottom of the "settings" section is the single place where settings are
//! documented: a `macro_rules!` turns each line into a field of [`Config`], a parser arm and a
//! row of [`Config::describe`] (which `reflex-info`, and later MPI_T, print). Adding a setting is
//! one line. [`Config::from_vars`] reads any list of variables (testable), [`Config::from_env`]
//! the process environment. Unknown `REFLEX_*` names are warnings naming the closest valid name
//! (Levenshtein distance); a malformed value for a known name is an error naming the variable,
//! the bad value and the expected form.

use std::ffi::OsStr;
use std::fmt;

/// Prefix of every Reflex environment variable.
pub const PREFIX: &str = "REFLEX_";

/// Set by Reflex's launchers for the library (not settings): the pid of the process that
/// started this rank, which the rank dies with (see `reflex_mpi`'s `MPI_Init`).
pub const LAUNCHER_PID: &str = "REFLEX_LAUNCHER_PID";

/// Read by BSPlib (`libbsp.so`, crate `reflex-bsp`), not by the MPI library: its debug mode.
pub const BSP_DEBUG: &str = "REFLEX_BSP_DEBUG";

/// Read by `mpiexec` (crate `reflexd`, `config::client_config_paths`): its configuration file.
pub const CLIENT_CONFIG: &str = "REFLEX_CONFIG";

/// Variables with Reflex's prefix that belong to other parts of Reflex (not unknown settings).
const NOT_SETTINGS: [&str; 3] = [LAUNCHER_PID, BSP_DEBUG, CLIENT_CONFIG];

/// How a setting's value is read from text and shown.
pub trait SettingValue: Sized {
    /// Parses the text of an environment variable (already trimmed).
    fn parse_setting(text: &str) -> Option<Self>;
    /// The value as a user would write it (parses back to the same value).
    fn show(&self) -> String;
    /// What a valid value looks like, for error messages.
    fn expected() -> String;
    /// What kind of value it is (how tools such as MPI_T present it).
    fn kind() -> SettingKind;
}

/// The kind of a setting's value, for tools that present settings typed (MPI_T control
/// variables): a byte count, a whole number, one of a fixed list of words, or free text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingKind {
    /// A [`ByteSize`].
    Bytes,
    /// A whole number (`u32`, [`TcpStreams`]).
    Number,
    /// One of these words (an enum setting, in declaration order).
    Choice(&'static [&'static str]),
    /// Any text.
    Text,
}

/// A byte count, with an optional `k`/`M`/`G` suffix (powers of 1024): `16384`, `64k`, `4M`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ByteSize(pub usize);

impl ByteSize {
    /// `n` KiB.
    pub const fn kib(n: usize) -> Self {
        Self(n * 1024)
    }

    /// The count in bytes.
    pub const fn get(self) -> usize {
        self.0
    }
}

impl From<ByteSize> for usize {
    fn from(size: ByteSize) -> usize {
        size.0
    }
}

/// Binary units, largest first, for showing sizes.
const UNITS: [(&str, u32); 3] = [("G", 30), ("M", 20), ("K", 10)];

impl SettingValue for ByteSize {
    fn parse_setting(text: &str) -> Option<Self> {
        let split = text
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len());
        let (digits, suffix) = text.split_at(split);
        let number: usize = digits.parse().ok()?;
        let shift = match suffix.to_ascii_lowercase().as_str() {
            "" | "b" => 0,
            "k" | "kb" | "kib" => 10,
            "m" | "mb" | "mib" => 20,
            "g" | "gb" | "gib" => 30,
            _ => return None,
        };
        number.checked_mul(1usize.checked_shl(shift)?).map(ByteSize)
    }

    fn show(&self) -> String {
        for (unit, shift) in UNITS {
            let scale = 1usize << shift;
            if self.0 != 0 && self.0 & (scale - 1) == 0 {
                return format!("{}{unit}", self.0 / scale);
            }
        }
        self.0.to_string()
    }

    fn expected() -> String {
        "a byte size such as 16384, 64k or 4M".to_owned()
    }

    fn kind() -> SettingKind {
        SettingKind::Bytes
    }
}

/// Sockets per peer of the TCP transport: a whole number from 1 to [`TcpStreams::MAX`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpStreams(u8);

impl TcpStreams {
    /// Most streams per peer (the wire format's limit).
    pub const MAX: u8 = 8;

    /// The count.
    pub const fn get(self) -> usize {
        self.0 as usize
    }
}

impl SettingValue for TcpStreams {
    fn parse_setting(text: &str) -> Option<Self> {
        let n: u8 = text.parse().ok()?;
        (1..=Self::MAX).contains(&n).then_some(TcpStreams(n))
    }

    fn show(&self) -> String {
        self.0.to_string()
    }

    fn expected() -> String {
        format!("a whole number from 1 to {}", Self::MAX)
    }

    fn kind() -> SettingKind {
        SettingKind::Number
    }
}

impl SettingValue for u32 {
    fn parse_setting(text: &str) -> Option<Self> {
        text.parse().ok()
    }

    fn show(&self) -> String {
        self.to_string()
    }

    fn expected() -> String {
        format!("a whole number from 0 to {}", u32::MAX)
    }

    fn kind() -> SettingKind {
        SettingKind::Number
    }
}

impl SettingValue for String {
    fn parse_setting(text: &str) -> Option<Self> {
        Some(text.to_owned())
    }

    fn show(&self) -> String {
        self.clone()
    }

    fn expected() -> String {
        "any text".to_owned()
    }

    fn kind() -> SettingKind {
        SettingKind::Text
    }
}

/// Declares an enum setting type whose variants are written as the given lowercase words.
macro_rules! setting_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl SettingValue for $name {
            fn parse_setting(text: &str) -> Option<Self> {
                $(if text.eq_ignore_ascii_case($text) {
                    return Some(Self::$variant);
                })+
                None
            }

            fn show(&self) -> String {
                match self {
                    $(Self::$variant => $text.to_owned()),+
                }
            }

            fn expected() -> String {
                format!("one of {}", [$($text),+].join("|"))
            }

            fn kind() -> SettingKind {
                SettingKind::Choice(&[$($text),+])
            }
        }
    };
}

setting_enum! {
    /// How large messages are copied between ranks of one node.
    SingleCopy {
        /// The cooperative copy (as `coop`) when the kernel allows cross-memory attach, else the
        /// pipelined copy.
        Auto = "auto",
        /// The receiver alone copies with `process_vm_readv` (cross-memory attach).
        Cma = "cma",
        /// Always the pipelined copy through the shared-memory rings.
        Off = "off",
        /// Cooperative copy: both sides copy chunks of a contiguous message (the receiver with
        /// `process_vm_readv`, the sender with `process_vm_writev` when it polls).
        Coop = "coop",
    }
}

setting_enum! {
    /// Whether collectives too large for one board slot stream through the board in slot-sized
    /// pieces, one epoch each (both sides copy through shared memory at once).
    CollStream {
        /// Chosen by the selection table (alltoall and reduce on 2 ranks with cores of their
        /// own, bcast on 3+ ranks sharing cores).
        Auto = "auto",
        /// Every regular alltoall, reduce and bcast above a slot.
        On = "on",
        /// Never: single-copy or point-to-point schedules.
        Off = "off",
    }
}

setting_enum! {
    /// An on/off switch.
    Switch {
        /// Enabled.
        On = "on",
        /// Disabled.
        Off = "off",
    }
}

impl Switch {
    /// True when on.
    pub fn is_on(self) -> bool {
        self == Switch::On
    }
}

setting_enum! {
    /// The least severe log message that is printed.
    LogLevel {
        Error = "error",
        Warn = "warn",
        Info = "info",
        Debug = "debug",
    }
}

setting_enum! {
    /// The barrier algorithm (point-to-point schedules).
    BarrierAlgo {
        /// Chosen by the selection table.
        Auto = "auto",
        /// Dissemination: round k signals rank + 2^k.
        Dissemination = "dissemination",
        /// Pairwise exchange (recursive doubling), non-powers of two folded first.
        Pairwise = "pairwise",
    }
}

setting_enum! {
    /// The broadcast algorithm (point-to-point schedules).
    BcastAlgo {
        /// Chosen by the selection table.
        Auto = "auto",
        /// Binomial tree.
        Binomial = "binomial",
        /// k-nomial tree of fan-out `REFLEX_COLL_FANOUT`.
        Knomial = "knomial",
        /// Postal-model tree for latency `REFLEX_COLL_LAMBDA`.
        Postal = "postal",
        /// Scatter, then a ring allgather (van de Geijn): large messages.
        ScatterAllgather = "scatter-allgather",
    }
}

setting_enum! {
    /// The allreduce algorithm (point-to-point schedules).
    AllreduceAlgo {
        /// Chosen by the selection table.
        Auto = "auto",
        /// Recursive doubling in rank order.
        RecursiveDoubling = "recursive-doubling",
        /// Ring reduce-scatter then ring allgather (commutative operations).
        Ring = "ring",
        /// Recursive-halving reduce-scatter then recursive-doubling allgather.
        Rabenseifner = "rabenseifner",
    }
}

setting_enum! {
    /// The allgather algorithm (point-to-point schedules).
    AllgatherAlgo {
        /// Chosen by the selection table.
        Auto = "auto",
        /// One round of direct exchange.
        Direct = "direct",
        /// Ring: n − 1 rounds of one block.
        Ring = "ring",
        /// Bruck: ⌈log2 n⌉ rounds of doubling size.
        Bruck = "bruck",
    }
}

setting_enum! {
    /// The alltoall algorithm (point-to-point schedules).
    AlltoallAlgo {
        /// Chosen by the selection table.
        Auto = "auto",
        /// Every transfer posted in one round.
        Direct = "direct",
        /// Pairwise exchange: n − 1 rounds, one peer each.
        Pairwise = "pairwise",
    }
}

/// Where a setting's value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Source {
    /// Not set: the built-in default.
    #[default]
    Default,
    /// Set by an environment variable.
    Environment,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Default => "default",
            Self::Environment => "environment",
        })
    }
}

/// One row of [`Config::describe`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingRow {
    pub name: &'static str,
    pub value: String,
    pub default: String,
    pub source: Source,
    pub doc: &'static str,
    pub expected: String,
    pub kind: SettingKind,
}

/// Generates [`Config`], its parser and [`Config::describe`] from one table of settings.
macro_rules! settings {
    ($($field:ident: $ty:ty = $default:expr, $name:literal, $doc:literal;)+) => {
        /// The effective configuration: every `REFLEX_*` setting, typed.
        #[derive(Debug, Clone, PartialEq)]
        pub struct Config {
            $(#[doc = $doc] pub $field: $ty,)+
            sources: Sources,
        }

        #[derive(Debug, Clone, Copy, PartialEq, Default)]
        struct Sources {
            $($field: Source,)+
        }

        impl Default for Config {
            fn default() -> Self {
                Self { $($field: $default,)+ sources: Sources::default() }
            }
        }

        /// Every setting name, in table order.
        pub const SETTING_NAMES: &[&str] = &[$($name),+];

        impl Config {
            /// Sets `name` from `text`; `None` when `name` is not a setting.
            fn assign(&mut self, name: &str, text: &str) -> Option<Result<(), InvalidValue>> {
                match name {
                    $($name => Some(assign(
                        $name,
                        text,
                        &mut self.$field,
                        &mut self.sources.$field,
                    )),)+
                    _ => None,
                }
            }

            /// (name, value, default, source, doc) of every setting, in table order.
            pub fn describe(&self) -> Vec<SettingRow> {
                let defaults = Self::default();
                vec![$(SettingRow {
                    name: $name,
                    value: self.$field.show(),
                    default: defaults.$field.show(),
                    source: self.sources.$field,
                    doc: $doc,
                    expected: <$ty as SettingValue>::expected(),
                    kind: <$ty as SettingValue>::kind(),
                }),+]
            }
        }
    };
}

// The table: field: type = default, "REFLEX_NAME", "one-line doc";
settings! {
    eager_limit: ByteSize = ByteSize::kib(64), "REFLEX_EAGER_LIMIT", "largest message sent eagerly through shared-memory cells (at most a quarter of a ring); larger messages use rendezvous";
    shm_ring_bytes: ByteSize = ByteSize(0), "REFLEX_SHM_RING_BYTES", "size of each per-pair shared-memory ring (a power of two, at least 512); 0 sizes them by the node: 1M for up to 5 ranks, 512K up to 9, 256K up to 17, 128K up to 33, 64K beyond, and smaller (not below 64K) while the segment would take more than half of /dev/shm's free space";
    single_copy: SingleCopy = SingleCopy::Auto, "REFLEX_SINGLE_COPY", "large-message copy within a node: auto (coop where the kernel allows cross-memory attach), coop (sender and receiver both copy chunks of a contiguous message, process_vm_readv and process_vm_writev; see REFLEX_COOP_CHUNK), cma (the receiver alone copies with process_vm_readv) or off (pipelined copy through the rings)";
    coop_chunk: ByteSize = ByteSize(0), "REFLEX_COOP_CHUNK", "chunk of the cooperative large-message copy (REFLEX_SINGLE_COPY=coop); 0 picks it by message size (32K up to 128K, 64K up to 1M, 256K above)";
    pipeline_chunk: ByteSize = ByteSize::kib(16), "REFLEX_PIPELINE_CHUNK", "chunk size of the pipelined large-message copy through shared memory";
    direct_send: Switch = Switch::On, "REFLEX_DIRECT_SEND", "on: a non-contiguous datatype is gathered straight into shared-memory cells; off: packed into a temporary buffer first (VIRTUS experiments)";
    direct_recv: Switch = Switch::On, "REFLEX_DIRECT_RECV", "on: a non-contiguous receive is scattered straight from the cells; off: received into a temporary buffer and unpacked at completion";
    iov_min_block: ByteSize = ByteSize::kib(16), "REFLEX_IOV_MIN_BLOCK", "smallest average block of a non-contiguous large message read in place by process_vm_readv over iovecs (the kernel pins pages per remote block); smaller blocks are streamed through the cells";
    coll_shm: Switch = Switch::On, "REFLEX_COLL_SHM", "on: blocking barrier, bcast, reduce, allreduce and allgather of small messages on communicators within one node go through a shared-memory board; off: point-to-point schedules only";
    coll_barrier: BarrierAlgo = BarrierAlgo::Auto, "REFLEX_COLL_BARRIER", "barrier schedule: auto, dissemination or pairwise";
    coll_bcast: BcastAlgo = BcastAlgo::Auto, "REFLEX_COLL_BCAST", "broadcast schedule: auto, binomial, knomial, postal or scatter-allgather";
    coll_allreduce: AllreduceAlgo = AllreduceAlgo::Auto, "REFLEX_COLL_ALLREDUCE", "allreduce schedule: auto, recursive-doubling, rabenseifner or ring (commutative operations; else recursive doubling)";
    coll_allgather: AllgatherAlgo = AllgatherAlgo::Auto, "REFLEX_COLL_ALLGATHER", "allgather schedule: auto, direct, ring or bruck (blocks of one size; else ring)";
    coll_alltoall: AlltoallAlgo = AlltoallAlgo::Auto, "REFLEX_COLL_ALLTOALL", "alltoall schedule: auto, direct or pairwise";
    coll_stream: CollStream = CollStream::Auto, "REFLEX_COLL_STREAM", "collectives above a board slot (regular alltoall, reduce, bcast) streamed through the shared-memory board in slot-sized pieces: auto (alltoall up to 512 KiB blocks and reduce on 2 ranks with cores of their own, bcast on 3+ ranks sharing cores), on or off (single-copy or schedules)";
    coll_fanout: u32 = 4, "REFLEX_COLL_FANOUT", "fan-out r of the k-nomial broadcast tree (at least 2)";
    coll_lambda: u32 = 2, "REFLEX_COLL_LAMBDA", "latency of the postal-model broadcast, in send times (at least 1)";
    coll_large: ByteSize = ByteSize::kib(64), "REFLEX_COLL_LARGE", "messages from this size on take the large-message schedules under auto (scatter-allgather bcast, ring allreduce, ring allgather)";
    progress_thread: Switch = Switch::Off, "REFLEX_PROGRESS_THREAD", "on: a thread of each rank advances nonblocking collectives and rendezvous transfers while the application computes (every MPI call then takes the process lock); off: progress only inside MPI calls";
    progress_us: u32 = 20, "REFLEX_PROGRESS_US", "pause of the progress thread between polls while operations are pending, in microseconds (it sleeps 1 ms when nothing is pending)";
    spin_polls: u32 = 1000, "REFLEX_SPIN_POLLS", "empty polls before a waiting rank yields the CPU";
    yield_polls: u32 = 100, "REFLEX_YIELD_POLLS", "sched_yield rounds before sleeping on the futex doorbell";
    sleep_us: u32 = 1000, "REFLEX_SLEEP_US", "longest single futex sleep, in microseconds";
    tcp_eager_limit: ByteSize = ByteSize::kib(64), "REFLEX_TCP_EAGER_LIMIT", "largest message sent eagerly to a rank reached over TCP; larger messages use rendezvous";
    tcp_chunk: ByteSize = ByteSize::kib(512), "REFLEX_TCP_CHUNK", "chunk size of a large message streamed to a rank reached over TCP (one frame, one sendmsg each)";
    tcp_streams: TcpStreams = TcpStreams(1), "REFLEX_TCP_STREAMS", "sockets per pair of ranks reached over TCP (1 to 8, the same for every rank); packets from REFLEX_TCP_STRIPE_MIN on are split across them";
    tcp_stripe_min: ByteSize = ByteSize::kib(128), "REFLEX_TCP_STRIPE_MIN", "smallest packet split across the sockets when REFLEX_TCP_STREAMS is above 1 (at least 32k; rendezvous chunks are REFLEX_TCP_CHUNK bytes)";
    tcp_keepalive: u32 = 10, "REFLEX_TCP_KEEPALIVE", "seconds of silence after which a connection to a rank reached over TCP is probed (TCP keepalive, a probe every third of that); after 3 unanswered probes the link counts as failed and the job ends; with data in flight, unanswered retransmissions and no acknowledgement for as long (0: neither, a silent dead host is then never noticed)";
    port_timeout: u32 = 0, "REFLEX_PORT_TIMEOUT", "seconds MPI_Comm_accept waits for a connector and MPI_Comm_connect for the acceptor's answer (0: no limit; the info key \"timeout\" of the call wins)";
    tcp_local: u32 = 0, "REFLEX_TCP_LOCAL", "1: ranks on the same node also talk over TCP instead of shared memory (tests, benchmarks); 0: shared memory";
    log: LogLevel = LogLevel::Warn, "REFLEX_LOG", "least severe log message printed: error, warn, info or debug";
    cc: String = "cc".to_owned(), "REFLEX_CC", "C compiler used by mpicc (MPICH_CC, when set, wins)";
    cxx: String = "c++".to_owned(), "REFLEX_CXX", "C++ compiler used by mpicxx (MPICH_CXX, when set, wins)";
}

/// Parses `text` into `slot` and records that it came from the environment.
fn assign<T: SettingValue>(
    name: &'static str,
    text: &str,
    slot: &mut T,
    source: &mut Source,
) -> Result<(), InvalidValue> {
    let value = T::parse_setting(text.trim()).ok_or_else(|| InvalidValue {
        name,
        value: text.to_owned(),
        expected: T::expected(),
    })?;
    *slot = value;
    *source = Source::Environment;
    Ok(())
}

/// A known setting with a value that does not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidValue {
    pub name: &'static str,
    pub value: String,
    pub expected: String,
}

impl fmt::Display for InvalidValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid {}={:?}: expected {}",
            self.name, self.value, self.expected
        )
    }
}

/// Every invalid setting found (all are reported at once).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub invalid: Vec<InvalidValue>,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lines: Vec<String> = self.invalid.iter().map(ToString::to_string).collect();
        f.write_str(&lines.join("; "))
    }
}

impl std::error::Error for ConfigError {}

/// Something suspicious but harmless in the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigWarning {
    /// A `REFLEX_*` variable that is not a setting (probably a typo); it is ignored.
    UnknownName { name: String, closest: &'static str },
}

impl fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownName { name, closest } => {
                write!(
                    f,
                    "unknown setting {name} ignored (closest valid name: {closest})"
                )
            }
        }
    }
}

/// A configuration read from variables, with the warnings found on the way.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedConfig {
    pub config: Config,
    pub warnings: Vec<ConfigWarning>,
}

impl Config {
    /// Reads the `REFLEX_*` variables of the process environment.
    pub fn from_env() -> Result<LoadedConfig, ConfigError> {
        Self::from_vars(std::env::vars_os())
    }

    /// Reads `REFLEX_*` settings from `(name, value)` pairs; other names are ignored and a
    /// later pair overrides an earlier one.
    pub fn from_vars<I, K, V>(vars: I) -> Result<LoadedConfig, ConfigError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        let mut config = Self::default();
        let mut warnings = Vec::new();
        let mut invalid: Vec<InvalidValue> = Vec::new();
        for (name, value) in vars {
            let name = name.as_ref().to_string_lossy();
            if !name.starts_with(PREFIX) || NOT_SETTINGS.contains(&name.as_ref()) {
                continue;
            }
            let text = value.as_ref().to_str();
            match config.assign(&name, text.unwrap_or("\u{fffd}")) {
                None => warnings.push(ConfigWarning::UnknownName {
                    closest: closest_name(&name),
                    name: name.into_owned(),
                }),
                Some(result) => {
                    invalid.retain(|bad| bad.name != name);
                    if let Err(mut bad) = result {
                        if text.is_none() {
                            bad.value = value.as_ref().to_string_lossy().into_owned();
                        }
                        invalid.push(bad);
                    }
                }
            }
        }
        if invalid.is_empty() {
            Ok(LoadedConfig { config, warnings })
        } else {
            Err(ConfigError { invalid })
        }
    }

    /// Sets the setting `name` from `text`, as if the environment said so (MPI_T control
    /// variable writes); `None` when `name` is not a setting.
    pub fn set(&mut self, name: &str, text: &str) -> Option<Result<(), InvalidValue>> {
        self.assign(name, text)
    }

    /// Where the value of the setting `name` came from (`None` if `name` is not a setting).
    pub fn source_of(&self, name: &str) -> Option<Source> {
        self.describe()
            .into_iter()
            .find(|row| row.name == name)
            .map(|row| row.source)
    }
}

/// The setting name closest to `name` by edit distance (ties: the first in table order).
pub fn closest_name(name: &str) -> &'static str {
    SETTING_NAMES
        .iter()
        .copied()
        .min_by_key(|candidate| edit_distance(name, candidate))
        .unwrap_or(PREFIX)
}

/// Levenshtein distance over bytes (names are ASCII), one row of memory.
fn edit_distance(a: &str, b: &str) -> usize {
    let b = b.as_bytes();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.bytes().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitute = diagonal + usize::from(ca != cb);
            diagonal = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
