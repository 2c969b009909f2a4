"""``snakemake --executor hetpilot`` (the plugin in ../snakemake-executor-plugin-hetpilot)
running real workflows against a real manager and agent: a fan-out with dependencies to its
end, a failing job, and a run cancelled by Ctrl-C."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import List

import pytest

from hetpilot import AppEnd, TaskEnd, TooManyRequests, Unauthorized

#: Parts of the fan-out: twice what the test's agent runs at once (8 slots, 2 threads each).
#: Each job is a Snakemake process of its own, ~0.75 s of CPU before its rule runs, so a
#: larger fan-out costs the test minutes on a busy machine and proves nothing more.
FAN_OUT = 8

SNAKEFILE = textwrap.dedent(
    f"""
    localrules: all

    rule all:
        input: "summary.txt"

    rule seed:
        output: "seed.txt"
        shell: "echo 1000 > {{output}}"

    rule part:
        input: "seed.txt"
        output: "parts/{{i}}.txt"
        threads: 2
        resources: mem_mb=20
        shell: "echo $(( $(cat {{input}}) + {{wildcards.i}} )) $HETPILOT_CORES > {{output}}"

    rule summary:
        input: expand("parts/{{i}}.txt", i=range({FAN_OUT}))
        output: "summary.txt"
        shell: "cat {{input}} | awk '{{{{ s += $1 }}}} END {{{{ print s }}}}' > {{output}}"

    rule fails:
        output: "never.txt"
        shell: "echo about to fail >&2; exit 3"

    rule fine:
        output: "fine.txt"
        shell: "echo fine > {{output}}"

    rule needs_fpga:
        output: "fpga.txt"
        resources: fpga=1
        shell: "touch {{output}}"

    rule slow:
        output: "slow.txt"
        shell: "touch slow.started; sleep 300; touch {{output}}"
    """
)


def workflow(tmp_path: Path) -> Path:
    wf = tmp_path / "wf"
    wf.mkdir()
    (wf / "Snakefile").write_text(SNAKEFILE)
    return wf


def snakemake_command(wf: Path, *targets: str, extra: tuple = ()) -> List[str]:
    return [sys.executable, "-m", "snakemake", "--executor", "hetpilot", "--jobs", "100",
            "--directory", str(wf), "--snakefile", str(wf / "Snakefile"), *extra, *targets]


def environment(manager) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HETPILOT_")}
    env["HETPILOT_URL"] = manager.url
    env["HETPILOT_TOKEN"] = manager.admin
    return env


def run(manager, wf: Path, *targets: str, extra: tuple = ()) -> subprocess.CompletedProcess:
    return subprocess.run(snakemake_command(wf, *targets, extra=extra), env=environment(manager),
                          capture_output=True, text=True, timeout=400)


def every_task(client) -> list:
    return [t for app in client.apps() for t in client.tasks(app["app"])]


def test_a_fan_out_runs_to_its_end_as_batched_hetpilot_tasks(manager, tmp_path) -> None:
    manager.agent(8)
    wf = workflow(tmp_path)
    done = run(manager, wf, "all")
    assert done.returncode == 0, done.stderr[-4000:]
    # Each part ran on hetpilot with its rule's 2 threads as its cores.
    parts = sorted(p.read_text().split() for p in (wf / "parts").iterdir())
    assert sorted(int(value) for value, _ in parts) == [1000 + i for i in range(FAN_OUT)]
    assert {cores for _, cores in parts} == {"2"}
    assert int((wf / "summary.txt").read_text()) == sum(int(value) for value, _ in parts)

    client = manager.client()
    apps = client.apps()
    tasks = every_task(client)
    assert len(tasks) == 1 + FAN_OUT + 1, "seed, the parts and the summary, each once"
    assert all(t["state"] == "done" for t in tasks), tasks
    # The fan-out's jobs were ready in one scheduling round: one application.
    fan = [a for a in apps if a["name"] == f"snakemake part ({FAN_OUT} jobs)"]
    assert len(fan) == 1, [a["name"] for a in apps]
    spec = client.status(fan[0]["app"])
    assert spec["counts"]["done"] == FAN_OUT


def test_a_failing_job_fails_the_workflow_and_its_neighbour_still_ends(manager, tmp_path) -> None:
    manager.agent(4)
    wf = workflow(tmp_path)
    failed = run(manager, wf, "fails", "fine", extra=("--keep-going",))
    assert failed.returncode != 0
    assert (wf / "fine.txt").read_text() == "fine\n"
    assert not (wf / "never.txt").exists()
    # Snakemake names the failed rule, the hetpilot task it ran as, and that task's stderr
    # on the shared file system, where the rule's own message is.
    assert "Error in rule fails" in failed.stderr, failed.stderr[-4000:]
    said = re.search(r"hetpilot task (\d+\.\d+) exited 1\.", failed.stderr)
    assert said, failed.stderr[-4000:]
    log = re.search(r"log: (\S+\.err)", failed.stderr)
    assert log and "about to fail" in Path(log.group(1)).read_text(), failed.stderr[-4000:]
    tasks = {f"{t['task']['app']}.{t['task']['index']}": t for t in every_task(manager.client())}
    assert tasks[said.group(1)]["state"] == "failed"
    states = sorted(t["state"] for t in tasks.values())
    assert states == ["done", "failed"], "one run each: hetpilot does not retry by default"


def test_a_resource_no_platform_offers_stops_the_workflow_with_the_managers_words(
    manager, tmp_path
) -> None:
    manager.agent(2)
    wf = workflow(tmp_path)
    refused = run(manager, wf, "needs_fpga")
    assert refused.returncode != 0
    assert "hetpilot refused the 1 job(s) of rule(s) needs_fpga" in refused.stderr, refused.stderr[-4000:]
    assert "resources.fpga" in refused.stderr
    assert manager.client().apps() == [], "nothing was stored"


def test_ctrl_c_cancels_the_running_jobs_on_hetpilot(manager, tmp_path) -> None:
    manager.agent(2)
    wf = workflow(tmp_path)
    process = subprocess.Popen(snakemake_command(wf, "slow"), env=environment(manager),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not (wf / "slow.started").exists():
            assert process.poll() is None, process.communicate()[0][-4000:]
            assert time.monotonic() < deadline, "the job never started on the agent"
            time.sleep(0.1)
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode != 0, output[-4000:]
    # Snakemake cancelled the application before it exited; the agent then kills the run.
    client = manager.client()
    (app,) = client.apps()
    assert app["cancelled"], app
    deadline = time.monotonic() + 30
    while every_task(client)[0]["state"] != "cancelled":
        assert time.monotonic() < deadline, every_task(client)
        time.sleep(0.1)
    assert not (wf / "slow.txt").exists()


def test_threads_memory_gpus_time_and_named_resources_become_the_hetpilot_request() -> None:
    from snakemake_interface_common.exceptions import WorkflowError

    from snakemake_executor_plugin_hetpilot.requests import request_of

    asked = request_of("align", 4, {"_cores": 4, "_nodes": 1, "tmpdir": "/tmp", "mem_mb": 1000,
                                    "mem_mib": 954, "disk_mb": 5000, "runtime": 90, "gpu": 2,
                                    "fpga": 1, "slurm_partition": "big", "api_calls": 1},
                       not_asked={"api_calls"})
    assert asked.fields() == {"cores": 4, "memory_mb": 954, "gpus": 2.0, "timeout_secs": 5400,
                              "resources": {"fpga": 1.0}}
    # mem_mb alone is converted to MiB, rounded up; a share of a GPU stays a share.
    shared = request_of("r", 1, {"mem_mb": 20, "gpus": "0.25"})
    assert shared.fields() == {"cores": 1, "memory_mb": 20, "gpus": 0.25}
    assert request_of("r", 1, {"mem_mb": 1000}).memory_mb == 954
    # Equal requests are one key: such jobs of a round share an application.
    assert request_of("a", 2, {"mem_mb": 5}) == request_of("b", 2, {"mem_mb": 5})
    for hostile in ({"fpga": -1}, {"mem_mb": float("nan")}, {"runtime": 10**12},
                    {"CamelCase": 1}, {"mem_mib": 2**60}):
        with pytest.raises(WorkflowError) as e:
            request_of("bad", 1, hostile)
        assert "rule bad" in str(e.value)


def test_a_jobs_snakemake_process_does_not_load_the_hetpilot_client() -> None:
    # Every job is a fresh Snakemake process that imports every executor plugin installed;
    # the client (httpx and all) would add about a tenth to each job's start-up CPU.
    probe = ("import sys, snakemake_executor_plugin_hetpilot as p; assert p.Executor; "
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('hetpilot', 'httpx')))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            timeout=60)
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip() == "[]"


class _CappedThenFine:
    """A client whose first stream open is refused at the user's cap, then streams."""

    def __init__(self, ends: list) -> None:
        self.ends = ends
        self.opens = 0

    def events(self, app: int, after: int = 0):
        self.opens += 1
        if self.opens == 1:
            raise TooManyRequests("too many event streams open", 429, retry_after=0.01)
        yield from self.ends


def _end(app: int, index: int, cursor: int) -> TaskEnd:
    return TaskEnd(cursor=cursor, app=app, index=index, state="done", attempt=1, outcome="success",
                   exit_code=0, signal=None, wall_ms=1.0, agent=1, host="h", stdout_path=None,
                   stderr_path=None, error=None)


def _until_taken(follower, app: int, index: int):
    deadline = time.monotonic() + 10
    while (outcome := follower.take(app, index)) is None:
        assert time.monotonic() < deadline, "no outcome"
        follower.news.wait(0.1)
    return outcome


def test_the_follower_waits_out_the_stream_cap_and_reports_a_lost_stream_per_task() -> None:
    from snakemake_executor_plugin_hetpilot.follower import Follower

    capped = _CappedThenFine([_end(7, 0, 3), _end(7, 1, 5), AppEnd(app=7, cancelled=False, counts={})])
    follower = Follower(capped, max_streams=1)  # type: ignore[arg-type]
    follower.follow(7)
    assert _until_taken(follower, 7, 1).cursor == 5
    assert _until_taken(follower, 7, 0).cursor == 3
    assert follower.take(7, 0) is None, "an end is taken once"
    assert capped.opens == 2, "opened again after the 429"

    class Revoked:
        def events(self, app: int, after: int = 0):
            raise Unauthorized("the token was revoked", 401)
            yield  # pragma: no cover - a generator that fails at once

    lost = Follower(Revoked(), max_streams=1)  # type: ignore[arg-type]
    lost.follow(9)
    for index in (0, 1):
        outcome = _until_taken(lost, 9, index)
        assert isinstance(outcome, Unauthorized) and "revoked" in outcome.message
    deadline = time.monotonic() + 10
    while lost.running():
        assert time.monotonic() < deadline
        time.sleep(0.01)
