"""What :class:`hetpilot.Client` and :class:`hetpilot.aio.AsyncClient` share, apart from
how their requests travel: the HTTP client's settings, the paths, the error raised for a
refusal, and the calls made of several requests (submitting an application, a workflow or
an application file) written once as generators of steps (:class:`Call`, :class:`Upload`,
:class:`Submit`, :class:`Blocking`, :class:`Sleep`). Each client carries the steps out
over its own transport and sends back what each gave, or throws in what it raised, until
:func:`advance` says the call is :class:`Done`."""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Generator, Optional, TypeVar, Union
from urllib.parse import quote

import httpx

from . import app_file, workflow
from .connect import Connection
from .errors import BadRequest, TooManyRequests, Unreachable, from_status

#: The longest ``Retry-After`` a submit waits out by itself, seconds.
MAX_SUBMIT_WAIT_S = 60.0

Json = Dict[str, Any]
T = TypeVar("T")


def http_options(conn: Connection, timeout: float) -> Json:
    """The keyword arguments of an ``httpx`` client of the manager ``conn`` names, all but
    its transport: the URL, the token, the timeout and whom to trust (the CA file's
    context, else the system's CAs)."""
    return {
        "base_url": conn.url,
        "headers": {"Authorization": f"Bearer {conn.token}"},
        "timeout": timeout,
        "verify": ssl.create_default_context(cafile=conn.ca_file) if conn.ca_file else True,
    }


def unreachable(url: str, error: httpx.TransportError) -> Unreachable:
    """The error for a request to the manager at ``url`` that never got an answer."""
    return Unreachable(f"cannot reach the manager at {url}: {error}")


def raise_for(resp: httpx.Response) -> None:
    """Raises the :class:`~hetpilot.errors.HetpilotError` subclass of a refusal (status 400
    and above), with the manager's message, error code and ``Retry-After``."""
    if resp.status_code < 400:
        return
    code: Optional[str] = None
    try:
        body = resp.json()
        message = str(body["error"])
        code = body.get("code") if isinstance(body.get("code"), str) else None
    except (ValueError, KeyError, TypeError, AttributeError):
        message = resp.reason_phrase or "refused"
    try:
        retry_after: Optional[float] = float(resp.headers["retry-after"])
    except (KeyError, ValueError):
        retry_after = None
    raise from_status(resp.status_code, message, retry_after, code)


def app_path(app: int) -> str:
    """The application's resource."""
    return f"/v1/apps/{int(app)}"


def events_path(app: int) -> str:
    """The application's event stream."""
    return f"{app_path(app)}/events"


def file_path(name: str) -> str:
    """The caller's file ``name`` (``/`` separates folders)."""
    return f"/v1/files/{quote(name, safe='/')}"


@dataclass(frozen=True)
class Call:
    """A request whose answer is a JSON object; the step gives that object."""

    method: str
    path: str
    params: Optional[Json] = None
    json: Optional[Json] = None
    content: Optional[bytes] = None


@dataclass(frozen=True)
class Upload:
    """Store the local file ``path`` as the caller's file ``name``; gives nothing."""

    name: str
    path: Union[str, Path]


@dataclass(frozen=True)
class Submit:
    """Submit the application ``spec`` as the client's own ``submit`` does; gives its id."""

    spec: Json


@dataclass(frozen=True)
class Blocking:
    """Local work that blocks (reading a file); gives what ``work`` returns."""

    work: Callable[[], Any]


@dataclass(frozen=True)
class Sleep:
    """Wait ``seconds``; gives nothing."""

    seconds: float


Step = Union[Call, Upload, Submit, Blocking, Sleep]
Steps = Generator[Step, Any, T]


@dataclass(frozen=True)
class Done:
    """The steps ended with ``value``, the call's result."""

    value: Any


def advance(steps: Steps[T], answer: Any, error: Optional[Exception]) -> Union[Step, Done]:
    """The next step of ``steps`` once the last one gave ``answer`` or raised ``error``
    (``None``s for the first); :class:`Done` when they end. An error the steps do not
    handle is raised here."""
    try:
        return steps.throw(error) if error is not None else steps.send(answer)
    except StopIteration as end:
        return Done(end.value)


def _resent_past_rate(call: Call) -> Steps[Json]:
    """``call``, sent again past the manager's submit rate after waiting as told (at most
    :data:`MAX_SUBMIT_WAIT_S` at a time): a refused submit stored nothing."""
    while True:
        try:
            return (yield call)
        except TooManyRequests as e:
            if e.retry_after is None or e.retry_after > MAX_SUBMIT_WAIT_S:
                raise
            wait = e.retry_after
        yield Sleep(wait)


def submit_steps(spec: Json) -> Steps[int]:
    """Submits an application (its JSON spec), waiting out the submit rate; its id."""
    answer = yield from _resent_past_rate(Call("POST", "/v1/apps", json=spec))
    return int(answer["app"])


def workflow_steps(path: Union[str, Path], format: Optional[str], **options: Any) -> Steps[int]:
    """Submits the workflow file at ``path`` as :meth:`hetpilot.Client.submit_workflow`
    does, ``options`` being its keywords (first storing the external inputs from
    ``inputs_dir`` if given); its id."""
    fmt = workflow.format_of(path, format)
    query = workflow.params(fmt, **options)
    inputs_dir = options["inputs_dir"]
    document = yield Blocking(Path(path).read_bytes)
    if inputs_dir is not None:
        plan = yield Call("POST", "/v1/workflows/inputs", params={"format": fmt}, content=document)
        for local, stored in workflow.local_inputs(plan, inputs_dir):
            yield Upload(stored, local)
        query.update(inputs="stored", prefix=plan["prefix"])
    answer = yield from _resent_past_rate(
        Call("POST", "/v1/workflows", params=query, content=document)
    )
    return int(answer["app"])


def app_file_steps(path: Union[str, Path]) -> Steps[int]:
    """Submits the application file at ``path`` (see
    :meth:`hetpilot.Client.submit_app_file`); a refusal names the file, the line and the
    field where it can."""
    tables = yield Blocking(lambda: app_file.task_tables(path))
    if tables is not None:
        try:
            return (
                yield from workflow_steps(
                    path, "tasks", emulate=False, time_scale=None, size_scale=None,
                    inputs_dir=None, name=tables.name,
                )
            )
        except BadRequest as e:
            raise BadRequest(app_file.located(path, e.message), e.status, e.code) from e
    spec = yield Blocking(lambda: app_file.load(path))
    try:
        return (yield Submit(spec))
    except BadRequest as e:
        refused = e
    text = yield Blocking(lambda: Path(path).read_text(encoding="utf-8"))
    refusal = app_file.refusal(path, text, refused.message)
    if refusal is None:
        raise refused
    raise BadRequest(refusal.message, refused.status, refused.code) from refused
