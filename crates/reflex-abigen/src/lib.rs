//! Generator of Reflex's C ABI: reads `crates/reflex-mpi/abi/functions.txt` (every MPI function with
//! parameter kinds) and `implemented.txt`, and writes the prototype block of `mpi.h` and the Rust
//! shims of `libmpi.so`. One list, one template: the MPICH-ch4 "generated bindings" model
//! (`shared/reference/style-models.md` §5.2 rule 11).
#![forbid(unsafe_code)]

pub mod ctype;
pub mod gen;
pub mod spec;

use std::path::Path;

/// Paths of the inputs and outputs, relative to the repository root.
pub const FUNCTIONS: &str = "crates/reflex-mpi/abi/functions.txt";
/// Which functions are implemented, and their call style.
pub const IMPLEMENTED: &str = "crates/reflex-mpi/abi/implemented.txt";
/// The header template (constants and types), with an `@PROTOTYPES@` line.
pub const HEADER_TEMPLATE: &str = "crates/reflex-mpi/abi/mpi_base.h.in";
/// Generated header.
pub const HEADER_OUT: &str = "crates/reflex-mpi/abi/generated/mpi.h";
/// Generated shims.
pub const SHIMS_OUT: &str = "crates/reflex-mpi/src/generated.rs";

/// The generated files' contents: (header, shims).
pub fn generate(root: &Path, version: &str) -> Result<(String, String), String> {
    let read = |p: &str| {
        std::fs::read_to_string(root.join(p)).map_err(|e| format!("cannot read {p}: {e}"))
    };
    let functions = spec::parse_functions(&read(FUNCTIONS)?)?;
    let implemented = spec::parse_implemented(&read(IMPLEMENTED)?)?;
    if let Some(unknown) = implemented
        .keys()
        .find(|n| !functions.iter().any(|f| &&f.name == n))
    {
        return Err(format!(
            "implemented.txt names {unknown}, which functions.txt does not declare"
        ));
    }
    let template = read(HEADER_TEMPLATE)?;
    if !template.lines().any(|l| l.trim() == "@PROTOTYPES@") {
        return Err(format!("{HEADER_TEMPLATE} has no @PROTOTYPES@ line"));
    }
    let header = template
        .replace(
            "@PROTOTYPES@",
            gen::header_prototypes(&functions).trim_end(),
        )
        .replace("@VERSION@", version);
    Ok((header, gen::rust_shims(&functions, &implemented)))
}
