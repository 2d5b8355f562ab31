//! Records build information for `reflex-info`: profile, target triple, rustc version and git
//! commit, as compile-time environment variables `RFX_BUILD_*` (each "unknown" when unavailable).

use std::path::Path;
use std::process::Command;

fn main() {
    let env = |name: &str| std::env::var(name).unwrap_or_else(|_| "unknown".to_owned());
    println!("cargo:rustc-env=RFX_BUILD_PROFILE={}", env("PROFILE"));
    println!("cargo:rustc-env=RFX_BUILD_TARGET={}", env("TARGET"));
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let version = run(&rustc, &["--version"]).unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=RFX_BUILD_RUSTC={version}");
    let commit =
        run("git", &["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=RFX_BUILD_COMMIT={commit}");
    println!("cargo:rerun-if-changed=build.rs");
    if let Some(git_dir) = run("git", &["rev-parse", "--absolute-git-dir"]) {
        let head = Path::new(&git_dir).join("HEAD");
        println!("cargo:rerun-if-changed={}", head.display());
        if let Some(reference) = run("git", &["symbolic-ref", "-q", "HEAD"]) {
            println!(
                "cargo:rerun-if-changed={}",
                Path::new(&git_dir).join(reference).display()
            );
        }
    }
}

/// The trimmed stdout of a successful command.
fn run(program: &str, args: &[&str]) -> Option<String> {
    let output = Command::new(program).args(args).output().ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    (output.status.success() && !text.trim().is_empty()).then(|| text.trim().to_owned())
}
