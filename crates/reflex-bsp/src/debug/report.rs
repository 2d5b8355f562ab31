//! What each process tells process 0 about its superstep in debug mode, and its byte form.
//!
//! A [`Report`] holds the sync location, the registration calls in order, every write into a
//! registered area (puts and hpputs), and the findings the process made alone (hp transfers
//! whose data changed). It travels as little-endian `u64`s and length-prefixed UTF-8 strings;
//! [`Report::decode`] checks every length and returns `None` on malformed bytes, never panics.

use std::fmt;

/// A source location as text (`file:line`), empty file when unknown.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Site {
    pub file: String,
    pub line: u64,
}

impl fmt::Display for Site {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.file.is_empty() {
            f.write_str("?:? (no bsp.h location)")
        } else {
            write!(f, "{}:{}", self.file, self.line)
        }
    }
}

/// A `bsp_push_reg` (with its size) or a `bsp_pop_reg` (with the registration it removes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegOp {
    Push { size: u64, at: Site },
    Pop { slot: u64, at: Site },
}

/// A write into registered memory of `target`: `len` bytes at its MPI address `addr`, which is
/// `offset` bytes into registration `slot`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Write {
    pub target: u64,
    pub addr: u64,
    pub len: u64,
    pub slot: u64,
    pub offset: u64,
    pub hp: bool,
    pub at: Site,
}

/// One process's account of a superstep.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Report {
    pub pid: u64,
    /// `bsp_sync` or `bsp_end`.
    pub call: String,
    pub at: Site,
    pub regops: Vec<RegOp>,
    pub writes: Vec<Write>,
    /// Findings made by the process alone, as text.
    pub notes: Vec<String>,
}

struct Writer(Vec<u8>);

impl Writer {
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn str(&mut self, s: &str) {
        self.u64(s.len() as u64);
        self.0.extend_from_slice(s.as_bytes());
    }
    fn site(&mut self, s: &Site) {
        self.str(&s.file);
        self.u64(s.line);
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let end = self.at.checked_add(n)?;
        let b = self.bytes.get(self.at..end)?;
        self.at = end;
        Some(b)
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn len(&mut self) -> Option<usize> {
        // A count can never exceed the bytes left: this bounds allocations on bad input.
        let n = usize::try_from(self.u64()?).ok()?;
        (n <= self.bytes.len() - self.at).then_some(n)
    }
    fn str(&mut self) -> Option<String> {
        let n = self.len()?;
        Some(String::from_utf8_lossy(self.take(n)?).into_owned())
    }
    fn site(&mut self) -> Option<Site> {
        Some(Site {
            file: self.str()?,
            line: self.u64()?,
        })
    }
}

impl Report {
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer(Vec::new());
        w.u64(self.pid);
        w.str(&self.call);
        w.site(&self.at);
        w.u64(self.regops.len() as u64);
        for op in &self.regops {
            let (kind, value, at) = match op {
                RegOp::Push { size, at } => (0, *size, at),
                RegOp::Pop { slot, at } => (1, *slot, at),
            };
            w.u64(kind);
            w.u64(value);
            w.site(at);
        }
        w.u64(self.writes.len() as u64);
        for x in &self.writes {
            for v in [x.target, x.addr, x.len, x.slot, x.offset, u64::from(x.hp)] {
                w.u64(v);
            }
            w.site(&x.at);
        }
        w.u64(self.notes.len() as u64);
        for n in &self.notes {
            w.str(n);
        }
        w.0
    }

    pub fn decode(bytes: &[u8]) -> Option<Report> {
        let mut r = Reader { bytes, at: 0 };
        let mut report = Report {
            pid: r.u64()?,
            call: r.str()?,
            at: r.site()?,
            ..Report::default()
        };
        for _ in 0..r.len()? {
            let (kind, value, at) = (r.u64()?, r.u64()?, r.site()?);
            report.regops.push(match kind {
                0 => RegOp::Push { size: value, at },
                1 => RegOp::Pop { slot: value, at },
                _ => return None,
            });
        }
        for _ in 0..r.len()? {
            let v: Vec<u64> = (0..6).map(|_| r.u64()).collect::<Option<_>>()?;
            let at = r.site()?;
            report.writes.push(Write {
                target: v[0],
                addr: v[1],
                len: v[2],
                slot: v[3],
                offset: v[4],
                hp: v[5] != 0,
                at,
            });
        }
        for _ in 0..r.len()? {
            report.notes.push(r.str()?);
        }
        (r.at == bytes.len()).then_some(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(line: u64) -> Site {
        Site {
            file: "a.c".into(),
            line,
        }
    }

    #[test]
    fn round_trip_and_truncation() {
        let report = Report {
            pid: 3,
            call: "bsp_sync".into(),
            at: site(10),
            regops: vec![
                RegOp::Push {
                    size: 40,
                    at: site(4),
                },
                RegOp::Pop {
                    slot: 2,
                    at: site(5),
                },
            ],
            writes: vec![Write {
                target: 1,
                addr: 4096,
                len: 8,
                slot: 0,
                offset: 8,
                hp: true,
                at: site(7),
            }],
            notes: vec!["note".into()],
        };
        let bytes = report.encode();
        assert_eq!(Report::decode(&bytes), Some(report));
        for cut in 0..bytes.len() {
            assert_eq!(Report::decode(&bytes[..cut]), None, "cut at {cut}");
        }
        let mut huge = bytes.clone();
        huge[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(Report::decode(&huge), None);
    }
}
