#!/usr/bin/env python3
"""An independent generator of IMAGE and SAT task/file hypergraphs (hMETIS fmt 11) for
testing the staging partitioner on instances it was not tuned on (decision 001 in docs/decisions/).

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

Speed: the bisection counts distinct files exactly without sorting
(SAT: a byte map over the chunk ids; IMAGE: the union of the sorted windows), and the
writer groups pins with one sort of (file, task) keys and builds the text with numpy. The
output is byte-identical to the first version's (np.unique counts, a Python loop per net):
checked with cmp on all 2k and 20k held-out files, four 200k ones and two tuning ones. A
2M-task instance (60 M pins, ~500 MB) takes ~1 CPU-minute and ~2.7 GB.

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


def overlap_of(distinct, requests):
    return 1.0 - distinct / requests


def bisect(make, lo, hi, increasing, iters=22):
    """Finds the parameter in [lo, hi] whose overlap is closest to the target.

    `make(mid)` returns the exact overlap of the batch that `mid` gives (a cheap exact
    distinct count, never a sample), so the choice is the same as counting with np.unique.
    """
    best = None
    for _ in range(iters):
        mid = (lo + hi) / 2
        o = make(mid)
        if best is None or abs(o - TARGET_OVERLAP) < abs(best[0] - TARGET_OVERLAP):
            best = (o, mid)
        if (o < TARGET_OVERLAP) == increasing:
            lo = mid
        else:
            hi = mid
    return best


class DistinctCounter:
    """Exact number of distinct ids in [0, bound): one byte map, reused (ids set, counted,
    then only those entries reset). O(ids), against np.unique's sort of all 60 M ids at 2M
    tasks (~50 s per bisection step)."""

    def __init__(self, bound):
        self.seen = np.zeros(bound, dtype=bool)

    def count(self, ids):
        lo, hi = int(ids.min()), int(ids.max()) + 1
        self.seen[ids] = True
        n = int(np.count_nonzero(self.seen[lo:hi]))
        self.seen[ids] = False
        return n


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
    # Chunk id (x * side + y) * steps + t is linear in (x, y, t), and a box never wraps
    # (x, y <= side - 8 + 5, t < steps), so a task's ids are its corner's id plus the
    # box's 30 offsets.
    offs = ((dx.ravel() * side + dy.ravel()) * steps + dt.ravel()).astype(np.int64)

    def corners(sigma):
        xy = np.rint(centers[spot] + gauss * sigma).astype(np.int64)
        xy = np.where(uniform[:, None], uxy, xy)
        xy = np.clip(xy, 0, side - 8)
        return (xy[:, 0] * side + xy[:, 1]) * steps + t0

    counter = DistinctCounter(side * side * steps)
    requests = tasks * offs.size

    def make(sigma):
        ids = (corners(sigma)[:, None] + offs[None, :]).ravel()
        return overlap_of(counter.count(ids), requests)

    o, sigma = bisect(make, 0.5, 4000.0, increasing=False)
    del counter
    return corners(sigma)[:, None] + offs[None, :], o


def sat_sizes_kib(ids):
    # Deterministic per chunk id: compressed chunks of 3-6 MiB.
    h = (ids.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(40)
    return (3 * 1024 + (h % np.uint64(3 * 1024))).astype(np.int64)


def image(tasks, shape, rng):
    studies, mri, zipf = IMAGE_SHAPES[shape]
    per_patient = studies * (mri + 1)
    gauss = rng.standard_normal(tasks)
    u = rng.random(tasks)

    def starts(pool):
        pool = max(2, int(pool))
        ranks = np.arange(1, pool + 1, dtype=np.float64) ** -zipf
        cdf = np.cumsum(ranks) / ranks.sum()
        perm = np.random.default_rng(int(pool) * 7919 + shape).permutation(pool)
        patient = perm[np.searchsorted(cdf, u)]
        start = patient * per_patient + np.rint(gauss * per_patient).astype(np.int64)
        return np.clip(start, 0, pool * per_patient)

    def make(pool):
        # A task reads the window [start, start + 30): the distinct images are the union of
        # the windows, counted exactly from the sorted distinct starts.
        s = np.unique(starts(pool))
        distinct = int(np.minimum(np.diff(s), FILES_PER_TASK).sum()) + FILES_PER_TASK
        return overlap_of(distinct, tasks * FILES_PER_TASK)

    o, pool = bisect(make, 2.0, 5e6, increasing=False, iters=30)
    return starts(pool)[:, None] + np.arange(FILES_PER_TASK)[None, :], o, per_patient, mri


def image_sizes_kib(ids, per_patient, mri):
    within_study = (ids % per_patient) % (mri + 1)
    return np.where(within_study == mri, 16 * 1024, 1024)


_POW10 = 10 ** np.arange(19, dtype=np.int64)


def ascii_ints(values, seps):
    """The decimal text of non-negative `values`, each followed by its separator byte
    (`seps`, uint8), as one bytes object: str() of every number without a Python loop."""
    values = values.astype(np.int64, copy=False)
    digits = np.ones(values.size, dtype=np.int64)
    for k in range(1, 19):
        more = values >= _POW10[k]
        if not more.any():
            break
        digits += more
    ends = np.cumsum(digits + 1)
    buf = np.empty(int(ends[-1]) if ends.size else 0, dtype=np.uint8)
    buf[ends - 1] = seps
    for k in range(int(digits.max()) if values.size else 0):
        has = digits > k
        buf[ends[has] - 2 - k] = 48 + (values[has] // _POW10[k]) % 10
    return buf.tobytes()


def write_hmetis(path, files, sizes_kib_of):
    """Writes fmt 11: one line per distinct file (ascending id): its size in KiB and the
    (1-based) tasks that read it, ascending; then one line per task: its MB. Pins are
    grouped by one sort of the (file, task) pairs (a task reads a file at most once, so
    the pair keys are distinct), and the text is built with numpy."""
    tasks, per_task = files.shape
    flat = files.ravel()
    assert int(flat.min()) >= 0 and int(flat.max()) < (1 << 62) // tasks
    keys = flat * tasks + np.repeat(np.arange(tasks, dtype=np.int64), per_task)
    keys.sort()
    net_file = keys // tasks
    pins = keys % tasks + 1
    del keys
    starts = np.flatnonzero(np.r_[True, net_file[1:] != net_file[:-1]])
    uniq = net_file[starts]
    del net_file
    bounds = np.r_[starts, flat.size]
    sizes = sizes_kib_of(uniq).astype(np.int64)
    task_mb = np.maximum(1, (sizes_kib_of(flat).astype(np.int64).reshape(files.shape).sum(axis=1)
                             + 1023) // 1024)
    single = int(np.sum(np.diff(bounds) == 1))
    space, newline = np.uint8(32), np.uint8(10)
    with open(path, "wb") as f:
        f.write(f"{uniq.size} {tasks} 11\n".encode())
        chunk = 1_000_000
        for s in range(0, uniq.size, chunk):
            e = min(s + chunk, uniq.size)
            b0, b1 = bounds[s], bounds[e]
            count = (e - s) + (b1 - b0)
            tokens = np.empty(count, dtype=np.int64)
            seps = np.full(count, space, dtype=np.uint8)
            net_pos = bounds[s:e] - b0 + np.arange(e - s)
            tokens[net_pos] = sizes[s:e]
            pin_net = np.repeat(np.arange(e - s), np.diff(bounds[s:e + 1]))
            tokens[np.arange(b1 - b0) + pin_net + 1] = pins[b0:b1]
            seps[bounds[s + 1:e + 1] - b0 + np.arange(e - s)] = newline
            f.write(ascii_ints(tokens, seps))
        f.write(ascii_ints(task_mb, np.full(tasks, newline, dtype=np.uint8)))
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
