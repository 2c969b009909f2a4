#!/usr/bin/env python3
"""Side-by-side km1 / time of `hetpilot-research partition` and Mt-KaHyPar (default preset) on the
same hMETIS files.

Setup (outside the Rust build; nothing links Mt-KaHyPar):
    python3 -m venv /tmp/mtk-venv && /tmp/mtk-venv/bin/pip install mtkahypar
Usage:
    /tmp/mtk-venv/bin/python bench-tools/compare_mtkahypar.py \
        --hetpilot-research target/release/hetpilot-research --k 4 16 64 --seeds 1 2 3 FILE.hgr ... > out.csv

Both tools run single-threaded (RAYON_NUM_THREADS=1, Mt-KaHyPar initialize(1)) so the
times compare on a shared machine; the script prints one CSV row per (file, k, tool)
with the median km1 and median partitioning wall time over the seeds, plus CPU seconds.
"""
import argparse
import csv
import json
import os
import resource
import statistics
import subprocess
import sys
import time


def run_ours(binary, path, k, eps, seed, threads):
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(
        [binary, "partition", path, "-k", str(k), "-e", str(eps), "--seed", str(seed), "--json"],
        check=True, capture_output=True, text=True, env=env,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = json.loads(out.stdout)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return r["km1"], r["imbalance"], r["seconds"], cpu, r["feasible"]


def run_mtk(mtk, mtkahypar, path, k, eps, seed):
    ctx = mtk.context_from_preset(mtkahypar.PresetType.DEFAULT)
    ctx.set_partitioning_parameters(k, eps, mtkahypar.Objective.KM1)
    ctx.logging = False
    mtkahypar.set_seed(seed)
    hg = mtk.hypergraph_from_file(path, ctx, mtkahypar.FileFormat.HMETIS)
    c0, t0 = time.process_time(), time.perf_counter()
    part = hg.partition(ctx)
    t1, c1 = time.perf_counter(), time.process_time()
    total = sum(hg.node_weight(v) for v in range(hg.num_nodes()))
    max_w = ctx.compute_max_block_weights(total)
    feasible = all(part.block_weight(b) <= max_w[b] for b in range(k))
    return part.km1(), part.imbalance(ctx), t1 - t0, c1 - c0, feasible


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--hetpilot-research", default="target/release/hetpilot-research")
    ap.add_argument("--k", type=int, nargs="+", default=[4, 16, 64])
    ap.add_argument("--eps", type=float, default=0.03)
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--skip-mtk", action="store_true")
    args = ap.parse_args()
    mtk = None
    if not args.skip_mtk:
        import mtkahypar
        mtk = mtkahypar.initialize(args.threads)
    w = csv.writer(sys.stdout)
    w.writerow(["instance", "k", "tool", "median_km1", "median_seconds", "median_cpu_seconds",
                "max_imbalance", "all_feasible", "runs"])
    for path in args.files:
        name = os.path.basename(path).removesuffix(".hgr")
        for k in args.k:
            tools = [("hetpilot", lambda s: run_ours(args.hetpilot_research, path, k, args.eps, s, args.threads))]
            if mtk is not None:
                tools.append(("mtkahypar-default", lambda s: run_mtk(mtk, mtkahypar, path, k, args.eps, s)))
            for tool, fn in tools:
                rows = [fn(s) for s in args.seeds]
                w.writerow([name, k, tool,
                            statistics.median(r[0] for r in rows),
                            round(statistics.median(r[2] for r in rows), 4),
                            round(statistics.median(r[3] for r in rows), 4),
                            round(max(r[1] for r in rows), 5),
                            all(r[4] for r in rows), len(rows)])
                sys.stdout.flush()


if __name__ == "__main__":
    main()
