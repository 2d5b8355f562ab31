//! Declares the `loom` cfg (set by `RUSTFLAGS="--cfg loom"` for the model checks) to rustc's checks.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(loom)");
}
