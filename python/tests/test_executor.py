"""hetpilot.Executor against a real manager and agent."""

from __future__ import annotations

from pathlib import Path

import pytest

from hetpilot import Executor, TaskFailed, command_line


def test_command_line_quotes_words_and_doubles_braces() -> None:
    assert command_line(["echo", "a b", "{x}"]) == "echo 'a b' '{{x}}'"
    with pytest.raises(ValueError):
        command_line([])


def test_map_is_one_application_with_results_in_order(manager) -> None:
    manager.agent(4)
    client = manager.client()
    items = [f"item {i}" for i in range(10_000)]
    with Executor(client, name="map") as ex:
        ends = list(ex.map(["echo"], items))
    # Each item was its task's last word (the agent runs on this machine).
    last = ends[-1]
    assert last.stdout_path is not None
    assert Path(last.stdout_path).read_text() == f"item {last.index}\n"
    assert [e.index for e in ends] == list(range(10_000))
    assert all(e.ok for e in ends)
    assert len(client.apps()) == 1, "one application for the whole map"


def test_submit_resolves_failures_as_task_failed(manager) -> None:
    manager.agent(2)
    with Executor(manager.client(), max_attempts=1) as ex:
        ok = ex.submit(["true"])
        bad = ex.submit(["sh", "-c", "exit 3"])
        assert ok.result(timeout=60).exit_code == 0
        with pytest.raises(TaskFailed) as e:
            bad.result(timeout=60)
    assert e.value.end.exit_code == 3


def test_leaving_the_with_block_on_an_error_cancels_the_work(manager) -> None:
    client = manager.client()  # no agent: nothing runs
    with pytest.raises(KeyboardInterrupt):
        with Executor(client) as ex:
            futures = [ex.submit(["true"]) for _ in range(2)]
            raise KeyboardInterrupt
    assert all(f.cancelled() for f in futures)
    assert all(a["cancelled"] for a in client.apps())


def test_submits_past_the_managers_rate_wait_their_turn(manager) -> None:
    manager.agent(4)
    with Executor(manager.client()) as ex:
        # The default burst is 20 submits; the rest wait out the manager's Retry-After.
        futures = [ex.submit(["true"]) for _ in range(24)]
        assert all(f.result(timeout=120).ok for f in futures)
