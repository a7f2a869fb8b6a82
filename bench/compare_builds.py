#!/usr/bin/env python3
"""Before/after: one sl-bench mode run from two builds, interleaved.

    bench/compare_builds.py --base OLD/bench --new build/default/bench \
        --reps 3 -- chan --peers none --rounds 3

Runs OLD/sl-bench and NEW/sl-bench alternately (each rep runs both, in an
order drawn from the seed; each rep with its own shuffle seed, the same for
both builds), each writing its CSV, then prints for every workload and
sluice contender the median over all rounds of each build, their ratio
(new/base, oriented so that > 1 means new is better), and the noise: the
spread of the per-rep medians of either build, relative to its median. A
row moved when the ratio is outside 1 +/- noise; such rows are marked with
'*'. Beside it, the paired ratio: the same ratio taken within each rep (the
two builds' runs of one rep sit next to each other in time), its median over
the reps and, from 4 reps, its quartiles. With --peers the other projects'
rows are listed too: an unchanged peer's ratios show what the machine alone
moves.

The core-to-core round trip of this machine changes while it runs, so only
the interleaving makes the two builds comparable; each sl-bench run prints
its own round trip on its machine line (kept in OUT/base*.txt, OUT/new*.txt),
and the summary lists them per rep. A host that moves the two vCPUs apart
for part of the reps makes most pairs unequal: with --near NS, only the
rounds whose CSV round trip (`round_trip_ns`, measured around each run) was
below NS count, in both builds, and the paired column says how many reps
were left (`n`). --analyse reads an OUT of an earlier call again (with
another --near, say) without running anything.
"""
import argparse
import csv
import os
import random
import re
import statistics
import subprocess
import sys


def higher_is_better(unit):
    """Rates (Mmsg/s, Mjobs/s) are better high; times (ns, p50_us, cpu_us) low."""
    return unit.endswith("/s")


def run(binary, mode_args, csv_path, log_path, seed):
    args = [binary] + mode_args + ["--seed", str(seed), "--csv", csv_path]
    with open(log_path, "w") as log:
        subprocess.run(args, stdout=log, stderr=subprocess.STDOUT, check=True)


def rows(csv_path, peers, near):
    with open(csv_path) as f:
        for r in csv.DictReader(f):
            if not peers and r.get("peer", r.get("id", "sluice")) != "sluice":
                continue
            rt = r.get("round_trip_ns") or ""
            if near and rt and float(rt) >= near:
                continue  # a far run: out of the comparison
            if "unit" in r:
                yield r["workload"], r["contender"], r["unit"], float(r["value"])
            else:  # the executor's CSV: wall time per run
                yield r["workload"], r["contender"], "wall_ns", float(r["wall_ns"])


def collect(out_dir, tag, reps, peers, near):
    per_rep = {}  # (workload, contender, unit) -> [[values of rep 0], ...]
    for i in range(reps):
        for w, c, u, v in rows(os.path.join(out_dir, f"{tag}{i}.csv"), peers, near):
            per_rep.setdefault((w, c, u), [[] for _ in range(reps)])[i].append(v)
    return per_rep


def summary(lists):
    flat = [v for vs in lists for v in vs]
    med = statistics.median(flat)
    rep_meds = [statistics.median(vs) for vs in lists if vs]
    noise = (max(rep_meds) - min(rep_meds)) / med if med else 0.0
    return med, noise


def paired(base_lists, new_lists, higher):
    """The per-rep ratio of the two builds' medians (oriented): its median and,
    from 4 reps, its quartiles ('' below that)."""
    r = []
    for b, n in zip(base_lists, new_lists):
        if b and n and statistics.median(b) and statistics.median(n):
            bm, nm = statistics.median(b), statistics.median(n)
            r.append(nm / bm if higher else bm / nm)
    if not r:
        return 0.0, "", 0
    if len(r) < 4:
        return statistics.median(r), "", len(r)
    q = statistics.quantiles(r, n=4)
    return statistics.median(r), f"{q[0]:.2f}-{q[2]:.2f}", len(r)


def round_trips(out_dir, tag, reps):
    """The core-to-core round trip each run printed on its machine line."""
    found = []
    for i in range(reps):
        with open(os.path.join(out_dir, f"{tag}{i}.txt")) as f:
            m = re.search(r"core-to-core round trip (\d+) ns", f.read())
        found.append(m.group(1) if m else "?")
    return " ".join(found)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="directory of the old sl-bench")
    ap.add_argument("--new", required=True, help="directory of the new sl-bench")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default="build/bench/compare")
    ap.add_argument("--seed", type=int, default=20261125)
    ap.add_argument("--peers", action="store_true",
                    help="list the other projects' rows too (a control for the machine)")
    ap.add_argument("--near", type=float, default=0,
                    help="count only rounds whose round trip was below this many ns")
    ap.add_argument("--analyse", action="store_true",
                    help="run nothing: summarise the CSVs already in --out")
    ap.add_argument("mode_args", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    mode_args = [x for x in a.mode_args if x != "--"]
    if not mode_args:
        ap.error("give the sl-bench mode and its options after --")
    os.makedirs(a.out, exist_ok=True)
    order = random.Random(a.seed)
    for i in range(0 if a.analyse else a.reps):
        both = [("base", a.base), ("new", a.new)]
        order.shuffle(both)
        for tag, d in both:
            print(f"rep {i + 1}/{a.reps}: {tag}", file=sys.stderr, flush=True)
            run(os.path.join(d, "sl-bench"), mode_args, os.path.join(a.out, f"{tag}{i}.csv"),
                os.path.join(a.out, f"{tag}{i}.txt"), a.seed + i)
    base = collect(a.out, "base", a.reps, a.peers, a.near)
    new = collect(a.out, "new", a.reps, a.peers, a.near)
    print(f"sl-bench {' '.join(mode_args)}: {a.reps} interleaved reps per build, seeds "
          f"{a.seed}..{a.seed + a.reps - 1}")
    print(f"core-to-core round trip per rep, ns: base {round_trips(a.out, 'base', a.reps)}; "
          f"new {round_trips(a.out, 'new', a.reps)} (? = that build does not print it)")
    if a.near:
        print(f"--near {a.near:g}: only rounds measured with a round trip below {a.near:g} ns")
    print(f"{'workload':<28} {'contender':<26} {'unit':<8} {'base':>10} {'new':>10} "
          f"{'better':>7} {'noise':>6}  {'paired':>7} {'q1-q3':>9} {'n':>3}")
    moved = 0
    for key in sorted(base):
        if key not in new:
            continue
        if not any(base[key]) or not any(new[key]):
            continue  # every round of one build was far
        bm, bn = summary(base[key])
        nm, nn = summary(new[key])
        if bm == 0 or nm == 0:
            continue
        better = nm / bm if higher_is_better(key[2]) else bm / nm
        pm, pq, pn = paired(base[key], new[key], higher_is_better(key[2]))
        noise = max(bn, nn)
        flag = "*" if abs(better - 1) > noise else " "
        moved += flag == "*"
        print(f"{key[0][:28]:<28} {key[1][:26]:<26} {key[2][:8]:<8} {bm:>10.4g} {nm:>10.4g} "
              f"{better:>6.2f}x {noise:>5.0%}{flag} {pm:>6.2f}x {pq:>9} {pn:>3}")
    print(f"{moved} row(s) moved by more than the noise ('*'); better > 1: new is better")


if __name__ == "__main__":
    main()
