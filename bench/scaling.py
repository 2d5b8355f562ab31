#!/usr/bin/env python3
"""Tables from bench/scaling.sh's output: the collectives at every rank count (µs, ratio to the
better peer and to Open MPI) and the 2-rank point-to-point suite, in the shape of coll.py's and
compare.py's tables. Several logs (rounds) give the best value of each cell over the rounds.

Usage: python3 bench/scaling.py round1.log [round2.log ...] [--out tables.md]
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import coll  # noqa: E402  (table(), COLLS)
import compare  # noqa: E402  (report(), METRICS)


def parse(text, results):
    """Adds '<impl> np=<n> <name> <bytes> <best> ...' lines to {(impl, n, name, bytes): best},
    keeping the better value where a cell is already there."""
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 5 or not parts[1].startswith("np="):
            continue
        impl, n = parts[0], int(parts[1][3:])
        found = compare.parse_results(" ".join(parts[2:]), list(coll.COLLS) + list(compare.METRICS))
        for (name, size), best in found.items():
            key = (impl, n, name, size)
            if key in results:
                metric = name if name in compare.METRICS else "latency"  # lower is better
                best = compare.better(metric, results[key], best)
            results[key] = best


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("logs", nargs="+")
    p.add_argument("--out", help="also write the tables to this file")
    args = p.parse_args(argv)
    results = {}
    for path in args.logs:
        with open(path) as f:
            parse(f.read(), results)
    impls = [i for i in coll.ORDER if any(k[0] == i for k in results)]
    colls = [(k, v) for k, v in results.items() if k[2] in coll.COLLS]
    pt2pt = {k: v for k, v in results.items() if k[2] in compare.METRICS}
    parts = [coll.table(c, dict(colls), impls) for c in coll.COLLS
             if any(k[2] == c for k, _ in colls)]
    parts.append(compare.report(pt2pt, impls, None))
    text = "\n".join(parts)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main(sys.argv[1:])
