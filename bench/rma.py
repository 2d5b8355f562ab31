#!/usr/bin/env python3
"""Run bench/rma.c (one-sided communication) under Reflex, MPICH and Open MPI and print tables.

Builds rma.c with each implementation's compiler wrapper (into build/bench/<impl>/rma) and runs:
  - np=2 on an MPI_Win_allocate window and on an MPI_Win_allocate_shared window (pinned one rank
    per CPU through bench/pin.sh): Put/Get latency (one operation + flush in a lock epoch), Put in
    a fence epoch, Put/Get bandwidth (64 operations then one flush), Accumulate(SUM) of a double,
    Fetch_and_op(SUM) on a long, and the synchronisation calls (fence, lock/unlock exclusive and
    shared, lock_all/unlock_all, a PSCW round, MPI_Barrier for reference);
  - np=4 (oversubscribed on 2 cores, unpinned): the synchronisation calls only.
Rounds are interleaved (every implementation once per round, in a rotated order) and the best
value of every measurement over the rounds is kept. An implementation that fails to build or
whose run fails is reported on stderr and in the header of the output, and the others go on.
Raw outputs: build/bench/raw/rma-<impl>-<config>-r<round>.txt. Python 3 standard library only.

  python3 bench/rma.py --quick                 # < 1 minute: 5 sizes, short repetitions, 1 round
  python3 bench/rma.py --only mpich,openmpi    # the peers alone (e.g. before Reflex has RMA)
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402  (bench/compare.py: tools(), build_program(), run_logged(), PIN, LABEL, ...)

SOURCE = os.path.join(compare.HERE, "rma.c")
LABEL, ORDER, log = compare.LABEL, compare.ORDER, compare.log
SYNC = "fence,lock_excl,lock_shared,lock_all,pscw,barrier"
OPS = "put_lat,get_lat,put_fence,put_bw,get_bw,acc_double,fop_long"
# config name -> (ranks, window kind, tests, pinned)
CONFIGS = {
    "np2-alloc": (2, "alloc", OPS + "," + SYNC, True),
    "np2-shared": (2, "shared", OPS + "," + SYNC, True),
    "np4-alloc": (4, "alloc", SYNC, False),
}
TESTS = OPS.split(",") + SYNC.split(",")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="5 sizes up to 512 KiB, short repetitions, 1 round")
    p.add_argument("--rounds", type=int, help="interleaved rounds (default 2, 1 with --quick)")
    p.add_argument("--only", default=",".join(ORDER), help="implementations to run (reflex,mpich,openmpi)")
    p.add_argument("--configs", default=",".join(CONFIGS), help="configurations: " + ",".join(CONFIGS))
    p.add_argument("--max", type=int, default=1 << 20, help="largest message in bytes (default 1 MiB)")
    p.add_argument("--timeout", type=int, help="seconds per run (default 300, 60 with --quick)")
    p.add_argument("--out", help="also write the tables to this file")
    args = p.parse_args(argv)
    args.rounds = args.rounds or (1 if args.quick else 2)
    args.timeout = args.timeout or (60 if args.quick else 300)
    return args


def parse_output(text):
    """rma lines -> {(test, bytes): best}."""
    return compare.parse_results(text, TESTS)


def run_once(launch, binary, config, args, raw_path):
    n, kind, tests, pinned = CONFIGS[config]
    cmd = launch(n) + ([compare.PIN] if pinned else []) + [binary, "-t", tests, "-w", kind, "-m", str(args.max)]
    cmd += ["-q"] if args.quick else []
    out, secs = compare.run_logged(cmd, args.timeout, raw_path)
    values = parse_output(out)
    missing = sorted({t for t in tests.split(",") if t != "pscw" or n > 1} - {t for t, _ in values})
    return values, secs, missing


def higher_better(test):
    return test.endswith("_bw")


def ratio(a, b):
    return f"{a / b:.2f}" if a is not None and b else "-"


def best_peer(vals, test):
    peers = [v for i, v in vals.items() if i != "reflex" and v is not None]
    if not peers:
        return None
    return max(peers) if higher_better(test) else min(peers)


def table(title, unit, rows, results, impls, extra=None):
    """rows: (config, test, bytes); extra: (header, function(vals, row) -> cell)."""
    head = ["config", "test", "size"] + [LABEL[i] for i in ORDER] + ["Reflex / best peer"]
    head += [extra[0]] if extra else []
    lines = [f"### {title} ({unit})", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for config, test, size in rows:
        vals = {i: results.get((i, config, test, size)) for i in impls}
        cells = [config, test, compare.human_bytes(size) if size else "-"]
        cells += [compare.fmt(vals.get(i)) for i in ORDER]
        cells.append(ratio(vals.get("reflex"), best_peer(vals, test)))
        if extra:
            cells.append(extra[1](vals, (config, test, size)))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines + [""])


def shared_target(results, impls):
    """Issue target: Put/Get latency <= 1 KiB on a shared window at most half the better peer's."""
    def cell(vals, row):
        config, test, size = row
        peer = best_peer(vals, test)
        if config != "np2-shared" or size > 1024 or vals.get("reflex") is None or not peer:
            return ""
        return "met" if vals["reflex"] <= 0.5 * peer else "missed"
    return ("target <= 0.5x (shared, <= 1 KiB)", cell)


def fence_target(results, impls):
    """Issue target: Win_fence no slower than the better peer's MPI_Barrier."""
    def cell(vals, row):
        config, test, size = row
        if test != "fence":
            return ""
        barriers = [results.get((i, config, "barrier", 0)) for i in impls if i != "reflex"]
        barriers = [b for b in barriers if b is not None]
        mine = vals.get("reflex")
        if mine is None or not barriers:
            return ""
        return f"{mine / min(barriers):.2f} ({'met' if mine <= min(barriers) else 'missed'})"
    return ("Reflex fence / best peer barrier", cell)


def report(results, impls):
    keys = sorted({(c, t, s) for (_, c, t, s) in results}, key=lambda k: (list(CONFIGS).index(k[0]), TESTS.index(k[1]), k[2]))
    lat = [k for k in keys if k[1] in ("put_lat", "get_lat", "put_fence")]
    bw = [k for k in keys if k[1].endswith("_bw")]
    acc = [k for k in keys if k[1] in ("acc_double", "fop_long")]
    sync = [k for k in keys if k[1] in SYNC.split(",")]
    out = []
    if lat:
        out.append(table("Put/Get latency: one operation + flush (lock epoch), or a fence epoch",
                         "µs per operation, lower is better", lat, results, impls, shared_target(results, impls)))
    if bw:
        out.append(table("Put/Get bandwidth: 64 operations, one flush", "MB/s, higher is better", bw, results, impls))
    if acc:
        out.append(table("Atomics: Accumulate(SUM, 1 double) / Fetch_and_op(SUM, long) + flush",
                         "µs per operation, lower is better", acc, results, impls))
    if sync:
        out.append(table("Synchronisation (no operations)", "µs per call or round, lower is better", sync, results,
                         impls, fence_target(results, impls)))
    return "\n".join(out)


def main(argv):
    args = parse_args(argv)
    build_dir = os.path.join(compare.REPO, "build", "bench")
    raw_dir = os.path.join(build_dir, "raw")
    os.makedirs(raw_dir, exist_ok=True)
    configs = [c for c in args.configs.split(",") if c]
    for c in configs:
        if c not in CONFIGS:
            log(f"error: unknown configuration '{c}' (want {', '.join(CONFIGS)})")
            return 2
    runnable, problems = {}, {}
    for impl in [i for i in ORDER if i in args.only.split(",")]:
        t = compare.tools(impl)
        if t is None:
            problems[impl] = "not installed"
            continue
        binary = compare.build_program(t[0], os.path.join(build_dir, impl), SOURCE)
        if binary:
            runnable[impl] = (t[1], binary)
        else:
            problems[impl] = f"build with {t[0]} failed"
    for impl, why in problems.items():
        log(f"# {LABEL[impl]}: {why}; its column shows '-'")
    impls = list(runnable)
    results = {}
    for rnd in range(args.rounds):
        for config in configs:
            for impl in impls[rnd % max(len(impls), 1):] + impls[:rnd % max(len(impls), 1)]:
                launch, binary = runnable[impl]
                raw = os.path.join(raw_dir, f"rma-{impl}-{config}-r{rnd + 1}.txt")
                values, secs, missing = run_once(launch, binary, config, args, raw)
                status = f"{len(values)} results, {secs:.1f}s"
                if missing:
                    status += f"; FAILED: no result for {','.join(missing)} (output in {raw})"
                    problems.setdefault(impl, f"failed runs, e.g. {config}: see {raw}")
                log(f"[round {rnd + 1}/{args.rounds}] {config} {LABEL[impl]}: {status}")
                for (test, size), v in values.items():
                    key = (impl, config, test, size)
                    old = results.get(key)
                    results[key] = v if old is None else (max(v, old) if higher_better(test) else min(v, old))
    header = (f"## RMA: {', '.join(LABEL[i] for i in impls) or 'nothing ran'}; {args.rounds} interleaved "
              f"round(s){', quick' if args.quick else ''}; best of rounds; np=2 pinned; {compare.CPUS} CPUs\n")
    for impl, why in problems.items():
        header += f"\n- {LABEL[impl]}: {why}"
    text = header + "\n\n" + report(results, impls)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0 if results else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
