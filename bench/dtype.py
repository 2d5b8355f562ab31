#!/usr/bin/env python3
"""Run bench/dtype.c (derived-datatype bandwidth, after VIRTUS) under Reflex, MPICH and Open MPI.

Builds dtype.c with each implementation's compiler wrapper (into build/bench/<impl>/dtype), runs
interleaved rounds (every implementation once per round, in a rotated order, so that all of them
share the machine's noise), keeps the best value of every measurement over the rounds, and
prints markdown tables:

  1. strided vs contiguous bandwidth per message size and block size, for each implementation,
     with the ratios Reflex strided / Reflex contiguous and Reflex strided / best peer strided;
  2. the array of structs and the irregular indexed type;
  3. VIRTUS's six protocol combinations (its Fig. 2-e) for Reflex: full support, send-side support
     only (REFLEX_DIRECT_RECV=off), receive-side support only (REFLEX_DIRECT_SEND=off), contiguous
     receiver, contiguous sender, contiguous; plus no support (both off).

The REFLEX_DIRECT_SEND / REFLEX_DIRECT_RECV settings go to Reflex runs only (and are removed from
the peers' environment). Every run is a 2-rank job pinned one rank per CPU through bench/pin.sh,
launched as bench/compare.py does (its helpers are imported from there). A run that fails
(e.g. an implementation without derived datatypes) keeps whatever lines it printed; missing
values show '-'. Raw outputs go to build/bench/raw/dtype-*.txt. Python 3 standard library only.
"""

import argparse
import os
import shlex
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402  (bench/compare.py: tools(), PIN, LABEL, ORDER, human_bytes, fmt, log)

HERE = compare.HERE
REPO = compare.REPO
SOURCE = os.path.join(HERE, "dtype.c")
LABEL, ORDER, log, fmt, human_bytes = compare.LABEL, compare.ORDER, compare.log, compare.fmt, compare.human_bytes
SWITCHES = ("REFLEX_DIRECT_SEND", "REFLEX_DIRECT_RECV")

# Runs of one round: (variant name, implementations, dtype arguments, Reflex switch settings).
MAIN = ("main", ["-s", "strided,contig", "-r", "strided,contig"],
        {"REFLEX_DIRECT_SEND": "on", "REFLEX_DIRECT_RECV": "on"})
REFLEX_ONLY = [
    ("send-only", ["-t", "strided"], {"REFLEX_DIRECT_SEND": "on", "REFLEX_DIRECT_RECV": "off"}),
    ("recv-only", ["-t", "strided"], {"REFLEX_DIRECT_SEND": "off", "REFLEX_DIRECT_RECV": "on"}),
    ("none", ["-t", "strided"], {"REFLEX_DIRECT_SEND": "off", "REFLEX_DIRECT_RECV": "off"}),
]


def build(impl, mpicc, build_dir):
    """Compile dtype.c with the implementation's wrapper; returns the binary or None."""
    return compare.build_program(mpicc, os.path.join(build_dir, impl), SOURCE)


def parse_output(text):
    """dtype lines '<test> <send> <recv> <block> <bytes> <best> ...' -> {(test, send, recv, block, bytes): best}."""
    values = {}
    for line in text.splitlines():
        parts = line.split()
        if line.startswith("#") or len(parts) < 6:
            continue
        try:
            values[(parts[0], parts[1], parts[2], int(parts[3]), int(parts[4]))] = float(parts[5])
        except ValueError:
            pass
    return values


def run_once(impl, launch, binary, extra, switches, args, raw_path):
    env = {k: v for k, v in os.environ.items() if k not in SWITCHES}
    if impl == "reflex":
        env.update(switches)
    cmd = launch(2) + ([] if args.no_pin else [compare.PIN]) + [binary] + extra + (["-q"] if args.quick else [])
    start = time.monotonic()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                           timeout=args.timeout, start_new_session=True)
        out, code = p.stdout, p.returncode
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        code = f"timeout after {args.timeout}s"
    shown = " ".join(f"{k}={v}" for k, v in switches.items()) + " " if impl == "reflex" else ""
    with open(raw_path, "w") as f:
        f.write("$ " + shown + " ".join(cmd) + "\n" + out)
    if code != 0:
        log(f"    {shown}{' '.join(cmd)}: exit {code}; output in {raw_path}")
    return parse_output(out), time.monotonic() - start


def ratio(a, b):
    return f"{a / b:.2f}" if a is not None and b else "-"


def strided_table(res, impls):
    """Strided (both sides) against contiguous, per (bytes, block)."""
    keys = sorted({(k[6], k[5]) for k in res if k[0] == "main" and k[2:5] == ("strided", "strided", "strided")})
    head = ["message", "block"]
    for i in ORDER:
        head += [f"{LABEL[i]} strided", f"{LABEL[i]} contig"]
    head += ["Reflex strided / Reflex contig", "Reflex strided / best peer strided"]
    lines = ["### Strided (vector, stride = 2 x block) vs contiguous, np=2 (MB/s of data, higher is better)", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for size, block in keys:
        cells = [human_bytes(size), human_bytes(block)]
        st = {i: res.get(("main", i, "strided", "strided", "strided", block, size)) for i in impls}
        co = {i: res.get(("main", i, "contig", "contig", "contig", 0, size)) for i in impls}
        for i in ORDER:
            cells += [fmt(st.get(i)), fmt(co.get(i))]
        peers = [st[i] for i in impls if i != "reflex" and st[i] is not None]
        cells += [ratio(st.get("reflex"), co.get("reflex")), ratio(st.get("reflex"), max(peers) if peers else None)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines + [""])


def other_table(res, impls):
    keys = sorted({(k[2], k[6]) for k in res if k[0] == "main" and k[2] in ("struct", "indexed")})
    head = ["type", "data bytes"] + [LABEL[i] for i in ORDER] + ["Reflex / Reflex contig", "Reflex / best peer"]
    lines = ["### Array of struct {double, int, char[3], float} and irregular indexed (1-64 doubles, gaps 1-64), "
             "np=2 (MB/s of data)", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for test, size in keys:
        vals = {i: res.get(("main", i, test, test, test, 0, size)) for i in impls}
        peers = [vals[i] for i in impls if i != "reflex" and vals[i] is not None]
        # the contiguous reference of the nearest message size (struct messages are a multiple of 19 B)
        contig = [v for k, v in res.items() if k[:3] == ("main", "reflex", "contig") and abs(k[6] - size) < 32]
        cells = [test, str(size)] + [fmt(vals.get(i)) for i in ORDER]
        cells += [ratio(vals.get("reflex"), contig[0] if contig else None),
                  ratio(vals.get("reflex"), max(peers) if peers else None)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines + [""])


def combos_table(res):
    """VIRTUS Fig. 2-e: the six combinations (plus no support) for Reflex."""
    cols = [("full support", "main", ("strided", "strided", "strided")),
            ("send only (DIRECT_RECV=off)", "send-only", ("strided", "strided", "strided")),
            ("receive only (DIRECT_SEND=off)", "recv-only", ("strided", "strided", "strided")),
            ("contiguous receiver", "main", ("strided", "strided", "contig")),
            ("contiguous sender", "main", ("strided", "contig", "strided")),
            ("contiguous", "main", ("contig", "contig", "contig")),
            ("no support (both off)", "none", ("strided", "strided", "strided"))]
    keys = sorted({(k[6], k[5]) for k in res if k[2] == "strided" and k[5] > 0})
    head = ["message", "block"] + [c[0] for c in cols]
    lines = ["### Reflex: VIRTUS's protocol combinations, np=2 (MB/s of data)", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for size, block in keys:
        cells = [human_bytes(size), human_bytes(block)]
        for _, variant, (t, s, r) in cols:
            b = 0 if t == "contig" else block
            cells.append(fmt(res.get((variant, "reflex", t, s, r, b, size))))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines + [""])


def one_side_table(res, impls):
    """Strided on both sides, and contiguous on one side, for every implementation."""
    pairs = [("strided", "strided"), ("strided", "contig"), ("contig", "strided")]
    keys = sorted({(k[6], k[5]) for k in res if k[0] == "main" and k[2] == "strided" and k[5] > 0})
    head = ["message", "block"] + [f"{LABEL[i]} {s[0]}>{r[0]}" for i in ORDER for s, r in pairs]
    lines = ["### Contiguous on one side: s>s strided to strided, s>c to a contiguous receiver, c>s from a "
             "contiguous sender, np=2 (MB/s of data)", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for size, block in keys:
        cells = [human_bytes(size), human_bytes(block)]
        cells += [fmt(res.get(("main", i, "strided", s, r, block, size))) for i in ORDER for s, r in pairs]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines + [""])


def parse_args(argv):
    p = argparse.ArgumentParser(description="Derived-datatype bandwidth: Reflex, MPICH and Open MPI on bench/dtype.c.")
    p.add_argument("--quick", action="store_true", help="3 block sizes, 64 KiB and 1 MiB, one round (< 2 minutes)")
    p.add_argument("--only", default=",".join(ORDER), help="implementations, e.g. reflex,mpich")
    p.add_argument("--rounds", type=int, help="interleaved rounds (default 2, 1 with --quick)")
    p.add_argument("--no-pin", action="store_true", help="do not pin the ranks (bench/pin.sh)")
    p.add_argument("--timeout", type=float, default=None, help="seconds per run (default 600, 120 with --quick)")
    p.add_argument("--out", help="also write the markdown tables to this file")
    p.add_argument("--build-dir", default=os.path.join(REPO, "build", "bench"))
    args = p.parse_args(argv)
    args.rounds = args.rounds or (1 if args.quick else 2)
    args.timeout = args.timeout or (120 if args.quick else 600)
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
        t = compare.tools(impl)
        if t is None:
            log(f"# {LABEL[impl]}: not installed, its columns show '-'")
            continue
        binary = build(impl, t[0], args.build_dir)
        if binary:
            ready[impl] = (t[1], binary)
    if not ready:
        log("error: no MPI implementation available")
        return 1
    raw_dir = os.path.join(args.build_dir, "raw")
    os.makedirs(raw_dir, exist_ok=True)
    impls = list(ready)
    res = {}
    for rnd in range(args.rounds):
        order = impls[rnd % len(impls):] + impls[:rnd % len(impls)]
        runs = [(impl,) + MAIN for impl in order]
        runs += [("reflex",) + r for r in REFLEX_ONLY if "reflex" in ready]
        for impl, variant, extra, switches in runs:
            launch, binary = ready[impl]
            raw = os.path.join(raw_dir, f"dtype-{impl}-{variant}-round{rnd + 1}.txt")
            values, secs = run_once(impl, launch, binary, extra, switches, args, raw)
            log(f"[round {rnd + 1}/{args.rounds}] {LABEL[impl]} {variant}: {len(values)} results, {secs:.1f}s")
            for k, v in values.items():
                key = (variant, impl) + k
                res[key] = max(res.get(key, v), v)
    pin = "unpinned" if args.no_pin else "ranks pinned one per CPU (bench/pin.sh)"
    text = (f"## dtype: {', '.join(LABEL[i] for i in impls)}; {args.rounds} interleaved round(s)"
            f"{', quick' if args.quick else ''}; best of rounds; {pin}; {compare.CPUS} CPUs\n\n")
    text += strided_table(res, impls) + "\n" + other_table(res, impls) + "\n" + one_side_table(res, impls)
    if "reflex" in ready:
        text += "\n" + combos_table(res)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
