"""Application files that list their tasks as ``[[task]]`` tables (a workflow in TOML),
submitted from Python as ``hetpilot submit FILE`` takes them: ``Client.submit_app_file``
sends the text to the manager, which reads it with the CLI's reader
(``POST /v1/workflows?format=tasks``); the tasks run in dependency order, and a refusal
names the file, the field and the task."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hetpilot import BadRequest, HetpilotError, app_file
from hetpilot.aio import AsyncClient


def _pipe(path: Path, log: Path) -> Path:
    """Three tasks appending their ids to ``log``: ``count`` after ``split``, ``join`` after
    both."""
    path.write_text(
        "max_attempts = 1\n"
        f"[[task]]\nid = \"split\"\ncommand = \"sh -c 'echo split >> {log}'\"\n"
        f"[[task]]\nid = \"count\"\ncommand = \"sh -c 'echo count >> {log}'\"\n"
        "after = [\"split\"]\nruntime = \"1s\"\n"
        f"[[task]]\nid = \"join\"\ncommand = \"sh -c 'echo join >> {log}'\"\n"
        "after = [\"split\", \"count\"]\n"
    )
    return path


def test_a_task_tables_file_runs_its_tasks_in_order(manager, tmp_path) -> None:
    manager.agent(2)
    c = manager.client(manager.user("alice"))
    log = tmp_path / "order.log"
    app = c.submit_app_file(_pipe(tmp_path / "pipe.toml", log))
    summary = c.wait(app)
    assert summary["counts"]["done"] == 3, summary
    # Named after the file's stem, as the CLI names a file that names no application.
    assert summary["name"] == "pipe"
    assert log.read_text() == "split\ncount\njoin\n"


def test_a_task_tables_file_runs_from_asyncio(manager, tmp_path) -> None:
    manager.agent(2)
    token = manager.user("alice")
    log = tmp_path / "order.log"
    path = _pipe(tmp_path / "named.toml", log)
    path.write_text('name = "from-asyncio"\n' + path.read_text())

    async def submit() -> int:
        c = AsyncClient(manager.url, token)
        try:
            return await c.submit_app_file(path)
        finally:
            await c.aclose()

    app = asyncio.run(submit())
    summary = manager.client(token).wait(app)
    assert summary["counts"]["done"] == 3, summary
    assert summary["name"] == "from-asyncio"
    assert log.read_text() == "split\ncount\njoin\n"


def test_refusals_name_the_file_the_field_and_the_task(manager, tmp_path) -> None:
    c = manager.client(manager.user("alice"))
    mpi = tmp_path / "mpi.toml"
    mpi.write_text('[[task]]\nid = "mpi"\ncommand = "mpirun ./sim"\nprocs = 0\n')
    with pytest.raises(BadRequest) as bad:
        c.submit_app_file(mpi)
    assert bad.value.message.startswith(f"{mpi}: field `procs`: task `mpi`"), bad.value.message
    assert bad.value.code == "invalid_field"
    wide = tmp_path / "wide.toml"
    wide.write_text('[[task]]\nid = "wide"\ncommand = "true"\ncores = 1099511627776\n')
    with pytest.raises(BadRequest) as bad:
        c.submit_app_file(wide)
    assert bad.value.message.startswith(f"{wide}:4: task #1: field `cores`"), bad.value.message
    stranger = tmp_path / "stranger.toml"
    stranger.write_text('[[task]]\nid = "a"\ncommand = "true"\nafter = ["nope"]\n')
    with pytest.raises(BadRequest) as bad:
        c.submit_app_file(stranger)
    assert "task `a`: parent `nope` is not a task of this file (field `after`)" in bad.value.message
    assert c.apps() == []


def test_task_tables_are_not_read_as_an_application_and_take_no_inputs_dir(tmp_path) -> None:
    path = _pipe(tmp_path / "pipe.toml", tmp_path / "log")
    with pytest.raises(HetpilotError, match=r"pipe.toml: field `task`: .*submit_app_file"):
        app_file.load(path)
    assert app_file.task_tables(path) == app_file.TaskTables(name="pipe")
    with pytest.raises(ValueError, match="inputs_dir: an application file's files are used as given"):
        from hetpilot.workflow import params

        params("tasks", emulate=False, time_scale=None, size_scale=None, inputs_dir=tmp_path,
               name=None)
