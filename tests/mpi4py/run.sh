#!/usr/bin/env bash
# run.sh -- build mpi4py from source against an installed Reflex and run mpi4py's own test suite
# under Reflex's mpiexec (1, 2 and 3 ranks), comparing the failures with expected-failures.txt.
#
# Usage: tests/mpi4py/run.sh [suite.py options]
#   --ranks 1,2,3       rank counts            --include REGEX   only matching test modules
#   --update            rewrite expected-failures.txt from this run (edit the TODO comments)
#   --replay            judge the last run again (results/results.json) without running it
#   --verbose           also print the expected failures with their messages
#   --test-timeout S    per test (default 30)  --file-timeout S  per module and rank count
#   --budget S          for the whole run: the modules left when it is spent fail
# Environment:
#   MPI4PY_PREFIX    the Reflex installation to test (default: <repo>/install)
#   MPI4PY_WORK      cache and results (default: <repo>/build/mpi4py): sdist, venv, results/
#   MPI4PY_VERSION   the mpi4py release (default 4.1.2)
#   PYTHON           the python that creates the venv (default: python3; needs venv and headers)
# The venv is built once and kept while the prefix, its mpi.h and its exported symbols are the same
# (mpi4py decides at build time which MPI functions exist); otherwise it is rebuilt (~6 min).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
prefix=${MPI4PY_PREFIX:-$repo/install}
work=${MPI4PY_WORK:-$repo/build/mpi4py}
version=${MPI4PY_VERSION:-4.1.2}
python=${PYTHON:-python3}
case " $* " in *" -h "* | *" --help "*)
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 0
    ;;
esac

die() {
    echo "mpi4py: $*" >&2
    exit 1
}
for file in bin/mpicc bin/mpiexec include/mpi.h lib/libmpi.so.12; do
    [ -e "$prefix/$file" ] || die "$prefix/$file missing (run scripts/install.sh first)"
done
prefix=$(cd "$prefix" && pwd -P)
mkdir -p "$work"
work=$(cd "$work" && pwd -P)
venv=$work/venv
sdist=$work/sdist/mpi4py-$version.tar.gz
testdir=$work/src/mpi4py-$version/test

# What the built extension depends on: rebuild when any of it changes.
stamp() {
    echo "mpi4py $version"
    echo "prefix $prefix"
    "$python" -c 'import sys; print("python", sys.executable, sys.version.split()[0])'
    sha256sum <"$prefix/include/mpi.h"
    nm -D --defined-only "$prefix/lib/libmpi.so.12" | awk '$3 ~ /^P?MPI[X_]/ {print $3}' | sort |
        sha256sum
}

# download_sdist: mpi4py's source release (its test/ directory holds the suite), with venv's pip.
download_sdist() {
    [ -f "$sdist" ] && return 0
    echo "mpi4py: downloading the mpi4py $version sdist"
    "$venv/bin/pip" download --quiet --disable-pip-version-check --no-deps --no-binary :all: \
        -d "$work/sdist" "mpi4py==$version" || die "cannot download mpi4py $version from PyPI"
}

want=$(stamp)
if [ -f "$venv/reflex-stamp" ] && [ "$(cat "$venv/reflex-stamp")" = "$want" ] &&
    "$venv/bin/python" -c 'import mpi4py.MPI' 2>/dev/null; then
    echo "mpi4py: reusing $venv (built against $prefix)"
else
    echo "mpi4py: building mpi4py $version with $prefix/bin/mpicc in $venv (log: $work/build.log)"
    start=$SECONDS
    rm -rf "$venv"
    "$python" -m venv "$venv" || die "cannot create a venv with $python (Debian: python3-venv)"
    download_sdist
    {
        "$venv/bin/pip" install --quiet --disable-pip-version-check \
            "cython>=3.0,<4" "setuptools>=61" wheel &&
            MPICC=$prefix/bin/mpicc "$venv/bin/pip" install --disable-pip-version-check \
                --no-cache-dir --no-build-isolation --verbose "$sdist"
    } >"$work/build.log" 2>&1 || {
        tail -n 30 "$work/build.log"
        die "building mpi4py failed (full log: $work/build.log)"
    }
    "$venv/bin/python" -c 'import mpi4py.MPI' || die "mpi4py built but does not import"
    printf '%s\n' "$want" >"$venv/reflex-stamp"
    echo "mpi4py: built in $((SECONDS - start)) s"
fi
download_sdist
if [ ! -d "$testdir" ]; then
    mkdir -p "$work/src"
    tar -xzf "$sdist" -C "$work/src" || die "cannot unpack $sdist"
fi

ext=$(echo "$venv"/lib/python3*/site-packages/mpi4py/MPI.*.so)
loaded=$(env -u LD_LIBRARY_PATH ldd "$ext" | awk '$1 == "libmpi.so.12" {print $3}')
[ "$(readlink -f "$loaded")" = "$(readlink -f "$prefix/lib/libmpi.so.12")" ] ||
    die "$ext loads '${loaded:-no libmpi}', not $prefix/lib/libmpi.so.12"

env -u LD_LIBRARY_PATH "$python" "$here/suite.py" --python "$venv/bin/python" \
    --mpiexec "$prefix/bin/mpiexec" --testdir "$testdir" --out "$work/results" "$@"
