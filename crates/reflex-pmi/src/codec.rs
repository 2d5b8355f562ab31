//! Bounds-checked codec for PMI-1 "simple" protocol lines.
//!
//! A PMI-1 line is `cmd=<name> key=value key=value\n`: tokens separated by spaces, each split at
//! its first `=`, so values may contain `=` but never a space or a newline. The limits follow the
//! measurements in `shared/reference/launchers.md` §2.2: Slurm's PMI-1 server handles a request
//! only up to [`MAX_LINE`] = 1024 bytes including the `\n` (a 1030-byte line hung the job), and
//! Hydra silently truncates values to [`MAX_VALUE`] = 1023 bytes (`vallen_max=1024` counts the
//! NUL). Both directions are checked: [`Message::to_line`] refuses to build a line the other side
//! would mangle, and [`Message::parse`] rejects malformed input with a precise error, never a
//! panic. [`LineBuffer`] splits a byte stream into lines for blocking clients and for the
//! launcher's event loop alike.

use std::fmt;

/// Longest PMI-1 line in bytes, including the terminating `\n` (Slurm and MPICH's PMIU_MAXLINE).
pub const MAX_LINE: usize = 1024;
/// Longest value in bytes (Hydra's `vallen_max=1024` minus the NUL).
pub const MAX_VALUE: usize = MAX_LINE - 1;
/// Longest reply line accepted from a server. A reply carrying a legal value adds its own fields
/// (`cmd=get_result rc=0 msg=success value=` is 37 bytes), so a server may exceed [`MAX_LINE`];
/// clients accept replies up to twice that, requests stay within [`MAX_LINE`].
pub const MAX_REPLY_LINE: usize = 2 * MAX_LINE;

/// Why a PMI-1 line could not be parsed or formatted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodecError {
    /// The line (with its `\n`) is longer than [`MAX_LINE`].
    LineTooLong { len: usize, limit: usize },
    /// The line is not UTF-8; `offset` is the first bad byte.
    NotUtf8 { offset: usize },
    /// The line holds no token at all.
    Empty,
    /// The first token is not `cmd=<name>` (this also rejects multi-line `mcmd=` requests).
    MissingCmd { first: String },
    /// A token has no `=`.
    MissingEquals { token: String },
    /// A token starts with `=` (empty key).
    EmptyKey { token: String },
    /// A key appears twice on one line.
    DuplicateKey { key: String },
    /// A key or value holds a byte the protocol cannot carry (space, newline, NUL; `=` in a key).
    ForbiddenByte {
        what: &'static str,
        text: String,
        byte: u8,
    },
    /// A value is longer than [`MAX_VALUE`].
    ValueTooLong { key: String, len: usize },
}

impl fmt::Display for CodecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::LineTooLong { len, limit } => {
                write!(f, "pmi line of {len} bytes exceeds the {limit}-byte limit")
            }
            Self::NotUtf8 { offset } => {
                write!(f, "pmi line is not utf-8 (bad byte at offset {offset})")
            }
            Self::Empty => write!(f, "empty pmi line"),
            Self::MissingCmd { first } => {
                write!(
                    f,
                    "pmi line must start with cmd=<name>, found {:?}",
                    clip(first)
                )
            }
            Self::MissingEquals { token } => {
                write!(
                    f,
                    "pmi token {:?} is not of the form key=value",
                    clip(token)
                )
            }
            Self::EmptyKey { token } => write!(f, "pmi token {:?} has an empty key", clip(token)),
            Self::DuplicateKey { key } => {
                write!(f, "pmi key {:?} appears twice on one line", clip(key))
            }
            Self::ForbiddenByte { what, text, byte } => write!(
                f,
                "pmi {what} {:?} contains the forbidden byte {byte:#04x}",
                clip(text)
            ),
            Self::ValueTooLong { key, len } => write!(
                f,
                "pmi value of key {:?} is {len} bytes, longer than the {MAX_VALUE}-byte limit",
                clip(key)
            ),
        }
    }
}

impl std::error::Error for CodecError {}

/// Shortens text quoted in error messages so that a bad 1 KiB line does not flood the log.
fn clip(text: &str) -> &str {
    const SHOWN: usize = 64;
    match text.char_indices().nth(SHOWN) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

/// One PMI-1 message: the command name and its `key=value` fields in wire order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    cmd: String,
    fields: Vec<(String, String)>,
}

impl Message {
    /// Starts a message `cmd=<cmd>` with no fields.
    pub fn new(cmd: &str) -> Self {
        Self {
            cmd: cmd.to_owned(),
            fields: Vec::new(),
        }
    }

    /// Appends the field `key=value` (checked when the line is formatted).
    pub fn with(mut self, key: &str, value: impl fmt::Display) -> Self {
        self.fields.push((key.to_owned(), value.to_string()));
        self
    }

    /// The command name (`init`, `put`, `get_result`, ...).
    pub fn cmd(&self) -> &str {
        &self.cmd
    }

    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The fields after `cmd=`, in wire order.
    pub fn fields(&self) -> &[(String, String)] {
        &self.fields
    }

    /// Parses one request line of at most [`MAX_LINE`] bytes, with or without its `\n`.
    pub fn parse(line: &[u8]) -> Result<Self, CodecError> {
        Self::parse_within(line, MAX_LINE)
    }

    /// Parses one reply line of at most [`MAX_REPLY_LINE`] bytes, with or without its `\n`.
    pub fn parse_reply(line: &[u8]) -> Result<Self, CodecError> {
        Self::parse_within(line, MAX_REPLY_LINE)
    }

    fn parse_within(line: &[u8], limit: usize) -> Result<Self, CodecError> {
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        if body.len() + 1 > limit {
            return Err(CodecError::LineTooLong {
                len: body.len() + 1,
                limit,
            });
        }
        let text = std::str::from_utf8(body).map_err(|e| CodecError::NotUtf8 {
            offset: e.valid_up_to(),
        })?;
        let mut tokens = text.split(' ').filter(|t| !t.is_empty());
        let first = tokens.next().ok_or(CodecError::Empty)?;
        let cmd = match first.split_once('=') {
            Some(("cmd", name)) if !name.is_empty() => name,
            _ => {
                return Err(CodecError::MissingCmd {
                    first: first.to_owned(),
                })
            }
        };
        check_bytes("command", cmd)?;
        let mut message = Self::new(cmd);
        for token in tokens {
            let (key, value) = split_token(token)?;
            if key == "cmd" || message.get(key).is_some() {
                return Err(CodecError::DuplicateKey {
                    key: key.to_owned(),
                });
            }
            message.fields.push((key.to_owned(), value.to_owned()));
        }
        Ok(message)
    }

    /// Formats a request line (at most [`MAX_LINE`] bytes), refusing what the peer would mangle.
    pub fn to_line(&self) -> Result<String, CodecError> {
        self.to_line_within(MAX_LINE)
    }

    /// Formats a reply line (at most [`MAX_REPLY_LINE`] bytes).
    pub fn to_reply_line(&self) -> Result<String, CodecError> {
        self.to_line_within(MAX_REPLY_LINE)
    }

    fn to_line_within(&self, limit: usize) -> Result<String, CodecError> {
        check_key("command", &self.cmd)?;
        let mut line = format!("cmd={}", self.cmd);
        for (key, value) in &self.fields {
            check_key("key", key)?;
            if key == "cmd" || self.fields.iter().filter(|(k, _)| k == key).count() > 1 {
                return Err(CodecError::DuplicateKey { key: key.clone() });
            }
            check_bytes("value", value)?;
            if value.len() > MAX_VALUE {
                return Err(CodecError::ValueTooLong {
                    key: key.clone(),
                    len: value.len(),
                });
            }
            line.push(' ');
            line.push_str(key);
            line.push('=');
            line.push_str(value);
        }
        line.push('\n');
        if line.len() > limit {
            return Err(CodecError::LineTooLong {
                len: line.len(),
                limit,
            });
        }
        Ok(line)
    }
}

/// Splits `key=value` at the first `=`.
fn split_token(token: &str) -> Result<(&str, &str), CodecError> {
    match token.split_once('=') {
        None => Err(CodecError::MissingEquals {
            token: token.to_owned(),
        }),
        Some(("", _)) => Err(CodecError::EmptyKey {
            token: token.to_owned(),
        }),
        Some((key, value)) => {
            check_bytes("key", key)?;
            check_bytes("value", value)?;
            Ok((key, value))
        }
    }
}

/// Rejects bytes that cannot travel inside a token: space and newline split tokens and lines,
/// NUL ends C strings in every PMI implementation, `\r` is stripped by some.
fn check_bytes(what: &'static str, text: &str) -> Result<(), CodecError> {
    match text
        .bytes()
        .find(|b| matches!(b, b' ' | b'\n' | b'\r' | b'\0'))
    {
        Some(byte) => Err(CodecError::ForbiddenByte {
            what,
            text: text.to_owned(),
            byte,
        }),
        None => Ok(()),
    }
}

/// A key (or command name) must be non-empty and free of `=` on top of [`check_bytes`].
pub(crate) fn check_key(what: &'static str, key: &str) -> Result<(), CodecError> {
    if key.is_empty() {
        return Err(CodecError::EmptyKey {
            token: format!("={key}"),
        });
    }
    if key.contains('=') {
        return Err(CodecError::ForbiddenByte {
            what,
            text: key.to_owned(),
            byte: b'=',
        });
    }
    check_bytes(what, key)
}

/// A decoded `cmd=abort` request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Abort {
    pub code: i32,
    pub message: Option<String>,
}

/// Formats `cmd=abort exitcode=N message=TEXT`. As MPICH 4.1+ does, the message is the last
/// field and keeps its spaces (newlines become spaces); it is clipped so the line fits
/// [`MAX_LINE`]. Servers that predate `message=` (Hydra 4.0, Slurm 22.05) look only at `exitcode`.
pub fn format_abort(code: i32, message: &str) -> String {
    let mut line = format!("cmd=abort exitcode={code}");
    let text: String = message
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let text = text.trim();
    if !text.is_empty() {
        line.push_str(" message=");
        let room = MAX_LINE - 1 - line.len();
        let mut end = text.len().min(room);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        line.push_str(&text[..end]);
    }
    line.push('\n');
    line
}

/// Decodes an abort request leniently (the message may hold spaces, the exit code may be
/// missing or bad and then counts as 1). `None` when the line is not `cmd=abort`.
pub fn parse_abort(line: &[u8]) -> Option<Abort> {
    let body = line.strip_suffix(b"\n").unwrap_or(line);
    let rest = body.strip_prefix(b"cmd=abort")?;
    if !(rest.is_empty() || rest.starts_with(b" ")) {
        return None;
    }
    let text = String::from_utf8_lossy(rest);
    let (fields, message) = match text.split_once(" message=") {
        Some((fields, message)) => (fields, Some(message.trim().to_owned())),
        None => (&text[..], None),
    };
    let code = fields
        .split(' ')
        .find_map(|t| t.strip_prefix("exitcode="))
        .and_then(|c| c.parse().ok())
        .unwrap_or(1);
    Some(Abort {
        code,
        message: message.filter(|m| !m.is_empty()),
    })
}

/// Splits a byte stream into `\n`-terminated lines of at most [`MAX_LINE`] bytes.
///
/// Feed it whatever `read` returned with [`LineBuffer::extend`], then take complete lines with
/// [`LineBuffer::next_line`]. A run of more than [`MAX_LINE`] bytes without a newline is an error
/// (the stream is then unusable: the caller drops the connection).
#[derive(Debug)]
pub struct LineBuffer {
    bytes: Vec<u8>,
    /// Bytes at the front of `bytes` already searched for a newline.
    scanned: usize,
    limit: usize,
}

impl Default for LineBuffer {
    fn default() -> Self {
        Self::new()
    }
}

impl LineBuffer {
    /// An empty buffer for request lines (at most [`MAX_LINE`] bytes).
    pub fn new() -> Self {
        Self::with_limit(MAX_LINE)
    }

    /// An empty buffer for lines of at most `limit` bytes (use [`MAX_REPLY_LINE`] for replies).
    pub fn with_limit(limit: usize) -> Self {
        Self {
            bytes: Vec::new(),
            scanned: 0,
            limit,
        }
    }

    /// Appends bytes received from the stream.
    pub fn extend(&mut self, data: &[u8]) {
        self.bytes.extend_from_slice(data);
    }

    /// Bytes received but not yet returned as a line.
    pub fn pending(&self) -> usize {
        self.bytes.len()
    }

    /// The next complete line (including its `\n`), `Ok(None)` when more bytes are needed.
    pub fn next_line(&mut self) -> Result<Option<Vec<u8>>, CodecError> {
        match self.bytes[self.scanned..].iter().position(|&b| b == b'\n') {
            Some(pos) => {
                let end = self.scanned + pos + 1;
                self.scanned = 0;
                if end > self.limit {
                    return Err(CodecError::LineTooLong {
                        len: end,
                        limit: self.limit,
                    });
                }
                let rest = self.bytes.split_off(end);
                Ok(Some(std::mem::replace(&mut self.bytes, rest)))
            }
            None if self.bytes.len() >= self.limit => Err(CodecError::LineTooLong {
                len: self.bytes.len() + 1,
                limit: self.limit,
            }),
            None => {
                self.scanned = self.bytes.len();
                Ok(None)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_hydra_reply_by_key() {
        let m = Message::parse(b"cmd=get_result rc=0 msg=success value=a=b;c,d%&#\n").unwrap();
        assert_eq!(m.cmd(), "get_result");
        assert_eq!(m.get("rc"), Some("0"));
        assert_eq!(m.get("value"), Some("a=b;c,d%&#"));
        assert_eq!(m.get("missing"), None);
    }

    #[test]
    fn tolerates_repeated_and_trailing_spaces() {
        let m = Message::parse(b"cmd=barrier_out  rc=0 \n").unwrap();
        assert_eq!(m.fields(), &[("rc".to_owned(), "0".to_owned())]);
    }

    #[test]
    fn rejects_malformed_lines_precisely() {
        let cases: &[(&[u8], CodecError)] = &[
            (b"\n", CodecError::Empty),
            (
                b"mcmd=spawn\n",
                CodecError::MissingCmd {
                    first: "mcmd=spawn".into(),
                },
            ),
            (
                b"cmd=\n",
                CodecError::MissingCmd {
                    first: "cmd=".into(),
                },
            ),
            (
                b"cmd=put key\n",
                CodecError::MissingEquals {
                    token: "key".into(),
                },
            ),
            (b"cmd=put =v\n", CodecError::EmptyKey { token: "=v".into() }),
            (
                b"cmd=put a=1 a=2\n",
                CodecError::DuplicateKey { key: "a".into() },
            ),
            (
                b"cmd=put cmd=2\n",
                CodecError::DuplicateKey { key: "cmd".into() },
            ),
            (b"cmd=put a=\xff\n", CodecError::NotUtf8 { offset: 10 }),
            (
                b"cmd=put a=x\0\n",
                CodecError::ForbiddenByte {
                    what: "value",
                    text: "x\0".into(),
                    byte: 0,
                },
            ),
        ];
        for (line, want) in cases {
            assert_eq!(Message::parse(line).as_ref(), Err(want), "line {line:?}");
        }
    }

    #[test]
    fn enforces_the_1024_byte_line_limit() {
        let fits = format!("cmd=put value={}\n", "x".repeat(MAX_LINE - 15));
        assert_eq!(fits.len(), MAX_LINE);
        assert!(Message::parse(fits.as_bytes()).is_ok());
        let long = format!("cmd=put value={}\n", "x".repeat(MAX_LINE - 14));
        assert_eq!(
            Message::parse(long.as_bytes()),
            Err(CodecError::LineTooLong {
                len: MAX_LINE + 1,
                limit: MAX_LINE
            })
        );
        assert!(Message::parse_reply(long.as_bytes()).is_ok());
        let m = Message::new("put").with("value", "x".repeat(MAX_LINE - 14));
        assert_eq!(
            m.to_line(),
            Err(CodecError::LineTooLong {
                len: MAX_LINE + 1,
                limit: MAX_LINE
            })
        );
        assert!(m.to_reply_line().is_ok());
    }

    #[test]
    fn refuses_to_format_what_the_peer_would_mangle() {
        let space = Message::new("put").with("value", "a b");
        assert!(matches!(
            space.to_line(),
            Err(CodecError::ForbiddenByte { byte: b' ', .. })
        ));
        let eq_key = Message::new("put").with("a=b", "1");
        assert!(matches!(
            eq_key.to_line(),
            Err(CodecError::ForbiddenByte { byte: b'=', .. })
        ));
        let long = Message::new("x").with("v", "y".repeat(MAX_VALUE + 1));
        assert_eq!(
            long.to_line(),
            Err(CodecError::ValueTooLong {
                key: "v".into(),
                len: 1024
            })
        );
        let empty = Message::new("x").with("", "1");
        assert!(matches!(empty.to_line(), Err(CodecError::EmptyKey { .. })));
    }

    #[test]
    fn line_buffer_splits_and_keeps_partial_lines() {
        let mut buf = LineBuffer::new();
        buf.extend(b"cmd=a\ncmd=b x=");
        assert_eq!(buf.next_line().unwrap().as_deref(), Some(&b"cmd=a\n"[..]));
        assert_eq!(buf.next_line().unwrap(), None);
        buf.extend(b"1\n");
        assert_eq!(
            buf.next_line().unwrap().as_deref(),
            Some(&b"cmd=b x=1\n"[..])
        );
        assert_eq!(buf.pending(), 0);
    }

    #[test]
    fn line_buffer_rejects_endless_lines() {
        let mut buf = LineBuffer::new();
        buf.extend(&[b'x'; MAX_LINE]);
        assert_eq!(
            buf.next_line(),
            Err(CodecError::LineTooLong {
                len: MAX_LINE + 1,
                limit: MAX_LINE
            })
        );
    }

    #[test]
    fn abort_keeps_its_message_and_fits_the_line() {
        let line = format_abort(3, "bad\ninput file");
        assert_eq!(line, "cmd=abort exitcode=3 message=bad input file\n");
        let parsed = parse_abort(line.as_bytes()).unwrap();
        assert_eq!(
            parsed,
            Abort {
                code: 3,
                message: Some("bad input file".into())
            }
        );
        assert_eq!(format_abort(7, " "), "cmd=abort exitcode=7\n");
        assert_eq!(
            parse_abort(b"cmd=abort exitcode=7\n").unwrap(),
            Abort {
                code: 7,
                message: None
            }
        );
        assert_eq!(parse_abort(b"cmd=abort\n").unwrap().code, 1);
        assert_eq!(parse_abort(b"cmd=abortx\n"), None);
        assert_eq!(parse_abort(b"cmd=put\n"), None);
        let long = format_abort(-1, &"é".repeat(2000));
        assert!(long.len() <= MAX_LINE && long.ends_with('\n'));
    }

    fn token() -> impl Strategy<Value = String> {
        "[!-<>-~]{1,12}" // printable ASCII without space and '='
    }

    fn value() -> impl Strategy<Value = String> {
        "[!-~]{0,40}" // printable ASCII without space; '=' allowed
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..1200)) {
            let _ = Message::parse(&bytes);
            let _ = parse_abort(&bytes);
            let mut buf = LineBuffer::new();
            buf.extend(&bytes);
            while let Ok(Some(line)) = buf.next_line() {
                let _ = Message::parse(&line);
            }
        }

        #[test]
        fn format_then_parse_round_trips(
            cmd in token(),
            fields in proptest::collection::btree_map(token(), value(), 0..8),
        ) {
            let mut message = Message::new(&cmd);
            for (k, v) in fields.iter().filter(|(k, _)| *k != "cmd") {
                message = message.with(k, v);
            }
            let line = message.to_line().unwrap();
            prop_assert!(line.len() <= MAX_LINE);
            prop_assert_eq!(Message::parse(line.as_bytes()).unwrap(), message);
        }

        #[test]
        fn stream_split_anywhere_yields_same_lines(
            lines in proptest::collection::vec("[a-z=]{0,30}", 1..6),
            cut in 0usize..200,
        ) {
            let stream: String = lines.iter().map(|l| format!("{l}\n")).collect();
            let cut = cut.min(stream.len());
            let mut buf = LineBuffer::new();
            let mut got = Vec::new();
            for part in [&stream.as_bytes()[..cut], &stream.as_bytes()[cut..]] {
                buf.extend(part);
                while let Some(line) = buf.next_line().unwrap() {
                    got.push(String::from_utf8(line).unwrap());
                }
            }
            let want: Vec<String> = lines.iter().map(|l| format!("{l}\n")).collect();
            prop_assert_eq!(got, want);
        }
    }
}
