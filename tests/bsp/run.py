#!/usr/bin/env python3
"""Build and run the BSPlib test programs (tests/bsp/*.c) under mpiexec with several rank counts.

The cases are the declarative list CASES below: program, rank counts, environment, arguments,
expected outcome ("ok": exit 0 and "No Errors" on stdout; "fail": non-zero exit), patterns that
the combined output must match, and patterns it must not match. In a pattern, "@name" stands for
the line number of the source line marked "/* @name */" in the program, so the debug-mode cases
check that the right source lines are reported.

Environment (or options): MPICC (default install/bin/mpicc), MPIEXEC (default
install/bin/mpiexec), BSP_LIB_DIR (directory holding libbsp.so; default install/lib).
Example with Debian's MPICH and a cargo build:
    MPICC=mpicc.mpich MPIEXEC=mpiexec.mpich BSP_LIB_DIR=$CARGO_TARGET_DIR/release tests/bsp/run.py

The last line is "N passed, N failed"; the exit status is 0 only when nothing failed.
Python 3 standard library only.
"""

import argparse
import os
import re
import shlex
import signal
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
INCLUDE = os.path.join(REPO, "crates", "reflex-bsp", "include")
TIMEOUT = 60.0
DEBUG = {"REFLEX_BSP_DEBUG": "1"}
WARN = {"REFLEX_BSP_DEBUG": "warn"}
NO_REPORT = [r"bsp debug"]


class Case:
    def __init__(self, prog, ranks, env=None, args=(), expect="ok", match=(), absent=()):
        self.prog, self.ranks, self.env, self.args = prog, ranks, env or {}, list(args)
        self.expect, self.match, self.absent = expect, list(match), list(absent)


ALL = (1, 2, 3, 4)
CASES = [
    # semantics
    Case("drma", ALL),
    Case("drma", (2, 3), env=DEBUG, absent=NO_REPORT),  # a correct program: no false positives
    Case("reg", ALL),
    Case("reg", (3,), env=DEBUG, absent=NO_REPORT),
    Case("bsmp", ALL),
    Case("bsmp", (2,), env=DEBUG, absent=NO_REPORT),
    Case("timing", (1, 2)),
    Case("subset", (1, 2, 3)),
    Case("init", (1, 3), match=[r"^main before spmd"], absent=[r"main before spmd[\s\S]*main before spmd"]),
    # errors reported in any mode
    Case("abort", (1, 2, 3), expect="fail", match=[r"bsp_abort at .*abort\.c:@abort on pid \d: stopping with code 42"]),
    Case("bounds", (1, 2), expect="fail", match=[r"bsp_put at .*bounds\.c:@put on pid \d: offset 8 \+ 4 bytes is beyond the 8 bytes"]),
    Case("unreg", (1, 2), expect="fail", match=[r"bsp_put at .*unreg\.c:@put .*bsp_push_reg takes effect at the next bsp_sync"]),
    Case("dbg_reg", (2, 3), expect="fail", match=[r"registration mismatch in superstep 0: bsp_push_reg calls differ \(pid 0: 2, pid 1: 1"]),
    Case("dbg_regsize", (2, 3), args=["swap"], expect="fail", match=[r"registration mismatch .*popped registrations"]),
    # debug mode: each detector with its source lines, and silence without the debug mode
    Case("dbg_sync", (2, 3), env=DEBUG, expect="fail",
         match=[r"sync mismatch: .*pid 0 at bsp_sync .*dbg_sync\.c:@first; pids? 1.* at bsp_sync .*dbg_sync\.c:@second"]),
    Case("dbg_sync", (2, 3), absent=NO_REPORT),
    Case("dbg_reg", (2, 3), env=DEBUG, expect="fail",
         match=[r"registration mismatch at registration call #2 .*pid 0: bsp_push_reg at .*dbg_reg\.c:@only0 \(4 bytes\); pid 1: no registration call"]),
    Case("dbg_regsize", (2, 3), env=DEBUG,
         match=[r"warning: registration sizes differ .*pid 0: bsp_push_reg at .*dbg_regsize\.c:@size \(16 bytes\); pid 1: bsp_push_reg at .*dbg_regsize\.c:@size \(8 bytes\)"]),
    Case("dbg_regsize", (2,), env=DEBUG, args=["swap"], expect="fail",
         match=[r"registration mismatch at registration call #1 .*pid 0: bsp_pop_reg at .*dbg_regsize\.c:@popa .*pid 1: bsp_pop_reg at .*dbg_regsize\.c:@popb"]),
    Case("dbg_regsize", (2,), absent=NO_REPORT),
    Case("dbg_overlap", (1, 2, 3, 4), env=DEBUG, expect="fail",
         match=[r"overlapping writes in one superstep:\n.*pid 0 bytes 4\.\.8 of registration #0: written by pid \d \(bsp_put at .*dbg_overlap\.c:(@one|@two)\) and pid \d \(bsp_put at .*dbg_overlap\.c:(@one|@two)\)"],
         absent=[r"superstep [01]:"]),
    Case("dbg_overlap", (2, 3), absent=NO_REPORT),
    Case("dbg_overlap", (2,), env=WARN, match=[r"superstep 2: error: overlapping writes", r"No Errors"]),
    Case("dbg_hp", (1, 2, 3), env=DEBUG, args=["put"], expect="fail",
         match=[r"error: pid \d: bsp_hpput at .*dbg_hp\.c:@hpput: its source \(4 bytes\) was modified before the sync"]),
    Case("dbg_hp", (1, 2, 3), env=DEBUG, args=["get"], expect="fail",
         match=[r"error: pid \d: bsp_hpget at .*dbg_hp\.c:@hpget: its destination \(4 bytes\) was written before the sync"]),
    Case("dbg_hp", (1, 2, 3), env=DEBUG, absent=NO_REPORT),
    Case("dbg_hp", (2,), args=["put"], absent=NO_REPORT),
]


def markers(path):
    """Maps each "/* @name */" marker of a source file to its line number."""
    found = {}
    with open(path) as f:
        for number, line in enumerate(f, 1):
            for name in re.findall(r"/\* @(\w+) \*/", line):
                found[name] = number
    return found


def expand(pattern, marks):
    return re.sub(r"@(\w+)", lambda m: str(marks[m.group(1)]) if m.group(1) in marks else m.group(0), pattern)


def build(prog, mpicc, libdir, outdir):
    exe = os.path.join(outdir, prog)
    src = os.path.join(HERE, prog + ".c")
    cmd = shlex.split(mpicc) + ["-O1", "-g", "-Wall", "-I", INCLUDE, "-I", HERE, src, "-o", exe,
                                "-L", libdir, "-Wl,-rpath," + libdir, "-lbsp"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        return None, " ".join(cmd) + "\n" + res.stderr
    return exe, res.stderr


def run(case, np, exe, mpiexec):
    env = dict(os.environ, **case.env)
    cmd = shlex.split(mpiexec) + ["-n", str(np), exe] + case.args
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                            text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return False, out + f"\n[timed out after {TIMEOUT:.0f} s]"
    marks = markers(os.path.join(HERE, case.prog + ".c"))
    problems = []
    if case.expect == "ok" and (proc.returncode != 0 or "No Errors" not in out):
        problems.append(f"expected success, got exit status {proc.returncode}")
    if case.expect == "fail" and proc.returncode == 0:
        problems.append("expected a failure, got exit status 0")
    for p in case.match:
        if not re.search(expand(p, marks), out, re.M):
            problems.append(f"output does not match {expand(p, marks)!r}")
    for p in case.absent:
        if re.search(expand(p, marks), out, re.M):
            problems.append(f"output matches {expand(p, marks)!r}")
    return not problems, "\n".join(problems) + "\n--- output ---\n" + out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mpicc", default=os.environ.get("MPICC", os.path.join(REPO, "install/bin/mpicc")))
    ap.add_argument("--mpiexec", default=os.environ.get("MPIEXEC", os.path.join(REPO, "install/bin/mpiexec")))
    ap.add_argument("--lib-dir", default=os.environ.get("BSP_LIB_DIR", os.path.join(REPO, "install/lib")))
    ap.add_argument("--ranks", help="only these rank counts, e.g. 1,2")
    ap.add_argument("--only", help="only programs whose name matches this regex")
    ap.add_argument("-v", "--verbose", action="store_true")
    opts = ap.parse_args()
    libdir = os.path.abspath(opts.lib_dir)
    if not os.path.exists(os.path.join(libdir, "libbsp.so")):
        sys.exit(f"run.py: no libbsp.so in {libdir} (build it, or set BSP_LIB_DIR)")
    outdir = os.path.join(REPO, "build", "bsp")
    os.makedirs(outdir, exist_ok=True)
    ranks = {int(r) for r in opts.ranks.split(",")} if opts.ranks else None
    built, passed, failed = {}, 0, 0
    for case in CASES:
        if opts.only and not re.search(opts.only, case.prog):
            continue
        if case.prog not in built:
            built[case.prog] = build(case.prog, opts.mpicc, libdir, outdir)
        exe, log = built[case.prog]
        for np in case.ranks:
            if ranks and np not in ranks:
                continue
            name = f"{case.prog}/{np}" + "".join(f"/{k}={v}" for k, v in case.env.items())
            name += "".join(f"/{a}" for a in case.args)
            ok, detail = (False, "build failed:\n" + log) if exe is None else run(case, np, exe, opts.mpiexec)
            passed, failed = passed + ok, failed + (not ok)
            print(f"{'pass' if ok else 'FAIL'} {name}")
            if not ok or opts.verbose:
                print("    " + detail.replace("\n", "\n    "))
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
