"""What every session store shares: the session record, the errors, and the store's rules (``SessionStore``)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import secrets
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from integrity_gym.core.env import Env
from integrity_gym.server.sessions.quota import LOCAL_CLIENT, ClientLimits

log = logging.getLogger("integrity_gym.server.sessions")

AnyEnv = Env[Any, Any, Any]
EnvFactory = Callable[[str], AnyEnv]
Kind = Literal["http", "ws"]

_SESSION_ID = re.compile(r"^[A-Za-z0-9_-]{8,64}$")


class CapacityError(RuntimeError):
    """The server already holds its maximum number of sessions."""

    #: What is counted, and how a client frees one.
    counted = "sessions"
    remedy = "close a session (DELETE /<env>/session/<id> or a WebSocket 'close') or retry later"

    def __init__(self, active: int, maximum: int) -> None:
        super().__init__(f"server at capacity: {active} of {maximum} {self.counted} are open; {self.remedy}")
        self.active = active
        self.maximum = maximum


class EvaluationCapacityError(CapacityError):
    """The server already holds its maximum number of open evaluations."""

    counted = "evaluations"
    remedy = "close one (POST /evaluations/<id>/close) or retry later"


class SessionNotFoundError(KeyError):
    """No live session has this id in this environment (never created, closed or expired)."""

    def __init__(self, session_id: str, env_name: str) -> None:
        shown = session_id if _SESSION_ID.match(session_id) else "<malformed id>"
        super().__init__(
            f"no session {shown!r} in {env_name}: it was never created, was closed, or expired "
            "after its idle time-to-live; POST /{env}/reset starts a new one".replace("{env}", env_name)
        )
        self.message = str(self.args[0])


class SessionBusyError(RuntimeError):
    """The session's lock could not be taken in time (another request holds it)."""


class StoreUnavailableError(RuntimeError):
    """The session store cannot be reached (e.g. Redis is down); the message names the store."""


class StoreStartupError(StoreUnavailableError, ValueError):
    """The session store cannot be reached when the server starts.

    Its message is one line naming the store and what to do, meant to be printed as is (no
    traceback); it is a ``ValueError`` too, as the CLI reports bad settings.
    """

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))


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
    #: Who opened it (``quota.py``): the client whose quota it counts in.
    client: str = LOCAL_CLIENT
    #: The sealed-evaluation handle this session plays (HTTP or WebSocket; ``evaluations/``), else None.
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
        limits: ClientLimits | None = None,
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
        #: Per-client quota and rate (``quota.py``); off by default for a store built in code.
        self.limits = limits or ClientLimits.off()
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
        client: str = LOCAL_CLIENT,
    ) -> Session:
        """Register a new session of ``client`` and return it.

        Raises ``CapacityError`` when the store is full and ``ClientQuotaError`` when ``client``
        holds its quota (checked atomically with the registration). ``handle`` marks an HTTP
        session as playing that sealed-evaluation episode.
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

    async def health(self) -> dict[str, Any]:
        """The store's state for ``/health``, without ever waiting long (about a second at most).

        ``{"store": name, "ok": bool, "detail": str | None, ...}``; never raises.
        """
        return {"store": self.name, "ok": True, "detail": None}

    @abstractmethod
    async def count(self) -> int:
        """Live sessions (for a shared store: in every process)."""

    @abstractmethod
    async def reap(self) -> int:
        """Free the sessions idle for longer than the time-to-live; return how many."""

    @abstractmethod
    async def admit(self, client: str = LOCAL_CLIENT) -> None:
        """Check that ``client`` may open a session now, before the costly work of building one.

        Raises ``CapacityError`` if the store is full (after reaping), ``ClientQuotaError`` if the
        client holds its quota, ``RateLimitError`` if it opens sessions too fast; otherwise it
        takes one of the client's rate tokens. ``open`` still enforces the capacity and the quota
        atomically; this avoids building an episode that would be refused anyway.
        """

    def describe(self) -> dict[str, Any]:
        """Settings reported by ``/health``."""
        limits = self.limits
        return {
            "store": self.name,
            "max_sessions": self.max_sessions,
            "ttl_s": self.ttl_s,
            "max_sessions_per_client": limits.per_client or None,
            "session_rate": limits.rate or None,
            "session_burst": limits.burst if limits.rate else None,
        }

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
