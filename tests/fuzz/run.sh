#!/usr/bin/env bash
# Runs every cargo-fuzz target of the workspace with libFuzzer for SECONDS each (default 20):
# the TCP transport's wire parsers (crates/reflex-tcp/fuzz, target `frame`) and the launcher
# protocol (crates/reflexd/fuzz, target `codec`). Fails if a target crashes (the input is kept in
# target/fuzz-artifacts/<target>/); prints "skipped: <reason>" and succeeds when nightly Rust or
# cargo-fuzz is missing. The corpora live in target/fuzz-corpus/ (kept between runs, so each run
# goes on where the last one stopped). The stable share of the same fuzzing runs in `cargo test`
# (reflex_tcp::fuzzing, reflexd::proto::fuzzing). The first run builds both targets and all of
# reflexd's dependencies (rustls, ring) in target/fuzz: minutes on 2 cores; later runs reuse it
# (measured: 45 s for `run.sh 20` with the build in place).
# Usage: tests/fuzz/run.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
SECONDS_EACH=${1:-20}
case $SECONDS_EACH in '' | *[!0-9]*) echo "usage: $0 [SECONDS]" >&2; exit 2 ;; esac
if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "skipped: no nightly Rust toolchain (rustup toolchain install nightly)"
    exit 0
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "skipped: cargo-fuzz is not installed (cargo install cargo-fuzz)"
    exit 0
fi
ROOT=$PWD
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
case $TARGET_DIR in /*) ;; *) TARGET_DIR=$ROOT/$TARGET_DIR ;; esac
failed=()
for spec in reflex-tcp:frame reflexd:codec; do
    crate=${spec%%:*} target=${spec#*:}
    corpus=$TARGET_DIR/fuzz-corpus/$target artifacts=$TARGET_DIR/fuzz-artifacts/$target
    mkdir -p "$corpus" "$artifacts"
    echo "== fuzz $crate/$target for ${SECONDS_EACH}s"
    # No sanitizer: both crates forbid unsafe code, so AddressSanitizer would find nothing that
    # bounds checks do not; crashes are panics (with overflow checks on, cargo fuzz's default).
    # The build is then much shorter. -max_len: the seeds are under 1 KiB.
    if ! (cd "crates/$crate/fuzz" &&
        cargo +nightly fuzz run --sanitizer none --target-dir "$TARGET_DIR/fuzz" "$target" "$corpus" -- \
            -max_total_time="$SECONDS_EACH" -max_len=4096 -artifact_prefix="$artifacts/" \
            -print_final_stats=1 2>&1 | grep --line-buffered -v '^#[0-9]\|^\s*Compiling\|NEW_FUNC'); then
        failed+=("$target")
    fi
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: FAILED: ${failed[*]} (inputs in $TARGET_DIR/fuzz-artifacts/)" >&2
    exit 1
fi
echo "fuzz: ok (no crash in ${SECONDS_EACH}s per target)"
