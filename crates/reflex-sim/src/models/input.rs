//! Measured collective latencies as CSV, the input of `reflex-models fit`.
//!
//! Format: one measurement per line, five comma-separated fields
//! `collective,algorithm,ranks,bytes,usec`:
//!
//! - `collective`: one of `barrier, bcast, reduce, allreduce, allgather, alltoall`;
//! - `algorithm`: a model name (`dissemination`, `binomial`, `flat-barrier`, ... : fit that model
//!   only) or any other label such as an implementation (`reflex`: fit every model of the
//!   collective); letters, digits, `-`, `_`, `.`;
//! - `ranks`: number of processes (≥ 2), `bytes`: message length (per rank for allgather and
//!   alltoall, as `bench/coll.c` counts it), `usec`: latency per operation in µs (> 0).
//!
//! An optional header line `collective,algorithm,ranks,bytes,usec`, blank lines and lines
//! starting with `#` are skipped; spaces around fields are ignored. `bench/coll.py --csv FILE`
//! writes this format.

use crate::error::{Result, SimError};

use super::COLLECTIVES;

/// The header line (also written by `bench/coll.py --csv`).
pub const HEADER: &str = "collective,algorithm,ranks,bytes,usec";

/// One measured latency.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// Collective name.
    pub collective: String,
    /// Model name or free label.
    pub algorithm: String,
    /// Number of ranks.
    pub ranks: usize,
    /// Message length in bytes.
    pub bytes: usize,
    /// Latency in µs.
    pub usec: f64,
    /// 1-based line in the input.
    pub line: usize,
}

/// Parses the CSV `text`; `what` names it in errors (e.g. the file name).
pub fn parse_samples(what: &str, text: &str) -> Result<Vec<Sample>> {
    let mut samples = Vec::new();
    let mut seen_data = false;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if !seen_data && is_header(line) {
            seen_data = true;
            continue;
        }
        seen_data = true;
        samples
            .push(parse_line(line, i + 1).map_err(|reason| SimError::parse(what, i + 1, reason))?);
    }
    if samples.is_empty() {
        return Err(SimError::parse(
            what,
            0,
            "no measurements (expected lines `collective,algorithm,ranks,bytes,usec`)",
        ));
    }
    Ok(samples)
}

fn is_header(line: &str) -> bool {
    let fields: Vec<&str> = line.split(',').map(str::trim).collect();
    fields == HEADER.split(',').collect::<Vec<_>>()
}

fn parse_line(line: &str, number: usize) -> std::result::Result<Sample, String> {
    let fields: Vec<&str> = line.split(',').map(str::trim).collect();
    let [collective, algorithm, ranks, bytes, usec] = fields[..] else {
        return Err(format!(
            "expected 5 comma-separated fields ({HEADER}), found {}",
            fields.len()
        ));
    };
    if !COLLECTIVES.contains(&collective) {
        return Err(format!(
            "unknown collective `{collective}` (expected one of {})",
            COLLECTIVES.join(", ")
        ));
    }
    let label_ok = |c: char| c.is_ascii_alphanumeric() || "-_.".contains(c);
    if algorithm.is_empty() || !algorithm.chars().all(label_ok) {
        return Err(format!(
            "bad algorithm `{algorithm}` (letters, digits, `-`, `_`, `.`)"
        ));
    }
    let ranks: usize = ranks
        .parse()
        .map_err(|_| format!("ranks `{ranks}` is not a whole number"))?;
    if ranks < 2 {
        return Err(format!("ranks must be at least 2, got {ranks}"));
    }
    let bytes: usize = bytes
        .parse()
        .map_err(|_| format!("bytes `{bytes}` is not a whole number"))?;
    let usec: f64 = usec
        .parse()
        .map_err(|_| format!("usec `{usec}` is not a number"))?;
    if !usec.is_finite() || usec <= 0.0 {
        return Err(format!("usec must be a positive number, got {usec}"));
    }
    Ok(Sample {
        collective: collective.to_string(),
        algorithm: algorithm.to_string(),
        ranks,
        bytes,
        usec,
        line: number,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_header_comments_and_rows() {
        let text = "# measured\ncollective,algorithm,ranks,bytes,usec\n\nbarrier, reflex, 2, 0, 0.41\nbcast,binomial,4,64,1.5\n";
        let s = parse_samples("t.csv", text).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].algorithm, "reflex");
        assert_eq!(
            (s[1].ranks, s[1].bytes, s[1].usec, s[1].line),
            (4, 64, 1.5, 5)
        );
    }

    #[test]
    fn bad_lines_name_the_line_and_the_reason() {
        let cases = [
            (
                "barrier,reflex,2,0\n",
                "line 1: expected 5 comma-separated fields",
            ),
            (
                "barrier,reflex,2,0,1\nbarier,reflex,2,0,1\n",
                "line 2: unknown collective `barier`",
            ),
            (
                "bcast,reflex,two,0,1\n",
                "line 1: ranks `two` is not a whole number",
            ),
            ("bcast,reflex,1,0,1\n", "line 1: ranks must be at least 2"),
            (
                "bcast,reflex,2,-4,1\n",
                "line 1: bytes `-4` is not a whole number",
            ),
            (
                "bcast,reflex,2,4,fast\n",
                "line 1: usec `fast` is not a number",
            ),
            (
                "bcast,reflex,2,4,0\n",
                "line 1: usec must be a positive number",
            ),
            (
                "bcast,reflex,2,4,NaN\n",
                "line 1: usec must be a positive number",
            ),
            ("bcast,re flex,2,4,1\n", "line 1: bad algorithm `re flex`"),
        ];
        for (text, expect) in cases {
            let e = parse_samples("m.csv", text).unwrap_err().to_string();
            assert!(e.starts_with("m.csv: ") && e.contains(expect), "{e}");
        }
        let e = parse_samples("m.csv", "# nothing\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no measurements"), "{e}");
    }
}
