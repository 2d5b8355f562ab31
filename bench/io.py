#!/usr/bin/env python3
"""Run bench/io.c (collective MPI-IO with interleaved blocks) under Reflex, MPICH and Open MPI.

Builds io.c with each implementation's wrapper (into build/bench/<impl>/io), runs interleaved
rounds (every implementation once per round, in a rotated order), keeps the best bandwidth of
every measurement over the rounds and prints a markdown table per rank count: for each block size,
write and read bandwidth of Reflex with its automatic choice and with collective buffering
disabled (the independent accesses, to show what aggregation gives), MPICH (ROMIO, automatic),
Open MPI (ompio, its own choice), and Reflex automatic / best peer. The file goes to --dir
(default $TMPDIR or /tmp): a local file system, so these numbers are about page-cache copies and
system calls, not disks. Raw outputs in build/bench/raw/io-*.txt. Python 3 standard library only.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402  (bench/compare.py: tools(), build_program, run_logged, ORDER, LABEL, fmt)

SOURCE = os.path.join(compare.HERE, "io.c")
# Columns: (implementation, cb setting passed to io.c, header).
COLUMNS = [("reflex", "automatic", "Reflex"), ("reflex", "disable", "Reflex, cb off"),
           ("mpich", "automatic", "MPICH"), ("openmpi", "automatic", "Open MPI")]


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ranks", default="2,4", help="rank counts (default 2,4)")
    p.add_argument("--blocks", default="64,1024,65536", help="block sizes in bytes")
    p.add_argument("--mib", type=int, default=16, help="MiB per rank (default 16)")
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    p.add_argument("--reps", type=int, default=3, help="repetitions inside one run (default 3)")
    p.add_argument("--only", default=",".join(compare.ORDER), help="implementations to run")
    p.add_argument("--dir", default=os.environ.get("TMPDIR") or "/tmp", help="where the file goes")
    p.add_argument("--timeout", type=int, default=600, help="seconds per run")
    return p.parse_args(argv)


def parse_output(text, impl):
    """io lines '<write|read> <cb> <block> <MB/s>' -> {(impl, cb, op, block): MB/s}."""
    values = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] in ("write", "read"):
            try:
                values[(impl, parts[1], parts[0], int(parts[2]))] = float(parts[3])
            except ValueError:
                pass
    return values


def table(n, blocks, results):
    head = ["block", "op"] + [c[2] for c in COLUMNS] + ["Reflex / best peer"]
    lines = [f"### {n} ranks: collective write_all / read_all, MB/s of the file (higher is better)", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for block in blocks:
        for op in ("write", "read"):
            vals = [results.get((n, impl, cb, op, block)) for impl, cb, _ in COLUMNS]
            peers = [v for (impl, _, _), v in zip(COLUMNS, vals) if impl != "reflex" and v]
            ratio = f"{vals[0] / max(peers):.2f}" if vals[0] and peers else "-"
            cells = [compare.human_bytes(block), op] + [compare.fmt(v) for v in vals] + [ratio]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines + [""])


def main(argv):
    args = parse_args(argv)
    build_dir = os.path.join(compare.REPO, "build", "bench")
    raw_dir = os.path.join(build_dir, "raw")
    os.makedirs(raw_dir, exist_ok=True)
    runnable = {}
    for impl in [i for i in compare.ORDER if i in args.only.split(",")]:
        t = compare.tools(impl)
        binary = t and compare.build_program(t[0], os.path.join(build_dir, impl), SOURCE)
        if binary:
            runnable[impl] = (t[1], binary)
        else:
            compare.log(f"# {compare.LABEL[impl]}: not installed or not built; its column shows '-'")
    impls = list(runnable)
    ranks = [int(r) for r in args.ranks.split(",") if r]
    blocks = [int(b) for b in args.blocks.split(",") if b]
    results = {}
    for rnd in range(args.rounds):
        for n in ranks:
            for impl in impls[rnd % max(len(impls), 1):] + impls[:rnd % max(len(impls), 1)]:
                launch, binary = runnable[impl]
                cbs = ",".join(cb for i, cb, _ in COLUMNS if i == impl)
                cmd = launch(n) + [binary, "-b", args.blocks, "-m", str(args.mib), "-r", str(args.reps),
                                   "-c", cbs, "-d", args.dir]
                raw = os.path.join(raw_dir, f"io-{impl}-np{n}-r{rnd + 1}.txt")
                out, secs = compare.run_logged(cmd, args.timeout, raw)
                compare.log(f"round {rnd + 1}: {compare.LABEL[impl]} np={n}: {secs:.1f}s")
                for (i, cb, op, block), v in parse_output(out, impl).items():
                    key = (n, i, cb, op, block)
                    results[key] = max(results.get(key, 0.0), v)
    print("\n".join(table(n, blocks, results) for n in ranks))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
