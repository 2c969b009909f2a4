#!/usr/bin/env python3
"""A slice of SDSC-SP2 scaled to the lab's pilots, and the live-vs-simulator table.

`slice`: writes the scaled SWF that the live lab test (tests/tests/trace_lab.rs), `hetpilot
simulate live --swf` and `hetpilot-research simulate alloc` all read: SDSC-SP2 jobs 41..90 that ran,
processors ceil(p / 16) (128 -> 8, the lab-debug pilot's slots), runtimes round(r / 60)
clamped to [1, 20] s, submit times compressed so the offered load on the two platforms'
12 slots is 0.7, first submit at 0. Prints the file's own offered load (`--load` for the
simulators, so they do not rescale it).

`compare`: reads the live run's CSV (written by the lab test), runs `hetpilot simulate live
--swf SLICE --json` and `hetpilot-research simulate alloc --swf SLICE --json` on the same
jobs and clusters, and prints the table.

    python3 bench-tools/trace_lab.py slice            # regenerates the committed slice
    . /var/tmp/hetpilot-lab/env.sh && cargo build --bins && \\
      cargo test -p hetpilot-e2e --test trace_lab -- --ignored --nocapture
    python3 bench-tools/trace_lab.py compare          # the table
"""

import argparse
import csv
import gzip
import json
import math
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRACE = "/work/shared/data/swf/SDSC-SP2-1998-4.2-cln.swf.gz"
SLICE = os.path.join(ROOT, "tests/tests/data/sdsc_sp2_lab_slice.swf")
FIRST_JOB, LAST_JOB = 41, 90
PROC_DIVISOR = 16
RUNTIME_DIVISOR = 60
RUNTIME_MIN, RUNTIME_MAX = 1, 20
CLUSTERS = [8, 4]  # lab-debug (n1, 8 CPUs), lab-small (n2+n3, 2x2 CPUs): the live order
TARGET_LOAD = 0.7
DEPTH = 8


def read_jobs(path):
    """(id, submit, run, procs) of the records FIRST_JOB..LAST_JOB that ran."""
    jobs = []
    with gzip.open(path, "rt") as f:
        for line in f:
            if line.startswith(";") or not line.strip():
                continue
            fields = line.split()
            job, submit, run = int(fields[0]), int(fields[1]), int(fields[3])
            requested, allocated = int(fields[7]), int(fields[4])
            procs = requested if requested > 0 else allocated
            if FIRST_JOB <= job <= LAST_JOB and run >= 0 and procs > 0:
                jobs.append((job, submit, run, procs))
    return jobs


def offered_load(jobs):
    """docs/reproduction/tlpa.md's offered load of (submit, runtime, procs) on CLUSTERS."""
    first = min(j[0] for j in jobs)
    last = max(j[0] for j in jobs)
    work = sum(p * r for _, r, p in jobs)
    return work / (sum(CLUSTERS) * (last - first))


def make_slice(args):
    raw = read_jobs(args.trace)
    scaled = [
        (s, min(max(round(r / RUNTIME_DIVISOR), RUNTIME_MIN), RUNTIME_MAX),
         math.ceil(p / PROC_DIVISOR))
        for _, s, r, p in raw
    ]
    factor = offered_load(scaled) / TARGET_LOAD
    first = scaled[0][0]
    compressed = [(round((s - first) * factor), r, p) for s, r, p in scaled]
    with open(args.out, "w") as f:
        f.write(f"; SDSC-SP2-1998-4.2-cln jobs {FIRST_JOB}..{LAST_JOB} that ran, scaled by "
                f"bench-tools/trace_lab.py: procs ceil(p/{PROC_DIVISOR}), runtime "
                f"round(r/{RUNTIME_DIVISOR}) in [{RUNTIME_MIN},{RUNTIME_MAX}] s, submits "
                f"x{factor:.6f} (offered load {TARGET_LOAD} on {CLUSTERS})\n")
        for (job, *_), (s, r, p) in zip(raw, compressed):
            f.write(f"{job} {s} -1 {r} {p} -1 -1 {p} {r} -1 1 1 1 -1 1 -1 -1 -1\n")
    print(f"{len(compressed)} jobs -> {args.out}; offered load {offered_load(compressed)!r}")


def slice_load(path):
    jobs = []
    with open(path) as f:
        for line in f:
            if line.startswith(";") or not line.strip():
                continue
            fields = line.split()
            jobs.append((float(fields[1]), float(fields[3]), int(fields[7])))
    return offered_load(jobs)


def simulate(args):
    """`{"live": figures, "alloc": figures}`: the two simulators on the same flags."""
    flags = ["--swf", args.slice,
             "--clusters", ",".join(map(str, CLUSTERS)), "--load", repr(slice_load(args.slice)),
             "--exact-estimates", "--allocator", "tlpa", "--depth", str(DEPTH), "--json"]
    out = {}
    for cmd in ([args.hetpilot, "simulate", "live"] + flags,
                [args.hetpilot_research, "simulate", "alloc"] + flags):
        print("$ " + " ".join(cmd), file=sys.stderr)
        out.update(json.loads(
            subprocess.run(cmd, check=True, capture_output=True, text=True).stdout))
    return out


def compare(args):
    with open(args.csv) as f:
        rows = list(csv.DictReader(f))
    n = len(rows)
    turnaround = sum(float(r["end_s"]) - float(r["submit_s"]) for r in rows) / n
    wait = sum(float(r["start_s"]) - float(r["submit_s"]) for r in rows) / n
    runtime = sum(float(r["end_s"]) - float(r["start_s"]) for r in rows) / n
    nominal = sum(float(r["runtime_s"]) for r in rows) / n
    platforms = {}
    for r in rows:
        platforms[r["platform"]] = platforms.get(r["platform"], 0) + 1
    counts = ", ".join(f"{k} {v}" for k, v in sorted(platforms.items()))
    sim = simulate(args)
    print(f"{n} jobs; live mean run {runtime:.2f} s against {nominal:.2f} s nominal\n")
    print("| run | mean turnaround (s) | mean wait (s) | jobs per platform |")
    print("|---|---|---|---|")
    print(f"| live lab (TLPA d={DEPTH}) | {turnaround:.2f} | {wait:.2f} | {counts} |")
    for name, key in [("simulate live", "live"), ("simulate alloc", "alloc")]:
        m = sim[key]
        print(f"| {name} (TLPA d={DEPTH}) | {m['average_turnaround']:.2f} | "
              f"{m['average_wait']:.2f} | not printed |")
    live_sim = sim["live"]["average_turnaround"]
    print(f"\nlive lab / simulate live turnaround: {turnaround / live_sim:.2f}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("slice", help="write the scaled SWF")
    s.add_argument("--trace", default=TRACE)
    s.add_argument("--out", default=SLICE)
    c = sub.add_parser("compare", help="the live run against both simulators")
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    c.add_argument("--csv", default=os.path.join(target, "trace_lab/jobs.csv"))
    c.add_argument("--slice", default=SLICE)
    c.add_argument("--hetpilot", default=os.path.join(target, "debug/hetpilot"))
    c.add_argument("--hetpilot-research", default=os.path.join(target, "debug/hetpilot-research"))
    args = p.parse_args()
    make_slice(args) if args.cmd == "slice" else compare(args)


if __name__ == "__main__":
    main()
