"""``MemoryStore``: sessions and sealed evaluations as Python objects in this process (the default)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from integrity_gym.server.sessions.base import (
    AnyEnv,
    CapacityError,
    EvaluationCapacityError,
    Kind,
    Session,
    SessionNotFoundError,
    SessionStore,
    new_session_id,
)
from integrity_gym.server.sessions.quota import LOCAL_CLIENT, ClientQuotaError, RateLimitError, TokenBuckets


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
        self._owned: dict[str, set[str]] = {}  # client -> ids of its open sessions
        self._buckets = TokenBuckets(self.limits)

    def _check_room(self, client: str) -> None:
        """Raise ``CapacityError`` or ``ClientQuotaError`` if a session of ``client`` would not fit now."""
        if len(self._local) >= self.max_sessions:
            raise CapacityError(len(self._local), self.max_sessions)
        quota = self.limits.per_client
        owned = self._owned.get(client, ())
        if quota and len(owned) >= quota:
            now = time.monotonic()
            soonest = min(self._local[sid].last_used for sid in owned) + self.ttl_s - now
            raise ClientQuotaError(client, len(owned), quota, soonest)

    async def _check_room_reaping(self, client: str) -> None:
        try:
            self._check_room(client)
        except (CapacityError, ClientQuotaError):
            await self.reap()  # idle sessions may free the room
            self._check_room(client)

    async def admit(self, client: str = LOCAL_CLIENT) -> None:
        """Check the capacity and ``client``'s quota, then take one of its rate tokens."""
        await self._check_room_reaping(client)
        wait = self._buckets.take(client, time.monotonic())
        if wait:
            raise RateLimitError(client, self.limits.rate, self.limits.burst, wait)

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
        """Register a new session, reaping idle ones first if the store or the client's quota is full."""
        await self._check_room_reaping(client)
        session = Session(new_session_id(), env_name, env, kind, on_evict=on_evict, handle=handle, client=client)
        self._local[session.id] = session
        self._owned.setdefault(client, set()).add(session.id)
        return session

    def _disown(self, session: Session) -> None:
        owned = self._owned.get(session.client)
        if owned is not None:
            owned.discard(session.id)
            if not owned:
                del self._owned[session.client]

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
            self._disown(session)
        session.closed = True
        session.env.close()

    async def _evict(self, session: Session) -> None:
        self._disown(session)
        await super()._evict(session)

    async def count(self) -> int:
        """Sessions held by this process."""
        return len(self._local)

    async def reap(self) -> int:
        """Evict idle sessions (a WebSocket's socket is closed through its ``on_evict``)."""
        idle = self._idle_local(time.monotonic())
        for session in idle:
            await self._evict(session)
        self._expire_evaluations()
        self._buckets.prune(time.monotonic())
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
