#!/usr/bin/env python3
"""Sweep Reflex's collective schedules and find the crossovers of its selection table.

Runs bench/coll.c under Reflex only, once per schedule forced through the REFLEX_COLL_*
settings (REFLEX_COLL_SHM=off, so that small messages take the point-to-point schedules too):
barrier (dissemination, pairwise), bcast (binomial, k-nomial for each fan-out r, postal for
each latency λ, scatter-allgather), allreduce (recursive doubling, Rabenseifner, ring), allgather (direct,
ring, Bruck), alltoall (direct, pairwise). Prints one table per collective and rank count (µs
per operation, the best schedule of each size marked *), then the crossovers: the size from
which the large-message schedule (scatter-allgather bcast, Rabenseifner allreduce) stays ahead of the
small one. With --write FILE the suggested settings are written as an environment file
(`set -a; . FILE` before mpiexec, or export by hand).

  python3 bench/coll_tune.py --quick --ranks 4
  python3 bench/coll_tune.py --ranks 4,8 --fanouts 2,3,4,8 --lambdas 1,2,4 --write build/bench/coll.env
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import coll  # noqa: E402  (bench/coll.py: parse_output)
import compare  # noqa: E402

LARGE_PAIRS = {"bcast": ("binomial", "scatter-allgather"),
               "allreduce": ("recursive-doubling", "rabenseifner")}


def variants(args):
    """(collective, label, settings) of every schedule to measure."""
    out = [("barrier", a, {"REFLEX_COLL_BARRIER": a}) for a in ("dissemination", "pairwise")]
    out += [("bcast", "binomial", {"REFLEX_COLL_BCAST": "binomial"})]
    out += [("bcast", f"knomial r={r}", {"REFLEX_COLL_BCAST": "knomial", "REFLEX_COLL_FANOUT": r})
            for r in args.fanouts.split(",")]
    out += [("bcast", f"postal λ={lam}", {"REFLEX_COLL_BCAST": "postal", "REFLEX_COLL_LAMBDA": lam})
            for lam in args.lambdas.split(",")]
    out += [("bcast", "scatter-allgather", {"REFLEX_COLL_BCAST": "scatter-allgather"})]
    out += [("allreduce", a, {"REFLEX_COLL_ALLREDUCE": a})
            for a in ("recursive-doubling", "rabenseifner", "ring")]
    out += [("allgather", a, {"REFLEX_COLL_ALLGATHER": a}) for a in ("direct", "ring", "bruck")]
    out += [("alltoall", a, {"REFLEX_COLL_ALLTOALL": a}) for a in ("direct", "pairwise")]
    return [v for v in out if v[0] in args.colls.split(",")]


def measure(binary, launch, n, coll_name, settings, args, raw_dir, tag):
    env = dict(os.environ, REFLEX_COLL_SHM="off", **settings)
    cmd = launch(n) + ([compare.PIN] if n == 2 else []) + [binary, "-c", coll_name,
                                                            "-m", str(args.max)]
    cmd += ["-q"] if args.quick else []
    out, _ = compare.run_logged(cmd, args.timeout, os.path.join(raw_dir, f"tune-{tag}.txt"), env)
    return {size: v for (c, size), v in coll.parse_output(out).items() if c == coll_name}


def table(coll_name, n, results):
    labels = [label for (c, m, label) in results if c == coll_name and m == n]
    if not labels:
        return ""
    sizes = sorted({s for label in labels for s in results[(coll_name, n, label)]})
    lines = [f"### {coll_name}, {n} ranks (µs per operation; * best)", "",
             "| size | " + " | ".join(labels) + " |", "|" + "---|" * (len(labels) + 1)]
    for size in sizes:
        vals = [results[(coll_name, n, label)].get(size) for label in labels]
        best = min((v for v in vals if v is not None), default=None)
        cells = [compare.fmt(v) + ("*" if v is not None and v == best else "") for v in vals]
        lines.append(f"| {compare.human_bytes(size)} | " + " | ".join(cells) + " |")
    return "\n".join(lines + [""])


def crossover(small, large):
    """Smallest measured size from which `large` is faster at every larger size (or None)."""
    sizes = sorted(set(small) & set(large))
    point = None
    for size in reversed(sizes):
        if large[size] < small[size]:
            point = size
        else:
            break
    return point


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ranks", default="4,8", help="rank counts (default 4,8)")
    p.add_argument("--colls", default="barrier,bcast,allreduce,allgather,alltoall")
    p.add_argument("--fanouts", default="3,4,8", help="k-nomial fan-outs r to sweep")
    p.add_argument("--lambdas", default="2,3,4", help="postal latencies λ to sweep")
    p.add_argument("--max", type=int, default=4 << 20, help="largest message in bytes")
    p.add_argument("--quick", action="store_true", help="short repetitions, fewer sizes")
    p.add_argument("--timeout", type=int, default=600, help="seconds per run")
    p.add_argument("--write", help="write the suggested REFLEX_COLL_* settings to this file")
    args = p.parse_args(argv)
    build_dir = os.path.join(compare.REPO, "build", "bench")
    raw_dir = os.path.join(build_dir, "raw")
    os.makedirs(raw_dir, exist_ok=True)
    tools = compare.tools("reflex")
    binary = tools and compare.build_program(tools[0], os.path.join(build_dir, "reflex"), coll.SOURCE)
    if not binary:
        compare.log("Reflex is not installed (scripts/install.sh)")
        return 1
    results = {}
    for n in [int(x) for x in args.ranks.split(",")]:
        for i, (coll_name, label, settings) in enumerate(variants(args)):
            tag = f"np{n}-{coll_name}-{i}"
            results[(coll_name, n, label)] = measure(binary, tools[1], n, coll_name, settings,
                                                     args, raw_dir, tag)
            compare.log(f"np={n} {coll_name} {label}: {len(results[(coll_name, n, label)])} sizes")
    colls = args.colls.split(",")
    ranks = sorted({n for (_, n, _) in results})
    print("\n".join(table(c, n, results) for c in colls for n in ranks))
    points = []
    for c, (small, large) in LARGE_PAIRS.items():
        for n in ranks:
            if (c, n, small) in results and (c, n, large) in results:
                point = crossover(results[(c, n, small)], results[(c, n, large)])
                print(f"crossover {c}, {n} ranks: {large} from "
                      f"{compare.human_bytes(point) if point else 'never (in the measured range)'}")
                if point:
                    points.append(point)
    if args.write and points:
        with open(args.write, "w") as f:
            f.write("# written by bench/coll_tune.py: the smallest measured crossover\n")
            f.write(f"REFLEX_COLL_LARGE={min(points)}\n")
        compare.log(f"wrote {args.write}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
