"""Redis paused or absent: store calls fail fast, health answers, startup says one clear line."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Awaitable, Iterator
from typing import Any

import pytest

from integrity_gym.server.minimal import MINIMAL_TASK
from integrity_gym.server.sessions import (
    RedisStore,
    StoreStartupError,
    StoreUnavailableError,
    check_store_reachable,
)
from integrity_gym.server.sessions.base import AnyEnv
from tests.conftest import require_service
from tests.server.servers import free_port, redis_available, start_redis, stop_process

#: Generous bounds around the 1 s Redis timeouts (the former ones were 5 s connect, 10 s read).
FAILS_WITHIN_S = 2.5


def _factory(task_id: str) -> AnyEnv:
    env: AnyEnv = MINIMAL_TASK.env_class()(MINIMAL_TASK)
    env.reset(seed=1)
    return env


@pytest.fixture
def paused_redis() -> Iterator[tuple[str, int]]:
    """A real redis-server (URL, pid), always resumed and stopped at the end."""
    require_service(redis_available(), "redis-server and the redis package")
    url, proc = start_redis()
    try:
        yield url, proc.pid
    finally:
        os.kill(proc.pid, signal.SIGCONT)
        stop_process(proc)


async def _timed(call: Awaitable[Any]) -> tuple[float, Any]:
    """(seconds taken, result or raised exception); a hang longer than 15 s fails the test."""
    started = time.monotonic()
    try:
        result: Any = await asyncio.wait_for(call, 15)
    except Exception as exc:
        result = exc
    return time.monotonic() - started, result


def test_a_paused_redis_fails_store_calls_fast_and_health_answers(paused_redis: tuple[str, int]) -> None:
    """SIGSTOP of redis-server: each call is the store's unavailable error (the server's 503) within
    ~1 s, and ``health`` reports it as quickly. Kills: the former 10 s read timeout (or any unbounded
    wait), and ``health`` raising or hanging instead of reporting."""
    url, pid = paused_redis

    async def scenario() -> None:
        store = RedisStore(url, _factory, max_sessions=4, ttl_s=600.0)
        await store.start()
        try:
            session = await store.open("minimal", _factory(MINIMAL_TASK.id), kind="http")
            assert (await store.health())["ok"] is True
            os.kill(pid, signal.SIGSTOP)
            try:
                for name, call in [
                    ("count", store.count()),
                    ("open", store.open("minimal", _factory(MINIMAL_TASK.id), kind="http")),
                    ("use", store.use(session.id, "minimal").__aenter__()),
                    ("check", store.check()),
                ]:
                    took, result = await _timed(call)
                    assert isinstance(result, StoreUnavailableError), (name, result)
                    assert took < FAILS_WITHIN_S, (name, took)
                    assert "unavailable" in str(result) and "127.0.0.1" in str(result)
                took, report = await _timed(store.health())
                assert took < FAILS_WITHIN_S, took
                assert isinstance(report, dict) and report["ok"] is False and report["store"] == "redis"
                assert report["detail"]
            finally:
                os.kill(pid, signal.SIGCONT)
            # Back again: the same store serves at once, and the session was kept.
            deadline = time.monotonic() + 10
            while not (await store.health())["ok"]:
                assert time.monotonic() < deadline, "the store did not recover after SIGCONT"
                await asyncio.sleep(0.1)
            async with store.use(session.id, "minimal") as again:
                assert again.id == session.id
        finally:
            await store.stop()

    asyncio.run(scenario())


def _assert_one_clear_line(exc: BaseException, url: str) -> None:
    message = str(exc)
    assert "\n" not in message
    assert url in message and "redis-server" in message and "--sessions" in message
    # Printed as is: no chained cause or context to show underneath.
    assert exc.__cause__ is None and exc.__suppress_context__


def test_opening_the_store_on_a_dead_port_raises_one_clear_line() -> None:
    """Kills: re-raising the redis error (or chaining it: ``from exc``), a multi-line message, and a
    message without the URL or the remedy. The URL's password is never shown."""
    require_service(redis_available(), "redis-server and the redis package")
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"

    async def scenario() -> BaseException:
        store = RedisStore(f"redis://:hunter2@127.0.0.1:{port}/0", _factory, max_sessions=4, ttl_s=600.0)
        with pytest.raises(StoreStartupError) as caught:
            await asyncio.wait_for(store.start(), 15)
        return caught.value

    exc = asyncio.run(scenario())
    _assert_one_clear_line(exc, "redis://***@127.0.0.1:" + str(port) + "/0")
    assert "hunter2" not in str(exc)
    # What the CLI catches as a bad setting, and what the server maps to 503.
    assert isinstance(exc, ValueError) and isinstance(exc, StoreUnavailableError)
    with pytest.raises(StoreStartupError) as sync_caught:
        check_store_reachable(url)
    _assert_one_clear_line(sync_caught.value, url)
    check_store_reachable("memory")  # nothing to reach


@pytest.mark.parametrize("command", [["igym", "serve"], ["python", "-m", "integrity_gym.server"]])
def test_serving_on_a_store_that_is_down_is_one_line_not_a_traceback(command: list[str]) -> None:
    # Kills: the store reached first in uvicorn's lifespan (a traceback of some 70 lines before the error).
    import subprocess
    import sys

    argv = (
        [sys.executable, "-m", "integrity_gym", *command[1:]]
        if command[0] == "igym"
        else [sys.executable, *command[1:]]
    )
    result = subprocess.run(
        [*argv, "--sessions", f"redis://127.0.0.1:{free_port()}/0", "--port", "0"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    out = result.stdout + result.stderr
    assert result.returncode != 0 and "Traceback" not in out
    assert "cannot reach the session store" in " ".join(out.split())
