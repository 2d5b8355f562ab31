//! Fuzzes the frame header, hello and business-card parsers with libFuzzer. The body lives in
//! `reflex_tcp::fuzzing::wire`, which `cargo test -p reflex-tcp` also runs over seeded mutants.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| reflex_tcp::fuzzing::wire(data));
