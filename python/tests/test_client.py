"""The client's calls against a real manager and agent."""

from __future__ import annotations

import pytest

from hetpilot import AppEnd, NotFound, TaskEnd, Unauthorized, BadRequest
from hetpilot.errors import CODES


def test_submit_wait_status_tasks_logs_and_output(manager) -> None:
    manager.agent()
    c = manager.client()
    app = c.submit_array("sh -c 'echo out-{index}; test {index} -lt 3'", 4, name="py", max_attempts=1)
    summary = c.wait(app)
    assert summary["counts"]["done"] == 3 and summary["counts"]["failed"] == 1
    assert [a["app"] for a in c.apps()] == [app]
    rows = c.tasks(app)
    assert [(r["task"]["index"], r["state"]) for r in rows] == [
        (0, "done"), (1, "done"), (2, "done"), (3, "failed")]
    assert [r["task"]["index"] for r in c.tasks(app, state="failed")] == [3]
    detail = c.logs(f"{app}.3")
    assert detail["history"][-1]["exit_code"] == 1
    assert c.output(f"{app}.1") == b"out-1\n"
    assert any(row["user"] == "admin" for row in c.usage())
    assert isinstance(c.schedule(), dict)
    assert isinstance(c.affinity(), dict)


def test_every_end_arrives_once_and_a_resumed_stream_neither_loses_nor_doubles(manager) -> None:
    manager.agent(2)
    c = manager.client()
    app = c.submit_lines("echo {}", [f"line {i}" for i in range(30)], name="lines")
    first = []
    for event in c.events(app):
        assert isinstance(event, TaskEnd)
        first.append(event)
        if len(first) == 10:
            break  # the stream is dropped here
    rest = list(c.events(app, after=first[-1].cursor))
    assert isinstance(rest[-1], AppEnd)
    ends = first + rest[:-1]
    assert sorted(e.index for e in ends) == list(range(30))
    cursors = [e.cursor for e in ends]
    assert cursors == sorted(set(cursors)), "cursors grow, none twice"
    assert all(e.ok and e.exit_code == 0 for e in ends)


def test_cancel_and_errors_carry_the_managers_message(manager) -> None:
    c = manager.client()
    app = c.submit_array("true", 3)  # no agent: it waits
    cancelled = c.cancel(app)
    assert cancelled["cancelled"] is True
    assert c.wait(app)["counts"]["cancelled"] == 3
    bob = manager.client(manager.user("bob"))
    with pytest.raises(NotFound) as missing:
        bob.status(app)
    assert missing.value.status == 404 and str(app) in missing.value.message
    assert missing.value.code == "not_found"
    with pytest.raises(BadRequest) as bad:
        list(c.events(app, after=-1))
    assert "`after`" in bad.value.message
    assert bad.value.code == "invalid_field"


def test_a_revoked_token_raises_unauthorized(manager) -> None:
    old = manager.client(manager.user("carol"))
    old.apps()
    manager.user("carol")  # re-issued: the old token stops working
    with pytest.raises(Unauthorized) as e:
        old.apps()
    assert e.value.status == 401
    assert e.value.code == "unauthorized"
    assert e.value.code in CODES
