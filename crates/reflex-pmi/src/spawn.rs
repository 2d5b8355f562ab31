//! The PMI-1 `mcmd=spawn` request and its `cmd=spawn_result` reply, both directions.
//!
//! MPICH's simple PMI (`PMI_Spawn_multiple`, libmpich 4.0.2) writes one multi-line block per
//! command and then reads one reply line:
//!
//! ```text
//! mcmd=spawn
//! nprocs=2
//! execname=./child
//! totspawns=1
//! spawnssofar=1
//! arg1=-v
//! argcnt=1
//! preput_num=1
//! preput_key_0=PARENT_ROOT_PORT_NAME
//! preput_val_0=tag#0$...
//! info_num=1
//! info_key_0=wdir
//! info_val_0=/tmp
//! endcmd
//! cmd=spawn_result rc=0 errcodes=0,0        (the reply)
//! ```
//!
//! Each line is `key=value`, split at the first `=`; unlike single-line PMI, a value may hold
//! spaces (it runs to the end of the line), never `\n`, `\r` or NUL. Every block repeats the
//! preput pairs; the first block's count. `totspawns` is the number of blocks, `spawnssofar`
//! numbers them from 1. The reply carries `rc` (0: every process started) and, as libmpich reads
//! it, `errcodes=` with one comma-separated code per process in command order (absent: all 0).
//!
//! [`format_request`] builds the blocks (client), [`SpawnAssembler`] parses them line by line
//! with hard limits (server), [`SpawnResult`] formats and parses the reply.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::codec::{check_key, CodecError, Message, MAX_LINE};
use crate::PmiError;

/// Most commands in one spawn (`totspawns`).
pub const MAX_COMMANDS: usize = 1024;
/// Most bytes in one block, `mcmd=spawn` to `endcmd` (MPICH's own blocks fit 1024).
pub const MAX_BLOCK_BYTES: usize = 64 * 1024;
/// Most bytes in one whole request (all blocks).
pub const MAX_REQUEST_BYTES: usize = 1024 * 1024;
/// Most `argN`, `preput_*` or `info_*` entries of one block.
pub const MAX_ENTRIES: usize = 4096;

/// The code Reflex's `mpiexec` reports for a process it could not start: `MPI_ERR_SPAWN` of
/// MPICH's ABI (which libmpich copies into `array_of_errcodes` as is).
pub const ERR_SPAWN: i32 = 42;

/// The first line of a block.
pub const SPAWN_START: &str = "mcmd=spawn";
/// The last line of a block.
const BLOCK_END: &str = "endcmd";

/// One command of a spawn: `maxprocs` copies of `command args...`, with launcher hints `info`
/// (`wdir`, `path`, ... as `MPI_Info` key/value pairs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnCommand {
    pub command: String,
    pub args: Vec<String>,
    pub maxprocs: u32,
    pub info: Vec<(String, String)>,
}

/// A whole decoded spawn request: the commands (appnum = index) and the preput pairs that the
/// new job finds in its key-value space from the start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnRequest {
    pub commands: Vec<SpawnCommand>,
    pub preput: Vec<(String, String)>,
}

impl SpawnRequest {
    /// Processes asked for, all commands together.
    pub fn total_procs(&self) -> u64 {
        self.commands.iter().map(|c| u64::from(c.maxprocs)).sum()
    }
}

/// The launcher's answer to a spawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnResult {
    /// 0 when every process was started.
    pub rc: i32,
    /// The launcher's reason when `rc` is not 0.
    pub msg: Option<String>,
    /// One code per process, in command order; 0 = started. Reflex's `mpiexec` sends MPI error
    /// classes (`MPI_ERR_SPAWN`); other servers may send other values: any non-zero is a failure.
    /// When the server sends none, every entry is 0 if `rc` is 0 and `rc` otherwise.
    pub errcodes: Vec<i32>,
}

impl SpawnResult {
    /// Every process started.
    pub fn success(procs: usize) -> Self {
        Self {
            rc: 0,
            msg: None,
            errcodes: vec![0; procs],
        }
    }

    /// Nothing started: `rc` -1, `msg`, and one code per process ([`ERR_SPAWN`] for all of
    /// `procs`).
    pub fn refused(msg: &str, procs: usize) -> Self {
        Self::failure(msg, vec![ERR_SPAWN; procs])
    }

    /// Nothing started: `rc` -1, `msg`, and `errcodes` one code per process.
    pub fn failure(msg: &str, errcodes: Vec<i32>) -> Self {
        Self {
            rc: -1,
            msg: Some(msg.to_owned()),
            errcodes,
        }
    }

    /// Whether every process started.
    pub fn all_started(&self) -> bool {
        self.rc == 0 && self.errcodes.iter().all(|&c| c == 0)
    }

    /// The reply line `cmd=spawn_result rc=R [msg=M] [errcodes=a,b,..]`. The message has its
    /// spaces replaced by `_` (PMI-1 values cannot hold spaces); `errcodes` is left out when
    /// the line would pass [`MAX_LINE`] (libmpich reads at most that much), which a client reads
    /// as "all 0" or "all failed" by `rc`.
    pub fn to_reply_line(&self) -> String {
        let mut message = Message::new("spawn_result").with("rc", self.rc);
        if let Some(msg) = &self.msg {
            let clean: String = msg
                .chars()
                .map(|c| {
                    if c.is_whitespace() || c == '\0' {
                        '_'
                    } else {
                        c
                    }
                })
                .take(200)
                .collect();
            message = message.with("msg", clean);
        }
        let codes: Vec<String> = self.errcodes.iter().map(i32::to_string).collect();
        let with_codes = message.clone().with("errcodes", codes.join(","));
        with_codes
            .to_line()
            .or_else(|_| message.to_line())
            .unwrap_or_else(|_| format!("cmd=spawn_result rc={}\n", self.rc))
    }

    /// Reads a `cmd=spawn_result` reply for a spawn of `procs` processes.
    pub fn from_reply(reply: &Message, procs: usize) -> Result<Self, PmiError> {
        let bad = |expected: &'static str| PmiError::UnexpectedReply {
            expected,
            line: reply.to_reply_line().unwrap_or_default(),
        };
        let rc: i32 = reply
            .get("rc")
            .and_then(|rc| rc.parse().ok())
            .ok_or_else(|| bad("spawn_result with a numeric rc"))?;
        let errcodes = match reply.get("errcodes") {
            Some(list) => {
                let codes: Option<Vec<i32>> = list.split(',').map(|c| c.parse().ok()).collect();
                codes
                    .filter(|c| c.len() == procs)
                    .ok_or_else(|| bad("errcodes with one number per spawned process"))?
            }
            None => vec![rc; procs],
        };
        Ok(Self {
            rc,
            msg: reply.get("msg").map(str::to_owned),
            errcodes,
        })
    }
}

/// Builds the `mcmd=spawn` blocks of a request, one per command, refusing what a server would
/// mangle: a value holding `\n`, `\r` or NUL, a bad key, a line over [`MAX_LINE`], a block over
/// [`MAX_BLOCK_BYTES`], no command, more than [`MAX_COMMANDS`], no process at all.
pub fn format_request(
    commands: &[SpawnCommand],
    preput: &[(String, String)],
) -> Result<Vec<String>, PmiError> {
    let bad = |reason: String| PmiError::BadRequest { reason };
    if commands.is_empty() || commands.len() > MAX_COMMANDS {
        return Err(bad(format!(
            "a spawn needs 1 to {MAX_COMMANDS} commands, not {}",
            commands.len()
        )));
    }
    if commands.iter().all(|c| c.maxprocs == 0) {
        return Err(bad("a spawn must start at least one process".to_owned()));
    }
    let total = commands.len();
    let mut blocks = Vec::with_capacity(total);
    for (index, command) in commands.iter().enumerate() {
        if command.command.is_empty() {
            return Err(bad(format!("command {index} is empty")));
        }
        let block = format_block(command, preput, index + 1, total)?;
        if block.len() > MAX_BLOCK_BYTES {
            return Err(PmiError::Limit {
                what: format!(
                    "spawn command {index} needs {} bytes; at most {MAX_BLOCK_BYTES} fit",
                    block.len()
                ),
            });
        }
        blocks.push(block);
    }
    Ok(blocks)
}

fn format_block(
    command: &SpawnCommand,
    preput: &[(String, String)],
    sofar: usize,
    total: usize,
) -> Result<String, PmiError> {
    let mut block = format!("{SPAWN_START}\n");
    push_line(&mut block, "nprocs", &command.maxprocs.to_string())?;
    push_line(&mut block, "execname", &command.command)?;
    push_line(&mut block, "totspawns", &total.to_string())?;
    push_line(&mut block, "spawnssofar", &sofar.to_string())?;
    for (i, arg) in command.args.iter().enumerate() {
        push_line(&mut block, &format!("arg{}", i + 1), arg)?;
    }
    push_line(&mut block, "argcnt", &command.args.len().to_string())?;
    push_pairs(&mut block, "preput", preput)?;
    push_pairs(&mut block, "info", &command.info)?;
    block.push_str(BLOCK_END);
    block.push('\n');
    Ok(block)
}

/// `<prefix>_num=N`, then `<prefix>_key_i=` / `<prefix>_val_i=` for each pair. Preput pairs
/// must also be valid key-value-space entries (see [`check_preput`]).
fn push_pairs(
    block: &mut String,
    prefix: &str,
    pairs: &[(String, String)],
) -> Result<(), PmiError> {
    push_line(block, &format!("{prefix}_num"), &pairs.len().to_string())?;
    for (i, (key, value)) in pairs.iter().enumerate() {
        if prefix == "preput" {
            check_preput(key, value)?;
        }
        push_line(block, &format!("{prefix}_key_{i}"), key)?;
        push_line(block, &format!("{prefix}_val_{i}"), value)?;
    }
    Ok(())
}

fn push_line(block: &mut String, key: &str, value: &str) -> Result<(), PmiError> {
    check_value(key, value)?;
    let len = key.len() + value.len() + 2;
    if len > MAX_LINE {
        return Err(PmiError::Limit {
            what: format!("spawn line {key}=... is {len} bytes; at most {MAX_LINE} fit"),
        });
    }
    let _ = writeln!(block, "{key}={value}");
    Ok(())
}

/// A preput pair lands in the new job's key-value space and travels in `get_result` replies:
/// a PMI-1 key, and a value without spaces of at most 1023 bytes (`codec::MAX_VALUE`).
pub(crate) fn check_preput(key: &str, value: &str) -> Result<(), CodecError> {
    check_key("key", key)?;
    Message::new("get_result")
        .with(key, value)
        .to_line()
        .map(drop)
}

/// A value of a multi-line command: spaces are fine, line breaks and NUL are not.
fn check_value(key: &str, value: &str) -> Result<(), PmiError> {
    match value.bytes().find(|b| matches!(b, b'\n' | b'\r' | b'\0')) {
        Some(byte) => Err(PmiError::BadRequest {
            reason: format!("spawn field {key} contains the byte {byte:#04x}"),
        }),
        None => Ok(()),
    }
}

/// Why a spawn request was refused by [`SpawnAssembler`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnError(pub String);

impl std::fmt::Display for SpawnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "bad mcmd=spawn request: {}", self.0)
    }
}

/// Server side: collects the lines of one rank's spawn request until the last block's
/// `endcmd`. Feed it every line starting with (and including) the first `mcmd=spawn`.
/// Untrusted input: sizes, counts and numbers are checked before anything is allocated.
#[derive(Debug, Default)]
pub struct SpawnAssembler {
    /// Fields of the block being read; `None` between blocks.
    block: Option<HashMap<String, String>>,
    block_bytes: usize,
    request_bytes: usize,
    totspawns: Option<usize>,
    commands: Vec<SpawnCommand>,
    preput: Option<Vec<(String, String)>>,
}

impl SpawnAssembler {
    /// An assembler waiting for the first `mcmd=spawn`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes one line (with or without its `\n`). `Ok(Some(request))` after the last block,
    /// `Ok(None)` while more lines are needed, `Err` on anything malformed or oversized (the
    /// assembler is then spent).
    pub fn push_line(&mut self, line: &[u8]) -> Result<Option<SpawnRequest>, SpawnError> {
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        self.block_bytes += body.len() + 1;
        self.request_bytes += body.len() + 1;
        if self.block_bytes > MAX_BLOCK_BYTES || self.request_bytes > MAX_REQUEST_BYTES {
            return Err(SpawnError(format!(
                "longer than {MAX_BLOCK_BYTES} bytes per command or {MAX_REQUEST_BYTES} in all"
            )));
        }
        let text = std::str::from_utf8(body)
            .map_err(|e| SpawnError(format!("not utf-8 at byte {}", e.valid_up_to())))?;
        if let Some(byte) = text.bytes().find(|b| matches!(b, b'\r' | b'\0')) {
            return Err(SpawnError(format!("line holds the byte {byte:#04x}")));
        }
        let Some(fields) = self.block.as_mut() else {
            if text != SPAWN_START {
                return Err(SpawnError(format!(
                    "expected {SPAWN_START}, got {:?}",
                    clip(text)
                )));
            }
            self.block = Some(HashMap::new());
            return Ok(None);
        };
        if text == BLOCK_END {
            let fields = self.block.take().unwrap_or_default();
            self.block_bytes = 0;
            return self.end_block(&fields);
        }
        let (key, value) = text
            .split_once('=')
            .filter(|(k, _)| !k.is_empty() && !k.contains(' '))
            .ok_or_else(|| SpawnError(format!("line {:?} is not key=value", clip(text))))?;
        if fields.insert(key.to_owned(), value.to_owned()).is_some() {
            return Err(SpawnError(format!("key {:?} appears twice", clip(key))));
        }
        Ok(None)
    }

    fn end_block(
        &mut self,
        fields: &HashMap<String, String>,
    ) -> Result<Option<SpawnRequest>, SpawnError> {
        let block = Block(fields);
        let total = block.count("totspawns", MAX_COMMANDS)?;
        if total == 0 || *self.totspawns.get_or_insert(total) != total {
            return Err(SpawnError(format!("totspawns={total} is inconsistent")));
        }
        let sofar = block.count("spawnssofar", MAX_COMMANDS)?;
        if sofar != self.commands.len() + 1 {
            return Err(SpawnError(format!(
                "spawnssofar={sofar} where {} was expected",
                self.commands.len() + 1
            )));
        }
        self.commands.push(block.command()?);
        let preput = block.pairs("preput")?;
        self.preput.get_or_insert(preput);
        if sofar < total {
            return Ok(None);
        }
        Ok(Some(SpawnRequest {
            commands: std::mem::take(&mut self.commands),
            preput: self.preput.take().unwrap_or_default(),
        }))
    }
}

/// The fields of one block, read with checks.
struct Block<'a>(&'a HashMap<String, String>);

impl Block<'_> {
    fn field(&self, key: &str) -> Result<&str, SpawnError> {
        self.0
            .get(key)
            .map(String::as_str)
            .ok_or_else(|| SpawnError(format!("missing {key}")))
    }

    /// A non-negative count of at most `max`; a missing `*_num` counts as 0 (Hydra's reading).
    fn count(&self, key: &str, max: usize) -> Result<usize, SpawnError> {
        let value = match self.0.get(key) {
            None if key.ends_with("_num") => return Ok(0),
            None => return Err(SpawnError(format!("missing {key}"))),
            Some(value) => value,
        };
        value
            .parse::<usize>()
            .ok()
            .filter(|&n| n <= max)
            .ok_or_else(|| {
                SpawnError(format!(
                    "{key}={:?} is not a count up to {max}",
                    clip(value)
                ))
            })
    }

    fn command(&self) -> Result<SpawnCommand, SpawnError> {
        let maxprocs = self.field("nprocs")?;
        let maxprocs = maxprocs
            .parse::<u32>()
            .map_err(|_| SpawnError(format!("nprocs={:?} is not a count", clip(maxprocs))))?;
        let command = self.field("execname")?.to_owned();
        if command.is_empty() {
            return Err(SpawnError("empty execname".to_owned()));
        }
        let argcnt = self.count("argcnt", MAX_ENTRIES)?;
        let args = (1..=argcnt)
            .map(|i| self.field(&format!("arg{i}")).map(str::to_owned))
            .collect::<Result<_, _>>()?;
        Ok(SpawnCommand {
            command,
            args,
            maxprocs,
            info: self.pairs("info")?,
        })
    }

    fn pairs(&self, prefix: &str) -> Result<Vec<(String, String)>, SpawnError> {
        let num = self.count(&format!("{prefix}_num"), MAX_ENTRIES)?;
        (0..num)
            .map(|i| {
                let key = self.field(&format!("{prefix}_key_{i}"))?;
                let value = self.field(&format!("{prefix}_val_{i}"))?;
                if prefix == "preput" {
                    check_preput(key, value).map_err(|e| SpawnError(e.to_string()))?;
                }
                Ok((key.to_owned(), value.to_owned()))
            })
            .collect()
    }
}

/// Shortens text quoted in errors.
fn clip(text: &str) -> &str {
    match text.char_indices().nth(64) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

#[cfg(test)]
#[path = "spawn_tests.rs"]
mod tests;
