"""A typed client of the hetpilot manager's ``/v1`` API, configured the way the CLI is
(see :mod:`hetpilot.connect`): ``HETPILOT_URL`` and ``HETPILOT_TOKEN``, else the manager's
configuration (``HETPILOT_CONFIG``) or data directory; for a manager whose certificate this
machine does not trust, ``HETPILOT_TLS_FINGERPRINT`` (pinned) or ``HETPILOT_CA_FILE``."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Iterator, List, Optional, Sequence, Union, cast

import httpx

from . import _requests
from ._requests import Json, T
from .connect import resolve
from .events import Event
from .pinning import PinnedTransport
from .resume import CLOSED_EARLY, Resumption, event_of, stream_timeout


class Client:
    """The manager at ``url`` (default ``$HETPILOT_URL``) as the holder of ``token``
    (default ``$HETPILOT_TOKEN``); ``config`` and ``token_file`` stand in for
    ``HETPILOT_CONFIG`` and ``HETPILOT_TOKEN_FILE`` (see :mod:`hetpilot.connect`). Every refusal raises a :class:`HetpilotError` subclass
    carrying the manager's message."""

    def __init__(
        self,
        url: Optional[str] = None,
        token: Optional[str] = None,
        *,
        timeout: float = 30.0,
        config: Optional[str] = None,
        token_file: Optional[str] = None,
    ) -> None:
        conn = resolve(url, token, config=config, token_file=token_file)
        self.url = conn.url
        self._timeout = timeout
        # A pinned fingerprint wins over a CA file.
        pinned = conn.fingerprint
        self._http = httpx.Client(
            **_requests.http_options(conn, timeout),
            transport=PinnedTransport(pinned) if pinned else None,
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # --- plumbing ---

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            resp = self._http.request(method, path, **kwargs)
        except httpx.TransportError as e:
            raise _requests.unreachable(self.url, e) from e
        _requests.raise_for(resp)
        return resp

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        return self._request(method, path, **kwargs).json()

    def _object(self, method: str, path: str, **kwargs: Any) -> Json:
        return cast(Json, self._json(method, path, **kwargs))

    def _rows(self, method: str, path: str, **kwargs: Any) -> List[Json]:
        return cast(List[Json], self._json(method, path, **kwargs))

    def _run(self, steps: _requests.Steps[T]) -> T:
        """Carries out a call's steps (see :mod:`hetpilot._requests`); its result."""
        answer: Any = None
        error: Optional[Exception] = None
        while not isinstance(step := _requests.advance(steps, answer, error), _requests.Done):
            answer, error = None, None
            try:
                answer = self._carry_out(step)
            except Exception as e:  # handed to the steps, which raise what they do not handle
                error = e
        return cast(T, step.value)

    def _carry_out(self, step: _requests.Step) -> Any:
        if isinstance(step, _requests.Call):
            return self._object(
                step.method, step.path, params=step.params, json=step.json, content=step.content
            )
        if isinstance(step, _requests.Upload):
            return self.put_file(step.name, step.path)
        if isinstance(step, _requests.Submit):
            return self.submit(step.spec)
        if isinstance(step, _requests.Blocking):
            return step.work()
        time.sleep(step.seconds)
        return None

    # --- applications ---

    def submit(self, spec: Json) -> int:
        """Submits an application (its JSON spec, as ``hetpilot submit`` sends it); its id.
        Past the manager's submit rate it waits as told (``Retry-After``, at most a minute
        at a time) and sends it again: a refused submit stored nothing."""
        return self._run(_requests.submit_steps(spec))

    def submit_app_file(self, path: Union[str, Path]) -> int:
        """Submits the application file at ``path``, as ``hetpilot submit FILE`` does (see
        :mod:`hetpilot.app_file`); its id. A file whose tasks are ``[[task]]`` tables (a
        workflow) is read by the manager with the CLI's reader
        (:meth:`submit_workflow` with ``format="tasks"``). A refusal names the file, the
        line and the field."""
        return self._run(_requests.app_file_steps(path))

    def submit_workflow(
        self,
        path: Union[str, Path],
        format: Optional[str] = None,
        *,
        emulate: bool = False,
        time_scale: Optional[float] = None,
        size_scale: Optional[float] = None,
        inputs_dir: Optional[Union[str, Path]] = None,
        name: Optional[str] = None,
    ) -> int:
        """Submits the WfCommons instance, Pegasus DAX or application file with ``[[task]]``
        tables at ``path`` (``format`` ``"wfcommons"``, ``"dax"`` or ``"tasks"``; by default
        from the suffix: ``.json``, ``.xml``/``.dax``, ``.toml``) as ``hetpilot submit
        --wfcommons/--dax/FILE`` does: the manager reads it with the CLI's readers. ``emulate`` runs each task as the agents' emulator (``time_scale``,
        ``size_scale``: the recorded runtimes' and sizes' factors) and the manager creates
        the external inputs; ``inputs_dir`` stores each external input ``DIR/NAME`` in the
        caller's files first (:class:`~hetpilot.workflow.WorkflowInputsError` lists those
        missing). ``name`` replaces the workflow's name. Returns the application's id."""
        return self._run(
            _requests.workflow_steps(
                path, format, emulate=emulate, time_scale=time_scale, size_scale=size_scale,
                inputs_dir=inputs_dir, name=name,
            )
        )

    def put_file(self, name: str, path: Union[str, Path]) -> None:
        """Stores the local file ``path`` as ``name`` among the caller's files (``/``
        separates folders), replacing any file of that name."""
        with open(path, "rb") as body:
            self._request("PUT", _requests.file_path(name), content=body)

    def submit_array(self, command: str, count: int, *, name: str = "array", **options: Any) -> int:
        """``count`` tasks of ``command`` (``{}``: the task's index), like ``--array 0-N``."""
        if count < 1:
            raise ValueError("count must be at least 1")
        tasks = {"array": {"start": 0, "end": count - 1}}
        return self.submit({"name": name, "command": command, "tasks": tasks, **options})

    def submit_lines(
        self, command: str, lines: Sequence[str], *, name: str = "lines", **options: Any
    ) -> int:
        """One task per line of ``command`` (``{}``: the line), like ``--each-line``."""
        tasks = {"lines": list(lines)}
        return self.submit({"name": name, "command": command, "tasks": tasks, **options})

    def apps(self, *, limit: int = 1000, after: Optional[int] = None) -> List[Json]:
        """A page of the caller's applications (every one's, for the admin)."""
        params: Json = {"limit": limit}
        if after is not None:
            params["after"] = after
        return self._rows("GET", "/v1/apps", params=params)

    def status(self, app: int) -> Json:
        """The application's summary (counts per state, whether it was cancelled)."""
        return self._object("GET", _requests.app_path(app))

    def tasks(
        self,
        app: int,
        *,
        state: Optional[str] = None,
        limit: int = 1000,
        after: Optional[int] = None,
    ) -> List[Json]:
        """A page of the application's tasks, in index order (``after``: the last index of
        the page before)."""
        params: Json = {"limit": limit}
        if state is not None:
            params["state"] = state
        if after is not None:
            params["after"] = after
        return self._rows("GET", f"{_requests.app_path(app)}/tasks", params=params)

    def logs(self, task: str) -> Json:
        """One task (``APP.INDEX``) with every attempt: hosts, exit codes, output tails."""
        return self._object("GET", f"/v1/tasks/{task}")

    def output(self, task: str, *, stream: str = "out", attempt: Optional[int] = None) -> bytes:
        """One output stream (``out`` or ``err``) of a task's run (default: its last)."""
        params: Json = {"stream": stream}
        if attempt is not None:
            params["attempt"] = attempt
        return self._request("GET", f"/v1/tasks/{task}/output", params=params).content

    def cancel(self, app: int) -> Json:
        """Cancels the application: waiting tasks end, running ones are killed."""
        return self._object("POST", f"{_requests.app_path(app)}/cancel")

    # --- scheduling ---

    def usage(self, *, limit: int = 1000, after: Optional[str] = None) -> List[Json]:
        """Fairshare usage and priority per user (``hetpilot usage``)."""
        params: Json = {"limit": limit}
        if after is not None:
            params["after"] = after
        return self._rows("GET", "/v1/usage", params=params)

    def schedule(self) -> Json:
        """The live scheduler's allocation: cores per application per platform."""
        return self._object("GET", "/v1/schedule")

    def affinity(self) -> Json:
        """Platform and co-runner affinities measured online (``hetpilot affinity --live``)."""
        return self._object("GET", "/v1/affinity")

    # --- the event stream ---

    def events(self, app: int, after: int = 0) -> Iterator[Event]:
        """The application's task ends past cursor ``after`` as they are stored, then its
        :class:`AppEnd`. A dropped connection is resumed past the last end yielded, so
        each end comes once."""
        resume = Resumption(self.url, after)
        while True:
            try:
                for event in self._stream_once(app, resume.after):
                    last = resume.seen(event)
                    yield event
                    if last:
                        return
                why = CLOSED_EARLY
            except httpx.TransportError as e:
                why = f"the event stream broke: {e}"
            time.sleep(resume.broke(why))

    def _stream_once(self, app: int, after: int) -> Iterator[Event]:
        timeout = stream_timeout(self._timeout)
        path = _requests.events_path(app)
        with self._http.stream("GET", path, params={"after": after}, timeout=timeout) as resp:
            if resp.status_code >= 400:
                resp.read()
                _requests.raise_for(resp)
            for line in resp.iter_lines():
                event = event_of(line)
                if event is not None:
                    yield event

    def wait(self, app: int) -> Json:
        """Follows the application's events to its end; its final summary."""
        for _ in self.events(app):
            pass
        return self.status(app)

