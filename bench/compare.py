#!/usr/bin/env python3
"""Run bench/pt2pt.c under Reflex, MPICH and Open MPI side by side and print markdown tables.

The benchmark is built with each implementation's own compiler wrapper (into build/bench/<impl>/)
and run with its own launcher. Runs are interleaved - round 1: every implementation once per test
(latency, bw, bibw, rate, ring: the implementations take turns test by test, since this
project's VM has phases of minutes in which everything runs 2-3x slower), round 2: again in a
rotated order, ... - so that all of them share the same machine noise; for every
metric the best value over the rounds is kept (pt2pt itself already reports the best of several
repetitions). Two-rank runs (latency, bw, bibw, rate, ring) are pinned one rank per CPU through
bench/pin.sh, the same way for every implementation; ring runs with 4 and 8 ranks are not pinned.
Open MPI gets --bind-to none, and --mca mpi_yield_when_idle 1 when oversubscribed.

Nothing is installed here: an implementation whose tools are missing shows '-' (bench/setup.sh
installs the peers). Python 3 standard library only.
"""

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
SOURCE = os.path.join(HERE, "pt2pt.c")
PIN = os.path.join(HERE, "pin.sh")
CPUS = os.cpu_count() or 1

ORDER = ("reflex", "mpich", "openmpi")
LABEL = {"reflex": "Reflex", "mpich": "MPICH", "openmpi": "Open MPI"}

# metric -> (title, unit, higher_is_better)
METRICS = {
    "latency": ("Latency, one-way (ping-pong / 2), np=2", "us", False),
    "bw": ("Bandwidth, unidirectional, window 64, np=2", "MB/s", True),
    "bibw": ("Bandwidth, bidirectional, window 64, np=2", "MB/s", True),
    "rate": ("Message rate, 8 B, window 64, np=2", "msgs/s", True),
    "ring": ("Ring exchange (Sendrecv right/left), time per step", "us", False),
}


def tools(impl):
    """(mpicc, launcher argv builder) of an implementation, or None when not installed."""
    if impl == "reflex":
        mpicc = os.path.join(REPO, "install", "bin", "mpicc")
        mpiexec = os.path.join(REPO, "install", "bin", "mpiexec")
        if not (os.access(mpicc, os.X_OK) and os.access(mpiexec, os.X_OK)):
            return None
        return mpicc, lambda n: [mpiexec, "-n", str(n)]
    if impl == "mpich":
        if not (shutil.which("mpicc.mpich") and shutil.which("mpiexec.mpich")):
            return None
        return "mpicc.mpich", lambda n: ["mpiexec.mpich", "-n", str(n)]
    if not (shutil.which("mpicc.openmpi") and shutil.which("mpirun.openmpi")):
        return None

    def ompi(n):
        cmd = ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none"]
        if n > CPUS:
            cmd += ["--mca", "mpi_yield_when_idle", "1"]
        return cmd + ["-n", str(n)]

    return "mpicc.openmpi", ompi


def build(impl, mpicc, build_dir):
    """Compile pt2pt with the implementation's wrapper; returns the binary or None."""
    return build_program(mpicc, os.path.join(build_dir, impl), SOURCE)


def build_program(mpicc, out_dir, source):
    """Compile one benchmark source with an implementation's wrapper into out_dir; returns the
    binary (named after the source) or None."""
    os.makedirs(out_dir, exist_ok=True)
    binary = os.path.join(out_dir, os.path.splitext(os.path.basename(source))[0])
    cmd = shlex.split(mpicc) + ["-O2", "-Wall", "-Wno-stringop-overflow", "-o", binary, source]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        log(f"build with {mpicc} failed:\n{p.stdout}")
        return None
    return binary


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def parse_results(text, names):
    """Benchmark lines '<name> <bytes> <best> <median> <iters>' -> {(name, bytes): best}, for the
    names given (pt2pt.c, coll.c and rma.c all print this shape)."""
    values = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0] in names and not line.startswith("#"):
            try:
                values[(parts[0], int(parts[1]))] = float(parts[2])
            except ValueError:
                pass
    return values


def parse_output(text):
    """pt2pt lines -> {(test, bytes): best}."""
    return parse_results(text, METRICS)


def run_once(launch, binary, n, tests, args, raw_path):
    cmd = launch(n) + ([PIN] if n == 2 and not args.no_pin else []) + [binary, "-t", tests]
    if args.quick:
        cmd.append("-q")
    out, secs = run_logged(cmd, args.timeout, raw_path)
    return parse_output(out), secs


def run_logged(cmd, timeout, raw_path, env=None):
    """Runs one benchmark job (its own session, so a timeout kills all of it; `env`: its
    environment, default ours); keeps the command and its output in raw_path; returns
    (output, seconds)."""
    start = time.monotonic()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=timeout, start_new_session=True, env=env)
        out, code = p.stdout, p.returncode
    except subprocess.TimeoutExpired as e:
        out = (e.stdout.decode() if isinstance(e.stdout, bytes) else e.stdout or "")
        code = f"timeout after {timeout}s"
    with open(raw_path, "w") as f:
        f.write("$ " + " ".join(cmd) + "\n" + out)
    if code != 0:
        log(f"    {' '.join(cmd)}: exit {code}; output in {raw_path}")
    return out, time.monotonic() - start


def better(metric, a, b):
    return max(a, b) if METRICS[metric][2] else min(a, b)


def human_bytes(n):
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} B"


def fmt(v):
    if v is None:
        return "-"
    if v >= 1e6:
        return f"{v:.3g}"
    if v >= 100:
        return f"{v:.0f}"
    return f"{v:.3g}"


def table(metric, rows, results, impls):
    """Markdown table for one metric; rows are (np, bytes) keys."""
    title, unit, higher = METRICS[metric]
    lines = [f"### {title} ({unit}, {'higher' if higher else 'lower'} is better)", ""]
    head = ["np", "size"] if metric == "ring" else ["size"]
    lines.append("| " + " | ".join(head + [LABEL[i] for i in ORDER] + ["ratio Reflex / best peer"]) + " |")
    lines.append("|" + "---|" * (len(head) + len(ORDER) + 1))
    for np_, size in rows:
        vals = {i: results.get((i, np_, metric, size)) for i in impls}
        peers = [vals[i] for i in impls if i != "reflex" and vals[i] is not None]
        best_peer = None
        for v in peers:
            best_peer = v if best_peer is None else better(metric, best_peer, v)
        ratio = "-"
        if vals.get("reflex") is not None and best_peer:
            ratio = f"{vals['reflex'] / best_peer:.2f}"
        cells = ([str(np_)] if metric == "ring" else []) + [human_bytes(size)]
        cells += [fmt(vals.get(i)) for i in ORDER] + [ratio]
        lines.append("| " + " | ".join(cells) + " |")
    note = ("ratio > 1: Reflex is faster" if higher else "ratio < 1: Reflex is faster")
    return "\n".join(lines + ["", note, ""])


def report(results, impls, configs):
    out = []
    for metric in METRICS:
        keys = sorted({(np_, size) for (_, np_, m, size) in results if m == metric})
        if metric != "ring":
            keys = [k for k in keys if k[0] == 2]
        if keys:
            out.append(table(metric, keys, results, impls))
    return "\n".join(out)


COLORS = {"reflex": "#d62728", "mpich": "#1f77b4", "openmpi": "#2ca02c"}


def svg_plot(metric, results, impls, path):
    """Log-log line chart of one np=2 metric against message size, one line per implementation."""
    import math
    title, unit, higher = METRICS[metric]
    series = {i: sorted((s, v) for (im, n, m, s), v in results.items()
                        if im == i and n == 2 and m == metric and s > 0 and v > 0) for i in impls}
    pts = [p for ser in series.values() for p in ser]
    if len({s for s, _ in pts}) < 2:
        return False
    w, h, left, right, top, bottom = 640, 400, 70, 20, 40, 50
    xs = [math.log2(s) for s, _ in pts]
    ys = [math.log10(v) for _, v in pts]
    x0, x1 = min(xs), max(xs)
    y0, y1 = math.floor(min(ys)), math.ceil(max(ys))
    y1 = y1 if y1 > y0 else y0 + 1

    def px(s):
        return left + (math.log2(s) - x0) / (x1 - x0) * (w - left - right)

    def py(v):
        return h - bottom - (math.log10(v) - y0) / (y1 - y0) * (h - top - bottom)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{w / 2}" y="20" text-anchor="middle" font-size="14">{title} '
           f'({unit}, {"higher" if higher else "lower"} is better)</text>']
    for e in range(y0, y1 + 1):
        y = py(10 ** e)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{w - right}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">1e{e}</text>')
    for s in sorted({s for s, _ in pts}):
        if math.log2(s) % 2 == 0:
            out.append(f'<text x="{px(s):.1f}" y="{h - bottom + 16}" text-anchor="middle">{human_bytes(s).replace(" ", "")}</text>')
    out.append(f'<text x="{w / 2}" y="{h - 10}" text-anchor="middle">message size</text>')
    for k, (impl, ser) in enumerate(series.items()):
        if not ser:
            continue
        d = " ".join(f"{px(s):.1f},{py(v):.1f}" for s, v in ser)
        out.append(f'<polyline points="{d}" fill="none" stroke="{COLORS[impl]}" stroke-width="2"/>')
        out.append(f'<text x="{left + 10}" y="{top + 16 * (k + 1)}" fill="{COLORS[impl]}">{LABEL[impl]}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    return True


def parse_args(argv):
    p = argparse.ArgumentParser(description="Compare Reflex, MPICH and Open MPI on bench/pt2pt.c.")
    p.add_argument("--quick", action="store_true", help="fewer sizes, shorter runs, one round (< 1 minute)")
    p.add_argument("--only", default=",".join(ORDER), help="implementations, e.g. reflex,mpich")
    p.add_argument("--rounds", type=int, help="interleaved rounds (default 3, 1 with --quick)")
    p.add_argument("--ring-ranks", default="4,8", help="extra rank counts for the ring (default 4,8)")
    p.add_argument("--no-pin", action="store_true", help="do not pin the 2-rank runs (bench/pin.sh)")
    p.add_argument("--timeout", type=float, default=None, help="seconds per run (default 900, 120 with --quick)")
    p.add_argument("--out", help="also write the markdown tables to this file")
    p.add_argument("--build-dir", default=os.path.join(REPO, "build", "bench"))
    p.add_argument("--plots", default=None, help="directory for SVG plots (default build/bench/plots)")
    args = p.parse_args(argv)
    args.rounds = args.rounds or (1 if args.quick else 3)
    args.timeout = args.timeout or (120 if args.quick else 900)
    return args


def main(argv):
    args = parse_args(argv)
    wanted = [x for x in args.only.split(",") if x]
    for w in wanted:
        if w not in ORDER:
            log(f"error: unknown implementation '{w}' (want {', '.join(ORDER)})")
            return 2
    ready = {}
    for impl in ORDER:
        if impl not in wanted:
            continue
        t = tools(impl)
        if t is None:
            log(f"# {LABEL[impl]}: not installed, column shows '-'"
                + (" (bench/setup.sh installs it)" if impl != "reflex" else " (no install/bin/mpicc)"))
            continue
        binary = build(impl, t[0], args.build_dir)
        if binary:
            ready[impl] = (t[1], binary)
    if not ready:
        log("error: no MPI implementation available")
        return 1
    raw_dir = os.path.join(args.build_dir, "raw")
    os.makedirs(raw_dir, exist_ok=True)
    configs = [(2, test) for test in ("latency", "bw", "bibw", "rate", "ring")]
    configs += [(int(n), "ring") for n in args.ring_ranks.split(",") if n]
    results = {}
    impls = list(ready)
    for rnd in range(args.rounds):
        order = impls[rnd % len(impls):] + impls[:rnd % len(impls)]
        for n, tests in configs:
            for impl in order:
                launch, binary = ready[impl]
                raw = os.path.join(raw_dir, f"{impl}-np{n}-{tests}-round{rnd + 1}.txt")
                values, secs = run_once(launch, binary, n, tests, args, raw)
                log(f"[round {rnd + 1}/{args.rounds}] np={n} {LABEL[impl]}: {len(values)} results, {secs:.1f}s")
                for (metric, size), v in values.items():
                    key = (impl, n, metric, size)
                    results[key] = v if key not in results else better(metric, results[key], v)
    pin = "unpinned" if args.no_pin else "2-rank runs pinned one rank per CPU (bench/pin.sh)"
    header = (f"## pt2pt: {', '.join(LABEL[i] for i in impls)}; {args.rounds} interleaved round(s)"
              f"{', quick' if args.quick else ''}; best of rounds; {pin}; {CPUS} CPUs\n")
    text = header + "\n" + report(results, impls, configs)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    plots = args.plots or os.path.join(args.build_dir, "plots")
    os.makedirs(plots, exist_ok=True)
    drawn = [m for m in ("latency", "bw", "bibw") if svg_plot(m, results, impls, os.path.join(plots, m + ".svg"))]
    if drawn:
        log(f"# plots: {', '.join(os.path.join(plots, m + '.svg') for m in drawn)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
