#!/usr/bin/env python3
"""The two-level paper's affinity loop on live hardware.

Runs the experiment that profiles/two-level-live/experiment.toml fixes, on the
local lab (deploy/lab/start.sh), and writes what it measured as JSON under --out:

  offline   each application's OneCore runtime on both lab platforms and its runtime next
            to every co-runner on the shared node, measured by running the programs
            directly under the platforms' CPU pinning and quota -> offline.json, profile.toml
  live      the live manager (real Slurm pilots, real agents, real tasks) under each policy
            combination, runs interleaved; polls its online affinity view while the
            applications run -> live-<policy>-<run>.json
  recheck   the offline measurements again after the live runs -> offline-after.json
  simulate  the simulator on the offline profile and the same workload -> simulated.json
  report    docs/reproduction/two-level-live.md and its SVG figures, from the JSON files

  python3 bench-tools/two_level_live.py all --out /var/tmp/two-level-live

Needs: root (cpu cgroup, Slurm jobs), the lab started, release binaries built
(`cargo build --release --workspace --bins`).
"""

import argparse
import itertools
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SETTINGS = REPO / "profiles/two-level-live/experiment.toml"
BIN = REPO / "target/release"
CGROUP = Path("/sys/fs/cgroup/cpu/hetpilot-lab-shared")
LAB = Path(os.environ.get("HETPILOT_LAB", "/var/tmp/hetpilot-lab"))


def log(msg):
    print(time.strftime("%H:%M:%S"), msg, file=sys.stderr, flush=True)


def settings():
    with open(SETTINGS, "rb") as f:
        return tomllib.load(f)


def argv_of(app, index):
    """The task's command line: the application's command with its binary made absolute."""
    words = app["command"].replace("{}", str(index)).split()
    return [str(BIN / words[0])] + words[1:]


# ---------------------------------------------------------------------------- offline


def make_cgroup(quota):
    CGROUP.mkdir(exist_ok=True)
    (CGROUP / "cpu.cfs_period_us").write_text("100000")
    (CGROUP / "cpu.cfs_quota_us").write_text(str(int(quota * 100000)))


def platform_preexec(platform):
    """Puts the child where the platform's pilot puts its tasks: pinned, and in the
    shared platform's cgroup."""

    def place():
        if platform.get("cgroup"):
            (CGROUP / "cgroup.procs").write_text(str(os.getpid()))
        os.sched_setaffinity(0, {int(c) for c in platform["cpus"].split(",")})

    return place


def run_once(platform, argv, cwd):
    t0 = time.monotonic()
    subprocess.run(argv, cwd=cwd, preexec_fn=platform_preexec(platform), check=True,
                   stdout=subprocess.DEVNULL)
    return time.monotonic() - t0


def co_run(platform, apps, reps, cwd):
    """Runs one loop per member of `apps` (names may repeat: AllCore) side by side on the
    platform's node, until every loop has `reps` runs that started and ended while every
    other loop was still running. Returns each loop's qualifying runtimes."""
    stop = threading.Event()
    runs = [[] for _ in apps]
    n_started = [0] * len(apps)

    def loop(k):
        i = 0
        while not stop.is_set():
            i += 1
            n_started[k] += 1
            t0 = time.monotonic()
            subprocess.run(argv_of(apps[k], i), cwd=cwd / f"slot{k}",
                           preexec_fn=platform_preexec(platform), check=True,
                           stdout=subprocess.DEVNULL)
            runs[k].append((t0, time.monotonic()))

    for k in range(len(apps)):
        (cwd / f"slot{k}").mkdir(exist_ok=True)
    threads = [threading.Thread(target=loop, args=(k,)) for k in range(len(apps))]
    for t in threads:
        t.start()
    # A run counts when every other loop was busy for all of it: the other loops stop
    # only after this one's reps runs have ended, so the first reps + 1 runs count (the
    # first run of each loop starts within milliseconds of the others').
    while any(len(r) < reps + 1 for r in runs):
        time.sleep(0.05)
    stop.set()
    for t in threads:
        t.join()
    # Only runs that ended before the first loop's last run ended: every loop was busy
    # throughout them (the loops started together).
    end_all = min(r[-1][1] for r in runs)
    return [[b - a for (a, b) in r if b <= end_all][:reps] for r in runs]


def offline(out, name="offline.json"):
    make_cgroup(settings()["platform"]["lab-shared"]["cpu_quota"])
    if (out / name).exists():
        if name == "offline.json":
            write_profile(out, json.loads((out / name).read_text()))
        return
    s = settings()
    apps = s["application"]
    plats = s["platform"]
    reps = s["offline"]["repetitions"]
    work = Path(tempfile.mkdtemp(prefix="two-level-live-", dir="/var/tmp"))
    result = {"solo": {}, "combination": {}}
    try:
        for pname, p in plats.items():
            for a in apps:
                times = [run_once(p, argv_of(a, i), work) for i in range(reps)]
                result["solo"].setdefault(a["name"], {})[pname] = times
                log(f"solo {a['name']} on {pname}: {statistics.mean(times):.2f} s")
        for pname, p in plats.items():
            slots = p["slots"]
            if slots < 2:
                continue
            for members in itertools.combinations_with_replacement(apps, slots):
                times = co_run(p, list(members), reps, work)
                key = "+".join(m["name"] for m in members)
                result["combination"].setdefault(pname, {})[key] = times
                log(f"{key} on {pname}: " + ", ".join(f"{statistics.mean(t):.2f}" for t in times))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result["machine_load"] = os.getloadavg()
    (out / name).write_text(json.dumps(result, indent=1))
    if name == "offline.json":
        write_profile(out, result)


def recheck(out):
    """The offline measurements once more, after the live runs: how stable the truth is."""
    offline(out, "offline-after.json")


def cv(values):
    m = statistics.mean(values)
    return statistics.pstdev(values) / m if m > 0 else 0.0


def write_profile(out, result):
    """The offline measurements in the runtime-profile format the simulator reads
    (profiles/two-level/profile.toml): OneCore = alone on the node; a combination's runtime
    of a member = its mean with the node's slots split evenly among the members."""
    s = settings()
    apps = [a["name"] for a in s["application"]]
    plats = s["platform"]
    lines = ["# Measured by bench-tools/two_level_live.py offline.", ""]
    for pname, p in plats.items():
        lines += ["[[platform]]", f'name = "{pname}"', f"cores_per_node = {p['slots']}", ""]
    for a in apps:
        one = ", ".join(f'"{p}" = {statistics.mean(result["solo"][a][p]):.4f}' for p in plats)
        spread = statistics.mean(cv(result["solo"][a][p]) for p in plats)
        lines += ["[[application]]", f'name = "{a}"', f"one_core = {{ {one} }}",
                  f'runtime_distribution = {{ kind = "lognormal", cv = {max(spread, 0.01):.3f} }}', ""]
    for pname, p in plats.items():
        if p["slots"] == 1:
            for a in apps:
                lines += ["[[combination]]", f'platform = "{pname}"',
                          f'runtimes = {{ "{a}" = {statistics.mean(result["solo"][a][pname]):.4f} }}', ""]
            continue
        for key, times in result["combination"][pname].items():
            names = key.split("+")
            by = {}
            for n, t in zip(names, times):
                by.setdefault(n, []).extend(t)
            if len(by) > 1 and len(by) != len(names):
                continue  # a member twice next to another: not an even split
            rt = ", ".join(f'"{n}" = {statistics.mean(v):.4f}' for n, v in by.items())
            lines += ["[[combination]]", f'platform = "{pname}"', f"runtimes = {{ {rt} }}", ""]
    (out / "profile.toml").write_text("\n".join(lines))


# ---------------------------------------------------------------------------- live


class Manager:
    def __init__(self, out, tag, policy):
        s = settings()
        self.dir = out / f"manager-{tag}"
        shutil.rmtree(self.dir, ignore_errors=True)
        self.dir.mkdir(parents=True)
        port = s["live"]["port"]
        sched = s["policies"][policy]
        plats = "".join(
            f'[[platforms]]\nname = "{n}"\nprofile = "{REPO}/profiles/two-level-live/{n}.toml"\n'
            for n in s["platform"])
        self.config = self.dir / "manager.toml"
        self.config.write_text(
            f'listen = "127.0.0.1:{port}"\ndata_dir = "{self.dir}/data"\n'
            f"[provision]\ninterval_secs = 1\n"
            f'[scheduler]\npolicy = "{sched["first"]}"\nsecond_level = "{sched["second"]}"\n'
            f'metric = "{sched["metric"]}"\nseed = {s["live"]["seed"]}\n' + plats)
        env = dict(os.environ, HETPILOT_AGENT_BINARY=str(BIN / "hetpilot-agent"),
                   SLURM_CONF=str(LAB / "etc/slurm.conf"),
                   HETPILOT_LAB_DIR=str(self.dir / "pilots"))
        self.env = env
        self.proc = subprocess.Popen([str(BIN / "hetpilot"), "serve", "--config", str(self.config)],
                                     env=env, stdout=open(self.dir / "serve.log", "w"),
                                     stderr=subprocess.STDOUT)
        url = self.dir / "data/manager.url"
        deadline = time.monotonic() + 60
        while not url.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"manager did not start: see {self.dir / 'serve.log'}")
            time.sleep(0.1)

    def cli(self, *args, token=None):
        env = dict(self.env, HETPILOT_CONFIG=str(self.config))
        if token:
            env["HETPILOT_TOKEN"] = token
        r = subprocess.run([str(BIN / "hetpilot"), *args], env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"hetpilot {' '.join(args)}: {r.stderr}")
        return r.stdout

    def json(self, *args, token=None):
        args = list(args)
        at = args.index("--") if "--" in args else len(args)
        return json.loads(self.cli(*args[:at], "--json", *args[at:], token=token))

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def live_run(out, policy, run):
    s = settings()
    tag = f"{policy}-{run}"
    m = Manager(out, tag, policy)
    try:
        token = m.cli("user", "add", "lab").strip().split()[-1]
        ids = []
        t_submit = time.time()
        for a in s["application"]:
            cmd = argv_of(a, "{}")
            r = m.json("submit", "--name", a["name"], "--array", f"1-{a['tasks']}",
                       "--max-attempts", "1", "--", *cmd, token=token)
            ids.append(r["app"] if "app" in r else r["id"])
        log(f"{tag}: submitted {ids}")
        polls = []
        while True:
            time.sleep(s["live"]["poll_secs"])
            view = m.json("affinity", "--live")
            polls.append({"t": time.time(), "view": view})
            st = m.json("status", token=token)
            ended = ("done", "failed", "cancelled")
            if all(sum(a["counts"][k] for k in ended) == sum(a["counts"].values())
                   for a in st if a["app"] in ids):
                break
        tasks = {a["name"]: m.json("tasks", str(i), "--limit", "100000", token=token)
                 for a, i in zip(s["application"], ids)}
        # The idle agents drain and their jobs end; wait for it so the next run starts clean.
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            pilots = m.json("pilots", "--all")
            if all(p["state"] in ("ended", "failed", "cancelled", "lost") for p in pilots):
                break
            time.sleep(1)
        result = {"policy": policy, "run": run, "submitted": t_submit, "apps": ids,
                  "polls": polls, "tasks": tasks, "pilots": pilots,
                  "machine_load": os.getloadavg()}
        (out / f"live-{tag}.json").write_text(json.dumps(result))
        log(f"{tag}: done")
    finally:
        m.stop()


def live(out):
    s = settings()
    make_cgroup(s["platform"]["lab-shared"]["cpu_quota"])
    for run in range(1, s["live"]["runs"] + 1):
        for policy in s["live"]["order"]:
            if not (out / f"live-{policy}-{run}.json").exists():
                live_run(out, policy, run)


# ---------------------------------------------------------------------------- simulate


def simulate(out):
    s = settings()
    scen = out / "scenario.toml"
    lines = ['name = "two-level-live"', 'kind = "Default"', f'profile = "{out / "profile.toml"}"', ""]
    for n in s["platform"]:
        lines += ["[[platform]]", f'name = "{n}"', "nodes = 1", ""]
    for a in s["application"]:
        lines += ["[[application]]", f'name = "{a["name"]}"', f"tasks = {a['tasks']}", ""]
    scen.write_text("\n".join(lines))
    result = {}
    for policy, p in s["policies"].items():
        r = subprocess.run([str(BIN / "hetpilot-research"), "simulate", "--scenario", str(scen),
                            "--first", p["first"], "--second", p["second"],
                            "--platform-affinity", p["metric"],
                            "--runs", str(s["simulate"]["runs"]), "--json"],
                           capture_output=True, text=True, check=True)
        result[policy] = json.loads(r.stdout)
    (out / "simulated.json").write_text(json.dumps(result, indent=1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("step", choices=["offline", "live", "recheck", "simulate", "report", "all"])
    ap.add_argument("--out", type=Path, default=Path("/var/tmp/two-level-live"))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    steps = ["offline", "live", "recheck", "simulate", "report"] if args.step == "all" else [args.step]
    for step in steps:
        if step == "report":
            import two_level_live_report
            two_level_live_report.write(args.out, settings())
        else:
            globals()[step](args.out)


if __name__ == "__main__":
    main()
