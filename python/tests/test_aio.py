"""The asyncio variant against a real manager and agent."""

from __future__ import annotations

import asyncio

import pytest

from hetpilot import TaskFailed
from hetpilot.aio import AsyncClient, AsyncExecutor


def test_async_map_and_run_resolve_from_the_event_stream(manager) -> None:
    manager.agent(4)

    async def work() -> None:
        client = AsyncClient(manager.url, manager.admin)
        async with AsyncExecutor(client, max_attempts=1) as ex:
            ends, one = await asyncio.gather(
                ex.map(["echo"], range(50)), ex.run(["sh", "-c", "exit 0"])
            )
            assert [e.index for e in ends] == list(range(50))
            assert one.exit_code == 0
            with pytest.raises(TaskFailed) as e:
                await ex.run(["false"])
            assert e.value.end.exit_code == 1
        await client.aclose()

    asyncio.run(work())
