#!/usr/bin/env bash
# run.sh -- build small user projects against an installed Reflex with the build systems users
# have (CMake's find_package(MPI), a Makefile with pkg-config, Meson), check that each program links
# to Reflex's libmpi (not a system MPICH or Open MPI) and run it under Reflex's mpiexec on 2 ranks.
#
# Usage: tests/buildsys/run.sh PREFIX [BUILD_DIR]
#   PREFIX      a Reflex installation (scripts/install.sh PREFIX)
#   BUILD_DIR   where to build (default: build/buildsys in the repository; emptied first)
# A build system that is not installed (cmake, pkg-config, meson) is reported and skipped; the
# script fails when any project that could be built fails to build, link or run correctly.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
[ $# -ge 1 ] || { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }
prefix=$(cd "$1" 2>/dev/null && pwd) || { echo "buildsys: no such prefix: $1" >&2; exit 2; }
build=${2:-$repo/build/buildsys}
for file in bin/mpicc bin/mpicxx bin/mpiexec lib/libmpi.so.12 lib/pkgconfig/mpi.pc; do
    [ -e "$prefix/$file" ] || {
        echo "buildsys: $prefix/$file missing (not a Reflex install?)" >&2
        exit 2
    }
done
rm -rf "$build" && mkdir -p "$build" || exit 2
# The programs must find Reflex's library through what they were linked with, not the environment.
unset LD_LIBRARY_PATH
libmpi=$(readlink -f "$prefix/lib/libmpi.so.12")
mpiexec=$prefix/bin/mpiexec

passed=0 failed=0 skipped=0
pass() { passed=$((passed + 1)); echo "  ok   $*"; }
fail() { failed=$((failed + 1)); echo "  FAIL $*"; }
skip() { skipped=$((skipped + 1)); echo "  skip $*"; }

# quiet LOG COMMAND...: run COMMAND with its output in LOG; show the end of LOG when it fails.
quiet() {
    local log=$1
    shift
    if "$@" >"$log" 2>&1; then return 0; fi
    tail -n 20 "$log" | sed 's/^/       | /'
    return 1
}

# check_program NAME BINARY LANG: the binary loads Reflex's libmpi and runs correctly on 2 ranks.
check_program() {
    local name=$1 binary=$2 lang=$3 loaded out
    loaded=$(ldd "$binary" 2>/dev/null |
        awk '$1 == "libmpi.so.12" || $1 == "libmpich.so.12" {print $3}')
    if [ -z "$loaded" ] || [ "$(readlink -f "$loaded")" != "$libmpi" ]; then
        fail "$name: loads '${loaded:-no libmpi}', not $libmpi"
        ldd "$binary" | sed 's/^/       | /'
        return
    fi
    if ! out=$(timeout 60 "$mpiexec" -n 2 "$binary" 2>&1); then
        fail "$name: mpiexec -n 2 failed"
        printf '%s\n' "$out" | sed 's/^/       | /'
        return
    fi
    for rank in 0 1; do
        if ! grep -qx "buildsys $lang rank $rank of 2: ok" <<<"$out"; then
            fail "$name: no 'ok' line from rank $rank"
            printf '%s\n' "$out" | sed 's/^/       | /'
            return
        fi
    done
    pass "$name (links $libmpi, 2 ranks)"
}

echo "CMake find_package(MPI):"
if command -v cmake >/dev/null; then
    dir=$build/cmake
    # MPI_HOME and the wrapper paths keep FindMPI away from /usr's mpicc (MPICH or Open MPI).
    if quiet "$build/cmake-configure.log" cmake -S "$here/cmake" -B "$dir" \
        -DMPI_HOME="$prefix" -DMPI_C_COMPILER="$prefix/bin/mpicc" \
        -DMPI_CXX_COMPILER="$prefix/bin/mpicxx" -DMPIEXEC_EXECUTABLE="$mpiexec"; then
        found=$(sed -n 's/.*reflex-buildsys: MPI_C_LIBRARIES=//p' "$build/cmake-configure.log")
        if [ "$(readlink -f "$found")" = "$libmpi" ]; then
            pass "cmake: FindMPI found $found"
        else
            fail "cmake: FindMPI found '$found', not Reflex's $prefix/lib/libmpi.so"
        fi
        if quiet "$build/cmake-build.log" cmake --build "$dir"; then
            check_program "cmake C" "$dir/hello_c" c
            check_program "cmake C++" "$dir/hello_cxx" c++
            if quiet "$build/ctest.log" ctest --test-dir "$dir" --output-on-failure; then
                pass "ctest (mpiexec from FindMPI)"
            else
                fail "ctest"
            fi
        else
            fail "cmake: build"
        fi
    else
        fail "cmake: configure"
    fi
else
    skip "cmake not installed"
fi

echo "Makefile with pkg-config:"
if command -v pkg-config >/dev/null && command -v make >/dev/null; then
    export PKG_CONFIG_PATH=$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
    for pkg in mpi mpich; do
        dir=$build/pkgconfig-$pkg
        mkdir -p "$dir"
        if quiet "$dir/make-c.log" make -C "$dir" -f "$here/pkgconfig/Makefile" PKG="$pkg" \
            SRC="$here/src/hello.c" OUT=hello_c &&
            quiet "$dir/make-cxx.log" make -C "$dir" -f "$here/pkgconfig/Makefile" PKG="$pkg" \
                SRC="$here/src/hello.cxx" OUT=hello_cxx CC="${CXX:-c++}"; then
            check_program "pkg-config $pkg C" "$dir/hello_c" c
            check_program "pkg-config $pkg C++" "$dir/hello_cxx" c++
        else
            fail "pkg-config $pkg: make"
        fi
    done
else
    skip "pkg-config or make not installed"
fi

echo "Meson dependency('mpich'):"
if command -v meson >/dev/null && command -v ninja >/dev/null; then
    export PKG_CONFIG_PATH=$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
    dir=$build/meson
    if quiet "$build/meson-setup.log" meson setup "$dir" "$here/meson" &&
        quiet "$build/meson-build.log" meson compile -C "$dir"; then
        check_program "meson C" "$dir/hello_c" c
        check_program "meson C++" "$dir/hello_cxx" c++
    else
        fail "meson: setup or build"
    fi
else
    skip "meson or ninja not installed"
fi

echo "buildsys: $passed passed, $failed failed, $skipped skipped (logs: $build)"
[ "$failed" -eq 0 ]
