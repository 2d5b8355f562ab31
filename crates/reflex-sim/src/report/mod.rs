//! Output: plots (SVG and PNG), CSV/JSON helpers and the `reproduce` command
//! ([`reproduce::reproduce`]), which re-runs the three papers' experiments ([`paper_a`], [`paper_b`], [`paper_c`]).

mod differences;
pub mod paper_a;
pub mod paper_b;
pub mod paper_c;
pub mod plot;
pub mod raster;
pub mod reproduce;

use std::path::Path;

use crate::error::{Result, SimError};

/// Pixels per SVG unit of the PNG plots (1280x840 images).
pub const PNG_SCALE: u32 = 2;

/// Writes `text` to `dir/name`, creating `dir`.
pub fn write_file(dir: &Path, name: &str, text: &str) -> Result<()> {
    write_bytes(dir, name, text.as_bytes())
}

/// Writes `bytes` to `dir/name`, creating `dir`.
pub fn write_bytes(dir: &Path, name: &str, bytes: &[u8]) -> Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| SimError::io(format!("creating {}", dir.display()), e))?;
    let path = dir.join(name);
    std::fs::write(&path, bytes).map_err(|e| SimError::io(format!("writing {}", path.display()), e))
}

/// Writes `plot` as `dir/stem.svg` and `dir/stem.png`.
pub fn write_plot(dir: &Path, stem: &str, plot: &plot::Plot) -> Result<()> {
    write_file(dir, &format!("{stem}.svg"), &plot.to_svg())?;
    write_bytes(dir, &format!("{stem}.png"), &plot.to_png(PNG_SCALE)?)
}

/// Pretty JSON of `value` (serialisation of plain data cannot fail; an error becomes a message).
pub fn to_json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}
