#!/usr/bin/env python3
"""The Python package's Executor against the CLI: N `/bin/true` tasks through one agent of
S slots on a fresh release manager, once as `Executor.map(["/bin/true"], range(N))` (one
application; every future resolved from the task-event stream) and once as
`hetpilot submit --wait --array 0-(N-1) -- /bin/true`, alternating, R runs each.

Usage (release binaries in BIN_DIR, the package installed: `pip install ./python`):
    python3 bench-tools/python_executor.py BIN_DIR N S [R]
Prints one line per run, then `executor|cli,N,S,median_seconds,runs` per way.
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

import hetpilot


def start(bin_dir, slots, work):
    """A manager on 127.0.0.1 and one agent of `slots` slots: (processes, url, token)."""
    data = os.path.join(work, "manager")
    os.makedirs(data)
    manager = subprocess.Popen(
        [os.path.join(bin_dir, "hetpilot"), "serve", "--listen", "127.0.0.1:0", "--data-dir", data],
        stdout=subprocess.DEVNULL,
        stderr=open(os.path.join(work, "manager.log"), "w"),
    )
    url_file = os.path.join(data, "manager.url")
    deadline = time.time() + 60
    while not (os.path.exists(url_file) and os.path.getsize(url_file) > 0):
        if time.time() > deadline or manager.poll() is not None:
            raise SystemExit("the manager did not start: see " + work)
        time.sleep(0.05)
    url = open(url_file).read().strip()
    token = open(os.path.join(data, "admin.token")).read().strip()
    env = dict(os.environ, HETPILOT_URL=url, HETPILOT_TOKEN=token)
    agent_token = subprocess.run(
        [os.path.join(bin_dir, "hetpilot"), "token", "agent", "--platform", "local"],
        env=env, check=True, capture_output=True, text=True,
    ).stdout.strip()
    agent = subprocess.Popen(
        [os.path.join(bin_dir, "hetpilot-agent"), "--manager", url, "--platform", "local",
         "--slots", str(slots), "--work-dir", os.path.join(work, "agent")],
        env=dict(os.environ, HETPILOT_AGENT_TOKEN=agent_token),
        stdout=subprocess.DEVNULL,
        stderr=open(os.path.join(work, "agent.log"), "w"),
    )
    return [manager, agent], url, token


def executor_run(client, n):
    t0 = time.perf_counter()
    with hetpilot.Executor(client, name="bench") as ex:
        ends = list(ex.map(["/bin/true"], range(n)))
    took = time.perf_counter() - t0
    failed = [e for e in ends if e.exit_code != 0]
    assert len(ends) == n and not failed, f"{len(ends)} ends, {len(failed)} failed"
    return took


def cli_run(bin_dir, url, token, n):
    env = dict(os.environ, HETPILOT_URL=url, HETPILOT_TOKEN=token)
    t0 = time.perf_counter()
    subprocess.run(
        [os.path.join(bin_dir, "hetpilot"), "submit", "--wait", "--array", f"0-{n - 1}", "--", "/bin/true"],
        env=env, check=True, stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - t0


def main():
    bin_dir, n, slots = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    runs = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    times = {"executor": [], "cli": []}
    with tempfile.TemporaryDirectory() as work:
        procs, url, token = start(bin_dir, slots, work)
        try:
            client = hetpilot.Client(url=url, token=token)
            for r in range(runs):
                for way in ("executor", "cli"):
                    took = executor_run(client, n) if way == "executor" else cli_run(bin_dir, url, token, n)
                    times[way].append(took)
                    load = os.getloadavg()[0]
                    print(f"run {r} {way} {took:.2f} s load {load:.2f}", flush=True)
        finally:
            for p in procs:
                p.terminate()
                p.wait()
    for way, ts in times.items():
        print(f"{way},{n},{slots},{statistics.median(ts):.2f},{runs}")


if __name__ == "__main__":
    main()
