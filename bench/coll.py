#!/usr/bin/env python3
"""Run bench/coll.c (collective latency) under Reflex, MPICH and Open MPI and print tables.

Builds coll.c with each implementation's compiler wrapper (into build/bench/<impl>/coll) and
runs it with 2, 4 and 8 ranks (4 and 8 are oversubscribed on a 2-core machine; 2-rank runs are
pinned one rank per CPU through bench/pin.sh, the others are not). Rounds are interleaved - every
implementation once per round, in a rotated order - and inside a round the implementations take
turns collective by collective (one run of coll.c per collective), so that all share the
machine's noise: this project's VM has phases of minutes in which everything runs 2-3x slower,
and with one run per implementation for all collectives (1-2 minutes) a phase could land on one
implementation's whole sweep. The best time of every (collective, ranks, size) over the rounds
is kept. One markdown table per
collective: time per operation in microseconds for each implementation, then Reflex divided by
the better peer and by Open MPI (below 1: Reflex is faster). Raw outputs go to
build/bench/raw/coll-*.txt. Python 3 standard library only.

  python3 bench/coll.py --quick              # 1 round, short repetitions, fewer sizes
  python3 bench/coll.py --ranks 2 --only reflex,openmpi --colls barrier,allreduce
  python3 bench/coll.py --quick --ranks 2,4 --only reflex --csv coll.csv   # for reflex-models fit
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402  (bench/compare.py: tools(), build_program(), PIN, LABEL, ...)

SOURCE = os.path.join(compare.HERE, "coll.c")
COLLS = ("barrier", "bcast", "reduce", "allreduce", "allgather", "alltoall")
LABEL, ORDER, log = compare.LABEL, compare.ORDER, compare.log


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="short repetitions, every 64th size, 1 round")
    p.add_argument("--rounds", type=int, help="interleaved rounds (default 3, 1 with --quick)")
    p.add_argument("--ranks", default="2,4,8", help="rank counts (default 2,4,8)")
    p.add_argument("--only", default=",".join(ORDER), help="implementations to run")
    p.add_argument("--colls", default=",".join(COLLS), help="collectives to run")
    p.add_argument("--max", type=int, default=4 << 20, help="largest message in bytes")
    p.add_argument("--timeout", type=int, default=600, help="seconds per run")
    p.add_argument("--out", help="also write the tables to this file")
    p.add_argument("--csv", help="also write every result as CSV collective,algorithm,ranks,bytes,usec "
                                 "(algorithm = implementation; the input of reflex-models fit)")
    args = p.parse_args(argv)
    args.rounds = args.rounds or (1 if args.quick else 3)
    return args


def parse_output(text):
    """coll lines -> {(collective, bytes): best}."""
    return compare.parse_results(text, COLLS)


def run_once(launch, binary, n, coll, args, raw_path):
    cmd = launch(n) + ([compare.PIN] if n == 2 else []) + [binary, "-c", coll,
                                                             "-m", str(args.max)]
    cmd += ["-q"] if args.quick else []
    out, secs = compare.run_logged(cmd, args.timeout, raw_path)
    return parse_output(out), secs


def ratio(a, b):
    return f"{a / b:.2f}" if a is not None and b else "-"


def table(coll, results, impls):
    keys = sorted({(n, size) for (_, n, c, size) in results if c == coll})
    lines = [f"### {coll} (µs per operation, lower is better)", "",
             "| np | size | " + " | ".join(LABEL[i] for i in ORDER)
             + " | Reflex / best peer | Reflex / Open MPI |",
             "|" + "---|" * (len(ORDER) + 4)]
    for n, size in keys:
        vals = {i: results.get((i, n, coll, size)) for i in impls}
        peers = [vals[i] for i in impls if i != "reflex" and vals[i] is not None]
        best = min(peers) if peers else None
        cells = [str(n), compare.human_bytes(size) if coll != "barrier" else "-"]
        cells += [compare.fmt(vals.get(i)) for i in ORDER]
        cells += [ratio(vals.get("reflex"), best), ratio(vals.get("reflex"), vals.get("openmpi"))]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines + [""])


def write_csv(path, results):
    """One line per (implementation, ranks, collective, size): the best time in µs."""
    with open(path, "w") as f:
        f.write("collective,algorithm,ranks,bytes,usec\n")
        for (impl, n, coll, size), v in sorted(results.items(), key=lambda kv: (
                COLLS.index(kv[0][2]), kv[0][0], kv[0][1], kv[0][3])):
            f.write(f"{coll},{impl},{n},{size},{v}\n")


def main(argv):
    args = parse_args(argv)
    build_dir = os.path.join(compare.REPO, "build", "bench")
    raw_dir = os.path.join(build_dir, "raw")
    os.makedirs(raw_dir, exist_ok=True)
    runnable = {}
    for impl in [i for i in ORDER if i in args.only.split(",")]:
        t = compare.tools(impl)
        binary = t and compare.build_program(t[0], os.path.join(build_dir, impl), SOURCE)
        if binary:
            runnable[impl] = (t[1], binary)
        else:
            log(f"{LABEL[impl]}: not available, skipped")
    impls = list(runnable)
    ranks = [int(n) for n in args.ranks.split(",")]
    results = {}
    for rnd in range(args.rounds):
        for n in ranks:
            for coll in args.colls.split(","):
                for impl in impls[rnd % len(impls):] + impls[:rnd % len(impls)]:
                    launch, binary = runnable[impl]
                    raw = os.path.join(raw_dir, f"coll-{impl}-np{n}-{coll}-r{rnd + 1}.txt")
                    values, secs = run_once(launch, binary, n, coll, args, raw)
                    log(f"[round {rnd + 1}/{args.rounds}] np={n} {coll} {LABEL[impl]}: "
                        f"{len(values)} results, {secs:.1f}s")
                    for (c, size), v in values.items():
                        key = (impl, n, c, size)
                        results[key] = min(v, results.get(key, v))
    header = (f"## Collectives: {', '.join(LABEL[i] for i in impls)}; {args.rounds} interleaved "
              f"round(s){', quick' if args.quick else ''}; best of rounds; np=2 pinned; "
              f"{compare.CPUS} CPUs\n")
    text = header + "\n" + "\n".join(table(c, results, impls) for c in args.colls.split(","))
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    if args.csv:
        write_csv(args.csv, results)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
