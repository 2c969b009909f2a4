#!/usr/bin/env python3
"""Mt-KaHyPar (default preset) on one hMETIS file, seed 1, ε = 0.03, 1 thread, printing the
load and partition times as it goes. It makes the same calls as compare_mtkahypar.py's
run_mtk, in a process of its own, so `/usr/bin/time -v` reports Mt-KaHyPar's peak RSS and a
run that is stopped still leaves its load time behind (the 2M-task instances).

Usage: /usr/bin/time -v /tmp/mtk-venv/bin/python bench-tools/mtk_partition_one.py FILE.hgr K
"""
import json
import sys
import time

import mtkahypar


def main():
    path, k = sys.argv[1], int(sys.argv[2])
    mtk = mtkahypar.initialize(1)
    ctx = mtk.context_from_preset(mtkahypar.PresetType.DEFAULT)
    ctx.set_partitioning_parameters(k, 0.03, mtkahypar.Objective.KM1)
    ctx.logging = False
    mtkahypar.set_seed(1)
    c0, t0 = time.process_time(), time.perf_counter()
    hg = mtk.hypergraph_from_file(path, ctx, mtkahypar.FileFormat.HMETIS)
    c1, t1 = time.process_time(), time.perf_counter()
    print(json.dumps({"loaded_cpu": c1 - c0, "loaded_wall": t1 - t0}), flush=True)
    part = hg.partition(ctx)
    c2, t2 = time.process_time(), time.perf_counter()
    total = sum(hg.node_weight(v) for v in range(hg.num_nodes()))
    max_w = ctx.compute_max_block_weights(total)
    feasible = all(part.block_weight(b) <= max_w[b] for b in range(k))
    print(json.dumps({"km1": part.km1(), "imbalance": part.imbalance(ctx), "feasible": feasible,
                      "partition_cpu": c2 - c1, "partition_wall": t2 - t1}), flush=True)


if __name__ == "__main__":
    main()
