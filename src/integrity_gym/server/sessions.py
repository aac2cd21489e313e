"""Session stores: where the server keeps live episodes between requests.

A session is one environment instance bound to one client: a WebSocket connection owns one for
its lifetime; an HTTP client gets one from ``POST /<env>/reset`` and names it by id afterwards.

Every store enforces the same rules: at most ``max_sessions`` live sessions (a clear
``CapacityError`` past that), an idle time-to-live after which a reaper frees the slot, and one
lock per session so two concurrent requests on a session run one after the other, never
interleaved.

* ``MemoryStore`` (the embedded default) keeps environments as Python objects in this process.
Sessions are of two kinds. An HTTP session (``kind="http"``) is named by its id in requests and
ended by ``close``; a WebSocket session (``kind="ws"``) belongs to its connection alone: no HTTP
request can reach, read or end it, and only its socket frees it (``release``) or the reaper
does. So every live episode counts towards capacity and is subject to the reaper.

* ``RedisStore`` keeps each HTTP session's full state (``Env.state()`` as JSON) in Redis, so
  several server processes behind one address share sessions: a session reset through one
  process can be stepped through another, which rebuilds the episode with ``Env.load_state``.
  Per-session locking then uses a Redis lock, and the capacity count is global. WebSocket
  sessions stay in the process that holds the connection but still count towards capacity.

Both stores also keep the sealed evaluations of ``igym serve --sealed`` (``evaluations.py``): an
evaluation's settings (``meta``), one record per episode, the handle of each episode and, per
secret and task, the items already handed out. The memory store keeps them in dicts; the Redis
store keeps them in Redis as JSON (with the evaluation's time-to-live; the record of items
handed out has none), so they survive a restart and are shared by every process.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import secrets
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from integrity_gym.core.env import Env

log = logging.getLogger("integrity_gym.server.sessions")

AnyEnv = Env[Any, Any, Any]
EnvFactory = Callable[[str], AnyEnv]
Kind = Literal["http", "ws"]

_SESSION_ID = re.compile(r"^[A-Za-z0-9_-]{8,64}$")


class CapacityError(RuntimeError):
    """The server already holds its maximum number of sessions."""

    def __init__(self, active: int, maximum: int) -> None:
        super().__init__(
            f"server at capacity: {active} of {maximum} sessions are open; close a session "
            "(DELETE /<env>/session/<id> or a WebSocket 'close') or retry later"
        )
        self.active = active
        self.maximum = maximum


class SessionNotFoundError(KeyError):
    """No live session has this id in this environment (never created, closed or expired)."""

    def __init__(self, session_id: str, env_name: str) -> None:
        shown = session_id if _SESSION_ID.match(session_id) else "<malformed id>"
        super().__init__(
            f"no session {shown!r} in {env_name}: it was never created, was closed, or expired "
            "after its idle time-to-live; POST /{env}/reset starts a new one".replace("{env}", env_name)
        )
        self.message = str(self.args[0])


class EvaluationCapacityError(RuntimeError):
    """The server already holds its maximum number of open evaluations."""

    def __init__(self, active: int, maximum: int) -> None:
        super().__init__(
            f"server at capacity: {active} of {maximum} evaluations are open; close one "
            "(POST /evaluations/<id>/close) or retry later"
        )
        self.active = active
        self.maximum = maximum


class SessionBusyError(RuntimeError):
    """The session's lock could not be taken in time (another request holds it)."""


class StoreUnavailableError(RuntimeError):
    """The session store cannot be reached (e.g. Redis is down); the message names the store."""


def new_session_id() -> str:
    """A fresh unguessable session id (the id is the only credential for a session)."""
    return secrets.token_urlsafe(16)


@dataclass(eq=False)
class Session:
    """One live episode: its environment and the bookkeeping the store needs."""

    id: str
    env_name: str
    env: AnyEnv
    kind: Kind
    last_used: float = field(default_factory=time.monotonic)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    busy: int = 0
    version: int = 0
    on_evict: Callable[[], Awaitable[None]] | None = None
    #: Set once the store has let the session go (closed, released or reaped).
    closed: bool = False
    #: The sealed-evaluation handle this HTTP session plays (``evaluations.py``), else None.
    handle: str | None = None
    #: The id clients see for the episode being played: drawn at random on each reset (a WebSocket
    #: session draws a new one per reset), never derived from the task, seed or item, so it tells
    #: two episodes apart without telling which item either plays.
    episode_id: str = field(default_factory=lambda: str(uuid.uuid4()))

    def new_episode(self) -> None:
        """Draw the id of the episode this session starts now."""
        self.episode_id = str(uuid.uuid4())

    def touch(self) -> None:
        """Mark the session as used now (restarts its idle time-to-live)."""
        self.last_used = time.monotonic()


class SessionStore(ABC):
    """Common behaviour of the session stores: limits, the reaper task, WebSocket slots."""

    def __init__(
        self,
        *,
        max_sessions: int,
        ttl_s: float,
        reap_interval_s: float | None = None,
        evaluation_ttl_s: float = 86400.0,
        max_evaluations: int = 64,
    ) -> None:
        if max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1, got {max_sessions}")
        if ttl_s <= 0:
            raise ValueError(f"session ttl must be positive, got {ttl_s}")
        if evaluation_ttl_s <= 0 or max_evaluations < 1:
            raise ValueError("evaluation ttl must be positive and max_evaluations at least 1")
        self.max_sessions = max_sessions
        self.ttl_s = ttl_s
        self.evaluation_ttl_s = evaluation_ttl_s
        self.max_evaluations = max_evaluations
        self.reap_interval_s = reap_interval_s or max(0.05, min(ttl_s / 4, 15.0))
        self._local: dict[str, Session] = {}
        self._reaper: asyncio.Task[None] | None = None
        self.reaped_total = 0

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        """Start the background reaper."""
        if self._reaper is None:
            self._reaper = asyncio.create_task(self._reap_forever(), name="igym-session-reaper")

    async def stop(self) -> None:
        """Stop the reaper and drop every local session."""
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
            self._reaper = None
        for session in list(self._local.values()):
            session.env.close()
        self._local.clear()

    async def _reap_forever(self) -> None:
        while True:
            await asyncio.sleep(self.reap_interval_s)
            try:
                await self.reap()
            except StoreUnavailableError as exc:  # the reaper must survive a store outage
                log.warning("session reaper: %s", exc)
            except Exception:
                log.exception("session reaper failed; retrying")

    def _idle_local(self, now: float) -> list[Session]:
        return [
            s for s in self._local.values() if now - s.last_used > self.ttl_s and s.busy == 0 and not s.lock.locked()
        ]

    async def _evict(self, session: Session) -> None:
        self._local.pop(session.id, None)
        session.closed = True
        session.env.close()
        self.reaped_total += 1
        if session.on_evict is not None:
            with contextlib.suppress(Exception):
                await session.on_evict()

    # ------------------------------------------------------------------ interface
    @abstractmethod
    async def open(
        self,
        env_name: str,
        env: AnyEnv,
        *,
        kind: Kind,
        on_evict: Callable[[], Awaitable[None]] | None = None,
        handle: str | None = None,
    ) -> Session:
        """Register a new session (raise ``CapacityError`` when full) and return it.

        ``handle`` marks an HTTP session as playing that sealed-evaluation episode.
        """

    @abstractmethod
    def use(
        self, session_id: str, env_name: str, *, write: bool = True
    ) -> contextlib.AbstractAsyncContextManager[Session]:
        """Hold the session's lock while the caller works on it; save it afterwards if ``write``."""

    @abstractmethod
    async def close(self, session_id: str, env_name: str) -> bool:
        """End the HTTP session ``session_id`` of ``env_name``; False if there is none.

        A WebSocket session is not an HTTP session: its id is refused here like an unknown one.
        """

    @abstractmethod
    async def release(self, session: Session) -> None:
        """Free a session its owner is done with (a WebSocket at disconnect); never raises."""

    async def check(self) -> None:
        """Raise ``StoreUnavailableError`` when the store cannot serve requests (``/health``)."""
        return None  # a store inside this process is always there

    @abstractmethod
    async def count(self) -> int:
        """Live sessions (for a shared store: in every process)."""

    @abstractmethod
    async def reap(self) -> int:
        """Free the sessions idle for longer than the time-to-live; return how many."""

    async def ensure_room(self) -> None:
        """Raise ``CapacityError`` now if the store is full (after reaping), before costly work.

        ``open`` still enforces the limit atomically; this only avoids building an episode that
        would be refused anyway.
        """
        active = await self.count()
        if active >= self.max_sessions:
            await self.reap()
            active = await self.count()
            if active >= self.max_sessions:
                raise CapacityError(active, self.max_sessions)

    def describe(self) -> dict[str, Any]:
        """Settings reported by ``/health``."""
        return {"store": self.name, "max_sessions": self.max_sessions, "ttl_s": self.ttl_s}

    name = "abstract"

    # ------------------------------------------------------------------ sealed evaluations
    # Records are JSON-ready dicts: ``meta`` (settings, ``closed``...) and one per episode
    # (``handle``, ``task_id``, ``index``, ``seed``, ``status``, ``session_id``, ``result``...).
    @abstractmethod
    async def eval_create(self, eval_id: str, meta: dict[str, Any], episodes: list[dict[str, Any]]) -> None:
        """Store a new evaluation and its handles; ``EvaluationCapacityError`` when too many are open."""

    @abstractmethod
    async def eval_reserve(self, eval_id: str) -> None:
        """Count ``eval_id`` as open (``EvaluationCapacityError`` at ``max_evaluations``)."""

    @abstractmethod
    async def eval_unreserve(self, eval_id: str) -> None:
        """Stop counting ``eval_id`` as open (it closed, or was never created)."""

    @abstractmethod
    async def eval_meta(self, eval_id: str) -> dict[str, Any] | None:
        """The evaluation's settings, or None when unknown or expired."""

    @abstractmethod
    async def eval_put_meta(self, eval_id: str, meta: dict[str, Any], *, renew: bool = False) -> None:
        """Replace the settings; ``renew`` restarts the evaluation's time-to-live."""

    @abstractmethod
    async def eval_episodes(self, eval_id: str) -> list[dict[str, Any]]:
        """Every episode record, in order (empty when unknown)."""

    @abstractmethod
    async def eval_episode(self, eval_id: str, position: int) -> dict[str, Any] | None:
        """One episode record."""

    @abstractmethod
    async def eval_put_episode(self, eval_id: str, position: int, episode: dict[str, Any]) -> None:
        """Replace one episode record."""

    @abstractmethod
    async def eval_handle(self, handle: str) -> tuple[str, int] | None:
        """(evaluation id, position) of a handle, or None when unknown or expired."""

    @abstractmethod
    def eval_lock(self, eval_id: str) -> contextlib.AbstractAsyncContextManager[None]:
        """Hold the evaluation's lock (shared by every process of a shared store)."""

    @abstractmethod
    async def items_members(self, namespace: str) -> set[str]:
        """The items of ``namespace`` (secret fingerprint and task) handed out so far."""

    @abstractmethod
    async def items_reserve(self, namespace: str, keys: list[str]) -> list[bool]:
        """Record ``keys`` as handed out; True for each one that was not already (in order)."""


class MemoryStore(SessionStore):
    """Sessions as live Python objects in this process (the embedded default)."""

    name = "memory"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        #: Evaluation id -> {"meta", "episodes", "expires" (wall clock)}.
        self._evals: dict[str, dict[str, Any]] = {}
        self._open_evals: set[str] = set()
        self._handles: dict[str, tuple[str, int]] = {}
        self._eval_locks: dict[str, asyncio.Lock] = {}
        self._items: dict[str, set[str]] = {}

    async def open(
        self,
        env_name: str,
        env: AnyEnv,
        *,
        kind: Kind,
        on_evict: Callable[[], Awaitable[None]] | None = None,
        handle: str | None = None,
    ) -> Session:
        """Register a new session, reaping idle ones first if the store is full."""
        if len(self._local) >= self.max_sessions:
            await self.reap()
            if len(self._local) >= self.max_sessions:
                raise CapacityError(len(self._local), self.max_sessions)
        session = Session(new_session_id(), env_name, env, kind, on_evict=on_evict, handle=handle)
        self._local[session.id] = session
        return session

    @contextlib.asynccontextmanager
    async def use(self, session_id: str, env_name: str, *, write: bool = True) -> AsyncIterator[Session]:
        """Lock the session for the caller; unknown ids raise ``SessionNotFoundError``."""
        session = self._local.get(session_id)
        if session is None or session.env_name != env_name or session.kind != "http":
            raise SessionNotFoundError(session_id, env_name)
        session.busy += 1
        try:
            async with session.lock:
                if self._local.get(session_id) is not session:  # closed while we waited
                    raise SessionNotFoundError(session_id, env_name)
                session.touch()
                yield session
                session.touch()
        finally:
            session.busy -= 1

    async def close(self, session_id: str, env_name: str) -> bool:
        """Remove the HTTP session; False if unknown, of another environment, or a WebSocket's."""
        session = self._local.get(session_id)
        if session is None or session.env_name != env_name or session.kind != "http":
            return False
        await self.release(session)
        return True

    async def release(self, session: Session) -> None:
        """Forget the session and close its environment."""
        if self._local.get(session.id) is session:
            del self._local[session.id]
        session.closed = True
        session.env.close()

    async def count(self) -> int:
        """Sessions held by this process."""
        return len(self._local)

    async def reap(self) -> int:
        """Evict idle sessions (a WebSocket's socket is closed through its ``on_evict``)."""
        idle = self._idle_local(time.monotonic())
        for session in idle:
            await self._evict(session)
        self._expire_evaluations()
        return len(idle)

    # ------------------------------------------------------------------ sealed evaluations
    def _expire_evaluations(self) -> None:
        now = time.time()
        for eval_id in [k for k, v in self._evals.items() if v["expires"] <= now]:
            record = self._evals.pop(eval_id)
            self._open_evals.discard(eval_id)
            self._eval_locks.pop(eval_id, None)
            for episode in record["episodes"]:
                self._handles.pop(episode["handle"], None)

    def _record(self, eval_id: str) -> dict[str, Any] | None:
        record = self._evals.get(eval_id)
        if record is not None and record["expires"] <= time.time():
            self._expire_evaluations()
            return None
        return record

    async def eval_reserve(self, eval_id: str) -> None:
        """Count the evaluation as open."""
        self._expire_evaluations()
        if len(self._open_evals) >= self.max_evaluations:
            raise EvaluationCapacityError(len(self._open_evals), self.max_evaluations)
        self._open_evals.add(eval_id)

    async def eval_unreserve(self, eval_id: str) -> None:
        """Stop counting the evaluation as open."""
        self._open_evals.discard(eval_id)

    async def eval_create(self, eval_id: str, meta: dict[str, Any], episodes: list[dict[str, Any]]) -> None:
        """Keep the evaluation in this process."""
        self._evals[eval_id] = {
            "meta": dict(meta),
            "episodes": [dict(e) for e in episodes],
            "expires": time.time() + self.evaluation_ttl_s,
        }
        for position, episode in enumerate(episodes):
            self._handles[episode["handle"]] = (eval_id, position)

    async def eval_meta(self, eval_id: str) -> dict[str, Any] | None:
        """A copy of the settings."""
        record = self._record(eval_id)
        return None if record is None else dict(record["meta"])

    async def eval_put_meta(self, eval_id: str, meta: dict[str, Any], *, renew: bool = False) -> None:
        """Replace the settings (and restart the time-to-live)."""
        record = self._record(eval_id)
        if record is not None:
            record["meta"] = dict(meta)
            if renew:
                record["expires"] = time.time() + self.evaluation_ttl_s

    async def eval_episodes(self, eval_id: str) -> list[dict[str, Any]]:
        """Copies of every episode record."""
        record = self._record(eval_id)
        return [] if record is None else [dict(e) for e in record["episodes"]]

    async def eval_episode(self, eval_id: str, position: int) -> dict[str, Any] | None:
        """A copy of one episode record."""
        record = self._record(eval_id)
        if record is None or not 0 <= position < len(record["episodes"]):
            return None
        return dict(record["episodes"][position])

    async def eval_put_episode(self, eval_id: str, position: int, episode: dict[str, Any]) -> None:
        """Replace one episode record."""
        record = self._record(eval_id)
        if record is not None:
            record["episodes"][position] = dict(episode)

    async def eval_handle(self, handle: str) -> tuple[str, int] | None:
        """Where the handle points."""
        found = self._handles.get(handle)
        if found is None or self._record(found[0]) is None:
            return None
        return found

    def eval_lock(self, eval_id: str) -> contextlib.AbstractAsyncContextManager[None]:
        """An asyncio lock per evaluation."""
        return self._eval_locks.setdefault(eval_id, asyncio.Lock())

    async def items_members(self, namespace: str) -> set[str]:
        """Items handed out in this process's lifetime."""
        return set(self._items.get(namespace, ()))

    async def items_reserve(self, namespace: str, keys: list[str]) -> list[bool]:
        """Add each key; True where it was new."""
        used = self._items.setdefault(namespace, set())
        fresh = []
        for key in keys:
            fresh.append(key not in used)
            used.add(key)
        return fresh


# Capacity check and registration in one atomic step, shared by every server process.
_OPEN_SCRIPT = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
local n = redis.call('ZCARD', KEYS[1])
if n >= tonumber(ARGV[2]) then return -n - 1 end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[4])
return n + 1
"""


class RedisStore(SessionStore):
    """HTTP sessions stored in Redis as JSON state, shared by every process using the same URL."""

    name = "redis"

    def __init__(
        self,
        url: str,
        factory: EnvFactory,
        *,
        max_sessions: int,
        ttl_s: float,
        reap_interval_s: float | None = None,
        prefix: str = "igym",
        lock_timeout_s: float = 30.0,
        evaluation_ttl_s: float = 86400.0,
        max_evaluations: int = 64,
    ) -> None:
        super().__init__(
            max_sessions=max_sessions,
            ttl_s=ttl_s,
            reap_interval_s=reap_interval_s,
            evaluation_ttl_s=evaluation_ttl_s,
            max_evaluations=max_evaluations,
        )
        try:
            import redis.asyncio as aioredis
        except ImportError as exc:  # pragma: no cover - depends on the optional extra
            raise ValueError(
                "the Redis session store needs the 'redis' extra: pip install 'integrity-gym[redis]'"
            ) from exc
        self.url = url
        # Bounded waits: an unreachable Redis must become a clear 503, not a hung request.
        self._redis: Any = aioredis.Redis.from_url(url, socket_connect_timeout=5.0, socket_timeout=10.0)
        self._factory = factory
        self._prefix = prefix
        self._index = f"{prefix}:sessions"
        self._lock_timeout_s = lock_timeout_s
        self._open_script = self._redis.register_script(_OPEN_SCRIPT)
        self._cache: dict[str, Session] = {}  # HTTP sessions this process saw last (by version)
        self._locks: dict[str, asyncio.Lock] = {}

    def _key(self, session_id: str) -> str:
        return f"{self._prefix}:s:{session_id}"

    @contextlib.contextmanager
    def _reachable(self) -> Iterator[None]:
        """Turn a lost connection to Redis into ``StoreUnavailableError`` naming the store."""
        from redis.exceptions import ConnectionError as RedisConnectionError
        from redis.exceptions import TimeoutError as RedisTimeoutError

        try:
            yield
        except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
            raise StoreUnavailableError(
                f"the session store (Redis at {self._safe_url}) is unavailable: {exc}. Sessions cannot be "
                "opened or found until it answers again; retry later"
            ) from exc

    @property
    def _safe_url(self) -> str:
        return re.sub(r"//[^@/]*@", "//***@", self.url)

    async def start(self) -> None:
        """Check that Redis answers, then start the reaper."""
        try:
            await self._redis.ping()
        except Exception as exc:
            raise ValueError(f"cannot reach Redis at {self._safe_url}: {exc}") from exc
        await super().start()

    async def check(self) -> None:
        """Ping Redis."""
        with self._reachable():
            await self._redis.ping()

    async def stop(self) -> None:
        """Stop the reaper, release this process's WebSocket slots and disconnect."""
        for session in list(self._local.values()):
            with contextlib.suppress(Exception):
                await self._redis.zrem(self._index, session.id)
        await super().stop()
        self._cache.clear()
        await self._redis.aclose()

    async def _reserve(self, session_id: str) -> None:
        now = time.time()
        with self._reachable():
            result = int(
                await self._open_script(keys=[self._index], args=[now, self.max_sessions, now + self.ttl_s, session_id])
            )
        if result < 0:
            raise CapacityError(-result - 1, self.max_sessions)

    async def open(
        self,
        env_name: str,
        env: AnyEnv,
        *,
        kind: Kind,
        on_evict: Callable[[], Awaitable[None]] | None = None,
        handle: str | None = None,
    ) -> Session:
        """Reserve a slot in Redis; an HTTP session's state is written there at once."""
        session = Session(new_session_id(), env_name, env, kind, on_evict=on_evict, handle=handle)
        await self._reserve(session.id)
        if kind == "ws":
            self._local[session.id] = session
            return session
        session.version = 1
        try:
            await self._save(session)
        except Exception:
            with contextlib.suppress(Exception):
                await self._redis.zrem(self._index, session.id)
            raise
        self._cache[session.id] = session
        return session

    async def _save(self, session: Session) -> None:
        key = self._key(session.id)
        state = session.env.state().model_dump_json()
        pipe = self._redis.pipeline(transaction=True)
        mapping: dict[str, Any] = {
            "env": session.env_name,
            "task": session.env.spec.id,
            "state": state,
            "ver": session.version,
        }
        if session.handle is not None:
            mapping["handle"] = session.handle
        mapping["episode"] = session.episode_id
        pipe.hset(key, mapping=mapping)
        pipe.expire(key, max(1, round(self.ttl_s)))
        pipe.zadd(self._index, {session.id: time.time() + self.ttl_s})
        with self._reachable():
            await pipe.execute()

    @contextlib.asynccontextmanager
    async def use(self, session_id: str, env_name: str, *, write: bool = True) -> AsyncIterator[Session]:
        """Lock the session across processes, load it (from cache if current), save it after."""
        if not _SESSION_ID.match(session_id) or session_id in self._local:
            raise SessionNotFoundError(session_id, env_name)
        from redis.exceptions import LockError, RedisError

        local_lock = self._locks.setdefault(session_id, asyncio.Lock())
        async with local_lock:
            lock = self._redis.lock(
                f"{self._prefix}:lock:{session_id}", timeout=self._lock_timeout_s, blocking_timeout=self._lock_timeout_s
            )
            try:
                with self._reachable():
                    acquired = await lock.acquire()
            except LockError as exc:  # pragma: no cover - only under Redis failures
                raise SessionBusyError(f"session {session_id} is locked by another request; retry") from exc
            if not acquired:
                raise SessionBusyError(f"session {session_id} stayed locked for {self._lock_timeout_s}s; retry")
            try:
                session = await self._load(session_id, env_name)
                session.busy += 1
                try:
                    yield session
                except BaseException:
                    # The episode may be half-changed: never trust this copy again.
                    self._cache.pop(session_id, None)
                    raise
                finally:
                    session.busy -= 1
                if write:
                    session.version += 1
                    try:
                        await self._save(session)
                    except StoreUnavailableError:
                        self._cache.pop(session_id, None)  # this step is not stored: forget it here too
                        raise
                else:
                    pipe = self._redis.pipeline(transaction=False)
                    pipe.expire(self._key(session_id), max(1, round(self.ttl_s)))
                    pipe.zadd(self._index, {session_id: time.time() + self.ttl_s})
                    with self._reachable():
                        await pipe.execute()
                session.touch()
            finally:
                # The lock expires by itself if Redis went away meanwhile.
                with contextlib.suppress(LockError, RedisError, OSError):
                    await lock.release()
        if not local_lock.locked() and session_id not in self._cache:
            self._locks.pop(session_id, None)

    async def _load(self, session_id: str, env_name: str) -> Session:
        with self._reachable():
            env_field, task, version, handle, episode = await self._redis.hmget(
                self._key(session_id), "env", "task", "ver", "handle", "episode"
            )
        if env_field is None or env_field.decode() != env_name:
            self._cache.pop(session_id, None)
            raise SessionNotFoundError(session_id, env_name)
        ver = int(version)
        cached = self._cache.get(session_id)
        if cached is not None and cached.version == ver:
            return cached
        # Another process moved the episode on (or we never saw it): rebuild it from its state.
        with self._reachable():
            state_json = await self._redis.hget(self._key(session_id), "state")
        if state_json is None:
            raise SessionNotFoundError(session_id, env_name)
        env = self._factory(task.decode())
        env.load_state(env.state_type.model_validate_json(state_json))
        session = Session(
            session_id, env_name, env, "http", version=ver, handle=None if handle is None else handle.decode()
        )
        if episode is not None:
            session.episode_id = episode.decode()
        self._cache[session_id] = session
        return session

    async def close(self, session_id: str, env_name: str) -> bool:
        """Delete the HTTP session from Redis (a WebSocket session's id is refused)."""
        if not _SESSION_ID.match(session_id) or session_id in self._local:
            return False
        key = self._key(session_id)
        with self._reachable():
            stored = await self._redis.hget(key, "env")
            if stored is None or stored.decode() != env_name:
                return False
            pipe = self._redis.pipeline(transaction=True)
            pipe.delete(key)
            pipe.zrem(self._index, session_id)
            deleted, _ = await pipe.execute()
        cached = self._cache.pop(session_id, None)
        if cached is not None:
            cached.closed = True
            cached.env.close()
        return bool(deleted)

    async def release(self, session: Session) -> None:
        """Free this process's WebSocket slot (if Redis is down, the slot's score expires it)."""
        if self._local.get(session.id) is session:
            del self._local[session.id]
        session.closed = True
        session.env.close()
        try:
            with self._reachable():
                await self._redis.zrem(self._index, session.id)
        except StoreUnavailableError as exc:
            log.warning("could not free session %s in the store: %s", session.id, exc)

    async def count(self) -> int:
        """Unexpired sessions registered by every process sharing this Redis."""
        with self._reachable():
            return int(await self._redis.zcount(self._index, time.time(), "+inf"))

    async def reap(self) -> int:
        """Forget expired sessions; close idle local WebSockets; keep live ones' slots fresh."""
        now_wall, now = time.time(), time.monotonic()
        idle = self._idle_local(now)
        for session in idle:
            await self._evict(session)
        with self._reachable():
            removed = int(await self._redis.zremrangebyscore(self._index, "-inf", now_wall))
            if idle:
                await self._redis.zrem(self._index, *[s.id for s in idle])
            live = {s.id: now_wall + self.ttl_s - (now - s.last_used) for s in self._local.values()}
            if live:
                await self._redis.zadd(self._index, live)
            await self._redis.zremrangebyscore(self._evals_index, "-inf", now_wall)
        for sid, cached in list(self._cache.items()):
            if now - cached.last_used > self.ttl_s and cached.busy == 0:
                self._cache.pop(sid, None)
                self._locks.pop(sid, None)
        return removed + len(idle)

    # ------------------------------------------------------------------ sealed evaluations
    @property
    def _evals_index(self) -> str:
        return f"{self._prefix}:evaluations"  # open evaluations, scored by expiry

    def _meta_key(self, eval_id: str) -> str:
        return f"{self._prefix}:e:{eval_id}:meta"

    def _episodes_key(self, eval_id: str) -> str:
        return f"{self._prefix}:e:{eval_id}:episodes"

    def _handle_key(self, handle: str) -> str:
        return f"{self._prefix}:h:{handle}"

    def _items_key(self, namespace: str) -> str:
        return f"{self._prefix}:items:{namespace}"

    @property
    def _eval_ttl(self) -> int:
        return max(1, round(self.evaluation_ttl_s))

    async def eval_reserve(self, eval_id: str) -> None:
        """Count the evaluation as open, atomically against every process."""
        now = time.time()
        with self._reachable():
            result = int(
                await self._open_script(
                    keys=[self._evals_index], args=[now, self.max_evaluations, now + self.evaluation_ttl_s, eval_id]
                )
            )
        if result < 0:
            raise EvaluationCapacityError(-result - 1, self.max_evaluations)

    async def eval_unreserve(self, eval_id: str) -> None:
        """Stop counting the evaluation as open."""
        with self._reachable():
            await self._redis.zrem(self._evals_index, eval_id)

    async def eval_create(self, eval_id: str, meta: dict[str, Any], episodes: list[dict[str, Any]]) -> None:
        """Write the settings, the episodes and the handles, each with the evaluation's time-to-live."""
        ttl = self._eval_ttl
        pipe = self._redis.pipeline(transaction=True)
        pipe.set(self._meta_key(eval_id), json.dumps(meta), ex=ttl)
        episodes_key = self._episodes_key(eval_id)
        for start in range(0, len(episodes), 1000):
            chunk = {str(start + i): json.dumps(e) for i, e in enumerate(episodes[start : start + 1000])}
            pipe.hset(episodes_key, mapping=chunk)
        pipe.expire(episodes_key, ttl)
        for position, episode in enumerate(episodes):
            pipe.set(self._handle_key(episode["handle"]), f"{eval_id}:{position}", ex=ttl)
        with self._reachable():
            await pipe.execute()

    async def eval_meta(self, eval_id: str) -> dict[str, Any] | None:
        """The settings, from Redis."""
        with self._reachable():
            raw = await self._redis.get(self._meta_key(eval_id))
        return None if raw is None else dict(json.loads(raw))

    async def eval_put_meta(self, eval_id: str, meta: dict[str, Any], *, renew: bool = False) -> None:
        """Replace the settings, keeping (or restarting) the time-to-live."""
        pipe = self._redis.pipeline(transaction=True)
        if renew:
            pipe.set(self._meta_key(eval_id), json.dumps(meta), ex=self._eval_ttl)
            pipe.expire(self._episodes_key(eval_id), self._eval_ttl)
        else:
            pipe.set(self._meta_key(eval_id), json.dumps(meta), keepttl=True)
        with self._reachable():
            await pipe.execute()

    async def eval_episodes(self, eval_id: str) -> list[dict[str, Any]]:
        """Every episode record, in order."""
        with self._reachable():
            raw = await self._redis.hgetall(self._episodes_key(eval_id))
        return [json.loads(raw[k]) for k in sorted(raw, key=lambda k: int(k))]

    async def eval_episode(self, eval_id: str, position: int) -> dict[str, Any] | None:
        """One episode record."""
        with self._reachable():
            raw = await self._redis.hget(self._episodes_key(eval_id), str(position))
        return None if raw is None else dict(json.loads(raw))

    async def eval_put_episode(self, eval_id: str, position: int, episode: dict[str, Any]) -> None:
        """Replace one episode record (only while the evaluation exists)."""
        with self._reachable():
            if await self._redis.exists(self._episodes_key(eval_id)):
                await self._redis.hset(self._episodes_key(eval_id), str(position), json.dumps(episode))

    async def eval_handle(self, handle: str) -> tuple[str, int] | None:
        """Where the handle points."""
        with self._reachable():
            raw = await self._redis.get(self._handle_key(handle))
        if raw is None:
            return None
        eval_id, _, position = raw.decode().rpartition(":")
        return eval_id, int(position)

    @contextlib.asynccontextmanager
    async def eval_lock(self, eval_id: str) -> AsyncIterator[None]:
        """A Redis lock per evaluation, shared by every process."""
        from redis.exceptions import LockError, RedisError

        lock = self._redis.lock(
            f"{self._prefix}:elock:{eval_id}", timeout=self._lock_timeout_s, blocking_timeout=self._lock_timeout_s
        )
        with self._reachable():
            acquired = await lock.acquire()
        if not acquired:
            raise SessionBusyError(f"evaluation {eval_id} stayed locked for {self._lock_timeout_s}s; retry")
        try:
            yield
        finally:
            with contextlib.suppress(LockError, RedisError, OSError):
                await lock.release()

    async def items_members(self, namespace: str) -> set[str]:
        """Items handed out by every process sharing this Redis."""
        with self._reachable():
            members = await self._redis.smembers(self._items_key(namespace))
        return {m.decode() for m in members}

    async def items_reserve(self, namespace: str, keys: list[str]) -> list[bool]:
        """SADD each key (atomic across processes); True where it was new."""
        pipe = self._redis.pipeline(transaction=False)
        for key in keys:
            pipe.sadd(self._items_key(namespace), key)
        with self._reachable():
            added = await pipe.execute()
        return [bool(n) for n in added]

    def describe(self) -> dict[str, Any]:
        """Settings, with the Redis URL's password hidden."""
        return {**super().describe(), "url": self._safe_url}


def build_store(
    spec: str,
    factory: EnvFactory,
    *,
    max_sessions: int,
    ttl_s: float,
    reap_interval_s: float | None = None,
    evaluation_ttl_s: float = 86400.0,
    max_evaluations: int = 64,
) -> SessionStore:
    """Build the store named by ``spec``: ``memory`` or a ``redis://`` / ``rediss://`` URL."""
    limits: dict[str, Any] = {
        "max_sessions": max_sessions,
        "ttl_s": ttl_s,
        "reap_interval_s": reap_interval_s,
        "evaluation_ttl_s": evaluation_ttl_s,
        "max_evaluations": max_evaluations,
    }
    if spec == "memory":
        return MemoryStore(**limits)
    if spec.startswith(("redis://", "rediss://", "unix://")):
        return RedisStore(spec, factory, **limits)
    raise ValueError(f"unknown session store {spec!r}: use 'memory' or a redis://host:port/db URL")
