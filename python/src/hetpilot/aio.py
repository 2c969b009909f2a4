"""The asyncio variant: :class:`AsyncClient` (the calls an executor needs, and the event
stream as an async iterator, resumed past its cursor) and :class:`AsyncExecutor`, whose
``run`` and ``map`` resolve from the event stream like :class:`hetpilot.Executor`'s."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, AsyncIterator, Iterable, List, Optional, Sequence, Union, cast

import httpx

from . import _requests
from ._requests import Json, T
from .connect import resolve
from .errors import HetpilotError, TaskFailed
from .events import Event, TaskEnd
from .executor import command_line
from .pinning import AsyncPinnedTransport
from .resume import CLOSED_EARLY, Resumption, event_of, stream_timeout


class AsyncClient:
    """:class:`hetpilot.Client`'s application calls for asyncio, configured the same way."""

    def __init__(
        self,
        url: Optional[str] = None,
        token: Optional[str] = None,
        *,
        timeout: float = 30.0,
        config: Optional[str] = None,
        token_file: Optional[str] = None,
    ):
        conn = resolve(url, token, config=config, token_file=token_file)
        self.url = conn.url
        self._timeout = timeout
        # A pinned fingerprint wins over a CA file, as in the sync client.
        pinned = conn.fingerprint
        self._http = httpx.AsyncClient(
            **_requests.http_options(conn, timeout),
            transport=AsyncPinnedTransport(pinned) if pinned else None,
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            resp = await self._http.request(method, path, **kwargs)
        except httpx.TransportError as e:
            raise _requests.unreachable(self.url, e) from e
        _requests.raise_for(resp)
        return resp

    async def _object(self, method: str, path: str, **kwargs: Any) -> Json:
        return cast(Json, (await self._request(method, path, **kwargs)).json())

    async def _run(self, steps: _requests.Steps[T]) -> T:
        """Carries out a call's steps (see :mod:`hetpilot._requests`); its result."""
        answer: Any = None
        error: Optional[Exception] = None
        while not isinstance(step := _requests.advance(steps, answer, error), _requests.Done):
            answer, error = None, None
            try:
                answer = await self._carry_out(step)
            except Exception as e:  # handed to the steps, which raise what they do not handle
                error = e
        return cast(T, step.value)

    async def _carry_out(self, step: _requests.Step) -> Any:
        if isinstance(step, _requests.Call):
            return await self._object(
                step.method, step.path, params=step.params, json=step.json, content=step.content
            )
        if isinstance(step, _requests.Upload):
            return await self.put_file(step.name, step.path)
        if isinstance(step, _requests.Submit):
            return await self.submit(step.spec)
        if isinstance(step, _requests.Blocking):
            return await asyncio.to_thread(step.work)
        await asyncio.sleep(step.seconds)
        return None

    async def submit(self, spec: Json) -> int:
        return int((await self._object("POST", "/v1/apps", json=spec))["app"])

    async def submit_workflow(
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
        """As :meth:`hetpilot.Client.submit_workflow`."""
        return await self._run(
            _requests.workflow_steps(
                path, format, emulate=emulate, time_scale=time_scale, size_scale=size_scale,
                inputs_dir=inputs_dir, name=name,
            )
        )

    async def submit_app_file(self, path: Union[str, Path]) -> int:
        """As :meth:`hetpilot.Client.submit_app_file`."""
        return await self._run(_requests.app_file_steps(path))

    async def put_file(self, name: str, path: Union[str, Path]) -> None:
        """As :meth:`hetpilot.Client.put_file`; the file is read a MiB at a time."""

        async def chunks() -> AsyncIterator[bytes]:
            with open(path, "rb") as f:
                while chunk := await asyncio.to_thread(f.read, 1 << 20):
                    yield chunk

        await self._request("PUT", _requests.file_path(name), content=chunks())

    async def status(self, app: int) -> Json:
        return await self._object("GET", _requests.app_path(app))

    async def cancel(self, app: int) -> Json:
        return await self._object("POST", f"{_requests.app_path(app)}/cancel")

    async def events(self, app: int, after: int = 0) -> AsyncIterator[Event]:
        """As :meth:`hetpilot.Client.events`."""
        resume = Resumption(self.url, after)
        while True:
            try:
                async for event in self._stream_once(app, resume.after):
                    last = resume.seen(event)
                    yield event
                    if last:
                        return
                why = CLOSED_EARLY
            except httpx.TransportError as e:
                why = f"the event stream broke: {e}"
            await asyncio.sleep(resume.broke(why))

    async def _stream_once(self, app: int, after: int) -> AsyncIterator[Event]:
        timeout = stream_timeout(self._timeout)
        path = _requests.events_path(app)
        async with self._http.stream("GET", path, params={"after": after}, timeout=timeout) as resp:
            if resp.status_code >= 400:
                await resp.aread()
                _requests.raise_for(resp)
            async for line in resp.aiter_lines():
                event = event_of(line)
                if event is not None:
                    yield event


class AsyncExecutor:
    """Commands as hetpilot tasks, awaited: ``await ex.run(["prog", "arg"])`` is one
    application of one task, ``await ex.map(["prog"], items)`` one application of a task
    per item, its ends in item order. A failed task raises :class:`TaskFailed`; one
    cancelled with its application raises :class:`asyncio.CancelledError`. Leaving
    ``async with`` on an exception cancels the applications started."""

    def __init__(self, client: Optional[AsyncClient] = None, *, name: str = "python", **options: Any):
        self._client = client or AsyncClient()
        self._name = name
        self._options = options
        self._apps: List[int] = []

    async def __aenter__(self) -> "AsyncExecutor":
        return self

    async def __aexit__(self, kind: Any, *_: Any) -> None:
        if kind is not None:
            for app in self._apps:
                await self._client.cancel(app)

    async def run(self, argv: Sequence[str]) -> TaskEnd:
        spec = self._spec(command_line(argv), {"array": {"start": 0, "end": 0}})
        return (await self._follow(spec, 1))[0]

    async def map(self, prefix: Sequence[str], items: Iterable[Any]) -> List[TaskEnd]:
        lines = [str(item) for item in items]
        if not lines:
            return []
        return await self._follow(self._spec(command_line(prefix) + " {}", {"lines": lines}), len(lines))

    def _spec(self, command: str, tasks: Any) -> Json:
        return {"name": self._name, "command": command, "tasks": tasks, **self._options}

    async def _follow(self, spec: Json, count: int) -> List[TaskEnd]:
        app = await self._client.submit(spec)
        self._apps.append(app)
        ends: List[Optional[TaskEnd]] = [None] * count
        async for event in self._client.events(app):
            if isinstance(event, TaskEnd) and 0 <= event.index < count:
                ends[event.index] = event
        for end in ends:
            if end is None:
                raise HetpilotError(f"application {app} ended without every task's end")
            if end.state == "cancelled":
                raise asyncio.CancelledError(f"task {end.task} was cancelled")
            if not end.ok:
                raise TaskFailed(end)
        return cast(List[TaskEnd], ends)
