//! End-to-end tests of the `reflex-sim` binary: `reproduce --smoke` writes a report that states a
//! verdict for every expectation of the three papers, with its JSON results and every plot as
//! SVG and PNG; bad event flags are refused with a clear message.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The expectations the report must give a verdict for (a prefix of each summary line).
const EXPECTATIONS: [&str; 12] = [
    "A: UD_DFS < UD_BFS in avg distance",
    "A: throughput ratio UD_DFS/UD_BFS",
    "A: UD_DFS ahead for permutation and local traffic",
    "A: smallest UD_DFS gain for local traffic",
    "B: GA orientation never worse than MDST/POST",
    "B: GA equals the exhaustive optimum",
    "B: GA simulated throughput >= MDST/POST",
    "B: the GA's gain over MDST grows with network size",
    "C: static reconfiguration stops traffic",
    "C: dynamic reconfiguration keeps traffic flowing",
    "C: dynamic discards fewer packets than static",
    "C: dynamic reconfiguration takes less time than static",
];

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_reflex-sim"))
}

/// A fresh directory under the system temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("reflex-sim-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn files_with(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    out.sort();
    out
}

#[test]
fn reproduce_smoke_writes_report_results_and_plots() {
    let dir = TempDir::new("smoke");
    let out = bin()
        .args(["reproduce", "--smoke", "--out"])
        .arg(&dir.0)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("report written to"), "{stdout}");

    let report = std::fs::read_to_string(dir.0.join("report.md")).unwrap();
    assert!(report.contains("Mode: smoke"));
    let summary: Vec<&str> = report
        .split("## Summary of expectations")
        .nth(1)
        .unwrap()
        .lines()
        .skip_while(|l| l.is_empty())
        .take_while(|l| !l.is_empty())
        .collect();
    for line in &summary {
        assert!(
            line.starts_with("- [x] ") || line.starts_with("- [ ] "),
            "{line}"
        );
    }
    for e in EXPECTATIONS {
        let n = summary.iter().filter(|l| l[6..].starts_with(e)).count();
        assert_eq!(n, 1, "expectation {e:?} in {summary:#?}");
    }
    for section in ["## Paper A", "## Paper B", "## Paper C", "## Differences"] {
        assert!(report.contains(section), "{section}");
    }

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.0.join("results.json")).unwrap())
            .unwrap();
    for paper in ["a_", "b_", "c_"] {
        let keys = json.as_object().unwrap().keys();
        assert!(keys.clone().any(|k| k.starts_with(paper)), "{paper}");
    }

    let svgs = files_with(&dir.0, "svg");
    let names: Vec<String> = svgs
        .iter()
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    for wanted in ["a_uniform_9", "a_traffic_0", "c_latency_16", "c_discarded"] {
        assert!(names.iter().any(|n| n == wanted), "{wanted} in {names:?}");
    }
    for svg in &svgs {
        assert!(std::fs::read_to_string(svg).unwrap().starts_with("<svg"));
        let png = std::fs::read(svg.with_extension("png")).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{}", svg.display());
    }
    assert_eq!(files_with(&dir.0, "png").len(), svgs.len());
}

#[test]
fn link_events_are_checked_before_the_run() {
    let out = bin()
        .args([
            "simulate",
            "--switches",
            "8",
            "--switching",
            "vct",
            "--fail-link",
            "0-99",
            "--fail-at",
            "10",
            "--cycles",
            "100",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("event \"link 0-99 down\" at cycle 10: switches 0 and 99 are not linked"),
        "{err}"
    );
}
