#!/usr/bin/env python3
"""The live manager's Het-HPS plan at scale: is the plan made off the
request path, how long does it take, and do pulls and heartbeats stay responsive?

The settings are the ones BENCHMARKS.md fixed before the run:
- a release manager and 4 agents on 2 local platforms (2 + 2, 4 slots each);
- one data-intensive application of N tasks of `true` (N = 200,000), task i reading the
  30 files of task i of `hetpilot-research staging-workload --workload sat --tasks N --seed 1`,
  declared with their sizes;
- lease latency from the manager's `hetpilot_lease_latency_seconds` while
  `hetpilot_planning_seconds_count{planner="het-hps"}` is still 0, and after it turns 1.

The files are emulated as `hetpilot submit --emulate` does (a file of the declared size
made of zeros), but sparse and written straight into the manager's file service directory
(DATA/files/admin/...), since the batch's ~900,000 distinct 4.5 MiB files would be ~4 TB:
the manager serves them, agents fetch them into their node caches (`--cache-max`).

Nothing waits by sleeping: every step polls the manager (/metrics, manager.url) until the
condition holds, with a deadline.

  python3 bench-tools/het_hps_live.py --bin target/release --tasks 200000 --out /tmp/live

Writes OUT/result.json and prints a summary; the manager's and agents' logs stay in the
data directory (kept with --keep).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

PLATFORMS = ["live-a", "live-b"]
AGENTS_PER_PLATFORM = 2
SLOTS = 4
POLL = 0.2  # seconds between two reads of /metrics


def log(msg):
    print(time.strftime("%H:%M:%S"), msg, file=sys.stderr, flush=True)


def wait_for(what, timeout, f, every=0.05):
    deadline = time.monotonic() + timeout
    while True:
        v = f()
        if v is not None:
            return v
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out after {timeout} s waiting for {what}")
        time.sleep(every)


class Api:
    def __init__(self, url, token):
        self.url, self.token = url, token

    def request(self, method, path, body=None, timeout=600):
        data = None if body is None else body
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("authorization", f"Bearer {self.token}")
        if body is not None:
            req.add_header("content-type", "application/json")
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.read()

    def metrics(self):
        return parse_metrics(self.request("GET", "/metrics", timeout=60).decode())


# Label values may hold braces (route="/v1/agents/{agent}/heartbeat"): the label set
# ends at the last "} " of the line.
LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')


def parse_metrics(text):
    """{(name, frozenset(labels)): value} of an OpenMetrics text."""
    out = {}
    for line in text.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        labels = frozenset(re.findall(r'(\w+)="([^"]*)"', m.group(3) or ""))
        try:
            out[(m.group(1), labels)] = float(m.group(4))
        except ValueError:
            pass
    return out


def total(metrics, name, **want):
    return sum(
        v
        for (n, labels), v in metrics.items()
        if n == name and all((k, w) in labels for k, w in want.items())
    )


def buckets(metrics, name, **want):
    """Cumulative bucket counts {le: count} of a histogram, summed over its other labels."""
    out = {}
    for (n, labels), v in metrics.items():
        if n != name + "_bucket" or not all((k, w) in labels for k, w in want.items()):
            continue
        le = dict(labels)["le"]
        le = float("inf") if le == "+Inf" else float(le)
        out[le] = out.get(le, 0.0) + v
    return out


def histogram_between(before, after, name, **want):
    """Count, sum and bucket-bound percentiles of the observations between two scrapes."""
    b0, b1 = buckets(before, name, **want), buckets(after, name, **want)
    cum = sorted((le, b1[le] - b0.get(le, 0.0)) for le in b1)
    count = total(after, name + "_count", **want) - total(before, name + "_count", **want)
    secs = total(after, name + "_sum", **want) - total(before, name + "_sum", **want)

    def upper(p):
        # The smallest bucket bound with at least p of the observations at or below it.
        for le, c in cum:
            if count > 0 and c >= p * count:
                return le
        return None

    return {
        "count": count,
        "mean_ms": 1000 * secs / count if count else None,
        "p50_le_ms": ms(upper(0.5)),
        "p90_le_ms": ms(upper(0.9)),
        "p99_le_ms": ms(upper(0.99)),
        "max_le_ms": ms(upper(1.0)),
    }


def ms(x):
    return None if x is None else (x * 1000 if x != float("inf") else "inf")


def cpu_seconds(pid):
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mib(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return None


def emulate_files(workload, root):
    """Each file of the batch as a sparse file of its size under root (DIR/ID)."""
    for f, file in enumerate(workload["files"]):
        d = root / str(f // 1000)
        if f % 1000 == 0:
            d.mkdir(parents=True, exist_ok=True)
        with open(d / str(f), "wb") as out:
            out.truncate(file["size_bytes"])


def app_spec(workload):
    """Task i reads the files of task i: 30 declarations `sat/{fK}` with one size."""
    sizes = {f["size_bytes"] for f in workload["files"]}
    per_task = {len(t["files"]) for t in workload["tasks"]}
    if len(sizes) != 1 or len(per_task) != 1:
        raise SystemExit("the live driver needs one file size and one file count per task")
    (size,), (k,) = sizes, per_task
    keys = [f"f{j}" for j in range(k)]
    params = [
        {key: f"{f // 1000}/{f}" for key, f in zip(keys, t["files"])}
        for t in workload["tasks"]
    ]
    return {
        "name": "het-hps-live",
        "command": "true",
        "tasks": {"params": params},
        "inputs": [{"uri": f"sat/{{{key}}}", "size": size} for key in keys],
        "data_intensive": True,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default="target/release", type=Path)
    ap.add_argument("--tasks", type=int, default=200_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--after-secs", type=float, default=120.0,
                    help="how long to measure after the plan is installed")
    ap.add_argument("--plan-timeout-secs", type=float, default=3600.0)
    ap.add_argument("--cache-max", default="1G", help="each agent's node cache")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--keep", action="store_true", help="keep the data directory")
    args = ap.parse_args()
    hetpilot, agent_bin = args.bin / "hetpilot", args.bin / "hetpilot-agent"
    args.out.mkdir(parents=True, exist_ok=True)
    data = Path(tempfile.mkdtemp(prefix="het-hps-live-", dir="/var/tmp"))
    procs = []
    try:
        run(args, hetpilot, agent_bin, data, procs)
    finally:
        for p in reversed(procs):
            p.kill()
            p.wait()
        if not args.keep:
            shutil.rmtree(data, ignore_errors=True)
        else:
            log(f"data directory kept: {data}")


def run(args, hetpilot, agent_bin, data, procs):
    w_path = data / "workload.json"
    subprocess.run(
        [hetpilot.with_name("hetpilot-research"), "staging-workload", "--workload", "sat",
         "--tasks", str(args.tasks),
         "--seed", str(args.seed), "--json", w_path],
        check=True, stdout=subprocess.DEVNULL)
    workload = json.loads(w_path.read_text())
    log(f"{len(workload['tasks'])} tasks, {len(workload['files'])} files")
    emulate_files(workload, data / "files" / "admin" / "sat")
    spec = json.dumps(app_spec(workload)).encode()
    del workload
    log(f"files emulated; the application is {len(spec) / 2**20:.1f} MiB of JSON")
    config = data / "config.toml"
    config.write_text(
        "".join(f'[[platforms]]\nname = "{p}"\n' for p in PLATFORMS)
        + "[limits]\nmax_submit_mib = 1024\n")
    env = {k: v for k, v in os.environ.items() if k != "HETPILOT_CONFIG"}
    env["RUST_LOG"] = "info"
    manager = subprocess.Popen(
        [hetpilot, "serve", "--listen", "127.0.0.1:0", "--data-dir", data,
         "--config", config],
        env=env, stdout=subprocess.DEVNULL, stderr=open(data / "manager.log", "wb"))
    procs.append(manager)
    url = wait_for("the manager to listen", 60,
                   lambda: (data / "manager.url").exists()
                   and (data / "manager.url").read_text().strip() or None)
    admin = (data / "admin.token").read_text().strip()
    api = Api(url, admin)
    cli_env = dict(env, HETPILOT_URL=url, HETPILOT_TOKEN=admin)
    for p in PLATFORMS:
        for i in range(AGENTS_PER_PLATFORM):
            token = subprocess.run(
                [hetpilot, "token", "agent", "--platform", p], env=cli_env, check=True,
                capture_output=True, text=True).stdout.strip()
            work = data / f"agent-{p}-{i}"
            work.mkdir()
            procs.append(subprocess.Popen(
                [agent_bin, "--manager", url, "--platform", p, "--slots", str(SLOTS),
                 "--work-dir", work, "--cache-max", args.cache_max],
                env=dict(env, HETPILOT_AGENT_TOKEN=token),
                stdout=subprocess.DEVNULL, stderr=open(work / "agent.log", "wb")))
    agents = len(PLATFORMS) * AGENTS_PER_PLATFORM
    wait_for(f"{agents} active agents", 120,
             lambda: total(api.metrics(), "hetpilot_agents", state="active") >= agents
             or None)
    log(f"{agents} agents active; submitting")

    m0, cpu0, t0 = api.metrics(), cpu_seconds(manager.pid), time.monotonic()
    load0 = os.getloadavg()
    app = json.loads(api.request("POST", "/v1/apps", spec))["app"]
    submit_secs = time.monotonic() - t0
    log(f"application {app} submitted in {submit_secs:.1f} s; waiting for the plan")
    del spec

    samples = []  # (seconds since submit, planned, leased, completed, scrape ms)

    def plans(m):
        return total(m, "hetpilot_planning_seconds_count", planner="het-hps")

    def sample():
        start = time.monotonic()
        m = api.metrics()
        scrape_ms = 1000 * (time.monotonic() - start)
        samples.append((start - t0, plans(m),
                        total(m, "hetpilot_tasks_leased_total"),
                        total(m, "hetpilot_tasks_completed_total"), scrape_ms))
        return m

    m1 = wait_for("the het-hps plan", args.plan_timeout_secs,
                  lambda: (lambda m: m if plans(m) >= 1 else None)(sample()), every=POLL)
    t1, cpu1, load1 = time.monotonic(), cpu_seconds(manager.pid), os.getloadavg()
    log(f"plan installed {t1 - t0:.1f} s after the submission")
    wait_for("the end of the after window", args.after_secs + 60,
             lambda: (sample(), time.monotonic() - t1 >= args.after_secs)[1] or None,
             every=POLL)
    m2, t2, cpu2 = api.metrics(), time.monotonic(), cpu_seconds(manager.pid)
    rss = peak_rss_mib(manager.pid)
    plan_lines = [line for line in (data / "manager.log").read_text().splitlines()
                  if "staging_plan" in line]
    planned_at = t1 - t0

    def scrapes(during):
        ms_ = sorted(s[4] for s in samples if (s[0] < planned_at) == during)
        if not ms_:
            return None
        pick = lambda p: ms_[min(len(ms_) - 1, round(p * (len(ms_) - 1)))]
        return {"count": len(ms_), "p50_ms": pick(0.5), "p90_ms": pick(0.9),
                "p99_ms": pick(0.99), "max_ms": ms_[-1]}

    def window(start, end, during):
        """Latencies and task counts between two /metrics snapshots."""
        return {
            "lease_latency": histogram_between(start, end, "hetpilot_lease_latency_seconds"),
            "heartbeat": histogram_between(
                start, end, "hetpilot_http_request_duration_seconds",
                route="/v1/agents/{agent}/heartbeat"),
            "metrics_scrape": scrapes(during),
            "leased": total(end, "hetpilot_tasks_leased_total")
            - total(start, "hetpilot_tasks_leased_total"),
            "completed": total(end, "hetpilot_tasks_completed_total")
            - total(start, "hetpilot_tasks_completed_total"),
        }

    result = {
        "tasks": args.tasks,
        "agents": agents,
        "slots_per_agent": SLOTS,
        "submit_seconds": submit_secs,
        "plan_installed_after_submit_seconds": t1 - t0,
        "het_hps_plan_wall_seconds_metric": total(
            m1, "hetpilot_planning_seconds_sum", planner="het-hps"),
        "manager_cpu_seconds_submit_to_plan": cpu1 - cpu0,
        "manager_cpu_seconds_after_window": cpu2 - cpu1,
        "manager_peak_rss_mib": rss,
        "load_average_at_submit": load0,
        "load_average_at_plan": load1,
        "after_window_seconds": t2 - t1,
        "during_planning": window(m0, m1, during=True),
        "after_plan": window(m1, m2, during=False),
        "manager_log_het_hps": plan_lines[-5:],
        "samples": samples,
    }
    (args.out / "result.json").write_text(json.dumps(result, indent=1))
    summary = {k: v for k, v in result.items() if k != "samples"}
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
