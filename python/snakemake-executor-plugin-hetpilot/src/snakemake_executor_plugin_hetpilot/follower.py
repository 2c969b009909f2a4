"""Follows the task-event streams of the applications the plugin submitted, one thread
each and at most ``max_streams`` streams open at once, and keeps each task's end until
the executor's status check takes it. ``news`` is set at every end, so the status check
runs as soon as there is something to report instead of on a timer."""

from __future__ import annotations

import threading
import time
from typing import Dict, Optional, Set, Tuple, Union

from hetpilot import Client, HetpilotError, TaskEnd, TooManyRequests

#: The longest wait before opening a stream again after a 429 (the user's cap on open
#: streams, reached by other clients), seconds.
MAX_CAP_WAIT_S = 30.0

#: What a status check may learn of a task: its end, or why its application could not be
#: followed.
Outcome = Union[TaskEnd, HetpilotError]


class Follower:
    def __init__(self, client: Client, max_streams: int) -> None:
        self._client = client
        self._streams = threading.Semaphore(max_streams)
        self._lock = threading.Lock()
        self._ends: Dict[Tuple[int, int], TaskEnd] = {}
        self._lost: Dict[int, HetpilotError] = {}
        self._running: Set[int] = set()
        #: Set whenever an end (or a lost stream) is recorded.
        self.news = threading.Event()

    def follow(self, app: int) -> None:
        """Starts following ``app`` from its first end."""
        with self._lock:
            self._running.add(app)
        thread = threading.Thread(target=self._follow, args=(app,), name=f"hetpilot-events-{app}", daemon=True)
        thread.start()

    def take(self, app: int, index: int) -> Optional[Outcome]:
        """Task ``index`` of ``app``'s end, once (``None`` while it runs), or why the
        application's stream was lost."""
        with self._lock:
            end = self._ends.pop((app, index), None)
            return end if end is not None else self._lost.get(app)

    def running(self) -> Set[int]:
        """The applications whose end has not been seen yet."""
        with self._lock:
            return set(self._running)

    def _follow(self, app: int) -> None:
        after = 0
        with self._streams:
            while True:
                try:
                    for event in self._client.events(app, after):
                        if isinstance(event, TaskEnd):
                            after = event.cursor
                            with self._lock:
                                self._ends[(app, event.index)] = event
                            self.news.set()
                    break
                except TooManyRequests as e:
                    time.sleep(min(e.retry_after or 1.0, MAX_CAP_WAIT_S))
                except Exception as e:  # noqa: BLE001 - a thread that dies silently hangs the workflow
                    lost = e if isinstance(e, HetpilotError) else HetpilotError(
                        f"reading the event stream of application {app} failed: {e!r}"
                    )
                    with self._lock:
                        self._lost[app] = lost
                    self.news.set()
                    break
        with self._lock:
            self._running.discard(app)
