#!/usr/bin/env python3
"""Build and run Reflex's MPI test programs from the declarative list in tests/mpi/testlist.

Each line of the list names a program (tests/mpi/<program>.c), the rank counts to run it with and
what to expect; see tests/mpi/README.md for the syntax. For every case the runner starts the
launcher in its own session, waits at most the case's timeout (then kills the whole process group
and every process that carries the case's MTEST_JOB_TAG environment variable), and checks the exit
status and the " No Errors" line that rank 0 prints. The last line is always
"N passed, N failed" (plus ", N skipped" when some cases do not apply to the implementation under
test); the exit code is 0 only when nothing failed.

Python 3 standard library only.
"""

import argparse
import concurrent.futures
import glob
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
TESTLIST = os.path.join(HERE, "testlist")
HEADER = os.path.join(HERE, "mtest.h")
HEADERS = [HEADER, os.path.join(HERE, "mtest_threads.h"), os.path.join(HERE, "mtest_dynproc.h")]
PROFLIB_SRC = os.path.join(HERE, "pmpi_prof.c")

OPTION_KEYS = ("expect", "timeout", "only", "xfail", "mode", "output", "check", "pair")
MODES = ("normal", "abi", "hydra", "pmpi")
IMPLS = ("reflex", "mpich", "openmpi", "other")
DEFAULT_TIMEOUT = 60.0
CLEANUP_GRACE = 5.0  # seconds a dead job's processes and files get to disappear
TAG_VAR = "MTEST_JOB_TAG"
# A case with pair=N runs a second launcher of N ranks beside the first: both get a fresh
# directory (PAIR_DIR_VAR) and their role (PAIR_ROLE_VAR: 0 for the first job, 1 for the second).
PAIR_DIR_VAR = "MTEST_PAIR_DIR"
PAIR_ROLE_VAR = "MTEST_PAIR_ROLE"


class ListError(Exception):
    pass


class Case:
    """One run: a program at one rank count, with its expectations."""

    def __init__(self, prog, np, env, expect, timeout, only, xfail, mode, output, checks, lineno,
                 pair=None):
        self.prog, self.np, self.env, self.pair = prog, np, env, pair
        self.expect, self.timeout, self.only, self.xfail = expect, timeout, only, xfail
        self.mode, self.output, self.checks, self.lineno = mode, output, checks, lineno
        self.name = f"{prog}/{np}" + (f"+{pair}" if pair else "")
        self.name += "" if mode == "normal" else f"/{mode}"
        # Settings that select another protocol path are part of the name (sizes/2/REFLEX_EAGER_LIMIT=0).
        self.name += "".join(f"/{k}={v}" for k, v in env.items())

    def describe(self):
        extra = [f"expect={self.expect}"]
        if self.env:
            extra.append("env " + " ".join(f"{k}={v}" for k, v in self.env.items()))
        if self.only:
            extra.append("only=" + ",".join(self.only))
        if self.xfail:
            extra.append("xfail=" + ",".join(self.xfail))
        if self.checks:
            extra.append("check=" + ",".join(self.checks))
        if self.output:
            extra.append(f"output={self.output}")
        return f"{self.name:28} timeout={self.timeout:g} " + " ".join(extra)


def parse_ranks(text, lineno):
    try:
        ranks = [int(x) for x in text.split(",")]
    except ValueError:
        raise ListError(f"testlist:{lineno}: bad rank list '{text}' (want e.g. 2 or 1,2,4)")
    if not ranks or min(ranks) < 1:
        raise ListError(f"testlist:{lineno}: rank counts must be >= 1 in '{text}'")
    return ranks


def parse_expect(value, lineno):
    if value in ("pass", "fail") or re.fullmatch(r"exit:\d+", value):
        return value
    raise ListError(f"testlist:{lineno}: bad expect '{value}' (want pass, fail or exit:N)")


def parse_line(line, lineno):
    """Parse one testlist line into a list of cases (one per rank count)."""
    tokens = shlex.split(line, comments=True)
    if not tokens:
        return []
    if len(tokens) < 2:
        raise ListError(f"testlist:{lineno}: want 'program ranks [options]'")
    prog, ranks = tokens[0], parse_ranks(tokens[1], lineno)
    env, opts = {}, {"expect": "pass", "timeout": None, "only": "", "xfail": "", "mode": "normal",
                     "output": None, "check": "", "pair": None}
    for tok in tokens[2:]:
        if tok == "env":
            continue
        key, sep, value = tok.partition("=")
        if not sep:
            raise ListError(f"testlist:{lineno}: unknown word '{tok}'")
        if key in OPTION_KEYS:
            opts[key] = value
        else:
            env[key] = value
    expect = parse_expect(opts["expect"], lineno)
    try:
        timeout = float(opts["timeout"]) if opts["timeout"] else DEFAULT_TIMEOUT
    except ValueError:
        raise ListError(f"testlist:{lineno}: bad timeout '{opts['timeout']}'")
    only = [x for x in opts["only"].split(",") if x]
    xfail = [x for x in opts["xfail"].split(",") if x]
    for impl in only + xfail:
        if impl not in IMPLS:
            raise ListError(f"testlist:{lineno}: unknown implementation '{impl}' in only= or xfail=")
    if opts["mode"] not in MODES:
        raise ListError(f"testlist:{lineno}: unknown mode '{opts['mode']}' (want {', '.join(MODES)})")
    checks = [x for x in opts["check"].split(",") if x]
    for c in checks:
        if c != "cleanup":
            raise ListError(f"testlist:{lineno}: unknown check '{c}' (want cleanup)")
    pair = None
    if opts["pair"] is not None:
        if not re.fullmatch(r"[1-9]\d*", opts["pair"]) or opts["mode"] != "normal" or checks:
            raise ListError(f"testlist:{lineno}: pair=N wants a rank count >= 1, mode=normal and no check=")
        pair = int(opts["pair"])
    if not os.path.exists(os.path.join(HERE, prog + ".c")):
        raise ListError(f"testlist:{lineno}: no program tests/mpi/{prog}.c")
    return [Case(prog, np, env, expect, timeout, only, xfail, opts["mode"], opts["output"], checks, lineno,
                 pair) for np in ranks]


def load_cases(path):
    cases = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            cases.extend(parse_line(line, lineno))
    return cases


def detect_impl(mpiexec_cmd):
    """Guess which MPI a launcher command belongs to from where its program lives."""
    exe = shlex.split(mpiexec_cmd)[0]
    found = shutil.which(exe) or exe
    real = os.path.realpath(found)
    install = os.path.join(REPO, "install") + os.sep
    if real.startswith(install) or "reflex" in os.path.basename(found).lower():
        return "reflex"
    text = (found + " " + real).lower()
    if "openmpi" in text or "orterun" in text or "prterun" in text:
        return "openmpi"
    if "mpich" in text or "hydra" in text:
        return "mpich"
    return "other"


class Builder:
    """Compiles programs once per (compiler, variant), rebuilding when a source is newer."""

    def __init__(self, mpicc, build_dir, cflags):
        self.mpicc, self.dir, self.cflags = mpicc, build_dir, cflags
        self.lock = threading.Lock()
        self.results = {}  # key -> (path or None, compiler output)
        os.makedirs(self.dir, exist_ok=True)
        stamp = os.path.join(self.dir, ".mpicc")
        old = open(stamp).read() if os.path.exists(stamp) else None
        self.stale = old != mpicc + "\n" + " ".join(cflags)
        with open(stamp, "w") as f:
            f.write(mpicc + "\n" + " ".join(cflags))

    def _needs_build(self, out, sources):
        if self.stale or not os.path.exists(out):
            return True
        mtime = os.path.getmtime(out)
        return any(os.path.getmtime(s) > mtime for s in sources)

    def _compile(self, out, sources, extra):
        if not self._needs_build(out, sources + HEADERS):
            return out, ""
        cmd = shlex.split(self.mpicc) + self.cflags + ["-o", out] + sources + extra
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        except OSError as e:
            return None, f"cannot run {cmd[0]}: {e}"
        if p.returncode != 0:
            return None, "$ " + " ".join(cmd) + "\n" + p.stdout
        return out, p.stdout

    def profiling_lib(self):
        with self.lock:
            if "lib" not in self.results:
                out = os.path.join(self.dir, "libpmpi_prof.so")
                self.results["lib"] = self._compile(out, [PROFLIB_SRC], ["-shared", "-fPIC"])
            return self.results["lib"]

    def program(self, prog, pmpi=False):
        lib = None
        if pmpi:
            lib, text = self.profiling_lib()
            if lib is None:
                return None, text
        key = (prog, pmpi)
        with self.lock:
            if key not in self.results:
                src = os.path.join(HERE, prog + ".c")
                if pmpi:
                    out = os.path.join(self.dir, prog + "-pmpi")
                    extra = ["-L" + self.dir, "-lpmpi_prof", "-Wl,-rpath," + self.dir]
                    self.results[key] = self._compile(out, [src], extra)
                else:
                    out = os.path.join(self.dir, prog)
                    self.results[key] = self._compile(out, [src], [])
            return self.results[key]


def tagged_pids(tag):
    """Processes whose environment carries TAG_VAR=tag (zombies have none and are not listed)."""
    needle = f"{TAG_VAR}={tag}".encode() + b"\0"
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if needle in f.read() + b"\0":
                    pids.append(int(entry))
        except OSError:
            continue
    return pids


def kill_pids(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def wait_until_gone(probe, grace):
    """Poll probe() until it returns an empty list or grace seconds pass; return what is left."""
    deadline = time.monotonic() + grace
    left = probe()
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = probe()
    return left


def shm_files():
    return set(glob.glob("/dev/shm/reflex-*"))


class Runner:
    def __init__(self, args, impl):
        self.args, self.impl = args, impl
        # -Wno-stringop-overflow: GCC 12 misreads MPICH's MPI_STATUSES_IGNORE ((MPI_Status *)1)
        # -pthread: the MPI_THREAD_MULTIPLE tests (mt_*.c) start threads
        cflags = ["-O1", "-g", "-Wall", "-Wno-stringop-overflow", "-pthread"]
        self.builder = Builder(args.mpicc, os.path.join(args.build_dir, impl), cflags)
        self.abi_builder = None
        if impl == "reflex":
            self.abi_builder = Builder(args.abi_mpicc, os.path.join(args.build_dir, "abi"), cflags)
        self.print_lock = threading.Lock()

    def skip_reason(self, case):
        if case.only and self.impl not in case.only:
            return f"only for {','.join(case.only)}"
        if case.mode == "hydra" and not shutil.which(shlex.split(self.args.hydra)[0]):
            return f"no {shlex.split(self.args.hydra)[0]}"
        if case.mode == "abi" and not shutil.which(shlex.split(self.args.abi_mpicc)[0]):
            return f"no {shlex.split(self.args.abi_mpicc)[0]}"
        return None

    def build(self, case):
        if case.mode == "abi":
            return self.abi_builder.program(case.prog)
        return self.builder.program(case.prog, pmpi=(case.mode == "pmpi"))

    def command(self, case, binary):
        launcher = self.args.hydra if case.mode == "hydra" else self.args.mpiexec
        return shlex.split(launcher) + [str(case.np), binary]

    def environment(self, case, tag):
        env = dict(os.environ)
        env.update(case.env)
        env[TAG_VAR] = tag
        if case.mode == "abi":
            lib = os.path.join(REPO, "install", "lib")
            env["LD_LIBRARY_PATH"] = lib + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
        return env

    def execute(self, case, binary):
        """Run the launcher (two of them for a pair=N case); returns (exit code or None on
        timeout, output, notes)."""
        if not case.pair:
            return self.execute_one(case, self.command(case, binary), self.environment(case, uuid.uuid4().hex))
        with tempfile.TemporaryDirectory(prefix="mtest-pair-") as tmp:
            results = [None, None]

            def one(role, np):
                env = self.environment(case, uuid.uuid4().hex)
                env.update({PAIR_DIR_VAR: tmp, PAIR_ROLE_VAR: str(role)})
                cmd = shlex.split(self.args.mpiexec) + [str(np), binary]
                results[role] = self.execute_one(case, cmd, env)

            second = threading.Thread(target=one, args=(1, case.pair))
            second.start()
            one(0, case.np)
            second.join()
        codes = [r[0] for r in results]
        code = None if None in codes else next((c for c in codes if c != 0), 0)
        out = "".join(f"[job {role}] " + line for role, r in enumerate(results)
                      for line in r[1].splitlines(keepends=True))
        return code, out, results[0][2] + results[1][2]

    def execute_one(self, case, cmd, env):
        """Run one launcher command; returns (exit code or None on timeout, output, notes)."""
        tag = env[TAG_VAR]
        timeout = case.timeout * self.args.timeout_scale
        before = shm_files() if "cleanup" in case.checks else set()
        notes = []
        try:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, env=env,
                                    start_new_session=True)
        except OSError as e:
            return -1, f"cannot start {cmd[0]}: {e}\n", notes
        try:
            out, _ = proc.communicate(timeout=timeout)
            code = proc.returncode
        except subprocess.TimeoutExpired:
            code = None
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            kill_pids(tagged_pids(tag))
            out, _ = proc.communicate()
        out = out.decode("utf-8", "replace")
        strict = "cleanup" in case.checks and self.impl == "reflex"
        survivors = wait_until_gone(lambda: tagged_pids(tag), CLEANUP_GRACE if strict else 0)
        if survivors:
            kill_pids(survivors)
            notes.append(("fail" if strict else "note") +
                         f": {len(survivors)} process(es) of the job outlived the launcher: {survivors}")
        if strict:
            leaked = wait_until_gone(lambda: sorted(shm_files() - before), CLEANUP_GRACE)
            if leaked:
                notes.append(f"fail: shared-memory files left behind: {' '.join(leaked)}")
        return code, out, notes

    def judge(self, case, code, out, notes):
        """Return the list of reasons the case failed (empty when it passed)."""
        why = [n[len("fail: "):] for n in notes if n.startswith("fail: ")]
        if code is None:
            return why + [f"timed out after {case.timeout * self.args.timeout_scale:g}s"]
        if case.expect == "pass":
            if code != 0:
                why.append(f"exit code {code}, want 0")
            jobs = 2 if case.pair else 1
            if len(re.findall(r"^(?:\[job \d\] )? No Errors\s*$", out, re.M)) < jobs:
                why.append("no ' No Errors' line" + (" from each job" if case.pair else ""))
        elif case.expect == "fail":
            if code == 0:
                why.append("exit code 0, want non-zero")
        else:
            want = int(case.expect.split(":")[1])
            if code != want:
                why.append(f"exit code {code}, want {want}")
        if case.output and not re.search(case.output, out, re.M):
            why.append(f"output does not match /{case.output}/")
        return why

    def run_case(self, case):
        start = time.monotonic()
        binary, build_out = self.build(case)
        if binary is None:
            return case, ["build failed"], build_out, [], 0.0
        code, out, notes = self.execute(case, binary)
        return case, self.judge(case, code, out, notes), out, notes, time.monotonic() - start

    def verdict(self, case, why):
        """PASS/FAIL, or XFAIL/XPASS for a case marked as a known bug of the implementation."""
        if self.impl in case.xfail:
            return "XFAIL" if why else "XPASS"
        return "FAIL" if why else "PASS"

    def report(self, case, why, out, notes, secs):
        verdict = self.verdict(case, why)
        with self.print_lock:
            print(f"{verdict:5} {case.name:40} {secs:7.2f}s" + (f"  ({'; '.join(why)})" if why else ""))
            for n in notes:
                if n.startswith("note: "):
                    print("     " + n)
            if ((verdict == "FAIL") or self.args.verbose) and out:
                lines = out.rstrip("\n").split("\n")
                shown = lines if self.args.verbose else lines[-self.args.tail:]
                if len(shown) < len(lines):
                    print(f"     ... {len(lines) - len(shown)} earlier lines")
                for line in shown:
                    print("     | " + line)
            sys.stdout.flush()


def select(cases, args):
    if args.filter:
        rx = re.compile(args.filter)
        cases = [c for c in cases if rx.search(c.name)]
    if args.ranks:
        wanted = set(parse_ranks(args.ranks, 0))
        cases = [c for c in cases if c.np in wanted]
    return cases


def parse_args(argv):
    p = argparse.ArgumentParser(description="Build and run the MPI test programs listed in tests/mpi/testlist.")
    p.add_argument("--mpicc", default=os.environ.get("MPICC", os.path.join(REPO, "install/bin/mpicc")),
                   help="compiler wrapper (default $MPICC or install/bin/mpicc)")
    p.add_argument("--mpiexec", default=os.environ.get("MPIEXEC", os.path.join(REPO, "install/bin/mpiexec") + " -n"),
                   help="launcher, the rank count and program are appended (default $MPIEXEC or 'install/bin/mpiexec -n')")
    p.add_argument("--impl", choices=("auto",) + IMPLS, default="auto",
                   help="implementation under test (default: guessed from --mpiexec)")
    p.add_argument("--filter", help="run only cases whose name (program/ranks[/mode]) matches this regex")
    p.add_argument("--ranks", help="run only these rank counts, e.g. 2,4")
    p.add_argument("--jobs", type=int, default=1, help="cases run at the same time (default 1)")
    p.add_argument("--list", action="store_true", help="list the selected cases and exit")
    p.add_argument("--testlist", default=TESTLIST, help="test list file (default tests/mpi/testlist)")
    p.add_argument("--build-dir", default=os.path.join(REPO, "build", "tests"), help="where programs are built")
    p.add_argument("--timeout-scale", type=float, default=1.0, help="multiply every timeout by this factor")
    p.add_argument("--abi-mpicc", default="mpicc.mpich", help="compiler for mode=abi cases (default mpicc.mpich)")
    p.add_argument("--hydra", default="mpiexec.hydra -n", help="launcher for mode=hydra cases (default 'mpiexec.hydra -n')")
    p.add_argument("--tail", type=int, default=30, help="output lines shown for a failed case (default 30)")
    p.add_argument("-v", "--verbose", action="store_true", help="show the output of every case")
    return p.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    try:
        cases = select(load_cases(args.testlist), args)
    except (ListError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    impl = detect_impl(args.mpiexec) if args.impl == "auto" else args.impl
    if args.list:
        for c in cases:
            print(c.describe())
        print(f"{len(cases)} cases")
        return 0
    for what, cmd in (("--mpicc", args.mpicc), ("--mpiexec", args.mpiexec)):
        exe = shlex.split(cmd)[0]
        if not shutil.which(exe):
            print(f"error: {what} program not found: {exe} (install Reflex into install/ or pass {what})",
                  file=sys.stderr)
            return 2
    runner = Runner(args, impl)
    print(f"# implementation: {impl}; mpicc: {args.mpicc}; mpiexec: {args.mpiexec}")
    runnable, skipped = [], 0
    for c in cases:
        reason = runner.skip_reason(c)
        if reason:
            skipped += 1
            print(f"SKIP  {c.name:28}  ({reason})")
        else:
            runnable.append(c)
    # Cases that check for leftovers look at machine-wide state: run them alone, after the rest.
    shared = [c for c in runnable if "cleanup" not in c.checks]
    alone = [c for c in runnable if "cleanup" in c.checks]
    tally = {"PASS": 0, "FAIL": 0, "XFAIL": 0, "XPASS": 0}

    def record(result):
        runner.report(*result)
        tally[runner.verdict(result[0], result[1])] += 1

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(runner.run_case, c) for c in shared]
        for fut in concurrent.futures.as_completed(futures):
            record(fut.result())
    for case in alone:
        record(runner.run_case(case))
    if tally["XFAIL"] or tally["XPASS"]:
        print(f"# {tally['XFAIL']} known failure(s) of {impl} (xfail), {tally['XPASS']} unexpectedly passed;"
              " both count as passed")
    passed, failed = tally["PASS"] + tally["XFAIL"] + tally["XPASS"], tally["FAIL"]
    print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
