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
from typing import Any

import pytest

from integrity_gym.server.minimal import MINIMAL_TASK
from integrity_gym.server.sessions import CapacityError, RedisStore, SessionBusyError, SessionNotFoundError
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


# ---------------------------------------------------------------------- one use: two Redis calls
def _add(env: AnyEnv, amount: int = 1) -> None:
    env.step(env.action_type.model_validate({"kind": "ADD", "amount": amount}))


def test_a_save_after_the_lock_was_lost_writes_nothing_and_leaves_the_new_holders_lock(redis_url: str) -> None:
    """The save-and-release script saves only while the lock is still ours. Kills: dropping its token
    check (a request that stalled past its lease would overwrite the step the new holder stored) and
    deleting the lock whoever holds it (the new holder would lose its lock mid-step)."""
    import redis

    async def scenario() -> None:
        store = RedisStore(redis_url, _factory, max_sessions=CAPACITY, ttl_s=TTL_S)
        await store.start()
        client = redis.Redis.from_url(redis_url)
        try:
            session = await store.open("minimal", _factory(MINIMAL_TASK.id), kind="http")
            key, lock = f"igym:s:{session.id}", f"igym:lock:{session.id}"
            stored = client.hgetall(key)
            with pytest.raises(SessionBusyError, match="was not saved"):
                async with store.use(session.id, "minimal") as used:
                    _add(used.env, 5)
                    client.set(lock, "another-request")  # our lease lapsed; another request took it
            assert client.hgetall(key) == stored
            assert client.get(lock) == b"another-request"
            client.delete(lock)
            async with store.use(session.id, "minimal") as again:  # the unsaved step was forgotten here too
                assert again.env.state().model_dump()["total"] == 0
        finally:
            client.close()
            await store.stop()

    asyncio.run(scenario())


def test_a_session_closed_while_in_use_is_not_brought_back_by_its_save(redis_url: str) -> None:
    """Kills: the save-and-release script writing (or re-indexing) a session that was deleted while a
    request used it: the closed session would come back, counted against capacity and playable."""
    import redis

    async def scenario() -> None:
        store = RedisStore(redis_url, _factory, max_sessions=CAPACITY, ttl_s=TTL_S)
        other = RedisStore(redis_url, _factory, max_sessions=CAPACITY, ttl_s=TTL_S)
        await store.start()
        await other.start()
        client = redis.Redis.from_url(redis_url)
        try:
            for write in (True, False):
                session = await store.open("minimal", _factory(MINIMAL_TASK.id), kind="http")
                async with store.use(session.id, "minimal", write=write) as used:
                    _add(used.env)
                    assert await other.close(session.id, "minimal")  # another process's DELETE
                assert not client.exists(f"igym:s:{session.id}"), write
                assert client.zscore("igym:sessions", session.id) is None, write
                assert not client.exists(f"igym:lock:{session.id}"), write
                with pytest.raises(SessionNotFoundError):
                    async with store.use(session.id, "minimal"):
                        pass
        finally:
            client.close()
            await other.stop()
            await store.stop()

    asyncio.run(scenario())


def test_uses_read_the_state_only_when_stale_and_read_only_uses_store_nothing(redis_url: str) -> None:
    """Two stores (two processes) on one session. Kills: the take-and-read script reporting the cached
    copy current when another process moved the episode on (a lost step), and a ``write=False`` use
    bumping the version or writing the state."""
    import redis

    async def scenario() -> None:
        first = RedisStore(redis_url, _factory, max_sessions=CAPACITY, ttl_s=TTL_S)
        second = RedisStore(redis_url, _factory, max_sessions=CAPACITY, ttl_s=TTL_S)
        await first.start()
        await second.start()
        client = redis.Redis.from_url(redis_url)
        try:
            session = await first.open("minimal", _factory(MINIMAL_TASK.id), kind="http")
            for store in (first, second, first, first, second):
                async with store.use(session.id, "minimal") as used:
                    _add(used.env)
            stored = client.hgetall(f"igym:s:{session.id}")
            assert int(stored[b"ver"]) == 6
            for store in (first, second):
                async with store.use(session.id, "minimal", write=False) as used:
                    assert used.env.state().model_dump()["total"] == 5
                    assert used.version == 6
                    _add(used.env, 10)  # a read-only use's changes are not stored
            assert client.hgetall(f"igym:s:{session.id}") == stored
        finally:
            client.close()
            await second.stop()
            await first.stop()

    asyncio.run(scenario())


def test_unknown_session_ids_leave_no_local_lock_behind(redis_url: str) -> None:
    """Kills: ``use`` keeping a local lock for every well-formed id it was asked for that does not exist
    (a client probing random ids would grow the process's memory without bound)."""

    async def scenario() -> None:
        store = RedisStore(redis_url, _factory, max_sessions=CAPACITY, ttl_s=TTL_S)
        await store.start()
        try:
            for i in range(50):
                with pytest.raises(SessionNotFoundError):
                    async with store.use(f"no-such-session-{i:04d}", "minimal"):
                        pass
            assert store._locks == {}
        finally:
            await store.stop()

    asyncio.run(scenario())


def test_a_lease_that_fails_to_take_a_held_key_does_not_stop_the_holders_renewal(redis_url: str) -> None:
    """Two leases of one process on one key (two requests on one evaluation): the holder's lease must
    still be renewed while the other polls. Kills: listing held locks by key alone (the poller's
    failed tries unlisted the holder, whose lock lapsed after one lease and went to the poller)."""
    import redis

    async def scenario() -> None:
        store = RedisStore(redis_url, _factory, max_sessions=CAPACITY, ttl_s=TTL_S, lease_s=0.6)
        await store.start()
        client = redis.Redis.from_url(redis_url)
        try:
            holder = store.worker.lock("igym:elock:e1", wait_s=0)
            assert await holder.acquire()
            poller = store.worker.lock("igym:elock:e1", wait_s=2.0, poll_s=0.02)
            assert not await poller.acquire()  # over three leases of polling
            assert client.get("igym:elock:e1") == holder.token.encode()
            await holder.release()
            assert not client.exists("igym:elock:e1")
        finally:
            client.close()
            await store.stop()

    asyncio.run(scenario())


def test_scripts_run_at_once_share_a_pipeline_and_each_gets_its_own_reply(redis_url: str) -> None:
    """``WorkerLease.run`` batches. Kills: replies handed to the wrong callers, one failing script
    failing the whole batch, a batch not recovering after Redis lost its scripts (SCRIPT FLUSH, as
    after a restart), and no batching at all (one pipeline per call)."""
    import redis

    async def scenario() -> None:
        store = RedisStore(redis_url, _factory, max_sessions=CAPACITY, ttl_s=TTL_S)
        await store.start()
        worker = store.worker
        echo = store._redis.register_script("if ARGV[1] == 'fail' then error('asked to') end return ARGV[1]")
        sizes: list[int] = []
        send = worker._send_batch

        async def counted(batch: list[Any]) -> Exception | None:
            sizes.append(len(batch))
            return await send(batch)

        worker._send_batch = counted  # type: ignore[method-assign]
        client = redis.Redis.from_url(redis_url)
        try:
            assert await worker.run(echo, [], ["loaded"]) == b"loaded"  # the first round finds it loaded
            for _ in range(2):
                words = [f"w{i}" for i in range(20)] + ["fail"]
                replies = await asyncio.gather(*(worker.run(echo, [], [w]) for w in words), return_exceptions=True)
                assert replies[:-1] == [w.encode() for w in words[:-1]]
                assert isinstance(replies[-1], redis.exceptions.ResponseError)
                client.script_flush()  # the second round finds no script loaded
            assert len(sizes) < 8 and max(sizes) > 1, sizes
        finally:
            client.close()
            await store.stop()

    asyncio.run(scenario())
