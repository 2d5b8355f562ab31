//! The checks process 0 runs on the reports of all processes at each sync (the paper's error
//! detectors, P2 §2.2), as pure functions of the reports:
//! - **sync locations**: every process must reach the sync from the same call and source line
//!   (cross-correlating file:line, as the paper does);
//! - **registrations**: the k-th registration call must be the same kind on every process, and
//!   pops must remove the same registration; different sizes are legal in BSPlib (e.g. `NULL`, 0
//!   on processes without data) and only warned about;
//! - **overlapping writes**: two writes (puts or hpputs, from any processes, including two from
//!   one process, since MPI does not order puts) into the same bytes of one process in one
//!   superstep; found by sorting the writes by target address;
//! - the processes' own findings (hp transfers whose data changed before the sync).

use super::report::{RegOp, Report, Site, Write};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// At most this many overlapping pairs are listed per superstep (the rest are counted).
const MAX_OVERLAPS: usize = 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub severity: Severity,
    pub text: String,
}

/// An error finding.
pub fn error(text: String) -> Finding {
    Finding {
        severity: Severity::Error,
        text,
    }
}

/// Every finding about one superstep, errors and warnings.
pub fn analyse(reports: &[Report]) -> Vec<Finding> {
    let mut findings = Vec::new();
    findings.extend(sync_locations(reports));
    findings.extend(registrations(reports));
    findings.extend(overlaps(reports));
    for r in reports {
        findings.extend(r.notes.iter().map(|n| error(format!("pid {}: {n}", r.pid))));
    }
    findings
}

/// "pid 0" or "pids 0, 2".
fn pids(list: &[u64]) -> String {
    let s: Vec<String> = list.iter().map(u64::to_string).collect();
    format!(
        "pid{} {}",
        if list.len() > 1 { "s" } else { "" },
        s.join(", ")
    )
}

fn sync_locations(reports: &[Report]) -> Option<Finding> {
    let mut groups: BTreeMap<(&str, &Site), Vec<u64>> = BTreeMap::new();
    for r in reports {
        groups
            .entry((r.call.as_str(), &r.at))
            .or_default()
            .push(r.pid);
    }
    if groups.len() < 2 {
        return None;
    }
    let parts: Vec<String> = groups
        .iter()
        .map(|((call, at), p)| format!("{} at {call} {at}", pids(p)))
        .collect();
    Some(error(format!(
        "sync mismatch: processes reached the sync from different lines: {}",
        parts.join("; ")
    )))
}

fn describe(op: Option<&RegOp>) -> String {
    match op {
        Some(RegOp::Push { size, at }) => format!("bsp_push_reg at {at} ({size} bytes)"),
        Some(RegOp::Pop { slot, at }) => format!("bsp_pop_reg at {at} (registration #{slot})"),
        None => "no registration call".into(),
    }
}

fn same_kind(a: Option<&RegOp>, b: Option<&RegOp>) -> bool {
    match (a, b) {
        (Some(RegOp::Push { .. }), Some(RegOp::Push { .. })) => true,
        (Some(RegOp::Pop { slot: x, .. }), Some(RegOp::Pop { slot: y, .. })) => x == y,
        _ => false,
    }
}

fn registrations(reports: &[Report]) -> Vec<Finding> {
    let longest = reports.iter().map(|r| r.regops.len()).max().unwrap_or(0);
    let mut findings = Vec::new();
    for k in 0..longest {
        let ops: Vec<Option<&RegOp>> = reports.iter().map(|r| r.regops.get(k)).collect();
        let listing = || {
            let parts: Vec<String> = reports
                .iter()
                .zip(&ops)
                .map(|(r, op)| format!("pid {}: {}", r.pid, describe(*op)))
                .collect();
            parts.join("; ")
        };
        if !ops.iter().all(|op| same_kind(*op, ops[0])) {
            let n = k + 1;
            findings.push(error(format!(
                "registration mismatch at registration call #{n} of the superstep: {}",
                listing()
            )));
            return findings; // later calls are shifted by this one: reporting them adds noise
        }
        let sizes: Vec<u64> = ops
            .iter()
            .filter_map(|op| match op {
                Some(RegOp::Push { size, .. }) => Some(*size),
                _ => None,
            })
            .collect();
        // Size 0 is the idiom for "no data on this process" (often with NULL): not worth a warning.
        if sizes.iter().any(|s| *s != sizes[0]) && !sizes.contains(&0) {
            let text = format!("registration sizes differ (legal in BSPlib; transfers beyond the smaller size fail): {}", listing());
            findings.push(Finding {
                severity: Severity::Warning,
                text,
            });
        }
    }
    findings
}

/// All writes of the superstep with the pid that made them.
fn writes(reports: &[Report]) -> Vec<(u64, &Write)> {
    let mut all: Vec<(u64, &Write)> = reports
        .iter()
        .flat_map(|r| r.writes.iter().map(move |w| (r.pid, w)))
        .collect();
    all.sort_by_key(|(_, w)| (w.target, w.addr));
    all
}

fn overlaps(reports: &[Report]) -> Option<Finding> {
    let all = writes(reports);
    let mut pairs = Vec::new();
    for (i, (pa, a)) in all.iter().enumerate() {
        let end = a.addr.saturating_add(a.len);
        for (pb, b) in all[i + 1..]
            .iter()
            .take_while(|(_, b)| b.target == a.target && b.addr < end)
        {
            if a.len > 0 && b.len > 0 {
                pairs.push((*pa, *a, *pb, *b));
            }
        }
    }
    if pairs.is_empty() {
        return None;
    }
    let mut text = String::from("overlapping writes in one superstep:");
    for (pa, a, pb, b) in pairs.iter().take(MAX_OVERLAPS) {
        let lo = a.addr.max(b.addr);
        let hi = a
            .addr
            .saturating_add(a.len)
            .min(b.addr.saturating_add(b.len));
        let start = a.offset + (lo - a.addr);
        let _ = write!(
            text,
            "\n    pid {} bytes {}..{} of registration #{}: written by pid {pa} ({} at {}) and pid {pb} ({} at {})",
            a.target,
            start,
            start + (hi - lo),
            a.slot,
            call(a),
            a.at,
            call(b),
            b.at
        );
    }
    if pairs.len() > MAX_OVERLAPS {
        let _ = write!(text, "\n    and {} more", pairs.len() - MAX_OVERLAPS);
    }
    Some(error(text))
}

fn call(w: &Write) -> &'static str {
    if w.hp {
        "bsp_hpput"
    } else {
        "bsp_put"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(line: u64) -> Site {
        Site {
            file: "p.c".into(),
            line,
        }
    }

    fn report(pid: u64, line: u64) -> Report {
        Report {
            pid,
            call: "bsp_sync".into(),
            at: site(line),
            ..Report::default()
        }
    }

    fn write(target: u64, addr: u64, len: u64, line: u64) -> Write {
        Write {
            target,
            addr,
            len,
            slot: 0,
            offset: addr - 1000,
            hp: false,
            at: site(line),
        }
    }

    #[test]
    fn clean_superstep_has_no_findings() {
        let mut a = report(0, 9);
        let mut b = report(1, 9);
        a.writes.push(write(1, 1000, 8, 3));
        b.writes.push(write(1, 1008, 8, 4));
        a.regops.push(RegOp::Push {
            size: 8,
            at: site(2),
        });
        b.regops.push(RegOp::Push {
            size: 8,
            at: site(2),
        });
        assert_eq!(analyse(&[a, b]), vec![]);
    }

    #[test]
    fn sync_lines_differ() {
        let f = analyse(&[report(0, 9), report(1, 12), report(2, 9)]);
        assert_eq!(f.len(), 1);
        assert!(
            f[0].text
                .contains("pids 0, 2 at bsp_sync p.c:9; pid 1 at bsp_sync p.c:12"),
            "{}",
            f[0].text
        );
    }

    #[test]
    fn overlapping_bytes_reported_with_both_sites() {
        let mut a = report(0, 9);
        let mut b = report(1, 9);
        a.writes.push(write(2, 1000, 8, 30));
        b.writes.push(write(2, 1004, 8, 31));
        b.writes.push(write(3, 1004, 8, 32)); // other target: no overlap
        let f = analyse(&[a, b]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].text.contains("pid 2 bytes 4..8"), "{}", f[0].text);
        assert!(
            f[0].text
                .contains("pid 0 (bsp_put at p.c:30) and pid 1 (bsp_put at p.c:31)"),
            "{}",
            f[0].text
        );
    }

    #[test]
    fn missing_registration_and_size_warning() {
        let mut a = report(0, 9);
        let b = report(1, 9);
        a.regops.push(RegOp::Push {
            size: 8,
            at: site(2),
        });
        let f = analyse(&[a.clone(), b]);
        assert_eq!(f[0].severity, Severity::Error);
        assert!(
            f[0].text
                .contains("pid 0: bsp_push_reg at p.c:2 (8 bytes); pid 1: no registration call"),
            "{}",
            f[0].text
        );
        let mut c = report(1, 9);
        c.regops.push(RegOp::Push {
            size: 4,
            at: site(2),
        });
        let f = analyse(&[a, c]);
        assert_eq!(f[0].severity, Severity::Warning);
    }

    #[test]
    fn pops_of_different_registrations() {
        let mut a = report(0, 9);
        let mut b = report(1, 9);
        a.regops.push(RegOp::Pop {
            slot: 1,
            at: site(5),
        });
        b.regops.push(RegOp::Pop {
            slot: 2,
            at: site(6),
        });
        assert_eq!(analyse(&[a, b])[0].severity, Severity::Error);
    }
}
