#!/usr/bin/env python3
"""Start-up + shutdown time of a whole MPI job on one host: Reflex's mpiexec against MPICH's
mpiexec.hydra and Open MPI's mpirun, side by side, with ratios.

Each case is one complete run, timed from fork to exit of the launcher: `hello` (bench/startup.c:
MPI_Init, MPI_Barrier, MPI_Finalize) with 2 and 8 ranks, and the null job `true` (launcher
alone). MPICH's build of hello runs under mpiexec.hydra and, on Reflex's libmpi (ABI
compatible, through LD_LIBRARY_PATH), under Reflex's mpiexec; Open MPI's build runs under
mpirun (--oversubscribe, --bind-to none). Runs are interleaved (round r runs every case once, in
an order rotated per round), so every launcher sees the same machine noise; the table gives the
best and the median of the rounds in ms, and Reflex divided by the faster peer (the issue's
target: hello at most 0.5x). Nothing is installed here (bench/setup.sh installs the peers).

Usage: python3 bench/startup.py [--rounds 20] [--ranks 2,8] [--mpiexec PATH] [--lib DIR]
Defaults: install/bin/mpiexec and install/lib (scripts/install.sh), else target/release/mpiexec.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def first_existing(*paths):
    return next((p for p in paths if p and os.path.exists(p)), None)


def build(compiler, out):
    if not shutil.which(compiler):
        return None
    src = os.path.join(HERE, "startup.c")
    done = subprocess.run([compiler, "-O2", src, "-o", out], capture_output=True, text=True)
    if done.returncode != 0:
        print(f"startup.py: {compiler} failed: {done.stderr.strip()}", file=sys.stderr)
        return None
    return out


def cases(args, tmp):
    """(name, argv, env) of every case whose tools exist."""
    mpich_hello = build("mpicc.mpich", os.path.join(tmp, "hello.mpich"))
    ompi_hello = build("mpicc.openmpi", os.path.join(tmp, "hello.ompi"))
    reflex_env = dict(os.environ, LD_LIBRARY_PATH=args.lib or "")
    hydra = shutil.which("mpiexec.hydra")
    ompi = shutil.which("mpirun.openmpi")
    ompi_opts = ["--allow-run-as-root", "--oversubscribe", "--bind-to", "none"]
    out = []
    for n in args.ranks:
        if args.mpiexec and args.lib and mpich_hello:
            out.append((f"reflex hello -n {n}", [args.mpiexec, "-n", str(n), mpich_hello], reflex_env))
        if hydra and mpich_hello:
            out.append((f"hydra hello -n {n}", [hydra, "-n", str(n), mpich_hello], None))
        if ompi and ompi_hello:
            out.append((f"openmpi hello -n {n}", [ompi, *ompi_opts, "-n", str(n), ompi_hello], None))
    if args.mpiexec:
        out.append(("reflex true -n 1", [args.mpiexec, "-n", "1", "true"], None))
    if hydra:
        out.append(("hydra true -n 1", [hydra, "-n", "1", "true"], None))
    if ompi:
        out.append(("openmpi true -n 1", [ompi, *ompi_opts, "-n", "1", "true"], None))
    return out


def time_once(argv, env):
    t0 = time.perf_counter()
    done = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
    ms = (time.perf_counter() - t0) * 1e3
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {done.returncode}: {done.stderr.decode()[-300:]}")
    return ms


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--ranks", default="2,8")
    ap.add_argument("--mpiexec", default=first_existing(
        os.path.join(REPO, "install/bin/mpiexec"), os.path.join(REPO, "target/release/mpiexec")))
    ap.add_argument("--lib", default=first_existing(os.path.join(REPO, "install/lib")))
    args = ap.parse_args()
    args.ranks = [int(n) for n in args.ranks.split(",")]
    with tempfile.TemporaryDirectory(prefix="reflex-startup-") as tmp:
        todo = cases(args, tmp)
        times = {name: [] for name, _, _ in todo}
        for _, argv, env in todo:  # warm-up: page cache, dynamic loader caches
            time_once(argv, env)
        for r in range(args.rounds):
            print(f"\rround {r + 1}/{args.rounds}", end="", file=sys.stderr, flush=True)
            k = r % len(todo)
            for name, argv, env in todo[k:] + todo[:k]:
                times[name].append(time_once(argv, env))
        print(file=sys.stderr)
    load = os.getloadavg()[0]
    print(f"### start-up + shutdown, one host (ms; {args.rounds} interleaved rounds; "
          f"load average {load:.1f} on {os.cpu_count()} CPUs)\n")
    print("| job | Reflex best | median | Hydra best | median | Open MPI best | median "
          "| Reflex / faster peer (median) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    jobs = sorted({name.split(" ", 1)[1] for name in times}, key=lambda j: (j.split()[0], int(j.split()[-1])))
    for job in jobs:
        cells, medians = [], {}
        for impl in ("reflex", "hydra", "openmpi"):
            t = times.get(f"{impl} {job}")
            if t:
                medians[impl] = statistics.median(t)
                cells += [f"{min(t):.1f}", f"{medians[impl]:.1f}"]
            else:
                cells += ["-", "-"]
        peers = [medians[i] for i in ("hydra", "openmpi") if i in medians]
        ratio = f"{medians['reflex'] / min(peers):.2f}" if "reflex" in medians and peers else "-"
        print(f"| `{job}` | " + " | ".join(cells) + f" | {ratio} |")


if __name__ == "__main__":
    main()
