"""Redis sessions write an episode's static part (pii_redaction's document) once, not at every step.

What Redis receives is read from Redis itself: ``MONITOR`` lists every command, those run inside
the store's Lua scripts included (``[0 lua] "hset" ...``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

import integrity_gym
from integrity_gym.core.seeding import make_rng
from integrity_gym.core.types import StepResult
from integrity_gym.server.sessions import RedisStore, SessionNotFoundError
from integrity_gym.server.sessions.base import AnyEnv
from integrity_gym.server.sessions.redis_state import StoredSession, complete, joined
from tests.conftest import require_service
from tests.server.episodes import reference
from tests.server.servers import redis_available, running_redis, start_server

ENV = "pii_redaction"
TASK = integrity_gym.get_spec("pii_redaction/gdpr_contract_easy").id
SKIP = {"action_type": "SKIP"}
#: Tasks of every environment that declares a static part (each checked on its own).
STATIC_TASKS = [s.id for s in integrity_gym.list_tasks() if s.env_class().static_state_fields]


def _factory(task_id: str) -> AnyEnv:
    return integrity_gym.make(task_id)


def _env(seed: int) -> AnyEnv:
    env = _factory(TASK)
    env.reset(seed=seed)
    return env


def _static_json(env: AnyEnv) -> str:
    return str(env.state().model_dump_json(include=set(type(env).static_state_fields)))


@pytest.fixture
def redis_url() -> Iterator[str]:
    require_service(redis_available(), "redis-server and the redis package")
    with running_redis() as url:
        yield url


class Monitor:
    """Every command Redis runs while open (``MONITOR``, on a socket of its own), one line each."""

    def __init__(self, url: str) -> None:
        host_port = url.removeprefix("redis://").split("/")[0]
        host, port = host_port.rsplit(":", 1)
        self._address = (host, int(port))
        self._data = bytearray()
        self._stop = threading.Event()
        self._sock = socket.create_connection(self._address, timeout=5)
        self._sock.sendall(b"MONITOR\r\n")
        while not self._data.startswith(b"+OK\r\n"):
            self._data += self._sock.recv(65536)
        del self._data[:5]
        self._sock.settimeout(0.05)
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(TimeoutError):
                chunk = self._sock.recv(1 << 20)
                if not chunk:
                    return
                self._data += chunk

    def lines(self) -> list[str]:
        """What Redis ran until now: waits for a marker sent after everything before it."""
        marker = f"igym-marker-{time.monotonic_ns()}"
        with socket.create_connection(self._address, timeout=5) as sock:
            sock.sendall(f"ECHO {marker}\r\n".encode())
            sock.recv(1024)
        deadline = time.monotonic() + 10
        while marker.encode() not in self._data:
            assert time.monotonic() < deadline, "MONITOR did not show the marker"
            time.sleep(0.01)
        text = bytes(self._data).decode(errors="replace")
        return [line for line in text.split("\r\n") if line and marker not in line]

    def clear(self) -> None:
        """Forget what was seen so far."""
        self.lines()
        self._data.clear()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._sock.close()


@contextlib.contextmanager
def monitoring(url: str) -> Iterator[Monitor]:
    monitor = Monitor(url)
    try:
        yield monitor
    finally:
        monitor.close()


def _command(line: str) -> str:
    """The command a MONITOR line shows, lower case (scripts' commands are shown as they call them)."""
    found = re.search(r'\] "([A-Za-z]+)"', line)
    return "" if found is None else found[1].lower()


def _writes(lines: list[str], field: str) -> list[str]:
    """The HSET lines that set ``field``."""
    return [line for line in lines if _command(line) == "hset" and f'"{field}"' in line]


def _reads_of_static(lines: list[str]) -> list[str]:
    return [line for line in lines if _command(line) in ("hget", "hmget") and '"static"' in line]


# --------------------------------------------------------------------------- without Redis
@pytest.mark.parametrize("task_id", STATIC_TASKS)
def test_declared_static_fields_never_change_in_a_step(task_id: str) -> None:
    """What an environment declares static is the same after every step as after its reset (a
    wrong declaration would lose a change when the session moves between processes); the two parts
    joined are the whole state."""
    env = integrity_gym.make(task_id)
    cls = type(env)
    assert cls.static_state_fields <= set(cls.state_type.model_fields)
    for seed in (0, 5):
        rng = make_rng("static-state", seed)
        obs = env.reset(seed=seed)
        static = _static_json(env)
        serial = env.episode_serial
        step = 0
        while not env.done:
            if step < 4:
                action: Any = cls.sample_action(obs, rng) if step else {"no_such_field": 1}
            else:
                action = cls.oracle_action(env.state())
            obs = env.step(action).observation
            step += 1
            assert _static_json(env) == static, (task_id, seed, step)
            assert env.episode_serial == serial
            dynamic = env.state().model_dump_json(exclude=set(cls.static_state_fields))
            assert json.loads(joined(dynamic.encode(), static.encode())) == json.loads(env.state().model_dump_json())


def test_every_reset_and_load_draws_a_new_episode_serial() -> None:
    env, other = _env(1), _env(1)
    assert env.episode_serial != other.episode_serial  # the same item in two instances: two episodes
    first = env.episode_serial
    env.step(SKIP)
    assert env.episode_serial == first
    env.reset(seed=1)
    assert env.episode_serial != first
    second = env.episode_serial
    env.load_state(env.state())
    assert env.episode_serial not in (first, second)
    assert _factory(TASK).episode_serial == 0


def test_a_static_part_the_script_left_out_is_taken_from_the_copy_here_or_read_again() -> None:
    env = _env(2)
    fields = [b"task", b"3", None, b"episode", b"{}", b"1", None]
    assert complete(fields, None) is None  # no copy here: read again
    cached = StoredSession("s" * 22, ENV, env, "http", static_ver=1, static_json=b'{"a":1}')
    assert complete(fields, cached) == [*fields[:6], b'{"a":1}']
    cached.static_ver = 2  # a copy of another episode's static part: read again
    assert complete(fields, cached) is None
    assert complete([*fields[:6], b"{}"], None) == [*fields[:6], b"{}"]


# --------------------------------------------------------------------------- one Redis, in-process stores
def _store(url: str, ttl_s: float = 600.0) -> RedisStore:
    return RedisStore(url, _factory, max_sessions=16, ttl_s=ttl_s)


def test_the_document_is_written_once_per_episode_and_never_with_a_step(redis_url: str) -> None:
    """Kills: the static part sent with every step (the document's id in a step's write), written
    again by steps (a second ``static`` HSET), per-step writes that still carry most of the state,
    and episode fields (task, episode id) rewritten at every step."""

    async def scenario() -> None:
        store = _store(redis_url)
        await store.start()
        try:
            env = _env(11)
            document_id = env.state().document.id
            whole = len(env.state().model_dump_json())
            with monitoring(redis_url) as monitor:
                session = await store.open(ENV, env, kind="http")
                opened = monitor.lines()
                monitor.clear()
                for _ in range(12):
                    async with store.use(session.id, ENV) as used:
                        used.env.step(SKIP)
                stepped = monitor.lines()
            static_writes = _writes(opened, "static")
            assert len(static_writes) == 1 and document_id in static_writes[0]
            assert not _writes(stepped, "static") and document_id not in "\n".join(stepped)
            state_writes = _writes(stepped, "state")
            assert len(state_writes) == 12
            for line in state_writes:
                assert '"task"' not in line and '"episode"' not in line and '"sver"' not in line
                assert len(line) < whole / 4, (len(line), whole)  # about 0.3 KB of a 2.5 KB state
            assert not _reads_of_static(stepped)  # this process's copy stays current: versions only
        finally:
            await store.stop()

    asyncio.run(scenario())


def test_a_session_stepped_by_two_stores_in_turn_is_the_in_process_episode(redis_url: str) -> None:
    """Two stores (two processes' worth of caches) step one session in turn. Kills: a rebuilt
    episode missing its static part or carrying a stale one, and the static part read again by a
    process that already holds it (only the second store's first use reads it)."""

    async def scenario() -> None:
        first, second = _store(redis_url), _store(redis_url)
        await first.start()
        await second.start()
        try:
            here = _env(12)
            with monitoring(redis_url) as monitor:
                session = await first.open(ENV, _env(12), kind="http")
                monitor.clear()
                rng = make_rng("static-turns", 12)
                obs = here.observation()
                for i in range(30):
                    action = type(here).sample_action(obs, rng).model_dump(mode="json") if i % 3 else SKIP
                    expected = here.step(action)
                    obs = expected.observation
                    async with (first, second)[i % 2].use(session.id, ENV) as used:
                        got = used.env.step(action)
                    assert got.model_dump_json() == expected.model_dump_json(), i
                    if expected.done:
                        break
                lines = monitor.lines()
            assert len(_reads_of_static(lines)) == 1, _reads_of_static(lines)
            assert not _writes(lines, "static")
            third = _store(redis_url)  # a process that never saw the session
            await third.start()
            try:
                async with third.use(session.id, ENV, write=False) as used:
                    assert used.env.state() == here.state()
            finally:
                await third.stop()
        finally:
            await first.stop()
            await second.stop()

    asyncio.run(scenario())


def test_a_new_episode_in_a_session_replaces_the_static_part(redis_url: str) -> None:
    """A reset inside a use writes the new document with that save, and a new episode id alone is
    written too; another process then rebuilds the new episode. Kills: a static part written only
    at open, or only when the episode id changes."""

    async def scenario() -> None:
        first, second = _store(redis_url), _store(redis_url)
        await first.start()
        await second.start()
        try:
            session = await first.open(ENV, _env(13), kind="http")
            for store in (second, first, first):  # both hold episode one's part, the first a current copy
                async with store.use(session.id, ENV) as used:
                    used.env.step(SKIP)
            here = _env(14)
            here.step(SKIP)
            with monitoring(redis_url) as monitor:
                async with first.use(session.id, ENV) as used:
                    used.env.reset(seed=14)  # the same episode id: only the environment knows
                    used.env.step(SKIP)
                lines = monitor.lines()
            static_writes = _writes(lines, "static")
            assert len(static_writes) == 1 and here.state().document.id in static_writes[0]
            async with second.use(session.id, ENV, write=False) as used:
                assert used.env.state() == here.state()
            async with first.use(session.id, ENV) as used:
                used.new_episode()
                episode_id = used.episode_id
            async with second.use(session.id, ENV, write=False) as used:
                assert used.episode_id == episode_id
                assert used.env.state() == here.state()
        finally:
            await first.stop()
            await second.stop()

    asyncio.run(scenario())


def test_a_static_part_dropped_here_meanwhile_is_read_again(redis_url: str) -> None:
    """The use script leaves the static part out when told this process holds it; if the copy was
    dropped before the reply is read (closed here meanwhile), the store reads every field again
    instead of rebuilding the episode from half of its state."""

    async def scenario() -> None:
        first, second = _store(redis_url), _store(redis_url)
        await first.start()
        await second.start()
        try:
            here = _env(15)
            session = await first.open(ENV, _env(15), kind="http")
            for store in (second, first):  # both hold the static part; the second's copy is now stale
                here.step(SKIP)
                async with store.use(session.id, ENV) as used:
                    used.env.step(SKIP)
            run = second.worker.run

            async def dropping(script: Any, keys: list[Any], args: list[Any]) -> Any:
                reply = await run(script, keys, args)
                if isinstance(reply, list):
                    assert reply[6] is None  # the script relied on the copy here
                    second._cache.pop(session.id, None)
                return reply

            second.worker.run = dropping  # type: ignore[method-assign]
            here.step(SKIP)
            async with second.use(session.id, ENV) as used:
                used.env.step(SKIP)
                assert used.env.state() == here.state()
        finally:
            await first.stop()
            await second.stop()

    asyncio.run(scenario())


def test_closing_or_expiry_removes_the_whole_session(redis_url: str) -> None:
    """Both parts live in one hash: a close deletes it and the idle time-to-live expires it, the
    document with the rest; nothing of the session is left in Redis (its index entry included)."""
    import redis

    async def scenario() -> None:
        store = _store(redis_url, ttl_s=3.0)
        await store.start()
        client = redis.Redis.from_url(redis_url)
        try:
            closed = await store.open(ENV, _env(16), kind="http")
            expiring = await store.open(ENV, _env(17), kind="http")
            for session in (closed, expiring):
                async with store.use(session.id, ENV) as used:
                    used.env.step(SKIP)
                key = f"igym:s:{session.id}"
                assert client.hget(key, "static") and client.hget(key, "state")
                assert 0 < client.pttl(key) <= 3000
            assert await store.close(closed.id, ENV)
            assert client.keys(f"*{closed.id}*") == [] and client.zscore("igym:sessions", closed.id) is None
            deadline = time.monotonic() + 15
            while client.keys(f"*{expiring.id}*") or client.zscore("igym:sessions", expiring.id) is not None:
                assert time.monotonic() < deadline, "the session did not expire"
                await asyncio.sleep(0.1)
            for session in (closed, expiring):
                with pytest.raises(SessionNotFoundError):
                    async with store.use(session.id, ENV):
                        pass
        finally:
            client.close()
            await store.stop()

    asyncio.run(scenario())


# --------------------------------------------------------------------------- two real server processes
def test_two_server_processes_step_a_session_in_turn_writing_the_document_once(redis_url: str) -> None:
    """Reset through one process, then every step through the other in turn: the in-process
    transcript, and the document goes to Redis once (at the reset) and is read once (by the
    second process's first step)."""
    servers = [start_server(["--sessions", redis_url, "--max-sessions", "8"]) for _ in range(2)]
    try:
        ref = reference(TASK, 31)
        obs_type = type(_factory(TASK)).observation_type
        urls = [f"{server.url}/{ENV}" for server in servers]
        with monitoring(redis_url) as monitor, httpx.Client(trust_env=False, timeout=30) as http:
            reply = http.post(f"{urls[0]}/reset", json={"seed": 31, "task": TASK}).json()
            session = reply["session_id"]
            seen = [obs_type.model_validate(reply["observation"]).model_dump_json()]
            for i, action in enumerate(ref.actions):
                step = http.post(f"{urls[(i + 1) % 2]}/step", json={"session_id": session, "action": action})
                assert step.status_code == 200, step.text
                data = step.json()
                data["observation"] = obs_type.model_validate(data["observation"])
                data["info"].pop("grade", None)
                seen.append(StepResult(**data).model_dump_json())
            lines = [line for line in monitor.lines() if session in line]
            assert http.delete(f"{urls[1]}/session/{session}").status_code == 200
        assert seen == ref.seen
        document_id = json.loads(ref.state)["document"]["id"]
        static_writes = _writes(lines, "static")
        assert len(static_writes) == 1 and document_id in static_writes[0]
        assert len(_writes(lines, "state")) == len(ref.actions) + 1
        assert len(_reads_of_static(lines)) == 1
    finally:
        for server in servers:
            server.stop()
