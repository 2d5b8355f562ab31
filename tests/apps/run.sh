#!/usr/bin/env bash
# run.sh -- programs built for MPICH, unmodified, run on Reflex: Debian's MPICH-linked binaries and
# MPICH's own Fortran binding (libmpichfort.so.12) on top of Reflex's libmpi.so.12.
#
# Usage: tests/apps/run.sh PREFIX [WORK_DIR]
#   PREFIX     a Reflex installation (scripts/install.sh PREFIX)
#   WORK_DIR   scratch directory (default: build/apps in the repository; emptied first)
#   APPS_PARTS=... runs only those parts (default: "fortran scalapack hdf5 netpipe")
#
# 1. Fortran: every symbol MPICH's Fortran binding takes from libmpi is exported by Reflex;
#    tests/apps/fortran.f90 (`use mpi` and mpif.h) and tests/apps/f08.f90 (`use mpi_f08`) built
#    with Debian's mpif90.mpich, on 1-4 ranks.
# 2. ScaLAPACK's test suite as Debian ships it for MPICH (package scalapack-mpi-test): the
#    LAPACK-level drivers, the 12 PBLAS testers and the BLACS testers in C and Fortran, each on 4
#    ranks as upstream runs them (4 ranks on 2 cores here).
# 3. Parallel HDF5 (package libhdf5-mpich-dev, on MPICH's MPI-IO interface): tests/apps/hdf5.c
#    built with h5pcc.mpich, collective and independent writes, read back, 1-4 ranks.
# 4. NetPIPE (package netpipe-mpich2): its ping-pong sweep up to 64 KiB on 2 ranks.
# The libmpich.so.12 these binaries were linked with resolves to Reflex through LD_LIBRARY_PATH
# (checked with ldd). A part whose package is missing is skipped with a message; the script fails
# when anything that ran failed.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
[ $# -ge 1 ] || { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }
prefix=$(cd "$1" 2>/dev/null && pwd) || { echo "apps: no such prefix: $1" >&2; exit 2; }
work=${2:-$repo/build/apps}
mpiexec=$prefix/bin/mpiexec
libmpi=$(readlink -f "$prefix/lib/libmpi.so.12") || { echo "apps: no libmpi in $prefix" >&2; exit 2; }
rm -rf "$work" && mkdir -p "$work" || exit 2
export LD_LIBRARY_PATH=$prefix/lib

# ScaLAPACK drivers left out, with the reason (each seen with MPICH or Open MPI themselves):
# xslu, xsllt: hang after "On entry to PSGETRS parameter number 1 had an illegal value" under
#   MPICH 4.0.2's own mpiexec too (Debian's single-precision build);
# xdsep, xssep: test 27 (N = 10, matrix type 10) fails its residual check at random (seen 1 run
#   in 4 or 5 for each; xdsep also under Open MPI 4.1.4);
# xcheevr, xzheevr: BLACS combines receive with MPI_ANY_SOURCE and sum in arrival order, so a
#   value can differ in its last bit with the order two messages arrive in (both orders are
#   correct MPI); these testers then report "IL, IU, VL or VU altered by PCHEEVR" for 131 of
#   136 cases. Traced 2026-11-27: two builds of Reflex passed and failed them deterministically,
#   and the first difference between the runs was the order of two ANY_SOURCE receives on rank 0.
scalapack_skip=" xslu xsllt xdsep xssep xcheevr xzheevr "

passed=0 failed=0 skipped=0
pass() { passed=$((passed + 1)); echo "  ok   $*"; }
fail() { failed=$((failed + 1)); echo "  FAIL $*"; }
skip() { skipped=$((skipped + 1)); echo "  skip $*"; }

# loads_reflex BINARY: whether BINARY's libmpich.so.12 (or libmpi.so.12) is Reflex's.
loads_reflex() {
    local loaded
    loaded=$(ldd "$1" 2>/dev/null | awk '$1 == "libmpich.so.12" || $1 == "libmpi.so.12" {print $3}')
    [ -n "$loaded" ] && [ "$(readlink -f "$loaded")" = "$libmpi" ]
}

# run_mpi LOG SECONDS N BINARY ARGS...: BINARY on N ranks under Reflex's mpiexec, output in LOG.
run_mpi() {
    local log=$1 seconds=$2 n=$3
    shift 3
    timeout "$seconds" "$mpiexec" -n "$n" "$@" >"$log" 2>&1
}

# show LOG: the end of LOG, indented.
show() { tail -n 15 "$1" | sed 's/^/       | /'; }

# build_and_run NAME SECONDS COMPILER FLAGS... -- SOURCE ARGS...: SOURCE (in tests/apps) built by
# an MPICH compiler wrapper, checked to load Reflex, then run on 1-4 ranks with ARGS; each run
# passes when every rank prints "apps NAME rank R of N: ok".
build_and_run() {
    local name=$1 seconds=$2 cc=$3 n
    shift 3
    local flags=()
    while [ "$1" != -- ]; do flags+=("$1"); shift; done
    local src=$2 exe=$work/$name
    shift 2
    # Built inside the scratch directory: Fortran compilers leave module files where they run.
    if ! (cd "$work" && "$cc" "${flags[@]}" -o "$exe" "$here/$src") >"$work/$name-build.log" 2>&1; then
        fail "$name: $cc could not build tests/apps/$src"
        show "$work/$name-build.log"
        return
    fi
    loads_reflex "$exe" || { fail "$name: does not load $libmpi"; ldd "$exe" | sed 's/^/       | /'; return; }
    for n in 1 2 3 4; do
        if run_mpi "$work/$name-$n.log" "$seconds" "$n" "$exe" "$@" &&
            [ "$(grep -c "^apps $name rank .* of $n: ok$" "$work/$name-$n.log")" -eq "$n" ]; then
            pass "$name on $n ranks"
        else
            fail "$name on $n ranks"
            show "$work/$name-$n.log"
        fi
    done
}

# fortran_symbols: every MPI symbol (MPI_, PMPI_, MPIX_, MPII_, MPIR_ ...) that MPICH's Fortran
# binding library needs from libmpi is defined by Reflex's.
fortran_symbols() {
    local fort missing
    fort=$(ldd "$work/fortran" 2>/dev/null | awk '$1 == "libmpichfort.so.12" {print $3}')
    [ -n "$fort" ] || { fail "fortran: built program does not load libmpichfort.so.12"; return; }
    missing=$(comm -23 \
        <(nm -D --undefined-only "$fort" | awk '{sub(/@.*/, "", $2); print $2}' | grep -E '^P?MPI' | sort -u) \
        <(nm -D --defined-only "$libmpi" | awk '{print $3}' | sort -u))
    if [ -z "$missing" ]; then
        pass "fortran: every MPI symbol $(basename "$fort") needs is in $(basename "$libmpi")"
    else
        fail "fortran: $(basename "$fort") needs symbols Reflex lacks: $(echo $missing)"
    fi
}

fortran() {
    echo "Fortran (mpif90.mpich, MPICH's libmpichfort.so.12 on Reflex):"
    command -v mpif90.mpich >/dev/null || { skip "mpif90.mpich not installed"; return; }
    build_and_run fortran 60 mpif90.mpich -fallow-argument-mismatch -- fortran.f90
    fortran_symbols
    mkdir -p "$work/f08-files"
    build_and_run f08 60 mpif90.mpich -- f08.f90 "$work/f08-files"
}

# A ScaLAPACK driver passed (LOG, exit status RC): a clean exit, checks that say they passed,
# none that says FAILED, no count of failed residual checks above zero, and (the SVD drivers,
# whose result lines start with "Passed" or the failed job's number) every result line passed.
driver_passed() {
    [ "$2" -eq 0 ] && grep -qiw passed "$1" && ! grep -qw FAILED "$1" &&
        ! grep -Eq '[1-9][0-9]* tests completed and failed' "$1" &&
        awk '/^[^ ]+ +[0-9.]+E[-+][0-9][0-9]-?[0-9.]+E[-+][0-9][0-9] / && $1 != "Passed" { bad = 1 }
             END { exit bad }' "$1"
}

# A PBLAS tester passed: its summary table has rows, and none with a failed test.
pblas_passed() {
    awk '$1 == "|" && NF == 6 { rows++; if ($5 != 0) bad++ } END { exit !(rows > 0 && bad == 0) }' "$1"
}

# A BLACS tester passed: its 22 test groups with 0 FAILED, the auxiliary tests, and then the
# deliberate BLACS_ABORT that ends every run (exit status 255 from mpiexec, as with MPICH).
blacs_passed() {
    local log=$1 rc=$2
    [ "$rc" -eq 255 ] && grep -q "PASSED  BLACS_SET/BLACS_GET TESTS" "$log" &&
        [ "$(grep -c 'TESTS;.* 0 FAILED\.' "$log")" -eq 22 ] &&
        grep -q "called MPI_Abort with code -1" "$log"
}

scalapack() {
    echo "ScaLAPACK test suite (Debian's scalapack-mpi-test, built for MPICH), 4 ranks:"
    local src=/usr/lib/x86_64-linux-gnu/scalapack/mpich-tests dir=$work/scalapack t rc
    [ -d "$src" ] || { skip "scalapack-mpi-test not installed"; return; }
    cp -rL "$src" "$dir" || { fail "scalapack: copy $src"; return; }
    loads_reflex "$dir/xdlu" || { fail "scalapack: xdlu does not load $libmpi"; return; }
    local ok=0 bad=() left=()
    for t in "$dir"/x[a-z]*; do
        t=${t##*/}
        case $scalapack_skip in *" $t "*) left+=("$t"); continue ;; esac
        (cd "$dir" && run_mpi "$t.log" 300 4 "./$t")
        if driver_passed "$dir/$t.log" $?; then ok=$((ok + 1)); else bad+=("$t"); fi
    done
    for t in "$dir"/PBLAS/*tst; do
        t=${t##*/}
        (cd "$dir/PBLAS" && run_mpi "$t.log" 300 4 "./$t")
        if pblas_passed "$dir/PBLAS/$t.log"; then ok=$((ok + 1)); else bad+=("PBLAS/$t"); fi
    done
    if [ ${#bad[@]} -eq 0 ]; then
        pass "scalapack: $ok drivers and PBLAS testers passed (left out: ${left[*]})"
    else
        fail "scalapack: ${bad[*]} failed ($ok passed)"
        for t in "${bad[@]}"; do echo "       $t:"; show "$dir/$t.log"; done
    fi
    for t in xCbtest xFbtest; do
        (cd "$dir/BLACS" && run_mpi "$t.log" 300 4 "./$t")
        rc=$?
        if blacs_passed "$dir/BLACS/$t.log" "$rc"; then
            pass "blacs: $t (22 groups, then its deliberate BLACS_ABORT)"
        else
            fail "blacs: $t (mpiexec exit $rc)"
            show "$dir/BLACS/$t.log"
        fi
    done
}

hdf5() {
    echo "Parallel HDF5 (h5pcc.mpich, Debian's libhdf5-mpich through Reflex's MPI-IO):"
    command -v h5pcc.mpich >/dev/null || { skip "libhdf5-mpich-dev not installed"; return; }
    mkdir -p "$work/hdf5-files"
    build_and_run hdf5 120 h5pcc.mpich -- hdf5.c "$work/hdf5-files"
}

netpipe() {
    echo "NetPIPE (Debian's netpipe-mpich2), 2 ranks:"
    command -v NPmpich2 >/dev/null || { skip "netpipe-mpich2 not installed"; return; }
    loads_reflex "$(command -v NPmpich2)" || { fail "netpipe: NPmpich2 does not load $libmpi"; return; }
    if (cd "$work" && run_mpi netpipe.log 300 2 NPmpich2 -u 65536 -o netpipe.out) &&
        awk '$1 == 65536 { found = 1 } END { exit !found }' "$work/netpipe.out"; then
        pass "netpipe: 1 B to 64 KiB ($(awk 'END { printf "%s Mbps at %s B", $2, $1 }' "$work/netpipe.out"))"
    else
        fail "netpipe"
        show "$work/netpipe.log"
    fi
}

for part in ${APPS_PARTS:-fortran scalapack hdf5 netpipe}; do
    case $part in
        fortran | scalapack | hdf5 | netpipe) "$part" ;;
        *) echo "apps: unknown part '$part' (fortran, scalapack, hdf5, netpipe)" >&2; exit 2 ;;
    esac
done
echo "apps: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
