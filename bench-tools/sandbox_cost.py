#!/usr/bin/env python3
"""Per-task cost of the agent's bubblewrap sandbox (`--sandbox bwrap`).

Runs N `/bin/true` tasks through a real manager and one 1-slot agent, with and without the
sandbox, alternating, R times each. Prints, per arm, the median over runs of: the median
task wall time recorded by the agent (spawn to reap, so it includes bwrap's setup) and the
makespan from submission to the last task done.

    cargo build --workspace --bins          # or --release, then BIN=target/release
    python3 bench-tools/sandbox_cost.py [N=200] [R=3]
"""
import json, os, sqlite3, statistics, subprocess, sys, tempfile, time, urllib.request

BIN = os.environ.get("BIN", "target/debug")
N = int(sys.argv[1]) if len(sys.argv) > 1 else 200
R = int(sys.argv[2]) if len(sys.argv) > 2 else 3


def call(url, token, method="GET", body=None):
    req = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode())
    req.add_header("authorization", f"Bearer {token}")
    req.add_header("content-type", "application/json")
    with urllib.request.urlopen(req) as r:
        return json.load(r)


def wait_for(what, f, timeout=300):
    end = time.time() + timeout
    while time.time() < end:
        v = f()
        if v:
            return v
        time.sleep(0.02)
    sys.exit(f"timed out waiting for {what}")


def run(sandbox):
    with tempfile.TemporaryDirectory() as d:
        log = open(os.path.join(d, "manager.log"), "w")
        m = subprocess.Popen([f"{BIN}/hetpilot", "serve", "--listen", "127.0.0.1:0", "--data-dir", d],
                             stdout=subprocess.DEVNULL, stderr=log)
        try:
            url_file = os.path.join(d, "manager.url")
            url = wait_for("the manager", lambda: os.path.exists(url_file) and open(url_file).read().strip())
            admin = open(os.path.join(d, "admin.token")).read().strip()
            token = call(f"{url}/v1/agent-tokens", admin, "POST", {"platform": "local"})["token"]
            extra = ["--sandbox", "bwrap"] if sandbox else []
            env = dict(os.environ, HETPILOT_AGENT_TOKEN=token)
            a = subprocess.Popen([f"{BIN}/hetpilot-agent", "--manager", url, "--platform", "local",
                                  "--slots", "1", "--work-dir", os.path.join(d, "agent")] + extra,
                                 env=env, stdout=subprocess.DEVNULL, stderr=open(os.path.join(d, "agent.log"), "w"))
            try:
                wait_for("the agent", lambda: call(f"{url}/v1/agents", admin))
                t0 = time.time()
                app = call(f"{url}/v1/apps", admin, "POST",
                           {"name": "true", "command": "/bin/true", "tasks": {"array": {"start": 0, "end": N - 1}}})["app"]
                wait_for("the tasks", lambda: call(f"{url}/v1/apps/{app}", admin)["counts"].get("done", 0) == N)
                makespan = time.time() - t0
                db = sqlite3.connect(f"file:{d}/hetpilot.db?mode=ro", uri=True)
                walls = [r[0] for r in db.execute("SELECT wall_ms FROM attempts WHERE app_id = ?", (app,))]
                return statistics.median(walls), makespan
            finally:
                a.kill()
                a.wait()
        finally:
            m.kill()
            m.wait()


results = {False: [], True: []}
for _ in range(R):
    for sandbox in (False, True):
        results[sandbox].append(run(sandbox))
for sandbox, rs in results.items():
    wall = statistics.median(r[0] for r in rs)
    span = statistics.median(r[1] for r in rs)
    print(f"sandbox={'bwrap' if sandbox else 'none ':5}  median task wall {wall:6.2f} ms  "
          f"makespan {span:5.2f} s ({span / N * 1000:5.2f} ms/task)  runs: "
          + ", ".join(f"{w:.2f}/{s:.2f}" for w, s in rs))
