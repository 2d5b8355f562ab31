#!/usr/bin/env python3
"""Run mpi4py's own test suite under Reflex's mpiexec and compare it with the expected failures.

Each test module runs as its own job (`mpiexec -n N python driver.py --module M`) for each rank
count, so that a module that crashes or hangs costs only itself. driver.py records every test's
outcome as it happens and stops a test that runs past --test-timeout; the whole job is also
bounded by --file-timeout (`timeout`, then SIGKILL). When a job ends early, the test that was
running is recorded as `crash` or `timeout` and the module is started again without the tests
already recorded, so that the rest of it still runs.

A test's outcome at one rank count is the worst over its ranks (timeout > crash > error > fail >
ok > skip). Failing tests not in the expected-failures list (expected.py) fail the stage; listed
entries that no longer fail are reported so that the list can be trimmed. `--update` rewrites the
list from this run. Logs and per-rank records go to --out (one directory per rank count).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

import expected as xlist

HERE = os.path.dirname(os.path.abspath(__file__))
RANK_ORDER = {"skip": 0, "xfail": 1, "xpass": 1, "ok": 1, "fail": 2, "error": 3, "crash": 4,
              "timeout": 5}  # fmt: skip
MAX_ATTEMPTS = 12


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", required=True, help="python of the venv holding mpi4py")
    parser.add_argument("--mpiexec", required=True)
    parser.add_argument("--testdir", required=True, help="mpi4py's test/ directory (sdist)")
    parser.add_argument("--out", required=True, help="directory for logs and records")
    parser.add_argument("--ranks", default="1,2,3")
    parser.add_argument("--expected", default=os.path.join(HERE, "expected-failures.txt"))
    parser.add_argument("--include", action="append", default=[],
                        help="run only modules matching this regex (repeatable)")  # fmt: skip
    parser.add_argument("--test-timeout", type=float, default=30.0, help="seconds per test")
    parser.add_argument("--file-timeout", type=float, default=600.0, help="seconds per job")
    parser.add_argument("--budget", type=float, default=0.0,
                        help="seconds for the whole run; modules left then fail")  # fmt: skip
    parser.add_argument("--replay", action="store_true",
                        help="judge OUT/results.json again, not running")  # fmt: skip
    parser.add_argument("--update", action="store_true", help="rewrite the expected list")
    parser.add_argument("--verbose", action="store_true", help="print every failure's message")
    parser.add_argument("--show", type=int, default=40, help="unexpected failures to print per n")
    return parser.parse_args()


def list_modules(testdir, includes):
    names = sorted(f[:-3] for f in os.listdir(testdir) if re.fullmatch(r"test_\w+\.py", f))
    if includes:
        pattern = re.compile("|".join(includes))
        names = [name for name in names if pattern.search(name)]
    return names


def read_records(prefix):
    """Per-rank event lists of one job: {rank: [event, ...]}, and the ranks that hung."""
    records, hung = {}, set()
    directory, base = os.path.split(prefix)
    for name in os.listdir(directory):
        match = re.fullmatch(re.escape(base) + r"\.(r\d+|pid\d+)\.(jsonl|hang)", name)
        if not match:
            continue
        path = os.path.join(directory, name)
        if match.group(2) == "hang":
            if os.path.getsize(path) > 0:
                hung.add(match.group(1))
            continue
        with open(path, encoding="utf-8") as file:
            events = []
            for line in file:
                try:
                    events.append(json.loads(line))
                except ValueError:
                    break  # a line cut by a crash
            records[match.group(1)] = events
    return records, hung


class ModuleRun:
    """The outcomes of one module at one rank count, over as many jobs as it takes."""

    def __init__(self, module, n):
        self.module, self.n = module, n
        self.outcomes = {}  # id -> outcome
        self.messages = {}  # id -> message of the worst outcome
        self.excluded = set()  # listed `skip` tests
        self.notes = []  # what went wrong with the jobs
        self.seconds = 0.0

    def record(self, test_id, outcome, msg=""):
        old = self.outcomes.get(test_id)
        if old is None or RANK_ORDER[outcome] > RANK_ORDER[old]:
            self.outcomes[test_id] = outcome
            self.messages[test_id] = msg
        elif outcome == old and msg and not self.messages.get(test_id):
            self.messages[test_id] = msg

    def absorb(self, records, hung, timed_out, size):
        """Fold one job's records in; returns the ids left unfinished by it."""
        unfinished = set()
        for events in records.values():
            running = None
            for event in events:
                if event["ev"] == "start":
                    running = event["id"]
                elif event["ev"] == "end":
                    self.record(event["id"], event["outcome"], event.get("msg", ""))
                    running = None
                elif event["ev"] == "plan":
                    self.excluded.update(event.get("excluded", []))
            if running is not None:
                unfinished.add(running)
        done = sum(1 for events in records.values() if events and events[-1]["ev"] == "done")
        for test_id in unfinished:
            outcome = "timeout" if (hung or timed_out) else "crash"
            msg = f"job ended while this test ran ({outcome})"
            # Usually one rank failed out of a call its peers then wait in for ever: say which.
            other = first_line(self.messages.get(test_id, ""))
            if other:
                msg += f"\nafter another rank's failure: {other}"
            self.record(test_id, outcome, msg)
        return unfinished, done == size


def run_job(args, module, n, attempt, skip_patterns, outdir):
    prefix = os.path.join(outdir, f"{module}.{attempt}")
    skip_file = prefix + ".skip"
    with open(skip_file, "w", encoding="utf-8") as file:
        file.write("".join(p + "\n" for p in skip_patterns))
    command = [
        "timeout", "-k", "10", str(args.file_timeout),
        args.mpiexec, "-n", str(n), args.python, os.path.join(HERE, "driver.py"),
        "--testdir", args.testdir, "--module", module, "--out", prefix,
        "--skip", skip_file, "--test-timeout", str(args.test_timeout),
    ]  # fmt: skip
    with open(prefix + ".log", "w", encoding="utf-8") as log:
        proc = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, check=False)
    return prefix, proc.returncode


def run_module(args, module, n, listed_skips, outdir):
    run = ModuleRun(module, n)
    start = time.monotonic()
    for attempt in range(MAX_ATTEMPTS):
        prefix, rc = run_job(args, module, n, attempt, listed_skips + sorted(run.outcomes), outdir)
        records, hung = read_records(prefix)
        timed_out = rc in (124, 137)
        unfinished, complete = run.absorb(records, hung, timed_out, n)
        if complete and rc == 0:
            break
        log = prefix + ".log"
        if complete:
            run.record(f"{module}.<exit>", "crash", f"exit status {rc} after the last test")
            run.notes.append(f"exit status {rc} after its last test ({log})")
            break
        what = "timed out" if timed_out or hung else f"crashed (exit status {rc})"
        where = ", ".join(sorted(unfinished)) or "outside any test"
        run.notes.append(f"job {attempt + 1} {what} in {where} ({log})")
        if not unfinished:
            run.record(f"{module}.<job>", "timeout" if timed_out else "crash", what)
            break
        if any(test_id.endswith(".<import>") for test_id in unfinished):
            break
    else:
        run.notes.append(f"gave up after {MAX_ATTEMPTS} jobs")
    run.excluded -= set(run.outcomes)  # those left out on a restart ran in an earlier job
    run.seconds = time.monotonic() - start
    return run


def tally(outcomes, excluded):
    counts = {"passed": 0, "failed": 0, "errors": 0, "crashed": 0, "skipped": 0}
    key = {"ok": "passed", "xfail": "passed", "xpass": "passed", "fail": "failed",
           "error": "errors", "crash": "crashed", "timeout": "crashed",
           "skip": "skipped"}  # fmt: skip
    for outcome in outcomes.values():
        counts[key[outcome]] += 1
    counts["not run (listed skip)"] = len(excluded)
    return counts


def first_line(message):
    lines = [line for line in message.splitlines() if line.strip()]
    return lines[-1].strip()[:160] if lines else ""


def cause(outcome, message):
    """What a failure is about, for grouping: its last message line without object addresses and
    numbers (e.g. 'MPI_Scan_c: unsupported operation: ...'); for a hang or crash, the failure of
    another rank that likely caused it ('timeout after MPI_Gather_c: invalid argument ...')."""
    text = first_line(message).removeprefix("mpi4py.MPI.Exception: ")
    if outcome in ("crash", "timeout"):
        after = "after another rank's failure: "
        if not text.startswith(after):
            return outcome
        text = f"{outcome} {text.removeprefix(after).removeprefix('mpi4py.MPI.Exception: ')}"
    text = re.sub(r"0x[0-9a-f]+|\b\d+\b", "N", text)
    return text[:110]


def print_causes(title, failed, messages):
    groups = {}
    for test_id, outcome in failed.items():
        groups.setdefault(cause(outcome, messages.get(test_id, "")), []).append(test_id)
    if not groups:
        return
    print(f"  {title}:")
    for text, ids in sorted(groups.items(), key=lambda item: (-len(item[1]), item[0])):
        print(f"    {len(ids):4d}  {text}")


def run_ranks(args, n, modules, entries, started):
    """Every module at rank count n: {"outcomes", "messages", "excluded", "seconds"}."""
    outdir = os.path.join(args.out, f"n{n}")
    shutil.rmtree(outdir, ignore_errors=True)
    os.makedirs(outdir)
    outcomes, messages, excluded, seconds = {}, {}, set(), 0.0
    for module in modules:
        if args.budget and time.monotonic() - started > args.budget:
            outcomes[f"{module}.<job>"] = "timeout"
            messages[f"{module}.<job>"] = f"not run: the --budget of {args.budget:.0f} s is spent"
            continue
        run = run_module(args, module, n, xlist.skip_patterns(entries, n), outdir)
        outcomes.update(run.outcomes)
        messages.update(run.messages)
        excluded.update(run.excluded)
        seconds += run.seconds
        for note in run.notes:
            print(f"n={n} {module}: {note}", flush=True)
    return {"outcomes": outcomes, "messages": messages, "excluded": sorted(excluded),
            "seconds": seconds}  # fmt: skip


def report_ranks(args, n, result, entries):
    """Prints one rank count's results; returns (counts, expected failures, unexpected ones)."""
    outcomes, messages = result["outcomes"], result["messages"]
    expected_fail, unexpected = xlist.classify(entries, n, outcomes)
    counts = tally(outcomes, result["excluded"])
    seconds = result.get("seconds", 0)
    print(f"n={n}: " + ", ".join(f"{v} {k}" for k, v in counts.items())
          + f"; {len(unexpected)} unexpected failures; {seconds:.0f} s", flush=True)  # fmt: skip
    shown = list(unexpected.items())[: args.show]
    for test_id, outcome in shown:
        print(f"  UNEXPECTED {outcome}: {test_id} (n={n})")
        if messages.get(test_id):
            print(f"      {first_line(messages[test_id])}")
    if len(unexpected) > len(shown):
        print(f"  ... and {len(unexpected) - len(shown)} more unexpected (--show N)")
    print_causes(f"n={n} failures by cause", {**expected_fail, **unexpected}, messages)
    if args.verbose:
        for test_id, outcome in expected_fail.items():
            print(f"  expected {outcome}: {test_id}: {first_line(messages.get(test_id, ''))}")
    return counts, expected_fail, unexpected


def print_summary(rows, entries, ranks):
    print("\nmpi4py summary (ranks: passed / failed / errors / crashed-or-hung / skipped / "
          "not run; expected failures, unexpected; time)")  # fmt: skip
    for n, c, n_expected, n_unexpected, seconds in rows:
        print(f"  n={n}: {c['passed']} / {c['failed']} / {c['errors']} / {c['crashed']} / "
              f"{c['skipped']} / {c['not run (listed skip)']}; {n_expected} expected, "
              f"{n_unexpected} unexpected; {seconds:.0f} s")  # fmt: skip
    for entry, gone in xlist.stale(entries, ranks):
        where = "; ".join(
            f"n={n}: " + (f"passed ({', '.join(ids[:3])}{'...' if len(ids) > 3 else ''})"
                          if ids else "matched no test")  # fmt: skip
            for n, ids in gone
        )
        print(f"  listed but not failing (trim the list?): line {entry.line} "
              f"{entry.text()}: {where}")  # fmt: skip


def main():
    args = parse_args()
    ranks = [int(r) for r in args.ranks.split(",")]
    modules = list_modules(args.testdir, args.include)
    entries, raw_lines = xlist.load(args.expected)
    results_file = os.path.join(args.out, "results.json")
    if args.replay:
        with open(results_file, encoding="utf-8") as file:
            results = {int(n): result for n, result in json.load(file).items()}
        reports = {}
        ranks = [n for n in ranks if n in results]
    else:
        for tool in (args.python, args.mpiexec):
            if not shutil.which(tool):
                sys.exit(f"suite.py: {tool} not found")
        started = time.monotonic()
        results, reports = {}, {}
        for n in ranks:
            results[n] = run_ranks(args, n, modules, entries, started)
            reports[n] = report_ranks(args, n, results[n], entries)
        with open(results_file, "w", encoding="utf-8") as file:
            json.dump(results, file, indent=1, sort_keys=True)
    rows, failures, causes = [], {}, {}
    for n in ranks:
        if args.replay:
            reports[n] = report_ranks(args, n, results[n], entries)
        counts, expected_fail, unexpected = reports[n]
        failures[n] = {**expected_fail, **unexpected}
        for test_id, outcome in failures[n].items():
            # A test that errors alone at n=1 often hangs its peers at n>1: keep the error.
            if causes.get(test_id, "timeout") in ("timeout", "crash"):
                causes[test_id] = cause(outcome, results[n]["messages"].get(test_id, ""))
        rows.append((n, counts, len(expected_fail), len(unexpected), results[n].get("seconds", 0)))
    print_summary(rows, entries, ranks)
    if args.update:
        xlist.rewrite(args.expected, entries, raw_lines, failures, ranks, set(modules), causes)
        todo = sum(1 for line in open(args.expected, encoding="utf-8") if xlist.PLACEHOLDER in line)
        print(f"rewrote {args.expected}: {todo} lines to edit ('{xlist.PLACEHOLDER[2:]}')")
    elif any(rows_unexpected for *_, rows_unexpected, _ in rows):
        print("mpi4py: unexpected failures (not in tests/mpi4py/expected-failures.txt)")
        sys.exit(1)


if __name__ == "__main__":
    main()
