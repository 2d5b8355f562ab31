//! Output: SVG plots, CSV/JSON helpers and the `reproduce` command ([`reproduce::reproduce`]),
//! which re-runs the three papers' experiments ([`paper_a`], [`paper_b`], [`paper_c`]).

mod differences;
pub mod paper_a;
pub mod paper_b;
pub mod paper_c;
pub mod plot;
pub mod reproduce;

use std::path::Path;

use crate::error::{Result, SimError};

/// Writes `text` to `dir/name`, creating `dir`.
pub fn write_file(dir: &Path, name: &str, text: &str) -> Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| SimError::io(format!("creating {}", dir.display()), e))?;
    let path = dir.join(name);
    std::fs::write(&path, text).map_err(|e| SimError::io(format!("writing {}", path.display()), e))
}

/// Pretty JSON of `value` (serialisation of plain data cannot fail; an error becomes a message).
pub fn to_json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}
