"""``hetpilot.Executor``: a :class:`concurrent.futures.Executor` for commands. Its futures
resolve from the task-event stream, one follower thread per application.

``submit(["prog", "arg"])`` runs one command as one application; ``map(["prog", "-x"],
items)`` runs ``prog -x ITEM`` for each item as **one** application of one task per item,
however many items there are. A future's result is the task's :class:`TaskEnd`; a task
that failed raises :class:`TaskFailed`, and one cancelled with its application leaves its
future cancelled. Leaving the ``with`` block waits for every future, as
``concurrent.futures`` does; leaving it with an exception cancels the applications first.
"""

from __future__ import annotations

import shlex
import threading
from concurrent.futures import Future
from concurrent.futures import Executor as _Executor
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence

from .client import Client
from .errors import HetpilotError, TaskFailed
from .events import TaskEnd


def command_line(argv: Sequence[str]) -> str:
    """``argv`` as a hetpilot command template that runs exactly those words (quoted for
    the template's word splitting, braces doubled so none is a placeholder)."""
    if not argv:
        raise ValueError("a command needs at least one word")
    words = (str(w).replace("{", "{{").replace("}", "}}") for w in argv)
    return " ".join(shlex.quote(w) for w in words)


class Executor(_Executor):
    """Runs commands as hetpilot tasks through ``client`` (default: ``Client()``, from the
    environment). ``options`` go into every application's spec (``cores``,
    ``memory_mb``, ``max_attempts``, ``timeout_secs``, ``gpus``...)."""

    def __init__(self, client: Optional[Client] = None, *, name: str = "python", **options: Any):
        self._client = client or Client()
        self._name = name
        self._options = options
        self._apps: List[int] = []
        self._followers: List[threading.Thread] = []
        self._lock = threading.Lock()
        self._shut = False

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> "Future[TaskEnd]":  # type: ignore[override]
        """Runs the command ``fn`` (a list of words) as one task."""
        if not isinstance(fn, (list, tuple)) or args or kwargs:
            raise TypeError("submit takes one command as a list of words: submit(['prog', 'arg'])")
        spec = self._spec(command_line(fn), {"array": {"start": 0, "end": 0}})
        return self._start(spec, 1)[0]

    def map(  # type: ignore[override]
        self,
        fn: Any,
        *iterables: Iterable[Any],
        timeout: Optional[float] = None,
        chunksize: int = 1,
    ) -> Iterator[TaskEnd]:
        """Runs the command ``fn`` (a list of words) once per item of the one iterable,
        with the item as its last word, as one application; yields the ends in order."""
        del chunksize
        if not isinstance(fn, (list, tuple)) or len(iterables) != 1:
            raise TypeError("map takes a command prefix (a list of words) and one iterable")
        items = [str(item) for item in iterables[0]]
        if not items:
            return iter(())
        spec = self._spec(command_line(fn) + " {}", {"lines": items})
        futures = self._start(spec, len(items))
        return (f.result(timeout) for f in futures)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """With ``cancel_futures``, cancels every application this executor started;
        with ``wait``, returns once every future is resolved."""
        with self._lock:
            self._shut = True
            apps, followers = list(self._apps), list(self._followers)
        if cancel_futures:
            for app in apps:
                self._client.cancel(app)
        if wait:
            for follower in followers:
                follower.join()

    def __exit__(self, kind: Any, *_: Any) -> None:
        self.shutdown(wait=True, cancel_futures=kind is not None)

    def _spec(self, command: str, tasks: Any) -> Dict[str, Any]:
        return {"name": self._name, "command": command, "tasks": tasks, **self._options}

    def _start(self, spec: Dict[str, Any], count: int) -> "List[Future[TaskEnd]]":
        with self._lock:
            if self._shut:
                raise RuntimeError("cannot submit after shutdown")
        app = self._client.submit(spec)
        futures: "List[Future[TaskEnd]]" = [Future() for _ in range(count)]
        follower = threading.Thread(
            target=_resolve, args=(self._client, app, futures), name=f"hetpilot-app-{app}", daemon=True
        )
        with self._lock:
            self._apps.append(app)
            self._followers.append(follower)
        follower.start()
        return futures


def _resolve(client: Client, app: int, futures: "List[Future[TaskEnd]]") -> None:
    """Resolves ``futures`` (one per task, by index) from ``app``'s event stream."""
    try:
        for event in client.events(app):
            if not isinstance(event, TaskEnd) or not 0 <= event.index < len(futures):
                continue
            _settle(futures[event.index], event)
    except HetpilotError as e:
        for f in futures:
            _fail(f, e)
        return
    gone = HetpilotError(f"application {app} ended without this task's end")
    for f in futures:
        _fail(f, gone)


def _settle(future: "Future[TaskEnd]", end: TaskEnd) -> None:
    if future.done():
        return
    if end.state == "cancelled":
        future.cancel()
    elif end.ok:
        future.set_result(end)
    else:
        future.set_exception(TaskFailed(end))


def _fail(future: "Future[Any]", error: BaseException) -> None:
    if not future.done():
        future.set_exception(error)


