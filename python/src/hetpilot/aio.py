"""The asyncio variant: :class:`AsyncClient` (the calls an executor needs, and the event
stream as an async iterator, resumed past its cursor) and :class:`AsyncExecutor`, whose
``run`` and ``map`` resolve from the event stream like :class:`hetpilot.Executor`'s."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, AsyncIterator, Dict, Iterable, List, Optional, Sequence, Union, cast
from urllib.parse import quote

import httpx

from . import app_file, workflow
from .client import MAX_SUBMIT_WAIT_S, _raise_for, _trust
from .connect import resolve
from .errors import BadRequest, HetpilotError, TaskFailed, TooManyRequests, Unreachable
from .events import Event, TaskEnd
from .executor import command_line
from .pinning import AsyncPinnedTransport
from .resume import CLOSED_EARLY, Resumption, event_of, stream_timeout

Json = Dict[str, Any]


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
            base_url=self.url,
            headers={"Authorization": f"Bearer {conn.token}"},
            timeout=timeout,
            verify=_trust(conn),
            transport=AsyncPinnedTransport(pinned) if pinned else None,
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _object(self, method: str, path: str, **kwargs: Any) -> Json:
        try:
            resp = await self._http.request(method, path, **kwargs)
        except httpx.TransportError as e:
            raise Unreachable(f"cannot reach the manager at {self.url}: {e}") from e
        _raise_for(resp)
        return cast(Json, resp.json())

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
        fmt = workflow.format_of(path, format)
        query = workflow.params(
            fmt,
            emulate=emulate,
            time_scale=time_scale,
            size_scale=size_scale,
            inputs_dir=inputs_dir,
            name=name,
        )
        document = await asyncio.to_thread(Path(path).read_bytes)
        if inputs_dir is not None:
            plan = await self._object(
                "POST", "/v1/workflows/inputs", params={"format": fmt}, content=document
            )
            for local, stored in workflow.local_inputs(plan, inputs_dir):
                await self.put_file(stored, local)
            query.update(inputs="stored", prefix=plan["prefix"])
        while True:
            try:
                answer = await self._object("POST", "/v1/workflows", params=query, content=document)
                return int(answer["app"])
            except TooManyRequests as e:
                if e.retry_after is None or e.retry_after > MAX_SUBMIT_WAIT_S:
                    raise
                await asyncio.sleep(e.retry_after)

    async def submit_app_file(self, path: Union[str, Path]) -> int:
        """As :meth:`hetpilot.Client.submit_app_file`."""
        tables = await asyncio.to_thread(app_file.task_tables, path)
        if tables is not None:
            try:
                return await self.submit_workflow(path, "tasks", name=tables.name)
            except BadRequest as e:
                raise BadRequest(app_file.located(path, e.message), e.status, e.code) from e
        spec = await asyncio.to_thread(app_file.load, path)
        try:
            return await self.submit(spec)
        except BadRequest as e:
            text = await asyncio.to_thread(Path(path).read_text, encoding="utf-8")
            refusal = app_file.refusal(path, text, e.message)
            if refusal is None:
                raise
            raise BadRequest(refusal.message, e.status, e.code) from e

    async def put_file(self, name: str, path: Union[str, Path]) -> None:
        """As :meth:`hetpilot.Client.put_file`; the file is read a MiB at a time."""

        async def chunks() -> AsyncIterator[bytes]:
            with open(path, "rb") as f:
                while chunk := await asyncio.to_thread(f.read, 1 << 20):
                    yield chunk

        try:
            resp = await self._http.put(f"/v1/files/{quote(name, safe='/')}", content=chunks())
        except httpx.TransportError as e:
            raise Unreachable(f"cannot reach the manager at {self.url}: {e}") from e
        _raise_for(resp)

    async def status(self, app: int) -> Json:
        return await self._object("GET", f"/v1/apps/{int(app)}")

    async def cancel(self, app: int) -> Json:
        return await self._object("POST", f"/v1/apps/{int(app)}/cancel")

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
        path = f"/v1/apps/{int(app)}/events"
        timeout = stream_timeout(self._timeout)
        async with self._http.stream("GET", path, params={"after": after}, timeout=timeout) as resp:
            if resp.status_code >= 400:
                await resp.aread()
                _raise_for(resp)
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
