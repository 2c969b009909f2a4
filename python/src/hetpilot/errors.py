"""Why a call to the manager failed: typed exceptions carrying the manager's message and
its machine-readable code (see ``CODES``)."""

from __future__ import annotations

from typing import Optional

from .events import TaskEnd

#: Every code an error answer may carry (the API guide's "Error answers" describes each).
CODES = frozenset(
    {
        "invalid_field",
        "invalid_body",
        "unauthorized",
        "forbidden",
        "quota_exceeded",
        "not_found",
        "request_timeout",
        "conflict",
        "gone",
        "too_large",
        "name_too_long",
        "bad_range",
        "too_many_streams",
        "rate_limited",
        "internal",
        "storage_full",
    }
)


class HetpilotError(Exception):
    """A call failed; ``message`` is the manager's own words (or why it was not reached),
    ``code`` its machine-readable reason, one of ``CODES`` (None when the manager sent
    none, or the call got no answer)."""

    def __init__(self, message: str, status: Optional[int] = None, code: Optional[str] = None) -> None:
        where = ", ".join(str(x) for x in (f"HTTP {status}" if status else None, code) if x)
        super().__init__(f"{message} ({where})" if where else message)
        self.message = message
        self.status = status
        self.code = code


class Unreachable(HetpilotError):
    """The manager did not answer (not running there, network, TLS)."""


class BadRequest(HetpilotError):
    """400: the request names a field the manager refused."""


class Unauthorized(HetpilotError):
    """401: the token is missing, wrong, or was revoked or re-issued."""


class Forbidden(HetpilotError):
    """403: the token may not do this (an admin call, a quota)."""


class NotFound(HetpilotError):
    """404: no such application, task or file (another user's looks the same)."""


class Conflict(HetpilotError):
    """409: the object is not in a state that allows this."""


class TooLarge(HetpilotError):
    """413: the body, or the application it makes, is larger than the manager takes."""


class TooManyRequests(HetpilotError):
    """429: too many at once (submits, open event streams); ``retry_after``: the seconds
    the manager said to wait, when it said."""

    def __init__(
        self,
        message: str,
        status: Optional[int] = None,
        retry_after: Optional[float] = None,
        code: Optional[str] = None,
    ):
        super().__init__(message, status, code)
        self.retry_after = retry_after


class ServerError(HetpilotError):
    """5xx: the manager failed."""


class TaskFailed(HetpilotError):
    """A task of an ``Executor`` ended failed or cancelled; ``end`` is its event."""

    def __init__(self, end: TaskEnd) -> None:
        what = f"exit {end.exit_code}" if end.exit_code is not None else (end.error or end.state)
        super().__init__(f"task {end.task} {end.state}: {what}")
        self.end = end


_BY_STATUS = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: TooLarge,
}


def from_status(
    status: int, message: str, retry_after: Optional[float] = None, code: Optional[str] = None
) -> HetpilotError:
    """The exception for an answer with ``status``, the manager's ``message`` and its
    ``code`` (a code not in ``CODES``, from a newer manager, is kept as sent)."""
    if status >= 500:
        return ServerError(message, status, code)
    if status == 429:
        return TooManyRequests(message, status, retry_after, code)
    return _BY_STATUS.get(status, HetpilotError)(message, status, code)
