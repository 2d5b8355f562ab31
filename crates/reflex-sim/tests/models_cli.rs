//! End-to-end tests of the `reflex-models` binary: a fit of a synthetic CSV prints parameters and
//! predictions up to 1024 ranks; a malformed CSV fails with the file, the line and the reason.

use std::path::PathBuf;
use std::process::{Command, Output};

/// A file under the system temporary directory, removed on drop.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str, text: &str) -> Self {
        let path =
            std::env::temp_dir().join(format!("reflex-models-{}-{name}", std::process::id()));
        std::fs::write(&path, text).expect("write temporary file");
        TempFile(path)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_reflex-models"))
        .args(args)
        .output()
        .expect("run reflex-models")
}

#[test]
fn fit_prints_parameters_and_predictions_to_1024_ranks() {
    // bcast on a binomial tree with α = 1 µs, β = 0.001 µs/byte.
    let mut csv = String::from("collective,algorithm,ranks,bytes,usec\n");
    for (n, rounds) in [(2, 1.0), (4, 2.0), (8, 3.0)] {
        for m in [4usize, 1024] {
            csv.push_str(&format!(
                "bcast,binomial,{n},{m},{}\n",
                rounds * (1.0 + 0.001 * m as f64)
            ));
        }
    }
    let file = TempFile::new("good.csv", &csv);
    let out = run(&["fit", "--input", file.0.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("alpha = 1.000, beta = 1.000e-3 | 1.0000 | 0.0 %"),
        "{text}"
    );
    // 1024 ranks: 10 rounds of 1 + 0.004 µs.
    assert!(text.contains("| 1024 | - | 10.040 |"), "{text}");
}

#[test]
fn malformed_csv_fails_with_the_line() {
    let file = TempFile::new("bad.csv", "bcast,reflex,2,4,1.0\nbcast,reflex,2,4\n");
    let out = run(&["fit", "--input", file.0.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("reflex-models: ")
            && err.contains("bad.csv: line 2: expected 5 comma-separated fields"),
        "{err}"
    );
}

#[test]
fn paper_and_sweep_run() {
    for args in [&["paper"][..], &["sweep-r", "--set", "scramnet"], &["list"]] {
        let out = run(args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.stdout.is_empty());
    }
}
