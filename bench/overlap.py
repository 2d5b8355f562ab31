#!/usr/bin/env python3
"""Overlap of nonblocking collectives with computation: bench/overlap.c under Reflex without and
with its progress thread (REFLEX_PROGRESS_THREAD), and MPICH without and with its asynchronous
progress thread (MPIR_CVAR_ASYNC_PROGRESS=1, which needs MPI_THREAD_MULTIPLE).

Per operation, size and computation C: µs per iteration (post, compute C µs, wait), the overlap
(1: the operation hid entirely behind the computation, 0: not at all) and the process CPU time
per iteration (all threads). Ranks are not pinned, so a progress thread can run on any core.

  python3 bench/overlap.py --quick
  python3 bench/overlap.py --ranks 2 --computes 0,50,200,1000
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402

SOURCE = os.path.join(compare.HERE, "overlap.c")
VARIANTS = [  # (label, implementation, environment, extra arguments)
    ("Reflex", "reflex", {"REFLEX_PROGRESS_THREAD": "off"}, []),
    ("Reflex + thread", "reflex", {"REFLEX_PROGRESS_THREAD": "on"}, []),
    ("MPICH", "mpich", {}, []),
    ("MPICH + async", "mpich", {"MPIR_CVAR_ASYNC_PROGRESS": "1"}, ["-M"]),
]


def parse(text):
    """'op bytes compute iter cpu overlap' lines -> {(op, bytes, compute): (iter, cpu, overlap)}."""
    rows = {}
    for line in text.splitlines():
        p = line.split()
        if len(p) == 6 and not line.startswith("#"):
            try:
                rows[(p[0], int(p[1]), int(float(p[2])))] = (float(p[3]), float(p[4]), p[5])
            except ValueError:
                pass
    return rows


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--computes", default="0,20,100,500,2000", help="computation per iteration, µs")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--timeout", type=int, default=600)
    args = ap.parse_args(argv)
    build_dir = os.path.join(compare.REPO, "build", "bench")
    raw_dir = os.path.join(build_dir, "raw")
    os.makedirs(raw_dir, exist_ok=True)
    results, labels = {}, []
    for label, impl, env, extra in VARIANTS:
        tools = compare.tools(impl)
        binary = tools and compare.build_program(tools[0], os.path.join(build_dir, impl), SOURCE)
        if not binary:
            compare.log(f"{label}: not available, skipped")
            continue
        cmd = tools[1](args.ranks) + [binary, "-c", args.computes] + extra
        cmd += ["-q"] if args.quick else []
        raw = os.path.join(raw_dir, f"overlap-{label.replace(' ', '').replace('+', '-')}.txt")
        out, secs = compare.run_logged(cmd, args.timeout, raw, dict(os.environ, **env))
        results[label] = parse(out)
        labels.append(label)
        compare.log(f"{label}: {len(results[label])} rows, {secs:.1f}s")
    keys = sorted({k for rows in results.values() for k in rows})
    print(f"## Overlap, {args.ranks} ranks, {compare.CPUS} CPUs: µs per iteration "
          "(overlap, CPU µs per iteration)\n")
    print("| op | bytes | compute µs | " + " | ".join(labels) + " |")
    print("|" + "---|" * (len(labels) + 3))
    for op, size, c in keys:
        cells = []
        for label in labels:
            v = results[label].get((op, size, c))
            cells.append(f"{v[0]:.1f} ({v[2]}, {v[1]:.0f})" if v else "-")
        print(f"| {op} | {compare.human_bytes(size)} | {c} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
