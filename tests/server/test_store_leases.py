"""A killed worker's slots and session lock come back within seconds (real Redis, real SIGKILL).

The worker is a separate process that opens the Redis store, takes WebSocket slots and holds an
HTTP session's lock, then is SIGKILLed: nothing of it runs its clean-up.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from integrity_gym.server.minimal import MINIMAL_TASK
from integrity_gym.server.sessions import CapacityError, RedisStore, SessionBusyError
from integrity_gym.server.sessions.base import AnyEnv
from tests.conftest import require_service
from tests.server.servers import redis_available, running_redis

WS_SLOTS = 3
#: The worker's WebSocket slots plus its one HTTP session fill the store.
CAPACITY = WS_SLOTS + 1
TTL_S = 600.0  # far longer than the test: only the leases can free anything
#: Generous bounds around the 3 s lease.
ALIVE_FOR_S = 4.5
RECLAIMED_WITHIN_S = 6.0

_WORKER = """
import asyncio, sys
from integrity_gym.server.minimal import MINIMAL_TASK
from integrity_gym.server.sessions import RedisStore

def factory(task_id):
    env = MINIMAL_TASK.env_class()(MINIMAL_TASK)
    env.reset(seed=1)
    return env

async def main(url, slots, capacity):
    store = RedisStore(url, factory, max_sessions=capacity, ttl_s=600.0)
    await store.start()
    for _ in range(slots):
        await store.open("minimal", factory(MINIMAL_TASK.id), kind="ws")
    http = await store.open("minimal", factory(MINIMAL_TASK.id), kind="http")
    async with store.use(http.id, "minimal"):
        print("READY", http.id, flush=True)
        await asyncio.sleep(3600)

asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
"""


def _factory(task_id: str) -> AnyEnv:
    env: AnyEnv = MINIMAL_TASK.env_class()(MINIMAL_TASK)
    env.reset(seed=1)
    return env


@pytest.fixture
def redis_url() -> Iterator[str]:
    require_service(redis_available(), "redis-server and the redis package")
    with running_redis() as url:
        yield url


def _start_worker(url: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _WORKER, url, str(WS_SLOTS), str(CAPACITY)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("READY"):
        proc.kill()
        raise AssertionError("the worker did not start: " + line + proc.stdout.read())
    return proc, line.split()[1]


async def _try_lock(store: RedisStore, session_id: str) -> bool:
    """Take the session's lock (waiting at most the store's short lock timeout); False if busy."""
    try:
        async with store.use(session_id, "minimal", write=False):
            return True
    except SessionBusyError:
        return False


async def _try_open(store: RedisStore, n: int) -> bool:
    """Open ``n`` WebSocket sessions (all or none stay open); False at capacity."""
    opened = []
    try:
        for _ in range(n):
            opened.append(await store.open("minimal", _factory(MINIMAL_TASK.id), kind="ws"))
        return True
    except CapacityError:
        return False
    finally:
        for session in opened:
            await store.release(session)


def test_a_killed_workers_slots_and_lock_are_reclaimed_within_seconds(redis_url: str) -> None:
    """Kills: no heartbeat renewal (the live worker loses its slots/lock after one lease), no reclaim
    of a dead worker's slots (they would count for the whole 600 s TTL), and a long lock lease (the
    newcomer would wait its full length, e.g. the former 30 s)."""
    proc, session_id = _start_worker(redis_url)
    try:

        async def scenario() -> None:
            newcomer = RedisStore(redis_url, _factory, max_sessions=CAPACITY, ttl_s=TTL_S, lock_timeout_s=0.5)
            await newcomer.start()
            try:
                assert await newcomer.count() == CAPACITY
                # While the worker lives, longer than a lease: its slots and its lock hold.
                until = time.monotonic() + ALIVE_FOR_S
                while time.monotonic() < until:
                    assert not await _try_open(newcomer, 1), "a live worker's slot was freed"
                    assert not await _try_lock(newcomer, session_id), "a live worker's lock was taken"
                    await asyncio.sleep(0.2)
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
                killed = time.monotonic()
                while not await _try_open(newcomer, WS_SLOTS):
                    assert time.monotonic() - killed < RECLAIMED_WITHIN_S, "the dead worker's slots still count"
                    await asyncio.sleep(0.1)
                # Its HTTP session is shared state, not the worker's: it stays, and is usable again.
                assert await newcomer.count() == 1
                while not await _try_lock(newcomer, session_id):
                    assert time.monotonic() - killed < RECLAIMED_WITHIN_S, "the dead worker's lock is still held"
                async with newcomer.use(session_id, "minimal") as session:
                    assert session.id == session_id
            finally:
                await newcomer.stop()

        asyncio.run(scenario())
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def test_a_stopped_store_gives_its_slots_back_and_forgets_its_worker(redis_url: str) -> None:
    """A clean stop frees the WebSocket slots and the worker's keys at once (kills: stop leaving
    the lease and slot set behind, or ``release`` not removing a slot from the worker's set)."""
    import redis

    async def scenario() -> None:
        first = RedisStore(redis_url, _factory, max_sessions=CAPACITY, ttl_s=TTL_S)
        await first.start()
        sessions = [await first.open("minimal", _factory(MINIMAL_TASK.id), kind="ws") for _ in range(WS_SLOTS)]
        client = redis.Redis.from_url(redis_url)
        try:
            assert client.scard(first.worker.slots_key) == WS_SLOTS
            await first.release(sessions[0])
            assert client.scard(first.worker.slots_key) == WS_SLOTS - 1
            await first.stop()
            assert client.zcard("igym:sessions") == 0
            assert not client.exists(first.worker.key, first.worker.slots_key)
            assert not client.sismember(first.worker.workers_key, first.worker.worker_id)
        finally:
            client.close()

    asyncio.run(scenario())
