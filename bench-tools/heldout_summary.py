#!/usr/bin/env python3
"""Summarises compare_mtkahypar.py CSV output: per instance and k, our km1 and CPU time
relative to Mt-KaHyPar default in the same run, then per (family, size, k) the mean and
worst km1 ratio and the CPU ratio, as markdown tables.

Usage: python3 bench-tools/heldout_summary.py RESULTS.csv [...]
"""
import collections
import csv
import statistics
import sys


def family_size(instance):
    # heldout_sat1_20000_s2 -> ("sat", 20000)
    parts = instance.split("_")
    return parts[1].rstrip("0123456789"), int(parts[2])


def main():
    rows = collections.defaultdict(dict)
    for path in sys.argv[1:]:
        with open(path) as f:
            for r in csv.DictReader(f):
                rows[(r["instance"], int(r["k"]))][r["tool"]] = r
    print("| instance | k | km1 ours | km1 Mt-KaHyPar | ratio | CPU-s ours | CPU-s Mt-KaHyPar | CPU ratio | imbalance ours / theirs |")
    print("|---|---|---|---|---|---|---|---|---|")
    groups = collections.defaultdict(list)
    for (inst, k), tools in sorted(rows.items(), key=lambda x: (family_size(x[0][0]), x[0][1], x[0][0])):
        if "hetpilot" not in tools or "mtkahypar-default" not in tools:
            continue
        a, b = tools["hetpilot"], tools["mtkahypar-default"]
        ka, kb = float(a["median_km1"]), float(b["median_km1"])
        # Both 0 (the instance falls apart into components that fit the blocks): equal.
        ratio = 1.0 if ka == kb == 0 else ka / max(1.0, kb)
        cpu = float(a["median_cpu_seconds"]) / max(1e-9, float(b["median_cpu_seconds"]))
        groups[family_size(inst) + (k,)].append((ratio, cpu, inst))
        print(f"| {inst} | {k} | {float(a['median_km1']):.0f} | {float(b['median_km1']):.0f} | {ratio:.3f} | "
              f"{float(a['median_cpu_seconds']):.2f} | {float(b['median_cpu_seconds']):.2f} | {cpu:.2f} | "
              f"{float(a['max_imbalance']):.4f} / {float(b['max_imbalance']):.4f} |")
    print()
    print("| family | tasks | k | instances | km1 ratio mean | worst (instance) | CPU ratio median |")
    print("|---|---|---|---|---|---|---|")
    for (fam, size, k), g in sorted(groups.items()):
        worst = max(g)
        print(f"| {fam} | {size} | {k} | {len(g)} | {statistics.mean(x[0] for x in g):.3f} | "
              f"{worst[0]:.3f} ({worst[2]}) | {statistics.median(x[1] for x in g):.2f} |")


if __name__ == "__main__":
    main()
