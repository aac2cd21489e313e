"""``RedisStore``: HTTP sessions' state and sealed evaluations in Redis, shared by several server processes."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from integrity_gym.server.sessions.base import (
    _SESSION_ID,
    AnyEnv,
    CapacityError,
    EnvFactory,
    EvaluationCapacityError,
    Kind,
    Session,
    SessionBusyError,
    SessionNotFoundError,
    SessionStore,
    StoreStartupError,
    StoreUnavailableError,
    new_session_id,
)
from integrity_gym.server.sessions.leases import RECLAIM_LUA, RedisLease, WorkerLease
from integrity_gym.server.sessions.quota import (
    BUCKET_LUA,
    CLIENT_LIVE_LUA,
    LOCAL_CLIENT,
    ClientLimits,
    ClientQuotaError,
    RateLimitError,
)
from integrity_gym.server.sessions.redis_state import (
    FINISH_SCRIPT,
    READ_FIELDS,
    SAVE_SCRIPT,
    USE_SCRIPT,
    StoredSession,
    complete,
    rebuild,
    record_static,
    state_fields,
)

log = logging.getLogger("integrity_gym.server.sessions")

#: Seconds to connect to Redis and to wait for any one reply: past them a call fails with
#: ``StoreUnavailableError`` (a 503) instead of hanging the request.
CONNECT_TIMEOUT_S = 1.0
REPLY_TIMEOUT_S = 1.0
#: Seconds a worker's heartbeat and a session lock live unless renewed (every third of it).
LEASE_S = 3.0

# Capacity of evaluations. KEYS: index. ARGV: now, maximum, expiry, member.
_OPEN_SCRIPT = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
local n = redis.call('ZCARD', KEYS[1])
if n >= tonumber(ARGV[2]) then return -n - 1 end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[4])
return n + 1
"""

# Lua: is there room for one more session of this client (after freeing dead workers' slots and
# expired sessions)? Expects ``index``, ``workers``, ``prefix``, ``cset``, ``now``, ``maximum`` and
# ``quota`` as locals; returns {1, open} at capacity and {2, live, soonest expiry} at the quota.
_ROOM_LUA = (
    RECLAIM_LUA
    + """
redis.call('ZREMRANGEBYSCORE', index, '-inf', now)
local n = redis.call('ZCARD', index)
if n >= maximum then return {1, n} end
if quota > 0 then
"""
    + CLIENT_LIVE_LUA
    + """
  if live >= quota then return {2, live, tostring(soonest)} end
end
"""
)

# Register a session if there is room (``_ROOM_LUA``). KEYS: index, workers set, the client's set of
# sessions, and for a WebSocket session this worker's heartbeat key and slot set. ARGV: now,
# maximum, expiry, session id, key prefix, the client's quota (0: none), the client set's
# time-to-live, and for a WebSocket session the lease in ms and this worker's id. Returns {0} when
# registered, else the room check's refusal.
_OPEN_SESSION_SCRIPT = (
    """
local index, workers, cset, prefix = KEYS[1], KEYS[2], KEYS[3], ARGV[5]
local now, maximum, quota = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[6])
"""
    + _ROOM_LUA
    + """
redis.call('ZADD', index, ARGV[3], ARGV[4])
redis.call('SADD', cset, ARGV[4])
redis.call('EXPIRE', cset, ARGV[7])
if KEYS[5] then
  redis.call('SET', KEYS[4], '1', 'PX', ARGV[8], 'NX')
  redis.call('SADD', workers, ARGV[9])
  redis.call('SADD', KEYS[5], ARGV[4])
end
return {0}
"""
)

# May a client open a session now: room (``_ROOM_LUA``), then one token of its rate. KEYS: index,
# workers set, the client's set, its bucket. ARGV: now, maximum, prefix, quota, rate, burst.
# Returns {0} when a token was taken, the room check's refusal, or {3, seconds to wait}.
_ADMIT_SCRIPT = (
    """
local index, workers, cset, bucket, prefix = KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[3]
local now, maximum, quota = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[4])
local rate, burst = tonumber(ARGV[5]), tonumber(ARGV[6])
"""
    + _ROOM_LUA
    + BUCKET_LUA
    + """
if wait > 0 then return {3, tostring(wait)} end
return {0}
"""
)

# Live sessions, after freeing dead workers' slots. KEYS: index, workers set. ARGV: now, prefix.
_COUNT_SCRIPT = (
    """
local index, workers, prefix = KEYS[1], KEYS[2], ARGV[2]
"""
    + RECLAIM_LUA
    + """
return redis.call('ZCOUNT', index, ARGV[1], '+inf')
"""
)


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
        lease_s: float = LEASE_S,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
        reply_timeout_s: float = REPLY_TIMEOUT_S,
        limits: ClientLimits | None = None,
    ) -> None:
        """Connect to Redis lazily (``start`` checks it answers).

        ``lock_timeout_s`` is how long a request waits for a session held by another request;
        ``lease_s`` how long a dead worker's slots and locks outlive it; the two timeouts bound
        every wait on Redis (a paused Redis fails a call after about ``reply_timeout_s``).
        """
        super().__init__(
            max_sessions=max_sessions,
            ttl_s=ttl_s,
            reap_interval_s=reap_interval_s,
            evaluation_ttl_s=evaluation_ttl_s,
            max_evaluations=max_evaluations,
            limits=limits,
        )
        try:
            import redis
            import redis.asyncio as aioredis
        except ImportError as exc:  # pragma: no cover - depends on the optional extra
            raise ValueError(
                "the Redis session store needs the 'redis' extra: pip install 'integrity-gym[redis]'"
            ) from exc
        if lease_s <= 0 or connect_timeout_s <= 0 or reply_timeout_s <= 0:
            raise ValueError("the lease and the Redis timeouts must be positive seconds")
        self.url = url
        self.connect_timeout_s = connect_timeout_s
        self.reply_timeout_s = reply_timeout_s
        # Bounded waits: an unreachable or paused Redis must become a quick 503, not a hung request
        # (redis-py does not retry a timed-out call here, so one call waits one timeout at most).
        self._redis: Any = aioredis.Redis.from_url(
            url, socket_connect_timeout=connect_timeout_s, socket_timeout=reply_timeout_s
        )
        self._factory = factory
        self._prefix = prefix
        self._index = f"{prefix}:sessions"
        self._lock_timeout_s = lock_timeout_s
        self.lease_s = lease_s
        self._open_script = self._redis.register_script(_OPEN_SCRIPT)
        self._open_session_script = self._redis.register_script(_OPEN_SESSION_SCRIPT)
        self._admit_script = self._redis.register_script(_ADMIT_SCRIPT)
        self._count_script = self._redis.register_script(_COUNT_SCRIPT)
        self._save_script = self._redis.register_script(SAVE_SCRIPT)
        self._use_script = self._redis.register_script(USE_SCRIPT)
        self._finish_script = self._redis.register_script(FINISH_SCRIPT)
        # The heartbeat runs in a thread with a client of its own (same bounded timeouts).
        heartbeat_client = redis.Redis.from_url(
            url, socket_connect_timeout=connect_timeout_s, socket_timeout=reply_timeout_s
        )
        self.worker = WorkerLease(
            heartbeat_client, self._redis, prefix, self._index, lease_s=lease_s, relist=self._relist_slots
        )
        self._cache: dict[str, StoredSession] = {}  # HTTP sessions this process saw last (by version)
        self._locks: dict[str, asyncio.Lock] = {}
        self._reach = _Reachable(self)

    def _key(self, session_id: str) -> str:
        return f"{self._prefix}:s:{session_id}"

    def _reachable(self) -> _Reachable:
        """A context that turns a lost connection to Redis into ``StoreUnavailableError`` naming the store."""
        return self._reach

    @property
    def _safe_url(self) -> str:
        return safe_url(self.url)

    async def start(self) -> None:
        """Check that Redis answers (``StoreStartupError`` if not), then start the heartbeat and the reaper."""
        try:
            await asyncio.wait_for(self._redis.ping(), self.connect_timeout_s + self.reply_timeout_s)
            await asyncio.to_thread(self.worker.beat)
        except Exception as exc:
            with contextlib.suppress(Exception):
                await self._redis.aclose()
            raise StoreStartupError(unreachable_message(self._safe_url, exc)) from None
        self.worker.start()
        await super().start()

    async def check(self) -> None:
        """Ping Redis; ``StoreUnavailableError`` within about a second when it does not answer."""
        with self._reachable():
            await self._bounded(self._redis.ping())

    async def _bounded(self, call: Awaitable[Any]) -> Any:
        """Await ``call`` for one reply timeout at most (raising the Redis timeout error past it)."""
        from redis.exceptions import TimeoutError as RedisTimeoutError

        try:
            return await asyncio.wait_for(call, self.connect_timeout_s + self.reply_timeout_s)
        except TimeoutError:
            raise RedisTimeoutError(f"no reply within {self.connect_timeout_s + self.reply_timeout_s:g}s") from None

    async def health(self) -> dict[str, Any]:
        """Ping Redis (bounded by the timeouts); report whether it answered and this worker's lease."""
        started = time.monotonic()
        try:
            await self.check()
        except StoreUnavailableError as exc:
            return {"store": self.name, "ok": False, "detail": str(exc), "worker": self.worker.worker_id}
        except Exception as exc:  # never raise from a health probe
            return {"store": self.name, "ok": False, "detail": f"{type(exc).__name__}: {exc}"}
        return {
            "store": self.name,
            "ok": True,
            "detail": None,
            "latency_ms": round((time.monotonic() - started) * 1000, 1),
            "worker": self.worker.worker_id,
            "lease_held": self.worker.held,
        }

    async def stop(self) -> None:
        """Stop the reaper, release this process's WebSocket slots and lease, and disconnect."""
        if self._local:
            with contextlib.suppress(Exception):
                pipe = self._redis.pipeline(transaction=True)
                pipe.zrem(self._index, *self._local)
                pipe.srem(self.worker.slots_key, *self._local)
                await pipe.execute()
        await self.worker.stop()
        await super().stop()
        self._cache.clear()
        await self._redis.aclose()

    def _relist_slots(self, client: Any) -> None:
        """List this worker's WebSocket slots again (its lease had lapsed and they were reclaimed).

        Called in the heartbeat thread with its synchronous client; ``list(dict.values())`` is one
        step for the interpreter, so reading ``_local`` from there is safe.
        """
        sessions = list(self._local.values())
        if not sessions:
            return
        now_wall, now = time.time(), time.monotonic()
        pipe = client.pipeline(transaction=True)
        pipe.zadd(self._index, {s.id: now_wall + self.ttl_s - (now - s.last_used) for s in sessions})
        pipe.sadd(self.worker.slots_key, *[s.id for s in sessions])
        pipe.execute()

    def _client_keys(self, client: str) -> tuple[str, str]:
        """The client's set of sessions and its rate bucket."""
        return f"{self._prefix}:c:{client}", f"{self._prefix}:r:{client}"

    def _refusal(self, reply: list[Any], client: str) -> Exception | None:
        """The error for a refusing reply of the open or admit script, else None."""
        kind = int(reply[0])
        if kind == 1:
            return CapacityError(int(reply[1]), self.max_sessions)
        if kind == 2:
            soonest = float(reply[2]) if reply[2] not in (b"false", "false") else time.time()
            return ClientQuotaError(client, int(reply[1]), self.limits.per_client, soonest - time.time())
        if kind == 3:
            return RateLimitError(client, self.limits.rate, self.limits.burst, float(reply[1]))
        return None

    async def admit(self, client: str = LOCAL_CLIENT) -> None:
        """Check the global capacity and ``client``'s quota, and take one of its rate tokens, in Redis."""
        limits = self.limits
        keys = [self._index, self.worker.workers_key, *self._client_keys(client)]
        args: list[Any] = [time.time(), self.max_sessions, self._prefix, limits.per_client, limits.rate, limits.burst]
        with self._reachable():
            refused = self._refusal(await self._admit_script(keys=keys, args=args), client)
        if refused is not None:
            raise refused

    async def _reserve(self, session_id: str, kind: Kind, client: str) -> None:
        now = time.time()
        keys = [self._index, self.worker.workers_key, self._client_keys(client)[0]]
        client_ttl = max(86400, round(self.ttl_s * 4))  # outlives its sessions' usual life (stale ids are dropped)
        args: list[Any] = [now, self.max_sessions, now + self.ttl_s, session_id, self._prefix,
                           self.limits.per_client, client_ttl]  # fmt: skip
        if kind == "ws":  # a slot only this worker can serve: a lease that dies with the worker
            keys += [self.worker.key, self.worker.slots_key]
            args += [self.worker.lease_ms, self.worker.worker_id]
            if not self.worker.running():
                self.worker.start()
        with self._reachable():
            refused = self._refusal(await self._open_session_script(keys=keys, args=args), client)
        if refused is not None:
            raise refused

    async def open(
        self,
        env_name: str,
        env: AnyEnv,
        *,
        kind: Kind,
        on_evict: Callable[[], Awaitable[None]] | None = None,
        handle: str | None = None,
        client: str = LOCAL_CLIENT,
    ) -> Session:
        """Reserve a slot in Redis; an HTTP session's state is written there at once."""
        made = StoredSession if kind == "http" else Session
        session = made(new_session_id(), env_name, env, kind, on_evict=on_evict, handle=handle, client=client)
        await self._reserve(session.id, kind, client)
        if not isinstance(session, StoredSession):
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

    async def _save(self, session: StoredSession, lock: RedisLease | None = None, *, write: bool = True) -> bool:
        """Write the session's state; with ``lock``, only while it is still ours, releasing it in the same call.

        The static part of the state goes only with the first save of an episode (``redis_state``).
        ``write=False`` (with ``lock``): write nothing, only renew the session's time-to-live and
        release. ``SessionBusyError`` if the lock was lost (nothing written); False if the session
        was gone (closed or expired while in use: not brought back), else True.
        """
        key = self._key(session.id)
        ttl, score = max(1, round(self.ttl_s)), time.time() + self.ttl_s
        written = None
        if lock is None:  # a new session: no one else can know it yet
            fields, written = state_fields(session)
            with self._reach:
                result = int(
                    await self.worker.run(self._save_script, [key, self._index], [ttl, score, session.id, *fields])
                )
        else:
            args: list[Any] = [lock.token, ttl, score, session.id]
            if write:
                fields, written = state_fields(session)
                args += fields
            with self._reach:
                result = int(await self.worker.run(self._finish_script, [key, self._index, lock.key], args))
            lock.released()  # deleted by the script, or no longer ours
        if result == 0:
            raise SessionBusyError(
                f"session {session.id} was not saved: its lock lapsed while this request ran (the process "
                "stalled for longer than the lease) and another request may have moved it on; retry"
            )
        if result == 1:
            record_static(session, written)
        return result == 1

    def _lock_key(self, session_id: str) -> str:
        return f"{self._prefix}:lock:{session_id}"

    @contextlib.asynccontextmanager
    async def use(self, session_id: str, env_name: str, *, write: bool = True) -> AsyncIterator[Session]:
        """Lock the session across processes, load it (from cache if current), save it after.

        Two Redis calls a use: one script takes the lock and reads the session (its state only when
        the copy cached here is stale), one saves it (``write``) and releases the lock.
        """
        if not _SESSION_ID.match(session_id) or session_id in self._local:
            raise SessionNotFoundError(session_id, env_name)
        local_lock = self._locks.get(session_id)
        if local_lock is None:
            local_lock = self._locks[session_id] = asyncio.Lock()
        try:
            async with local_lock:
                # A lease renewed by this worker's heartbeat: it lapses within ``lease_s`` if the worker dies.
                lock = self.worker.lock(self._lock_key(session_id), wait_s=self._lock_timeout_s)
                key = self._key(session_id)

                async def attempt() -> tuple[bool, Any]:
                    cached = self._cache.get(session_id)
                    args: list[Any] = [lock.token, self.worker.lease_ms, env_name, "", ""]
                    if cached is not None:
                        args[3] = cached.version
                        if cached.static_json is not None:
                            args[4] = cached.static_ver
                    reply: Any = await self.worker.run(self._use_script, [key, lock.key], args)
                    if reply == 0:  # not taken: nothing to release
                        self._cache.pop(session_id, None)
                        raise SessionNotFoundError(session_id, env_name)
                    return reply != 1, reply

                with self._reach:
                    acquired, reply = await lock.acquire_with(attempt)
                if not acquired or reply is None:
                    raise SessionBusyError(f"session {session_id} stayed locked for {self._lock_timeout_s}s; retry")
                try:
                    session = await self._load(session_id, env_name, reply)
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
                        kept = await self._save(session, lock, write=write)
                    except (StoreUnavailableError, SessionBusyError):
                        if write:
                            self._cache.pop(session_id, None)  # this step is not stored: forget it here too
                        raise
                    if not kept:
                        self._cache.pop(session_id, None)  # closed or expired meanwhile: let it go
                    session.touch()
                finally:
                    await lock.release()  # a no-op once released by the save; never raises
        finally:
            if not local_lock.locked() and session_id not in self._cache:
                self._locks.pop(session_id, None)

    async def _load(self, session_id: str, env_name: str, reply: Any) -> StoredSession:
        """The session the use script's ``reply`` describes: the cached copy if current, else rebuilt.

        ``reply`` is 2 when the version cached here is current, else the stored ``READ_FIELDS``.
        """
        cached = self._cache.get(session_id)
        if reply == 2:
            if cached is not None:
                return cached
            reply = None
        else:
            reply = complete(reply, cached)
        if reply is None:  # the copy the script was told of was dropped meanwhile (closed here): read again
            with self._reach:
                reply = await self._redis.hmget(self._key(session_id), *READ_FIELDS)
        if reply[4] is None:
            raise SessionNotFoundError(session_id, env_name)
        if cached is not None and cached.version == int(reply[1]):
            return cached
        # Another process moved the episode on (or we never saw it): rebuild it from its state.
        session = rebuild(self._factory, session_id, env_name, reply)
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
                pipe = self._redis.pipeline(transaction=True)
                pipe.zrem(self._index, session.id)
                pipe.srem(self.worker.slots_key, session.id)
                await pipe.execute()
        except StoreUnavailableError as exc:
            log.warning("could not free session %s in the store: %s", session.id, exc)

    async def count(self) -> int:
        """Unexpired sessions registered by every process sharing this Redis."""
        with self._reachable():
            return int(
                await self._count_script(keys=[self._index, self.worker.workers_key], args=[time.time(), self._prefix])
            )

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
                pipe = self._redis.pipeline(transaction=True)
                pipe.zadd(self._index, live)
                pipe.sadd(self.worker.slots_key, *live)
                await pipe.execute()
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
        lock = self.worker.lock(f"{self._prefix}:elock:{eval_id}", wait_s=self._lock_timeout_s)
        with self._reachable():
            acquired = await lock.acquire()
        if not acquired:
            raise SessionBusyError(f"evaluation {eval_id} stayed locked for {self._lock_timeout_s}s; retry")
        try:
            yield
        finally:
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


class _Reachable:
    """``RedisStore._reachable``: one object per store (a generator-based context costs every step)."""

    def __init__(self, store: RedisStore) -> None:
        from redis.exceptions import ConnectionError as RedisConnectionError
        from redis.exceptions import TimeoutError as RedisTimeoutError

        self._store = store
        self._errors = (RedisConnectionError, RedisTimeoutError, OSError)

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if isinstance(exc, self._errors):
            raise StoreUnavailableError(
                f"the session store (Redis at {self._store._safe_url}) is unavailable: {exc}. Sessions cannot be "
                "opened or found until it answers again; retry later"
            ) from exc


def safe_url(url: str) -> str:
    """``url`` with any password hidden."""
    return re.sub(r"//[^@/]*@", "//***@", url)


def unreachable_message(shown_url: str, exc: BaseException) -> str:
    """One line: which Redis could not be reached, why (briefly), and what to do."""
    text = str(exc).strip().splitlines()[0].rstrip(".") if str(exc).strip() else ""
    reason = text or type(exc).__name__
    if isinstance(exc, TimeoutError) or "timeout" in type(exc).__name__.lower():
        reason = f"no answer in time ({reason})" if text else "no answer in time"
    return (
        f"cannot reach the session store: Redis at {shown_url} did not answer ({reason}). Start redis-server "
        "there or pass --sessions a reachable redis://host:port/db (or --sessions memory with one worker)"
    )


def check_store_reachable(spec: str, *, timeout_s: float = CONNECT_TIMEOUT_S + REPLY_TIMEOUT_S) -> None:
    """Raise ``StoreStartupError`` (one printable line) if the store ``spec`` names cannot be reached.

    Synchronous, for the command line to call before starting the server and its workers; ``memory``
    and unknown specs pass (``build_store`` judges those).
    """
    if not spec.startswith(("redis://", "rediss://", "unix://")):
        return
    try:
        import redis
    except ImportError:  # pragma: no cover - depends on the optional extra
        return  # RedisStore reports the missing extra
    client = redis.Redis.from_url(spec, socket_connect_timeout=timeout_s / 2, socket_timeout=timeout_s / 2)
    try:
        client.ping()
    except Exception as exc:
        raise StoreStartupError(unreachable_message(safe_url(spec), exc)) from None
    finally:
        client.close()
