"""Following one application's event stream across dropped connections, shared by the sync
and the asyncio client: each line's event, the cursor to resume from, and how long to wait
before the next try (giving up after :data:`MAX_RESUMES` tries in a row with no event)."""

from __future__ import annotations

import json
from typing import Optional

import httpx

from .errors import Unreachable
from .events import AppEnd, Event, TaskEnd, parse

#: Resumptions of the event stream in a row, with no event between them, before giving up.
MAX_RESUMES = 6

#: Keepalives come every 15 s: a minute of silence is a dead connection.
STREAM_READ_TIMEOUT_S = 60.0

#: Why a stream that closed without an error is opened again.
CLOSED_EARLY = "the event stream closed before the application's end"


def stream_timeout(timeout: float) -> httpx.Timeout:
    """The client's ``timeout``, with the read timeout a stream needs."""
    return httpx.Timeout(timeout, read=STREAM_READ_TIMEOUT_S)


def event_of(line: str) -> Optional[Event]:
    """One line of the stream as its event; ``None`` for a blank line or a keepalive."""
    return parse(json.loads(line)) if line.strip() else None


class Resumption:
    """Where a stream of the manager at ``url`` resumes (``after``) and whether to."""

    def __init__(self, url: str, after: int) -> None:
        self.url = url
        self.after = after
        self._tries = 0

    def seen(self, event: Event) -> bool:
        """Records ``event``; whether it was the last (the application's end)."""
        self._tries = 0
        if isinstance(event, TaskEnd):
            self.after = event.cursor
        return isinstance(event, AppEnd)

    def broke(self, why: str) -> float:
        """The stream ended early because of ``why``: the seconds to wait before opening
        it again, or :class:`Unreachable` after :data:`MAX_RESUMES` tries in a row."""
        self._tries += 1
        if self._tries > MAX_RESUMES:
            raise Unreachable(f"{why} ({self.url}); gave up after {MAX_RESUMES} tries")
        return 0.25 * 2 ** min(self._tries, 5)
