"""Run one mpi4py test module inside one MPI rank and record every test's outcome.

Started by suite.py as `mpiexec -n N python driver.py ...`; each rank imports the module from
mpi4py's own test directory, runs its tests with unittest and appends one JSON line per event to
`<out>.r<rank>.jsonl`, flushed at once, so that a crash or a hang loses nothing already done:

    {"ev": "plan", "ids": [...], "excluded": [...]}   the tests it will run, and those it skips
    {"ev": "start", "id": ID}                         before each test
    {"ev": "end", "id": ID, "outcome": O, "msg": M}   O: ok, fail, error, skip, xfail, xpass
    {"ev": "done"}                                    after the last test, before MPI_Finalize

A test (or the import, or MPI_Finalize) that runs past `--test-timeout` seconds makes this rank
dump its Python stack to `<out>.r<rank>.hang` and exit (faulthandler's watchdog thread, which
needs no GIL, so a rank blocked inside an MPI call is caught too); mpiexec then ends the job.
The ranks pass a barrier (on a private communicator) after each test, so that they stay in the
same test; a rank whose test failed waits there `--grace` seconds only (its peers are then likely
blocked in a collective it raised out of), then ends the job the same way.
Runs under the venv's python; uses only the standard library and mpi4py.
"""

import argparse
import faulthandler
import fnmatch
import importlib
import json
import os
import re
import sys
import traceback
import unittest


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--testdir", required=True, help="mpi4py's test/ directory")
    parser.add_argument("--module", required=True, help="test module name, e.g. test_comm")
    parser.add_argument("--out", required=True, help="output path prefix")
    parser.add_argument("--skip", help="file of test ids (fnmatch patterns) not to run")
    parser.add_argument("--test-timeout", type=float, default=30.0)
    parser.add_argument("--grace", type=float, default=10.0,
                        help="seconds a rank whose test failed waits for the others")  # fmt: skip
    return parser.parse_args()


class Recorder:
    """Appends events to this rank's JSON-lines file, one flushed line each."""

    def __init__(self, path):
        self.file = open(path, "a", encoding="utf-8")  # noqa: SIM115 (lives as long as the run)

    def write(self, **event):
        self.file.write(json.dumps(event) + "\n")
        self.file.flush()


def short_message(err):
    """The last lines of a formatted exception: enough to see what went wrong."""
    text = "".join(traceback.format_exception(*err)).rstrip()
    return "\n".join(text.splitlines()[-6:])


class RecordingResult(unittest.TestResult):
    """A unittest result that records every outcome and arms the watchdog around each test."""

    def __init__(self, recorder, watchdog, sync, grace):
        super().__init__()
        self.recorder = recorder
        self.watchdog = watchdog
        self.sync = sync
        self.grace = grace
        self.failed_here = False

    def startTest(self, test):
        super().startTest(test)
        self.recorder.write(ev="start", id=test.id())
        self.failed_here = False
        self.watchdog()

    def stopTest(self, test):
        # Every rank ends each test before any starts the next, so that a test that fails on one
        # rank cannot leave the ranks in different tests, matching each other's messages. A rank
        # whose test failed waits only `grace` seconds: the others are then most likely blocked
        # for good in a call this rank left (a collective it raised out of).
        if self.sync is not None:
            if self.failed_here:
                self.watchdog(self.grace)
            self.sync.Barrier()
        faulthandler.cancel_dump_traceback_later()
        super().stopTest(test)

    def end(self, test, outcome, msg=""):
        self.failed_here |= outcome in ("fail", "error")
        self.recorder.write(ev="end", id=test_id(test), outcome=outcome, msg=msg)

    def addSuccess(self, test):
        super().addSuccess(test)
        self.end(test, "ok")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self.end(test, "fail", short_message(err))

    def addError(self, test, err):
        super().addError(test, err)
        self.end(test, "error", short_message(err))

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self.end(test, "skip", str(reason))

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self.end(test, "xfail")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self.end(test, "xpass")

    def addSubTest(self, test, subtest, err):
        # A failing subtest fails its test; the test's own addSuccess is then not called.
        super().addSubTest(test, subtest, err)
        if err is not None:
            kind = "fail" if issubclass(err[0], test.failureException) else "error"
            self.end(test, kind, f"{subtest.id()}\n{short_message(err)}")


def test_id(test):
    """The test's id; a failing class or module fixture ('setUpClass (test_x.Class)') becomes
    'test_x.Class.<setUpClass>' so that every id is one word."""
    match = re.fullmatch(r"(\w+) \((.+)\)", test.id())
    return f"{match.group(2)}.<{match.group(1)}>" if match else test.id()


def flatten(suite):
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            yield from flatten(item)
        else:
            yield item


def read_patterns(path):
    if not path:
        return []
    with open(path, encoding="utf-8") as file:
        return [line.strip() for line in file if line.strip()]


def main():
    args = parse_args()
    # As mpi4py's own test/main.py: no GPU array libraries; the test directory importable.
    sys.modules["cupy"] = None
    sys.modules["numba"] = None
    sys.path.insert(0, args.testdir)
    sys.dont_write_bytecode = True

    # A hang before the rank is known (in MPI_Init) is written under the process id.
    early_hang = f"{args.out}.pid{os.getpid()}.hang"
    hang_file = open(early_hang, "w", encoding="utf-8")  # noqa: SIM115

    def watchdog(seconds=args.test_timeout):
        faulthandler.dump_traceback_later(seconds, exit=True, file=hang_file)

    watchdog()
    from mpi4py import MPI

    rank = MPI.COMM_WORLD.Get_rank()
    faulthandler.cancel_dump_traceback_later()
    hang_file.close()
    os.remove(early_hang)
    hang_file = open(f"{args.out}.r{rank}.hang", "w", encoding="utf-8")  # noqa: SIM115
    watchdog()
    recorder = Recorder(f"{args.out}.r{rank}.jsonl")

    module_id = f"{args.module}.<import>"
    recorder.write(ev="start", id=module_id)
    try:
        module = importlib.import_module(args.module)
    except unittest.SkipTest as exc:
        recorder.write(ev="end", id=module_id, outcome="skip", msg=str(exc))
        recorder.write(ev="done")
        return
    except Exception:
        recorder.write(ev="end", id=module_id, outcome="error", msg=short_message(sys.exc_info()))
        recorder.write(ev="done")
        return
    faulthandler.cancel_dump_traceback_later()

    skip = read_patterns(args.skip)
    tests, excluded = [], []
    for test in flatten(unittest.defaultTestLoader.loadTestsFromModule(module)):
        listed = any(fnmatch.fnmatchcase(test.id(), pattern) for pattern in skip)
        (excluded if listed else tests).append(test)
    recorder.write(
        ev="plan", ids=[test.id() for test in tests], excluded=[test.id() for test in excluded]
    )
    # A private communicator for the barrier between tests: no test traffic can match it.
    sync = MPI.COMM_WORLD.Dup() if MPI.COMM_WORLD.Get_size() > 1 else None
    result = RecordingResult(recorder, watchdog, sync, min(args.grace, args.test_timeout))
    unittest.TestSuite(tests).run(result)
    recorder.write(ev="done")
    watchdog()  # covers MPI_Finalize at exit


if __name__ == "__main__":
    main()
