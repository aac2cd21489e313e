"""The Redis store's batches of scripts: their bytes, their bound, and no reply read by the wrong batch."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest
from redis.asyncio.connection import Connection
from redis.exceptions import TimeoutError as RedisTimeoutError

from integrity_gym.server.minimal import MINIMAL_TASK
from integrity_gym.server.sessions import RedisStore
from integrity_gym.server.sessions.base import AnyEnv
from integrity_gym.server.sessions.leases import pack_scripts
from tests.conftest import require_service
from tests.server.servers import redis_available, start_redis, stop_process


def _factory(task_id: str) -> AnyEnv:
    env: AnyEnv = MINIMAL_TASK.env_class()(MINIMAL_TASK)
    env.reset(seed=1)
    return env


def test_pack_scripts_is_what_redis_py_sends() -> None:
    """The batch's own packer against redis-py's: the same bytes for every kind of argument."""
    calls: list[tuple[str, list[Any], list[Any]]] = [
        ("a" * 40, ["igym:s:x", b"igym:lock:x"], ["token", 3000, 1234.5, -7, b'{"a":"\\u00e9"}', 'é\n"', ""]),
        ("b" * 40, [], []),
        ("c" * 40, ["k"], ["x" * 10_000]),  # longer than redis-py's buffer cutoff: sent in pieces there
    ]
    theirs = Connection().pack_commands([("EVALSHA", sha, len(keys), *keys, *args) for sha, keys, args in calls])
    assert pack_scripts(calls) == b"".join(theirs)


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


def test_a_batch_without_reply_fails_in_time_and_its_late_reply_is_never_read(paused_redis: tuple[str, int]) -> None:
    """Redis paused while a batch is out: the batch fails with Redis's timeout error within the
    reply timeout (one bound for the whole batch), and once Redis answers again the next call gets
    its own reply. Kills: no bound (the call hangs), and a connection kept after the failure (the
    next call would read the late reply meant for the failed one)."""
    url, pid = paused_redis

    async def scenario() -> None:
        store = RedisStore(url, _factory, max_sessions=4, ttl_s=600.0)
        await store.start()
        try:
            echo = store._redis.register_script("return ARGV[1]")
            assert await store.worker.run(echo, [], ["loaded"]) == b"loaded"
            os.kill(pid, signal.SIGSTOP)
            started = time.monotonic()
            try:
                with pytest.raises(RedisTimeoutError):
                    await asyncio.wait_for(store.worker.run(echo, [], ["late"]), 15)
                took = time.monotonic() - started
            finally:
                os.kill(pid, signal.SIGCONT)
            assert store.reply_timeout_s * 0.9 <= took < store.reply_timeout_s + 1.5, took
            for word in ("first", "second"):
                assert await store.worker.run(echo, [], [word]) == word.encode()
        finally:
            await store.stop()

    asyncio.run(scenario())
