"""The task-event stream (``GET /v1/apps/APP/events``): each task's end, in the order the
manager stored them, each with the cursor that resumes the stream just past it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional, Union


@dataclass(frozen=True)
class TaskEnd:
    """One task's end: its final state and its last attempt."""

    cursor: int
    app: int
    index: int
    state: str
    attempt: int
    outcome: Optional[str]
    exit_code: Optional[int]
    signal: Optional[int]
    wall_ms: Optional[float]
    agent: Optional[int]
    host: Optional[str]
    stdout_path: Optional[str]
    stderr_path: Optional[str]
    error: Optional[str]

    @property
    def task(self) -> str:
        """The task as the CLI names it, ``APP.INDEX``."""
        return f"{self.app}.{self.index}"

    @property
    def ok(self) -> bool:
        return self.state == "done"


@dataclass(frozen=True)
class AppEnd:
    """Every task of the application ended and every end was sent; the stream closes."""

    app: int
    cancelled: bool
    counts: Dict[str, int]


Event = Union[TaskEnd, AppEnd]


def parse(line: Dict[str, Any]) -> Optional[Event]:
    """One line of the stream as an event; ``None`` for a keepalive or an unknown type."""
    kind = line.get("type")
    if kind == "task_end":
        task = line["task"]
        return TaskEnd(
            cursor=line["cursor"],
            app=task["app"],
            index=task["index"],
            state=line["state"],
            attempt=line["attempt"],
            outcome=line.get("outcome"),
            exit_code=line.get("exit_code"),
            signal=line.get("signal"),
            wall_ms=line.get("wall_ms"),
            agent=line.get("agent"),
            host=line.get("host"),
            stdout_path=line.get("stdout_path"),
            stderr_path=line.get("stderr_path"),
            error=line.get("error"),
        )
    if kind == "app_end":
        return AppEnd(app=line["app"], cancelled=line["cancelled"], counts=line["counts"])
    return None
