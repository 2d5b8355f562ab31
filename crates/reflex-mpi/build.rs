//! Gives the shared library MPICH's soname, so binaries linked against MPICH load it unchanged.
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libmpi.so.12");
}
