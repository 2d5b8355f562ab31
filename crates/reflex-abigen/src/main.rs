//! `reflex-abigen [--check] [ROOT]`: writes (or, with `--check`, verifies) the generated ABI files.
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let check = args.iter().any(|a| a == "--check");
    let root = args
        .iter()
        .find(|a| !a.starts_with("--"))
        .map_or_else(|| PathBuf::from("."), PathBuf::from);
    let (header, shims) = match reflex_abigen::generate(&root, env!("CARGO_PKG_VERSION")) {
        Ok(out) => out,
        Err(e) => {
            eprintln!("reflex-abigen: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outputs = [
        (reflex_abigen::HEADER_OUT, header),
        (reflex_abigen::SHIMS_OUT, shims),
    ];
    for (path, text) in outputs {
        let path = root.join(path);
        if check {
            if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
                eprintln!(
                    "reflex-abigen: {} is stale; run `cargo run -p reflex-abigen`",
                    path.display()
                );
                return ExitCode::FAILURE;
            }
        } else {
            let written = path
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| std::fs::write(&path, text));
            if let Err(e) = written {
                eprintln!("reflex-abigen: cannot write {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
