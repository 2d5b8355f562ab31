#!/usr/bin/env bash
# run.sh -- MPICH's own conformance test suite (test/mpi of the MPICH source release Debian
# ships) built with Reflex's mpicc and run under Reflex's mpiexec; failures are compared with
# expected-failures.txt (each entry with its reason).
#
# Usage: tests/mpich-suite/run.sh PREFIX [suite.py options]
#   PREFIX          a Reflex installation (scripts/install.sh PREFIX)
#   --dirs a,b      only these directories of the suite (pt2pt, coll, rma, ...)
#   --match REGEX   only tests whose name matches      --jobs N   tests at once (default 2)
# Environment:
#   MPICH_SUITE_WORK   cache and build (default: <repo>/build/mpich-suite)
# The source comes from the Debian archive (mpich_4.0.2.orig.tar.xz, checked against its
# SHA-256) and is kept; the suite is configured and built again only when the installation's
# mpi.h or exported symbols change (about 2 minutes).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
[ $# -ge 1 ] || { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }
prefix=$(cd "$1" 2>/dev/null && pwd -P) || { echo "mpich-suite: no such prefix: $1" >&2; exit 2; }
shift
work=${MPICH_SUITE_WORK:-$repo/build/mpich-suite}
version=4.0.2
tarball=mpich_$version.orig.tar.xz
url=http://deb.debian.org/debian/pool/main/m/mpich/$tarball
sha256=b27039f964afeb6b8a3e009c56b441cbe368c26d6d6476ad3bb7190996875860
suite=$work/mpich-$version/test/mpi

die() {
    echo "mpich-suite: $*" >&2
    exit 1
}
mkdir -p "$work"

if ! echo "$sha256  $work/$tarball" | sha256sum -c --status 2>/dev/null; then
    echo "mpich-suite: downloading $url"
    curl -fsSL -o "$work/$tarball.part" "$url" || die "cannot download $url"
    echo "$sha256  $work/$tarball.part" | sha256sum -c --status || die "$tarball: wrong SHA-256"
    mv "$work/$tarball.part" "$work/$tarball"
fi

# What the built tests depend on: rebuild when any of it changes.
stamp() {
    echo "mpich $version, prefix $prefix"
    sha256sum <"$prefix/include/mpi.h"
    nm -D --defined-only "$prefix/lib/libmpi.so.12" | awk '$3 ~ /^P?MPI/ {print $3}' | sort | sha256sum
}
want=$(stamp)
if [ -f "$suite/reflex-stamp" ] && [ "$(cat "$suite/reflex-stamp")" = "$want" ]; then
    echo "mpich-suite: reusing the suite built in $suite"
else
    echo "mpich-suite: configuring and building MPICH $version's test/mpi with $prefix/bin/mpicc (log: $work/build.log)"
    rm -rf "$work/mpich-$version"
    tar -xJf "$work/$tarball" -C "$work" "mpich-$version/test/mpi"
    {
        # --enable-strictmpi: no MPIX_ extensions; no Fortran or C++ bindings (MPICH's own).
        cd "$suite" &&
            ./configure --with-mpi="$prefix" --enable-strictmpi --disable-fortran --disable-cxx \
                --enable-romio --enable-spawn --enable-rma --enable-threads=multiple &&
            # -k: a test that does not compile is reported as "not built" by the run.
            { make -k -j"$(nproc)" || true; }
    } >"$work/build.log" 2>&1 || die "configure failed (see $work/build.log)"
    echo "$want" >"$suite/reflex-stamp"
fi

exec python3 "$here/suite.py" --suite "$suite" --mpiexec "$prefix/bin/mpiexec" \
    --expected "$here/expected-failures.txt" --log "$work/last-run.log" "$@"
