"""Fixtures: a real server process per test session (per xdist worker), an in-process faulty server
per module, and ``connect``, which builds a sync or an async client (``kind``) driven the same way."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from integrity_gym.client import AsyncRemoteEnv, RemoteEnv, RetryPolicy
from integrity_gym.server.minimal import MINIMAL_TASK
from tests.client.drive import Client
from tests.client.faulty import FaultyServer
from tests.server.servers import ADMIN_TOKEN, ServerProcess, start_server


@pytest.fixture(scope="session")
def server() -> Iterator[ServerProcess]:
    """A server serving every registered task, full state unlocked by ``ADMIN_TOKEN``."""
    proc = start_server()
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def shared() -> Iterator[FaultyServer]:
    server = FaultyServer().start()
    yield server
    server.stop()


@pytest.fixture
def faulty(shared: FaultyServer) -> Iterator[FaultyServer]:
    shared.clear()
    yield shared
    shared.clear()


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def connect(kind: str) -> Iterator[Callable[..., Client]]:
    loop = asyncio.new_event_loop()
    made: list[Client] = []

    def connect(
        url: str,
        *,
        transport: str = "http",
        on_sleep: Callable[[], None] | None = None,
        connect_timeout: float = 10.0,
        **policy: Any,
    ) -> Client:
        sleeps: list[float] = []

        def record(seconds: float) -> None:
            sleeps.append(seconds)
            if on_sleep is not None:
                on_sleep()

        async def record_async(seconds: float) -> None:
            record(seconds)

        retries = RetryPolicy(sleep=record if kind == "sync" else record_async, **policy)
        cls = RemoteEnv if kind == "sync" else AsyncRemoteEnv
        env = cls(
            url,
            MINIMAL_TASK.id,
            spec=MINIMAL_TASK,
            transport=transport,  # type: ignore[arg-type]
            admin_token=ADMIN_TOKEN,
            retries=retries,
            connect_timeout=connect_timeout,
        )
        client = Client(env, loop, sleeps)
        made.append(client)
        return client

    yield connect
    for client in made:
        client("close")
    loop.close()
