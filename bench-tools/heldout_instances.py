#!/usr/bin/env python3
"""An independent generator of IMAGE and SAT task/file hypergraphs (hMETIS fmt 11) for
testing the staging partitioner on instances it was not tuned on (issue 18, issue 16 item 7).

It follows the batch-shared-I/O paper's workload description (Section 6.1), NOT
core/src/staging/workload/: no code is shared, the query shapes differ, and the overlap
comes from a different mechanism (Gaussian scatter around hot spots / Zipf-popular
patients, tuned by bisection to 85 %).

- SAT: a grid of data chunks in (x, y, t); H hot spots; a task is a box query of 30
  chunks (box shape from the family's shape) centred at a hot spot plus a Gaussian offset
  of width sigma; sigma is bisected so the batch's overlap 1 - distinct/requests is 85 %.
  Chunk sizes vary (3-6 MB: compressed land/sea chunks), so task weights differ.
- IMAGE: patients with S studies of M MRI images (1 MB) plus one CT (16 MB); images are
  laid out patient by patient, study by study; a task reads a window of 30 consecutive
  images starting in a patient drawn from a Zipf law over a random permutation of the
  patients, at a Gaussian offset; the patient pool is bisected to give 85 % overlap.

Vertex = task, weight = MB read (>= 1); net = file, weight = size in KiB, as in
Workload::hypergraph. Single-pin nets are kept (the files only one task reads), as a
real batch has them.

Usage:
    python3 bench-tools/heldout_instances.py --out DIR --set heldout --tasks 2000 20000
    python3 bench-tools/heldout_instances.py --out DIR --set tuning --tasks 20000 [--shape 1]
Sets: `tuning` = seeds 101-103 of shape 0 (or --shape) per family; `heldout` = seeds 1-5, shape
(seed - 1) % 3 per family (never used for tuning).
"""
import argparse
import os
import sys

import numpy as np

FILES_PER_TASK = 30
TARGET_OVERLAP = 0.85

# (hot spots, box (x, y, t), fraction of queries scattered uniformly over the whole map)
SAT_SHAPES = [(4, (5, 3, 2), 0.0), (16, (3, 5, 2), 0.05), (48, (6, 5, 1), 0.02)]
# (studies per patient, MRI per study, Zipf exponent)
IMAGE_SHAPES = [(3, 6, 1.1), (5, 4, 0.8), (2, 9, 1.4)]


def overlap(files):
    return 1.0 - np.unique(files).size / files.size


def bisect(make, lo, hi, increasing, iters=22):
    """Finds the parameter in [lo, hi] whose overlap is closest to the target."""
    best = None
    for _ in range(iters):
        mid = (lo + hi) / 2
        files = make(mid)
        o = overlap(files)
        if best is None or abs(o - TARGET_OVERLAP) < abs(best[0] - TARGET_OVERLAP):
            best = (o, files, mid)
        if (o < TARGET_OVERLAP) == increasing:
            lo = mid
        else:
            hi = mid
    return best


def sat(tasks, shape, rng):
    hot, (bx, by, bt), background = SAT_SHAPES[shape]
    side = 1 << 14
    steps = 8
    centers = rng.integers(side // 8, side - side // 8, size=(hot, 2))
    weights = rng.dirichlet(np.ones(hot) * 2.0)
    spot = rng.choice(hot, size=tasks, p=weights)
    gauss = rng.standard_normal((tasks, 2))
    uniform = rng.random(tasks) < background
    uxy = rng.integers(0, side - 8, size=(tasks, 2))
    t0 = rng.integers(0, steps - bt + 1, size=tasks)
    dx, dy, dt = np.meshgrid(np.arange(bx), np.arange(by), np.arange(bt), indexing="ij")
    offs = np.stack([dx.ravel(), dy.ravel(), dt.ravel()], axis=1)  # (30, 3)

    def make(sigma):
        xy = np.rint(centers[spot] + gauss * sigma).astype(np.int64)
        xy = np.where(uniform[:, None], uxy, xy)
        xy = np.clip(xy, 0, side - 8)
        x = xy[:, 0:1] + offs[None, :, 0]
        y = xy[:, 1:2] + offs[None, :, 1]
        t = t0[:, None] + offs[None, :, 2]
        return (x * side + y) * steps + t

    o, files, _sigma = bisect(make, 0.5, 4000.0, increasing=False)
    return files, o


def sat_sizes_kib(ids):
    # Deterministic per chunk id: compressed chunks of 3-6 MiB.
    h = (ids.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(40)
    return (3 * 1024 + (h % np.uint64(3 * 1024))).astype(np.int64)


def image(tasks, shape, rng):
    studies, mri, zipf = IMAGE_SHAPES[shape]
    per_patient = studies * (mri + 1)
    gauss = rng.standard_normal(tasks)
    u = rng.random(tasks)

    def make(pool):
        pool = max(2, int(pool))
        ranks = np.arange(1, pool + 1, dtype=np.float64) ** -zipf
        cdf = np.cumsum(ranks) / ranks.sum()
        perm = np.random.default_rng(int(pool) * 7919 + shape).permutation(pool)
        patient = perm[np.searchsorted(cdf, u)]
        start = patient * per_patient + np.rint(gauss * per_patient).astype(np.int64)
        start = np.clip(start, 0, pool * per_patient)
        return start[:, None] + np.arange(FILES_PER_TASK)[None, :]

    o, files, _pool = bisect(make, 2.0, 5e6, increasing=False, iters=30)
    return files, o, per_patient, mri


def image_sizes_kib(ids, per_patient, mri):
    within_study = (ids % per_patient) % (mri + 1)
    return np.where(within_study == mri, 16 * 1024, 1024)


def write_hmetis(path, files, sizes_kib_of):
    tasks = files.shape[0]
    flat = files.ravel()
    uniq, inverse = np.unique(flat, return_inverse=True)
    sizes = sizes_kib_of(uniq).astype(np.int64)
    task_of_pin = np.repeat(np.arange(tasks, dtype=np.int64), files.shape[1])
    order = np.argsort(inverse, kind="stable")
    net_of_pin = inverse[order]
    pins = task_of_pin[order] + 1
    bounds = np.searchsorted(net_of_pin, np.arange(uniq.size + 1))
    task_mb = np.maximum(1, (sizes[inverse].reshape(files.shape).sum(axis=1) + 1023) // 1024)
    single = int(np.sum(np.diff(bounds) == 1))
    with open(path, "w") as f:
        f.write(f"{uniq.size} {tasks} 11\n")
        chunk = 200_000
        for s in range(0, uniq.size, chunk):
            lines = []
            for e in range(s, min(s + chunk, uniq.size)):
                lines.append(str(sizes[e]) + " " + " ".join(map(str, pins[bounds[e]:bounds[e + 1]].tolist())))
            f.write("\n".join(lines) + "\n")
        f.write("\n".join(map(str, task_mb.tolist())) + "\n")
    return uniq.size, single, flat.size


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--set", choices=["tuning", "heldout"], required=True)
    ap.add_argument("--tasks", type=int, nargs="+", default=[2000, 20000, 200000])
    ap.add_argument("--families", nargs="+", default=["sat", "image"])
    ap.add_argument("--seeds", type=int, nargs="*", help="override the set's seeds")
    ap.add_argument("--shape", type=int, choices=[0, 1, 2],
                    help="tuning set only: the shape (default 0), e.g. to tune on shape 1")
    args = ap.parse_args()
    if args.shape is not None and args.set != "tuning":
        ap.error("--shape applies to the tuning set only")
    os.makedirs(args.out, exist_ok=True)
    if args.seeds:
        seeds = args.seeds
    else:
        seeds = [101, 102, 103] if args.set == "tuning" else [1, 2, 3, 4, 5]
    for fam in args.families:
        for tasks in args.tasks:
            for seed in seeds:
                if args.set == "tuning":
                    shape = args.shape or 0
                else:
                    shape = (seed - 1) % 3
                rng = np.random.default_rng(seed * 1_000_003 + tasks + (0 if fam == "sat" else 17))
                if fam == "sat":
                    files, o = sat(tasks, shape, rng)
                    sizes = sat_sizes_kib
                else:
                    files, o, per_patient, mri = image(tasks, shape, rng)
                    sizes = lambda ids, pp=per_patient, m=mri: image_sizes_kib(ids, pp, m)
                name = f"{args.set}_{fam}{shape}_{tasks}_s{seed}.hgr"
                nets, single, pins = write_hmetis(os.path.join(args.out, name), files, sizes)
                print(f"{name}: {tasks} tasks, {pins} pins, {nets} nets ({single} single-pin), "
                      f"overlap {o:.3f}", file=sys.stderr)


if __name__ == "__main__":
    main()
