//! Fuzzes the launcher protocol's stream decoder and the certificate name reader with libFuzzer.
//! The body lives in `reflexd::proto::fuzzing::codec`, which `cargo test -p reflexd` also runs
//! over seeded mutants.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| reflexd::proto::fuzzing::codec(data));
