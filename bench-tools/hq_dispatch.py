#!/usr/bin/env python3
"""HyperQueue side of the dispatch benchmark: N `/bin/true` tasks on one HQ
worker with S cores, timed from submission to completion, with the CPU time of the HQ
server, worker and client (they run inside this process through HQ's Python package).

Usage: pip install hyperqueue && python3 bench-tools/hq_dispatch.py N S [RUNS]
Prints: hq,N,S,median_seconds,median_cpu_ms_per_task,runs
"""
import resource
import statistics
import sys
import tempfile
import time

from hyperqueue import Job
from hyperqueue.cluster import LocalCluster, WorkerConfig


def cpu_ms():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return (r.ru_utime + r.ru_stime) * 1000.0


def run(n, slots):
    with tempfile.TemporaryDirectory() as d:
        with LocalCluster(server_dir=d, worker_config=WorkerConfig(cores=slots)) as cluster:
            client = cluster.client()
            job = Job(default_workdir=d)
            for _ in range(n):
                job.program(["/bin/true"])
            c0, t0 = cpu_ms(), time.perf_counter()
            submitted = client.submit(job)
            client.wait_for_jobs([submitted])
            return time.perf_counter() - t0, (cpu_ms() - c0) / n


def main():
    n, slots = int(sys.argv[1]), int(sys.argv[2])
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    results = [run(n, slots) for _ in range(runs)]
    secs = statistics.median(r[0] for r in results)
    cpu = statistics.median(r[1] for r in results)
    print(f"hq,{n},{slots},{secs:.2f},{cpu:.3f},{runs}")


if __name__ == "__main__":
    main()
