"""hetpilot from Python: a typed :class:`Client` of the manager's API and an
:class:`Executor` (``concurrent.futures``) whose futures resolve from the task-event
stream (their asyncio variants are in :mod:`hetpilot.aio`). Both read ``HETPILOT_URL``
and ``HETPILOT_TOKEN`` like the CLI."""

from .client import Client
from .errors import (
    BadRequest,
    Conflict,
    Forbidden,
    HetpilotError,
    NotFound,
    ServerError,
    TaskFailed,
    TooLarge,
    TooManyRequests,
    Unauthorized,
    Unreachable,
)
from .events import AppEnd, TaskEnd
from .executor import Executor, command_line
from .workflow import WorkflowInputsError

__all__ = [
    "AppEnd",
    "BadRequest",
    "Client",
    "Conflict",
    "Executor",
    "Forbidden",
    "HetpilotError",
    "NotFound",
    "ServerError",
    "TaskEnd",
    "TaskFailed",
    "TooLarge",
    "TooManyRequests",
    "Unauthorized",
    "Unreachable",
    "WorkflowInputsError",
    "command_line",
]
