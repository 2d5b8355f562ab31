//! `reflex-info`: prints the Reflex version, build information and effective configuration.

fn main() {
    std::process::exit(reflex_launch::info::info_main());
}
