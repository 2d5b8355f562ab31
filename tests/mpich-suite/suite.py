#!/usr/bin/env python3
"""Run MPICH's conformance test suite (test/mpi of an MPICH source tree, built) on an MPI.

Reads the suite's testlist files the way MPICH's `runtests` does (a line is `program [np
[key=value ...]]`; a directory entry is read recursively), runs every test under the given mpiexec
with a time limit, judges it as `runtests` does (exit status 0, a "No Errors" line and nothing else
but "Test Passed" lines; `resultTest=TestErrFatal`: a non-zero exit) and compares the failures
with a list of expected failures. Tests that need MPICH extensions (`strict=false`, `mpix=true`)
are skipped, as `runtests` skips them for a strict MPI. Python 3 standard library only.

  suite.py --suite build/mpich-suite/mpich-4.0.2/test/mpi --mpiexec install/bin/mpiexec
  suite.py ... --dirs pt2pt,coll --match scancel      # a subset while debugging
  suite.py ... --lists testlist,testlist.dtp          # also the datatype-pool sweeps

A test is named `dir/program np [arg ...]` in the output and in the expected-failures file (one
name per line, `#` starts a comment; the reason goes in the comment above it). Exit status: 0 when
every failure is expected, 1 otherwise; an expected failure that passes is reported, not fatal.
A line `skip NAME` in the file names a test that is not run at all (one that hangs).
"""

import argparse
import concurrent.futures
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

# Directories whose tests write fixed file names ("testfile") in their working directory: each of
# their tests runs in a scratch directory of its own, or two running at once would share a file.
PRIVATE_CWD = {"io"}
TIMEOUT_STATUS = 124  # mpiexec's exit status for a job past MPIEXEC_TIMEOUT
NO_ERRORS = re.compile(r"^\s*No [Ee]rrors\s*$")
HARMLESS = re.compile(r"^\s*(Test Passed|FORTRAN STOP.*)\s*$")


class Test:
    """One line of a testlist: where it runs, how many ranks, its options."""

    def __init__(self, directory, rel, program, np, options):
        self.directory, self.program, self.np = directory, program, np
        self.args = [v for k, v in options if k == "arg"]
        self.envs = [v for k, v in options if k == "env"]
        self.mpiexec_args = [v for k, v in options if k == "mpiexecarg"]
        opts = dict(options)
        self.time_limit = int(opts["timeLimit"]) if "timeLimit" in opts else None
        self.result_test = opts.get("resultTest", "")
        self.extension = opts.get("strict", "").lower() == "false" or opts.get("mpix", "").lower() == "true"
        self.name = " ".join([f"{rel}/{program}" if rel else program, str(np)] + self.args
                             + ["env=" + e for e in self.envs])


def read_list(directory, rel, list_names, default_np):
    """The tests of `directory`'s testlist files, directories expanded in place."""
    tests = []
    for list_name in list_names:
        path = os.path.join(directory, list_name)
        if not os.path.isfile(path):
            continue
        with open(path) as f:
            for line in f:
                fields = line.split("#", 1)[0].split()
                if not fields:
                    continue
                program = fields[0]
                sub = os.path.join(directory, program)
                if os.path.isdir(sub):
                    tests += read_list(sub, os.path.join(rel, program) if rel else program, list_names, default_np)
                    continue
                np = int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else default_np
                options = [tuple(f.split("=", 1)) for f in fields[2:] if "=" in f]
                tests.append(Test(directory, rel, program, np, options))
    return tests


def judge(test, rc, output):
    """None when the test passed, otherwise why not."""
    lines = output.splitlines()
    if test.result_test in ("TestErrFatal", "TestStatus"):
        return None if rc != 0 else "exited 0 where the job must fail"
    strays = [ln for ln in lines if ln.strip() and not NO_ERRORS.match(ln) and not HARMLESS.match(ln)]
    if strays:
        return f"unexpected output: {strays[0][:200]}"
    if not any(NO_ERRORS.match(ln) for ln in lines):
        return f"exit {rc} without 'No Errors'" if rc else "no 'No Errors' line"
    return None if rc == 0 else f"exit status {rc}"


def run_one(test, args):
    """(test, failure or None, seconds, output). mpiexec gets the time limit as runtests gives
    it (MPIEXEC_TIMEOUT); a job still there 30 s later is terminated here."""
    limit = int((test.time_limit or args.timeout) * args.timeout_scale)
    program = os.path.join(test.directory, test.program)
    cmd = [args.mpiexec, "-n", str(test.np)] + test.mpiexec_args + [program] + test.args
    env = dict(os.environ, MPIEXEC_TIMEOUT=str(limit))
    env.update(e.split("=", 1) for e in test.envs if "=" in e)
    start = time.monotonic()
    if not built(test):
        return test, "does not build (see the log)", 0.0, ""
    private = os.path.basename(test.directory) in PRIVATE_CWD
    cwd = tempfile.mkdtemp(prefix="run-", dir=test.directory) if private else test.directory
    try:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=limit + 30)
            failure = judge(test, proc.returncode, out.decode(errors="replace"))
            if proc.returncode == TIMEOUT_STATUS and test.result_test != "TestErrFatal":
                failure = f"timed out after {limit} s"
        except subprocess.TimeoutExpired:
            out = stop(proc)
            failure = f"mpiexec still running {limit + 30} s after its time limit"
    finally:
        if private:
            shutil.rmtree(cwd, ignore_errors=True)
    return test, failure, time.monotonic() - start, out.decode(errors="replace")


def built(test):
    """Whether the test's program exists, making it first if not: configure leaves some programs
    out of `make all` (those of optional features), and `runtests` too builds each on demand."""
    path = os.path.join(test.directory, test.program)
    if not os.access(path, os.X_OK):
        subprocess.run(["make", test.program], cwd=test.directory, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    return os.access(path, os.X_OK)


def stop(proc):
    """Terminates an mpiexec (it ends its job's processes, as a subreaper) and returns its output."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        os.killpg(proc.pid, sig)
        try:
            return proc.communicate(timeout=10)[0]
        except subprocess.TimeoutExpired:
            continue
    return b""


def read_expected(path):
    """(expected failures, tests not to run): names, one per line; `skip NAME` for a test that
    hangs (it would only spend its time limit)."""
    fails, skips = set(), set()
    if not path or not os.path.exists(path):
        return fails, skips
    with open(path) as f:
        for line in f:
            words = line.split("#", 1)[0].split()
            if words and words[0] == "skip":
                skips.add(" ".join(words[1:]))
            elif words:
                fails.add(" ".join(words))
    return fails, skips


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--suite", required=True, help="the built test/mpi directory")
    p.add_argument("--mpiexec", required=True)
    p.add_argument("--dirs", help="top-level directories to run (default: the top testlist's)")
    p.add_argument("--lists", default="testlist", help="testlist file names, comma-separated")
    p.add_argument("--match", help="only tests whose name matches this regular expression")
    p.add_argument("--expected", help="the expected-failures file")
    p.add_argument("--jobs", type=int, default=2, help="tests run at once (default 2)")
    p.add_argument("--timeout", type=int, default=120, help="seconds per test without timeLimit")
    p.add_argument("--timeout-scale", type=float, default=1.0)
    p.add_argument("--max-np", type=int, default=0, help="skip tests with more ranks")
    p.add_argument("--log", help="write every test's output here")
    return p.parse_args(argv)


def select(args):
    suite = os.path.abspath(args.suite)
    names = args.lists.split(",")
    if args.dirs:
        tests = []
        for d in args.dirs.split(","):
            tests += read_list(os.path.join(suite, d), d, names, 2)
    else:
        tests = read_list(suite, "", names, 2)
    skipped = [t for t in tests if t.extension or (args.max_np and t.np > args.max_np)]
    tests = [t for t in tests if t not in skipped]
    if args.match:
        tests = [t for t in tests if re.search(args.match, t.name)]
    return tests, skipped


def main(argv):
    args = parse_args(argv)
    args.mpiexec = os.path.abspath(args.mpiexec)
    tests, skipped = select(args)
    expected, not_run = read_expected(args.expected)
    skipped += [t for t in tests if t.name in not_run]
    tests = [t for t in tests if t.name not in not_run]
    print(f"mpich-suite: {len(tests)} tests ({len(skipped)} skipped: MPICH extensions, too many ranks, or listed as hanging), "
          f"{args.jobs} at a time", flush=True)
    failed, xfailed, xpassed = [], [], []
    log = open(args.log, "w") if args.log else None
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for test, failure, secs, out in pool.map(lambda t: run_one(t, args), tests):
            known = test.name in expected
            verdict = "ok" if failure is None else ("xfail" if known else "FAIL")
            if failure is None and known:
                xpassed.append(test.name)
                verdict = "XPASS"
            print(f"  {verdict:5} {test.name} ({secs:.1f} s){'' if failure is None else ': ' + failure}",
                  flush=True)
            if log:
                log.write(f"=== {verdict} {test.name} ({secs:.1f} s) {failure or ''}\n{out}\n")
            if failure is not None:
                (xfailed if known else failed).append((test.name, failure, out))
    for name, failure, out in failed:
        tail = "\n".join("      " + ln for ln in out.splitlines()[-8:])
        print(f"FAIL {name}: {failure}\n{tail}")
    for name in xpassed:
        print(f"note: {name} passes now; take it off {args.expected}")
    passed = len(tests) - len(failed) - len(xfailed)
    print(f"mpich-suite: {passed} passed, {len(failed)} failed, {len(xfailed)} expected failures, "
          f"{len(skipped)} skipped, in {time.monotonic() - start:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
