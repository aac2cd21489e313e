"""Session stores: where the server keeps live episodes between requests.

A session is one environment instance bound to one client: a WebSocket connection owns one for
its lifetime; an HTTP client gets one from ``POST /<env>/reset`` and names it by id afterwards.

Every store enforces the same rules: at most ``max_sessions`` live sessions (a clear
``CapacityError`` past that), an idle time-to-live after which a reaper frees the slot, and one
lock per session so two concurrent requests on a session run one after the other, never
interleaved.

Sessions are of two kinds. An HTTP session (``kind="http"``) is named by its id in requests and
ended by ``close``; a WebSocket session (``kind="ws"``) belongs to its connection alone: no HTTP
request can reach, read or end it, and only its socket frees it (``release``) or the reaper
does. So every live episode counts towards capacity and is subject to the reaper. Each client
also has a quota of sessions and a rate of opening them (``quota.py``).

* ``MemoryStore`` (the embedded default) keeps environments as Python objects in this process.
* ``RedisStore`` keeps each HTTP session's full state (``Env.state()`` as JSON) in Redis, so
  several server processes behind one address share sessions: a session reset through one
  process can be stepped through another, which rebuilds the episode with ``Env.load_state``.
  The fields an environment declares static (``Env.static_state_fields``, e.g. pii_redaction's
  document) are written once per episode, the rest after every step (``redis_state.py``).
  Per-session locking then uses a Redis lock, and the capacity count is global. WebSocket
  sessions stay in the process that holds the connection but still count towards capacity.

Both stores also keep the sealed evaluations of ``igym serve --sealed`` (``evaluations/``): an
evaluation's settings (``meta``), one record per episode, the handle of each episode and, per
secret and task, the items already handed out. The memory store keeps them in dicts; the Redis
store keeps them in Redis as JSON (with the evaluation's time-to-live; the record of items
handed out has none), so they survive a restart and are shared by every process.
"""

from __future__ import annotations

from typing import Any

from integrity_gym.server.sessions.base import (
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
from integrity_gym.server.sessions.memory import MemoryStore
from integrity_gym.server.sessions.quota import (
    LOCAL_CLIENT,
    ClientLimitError,
    ClientLimits,
    ClientQuotaError,
    RateLimitError,
)
from integrity_gym.server.sessions.redis_store import RedisStore, check_store_reachable

__all__ = [
    "LOCAL_CLIENT",
    "AnyEnv",
    "CapacityError",
    "ClientLimitError",
    "ClientLimits",
    "ClientQuotaError",
    "EnvFactory",
    "EvaluationCapacityError",
    "Kind",
    "MemoryStore",
    "RateLimitError",
    "RedisStore",
    "Session",
    "SessionBusyError",
    "SessionNotFoundError",
    "SessionStore",
    "StoreStartupError",
    "StoreUnavailableError",
    "build_store",
    "check_store_reachable",
    "new_session_id",
]


def build_store(
    spec: str,
    factory: EnvFactory,
    *,
    max_sessions: int,
    ttl_s: float,
    reap_interval_s: float | None = None,
    evaluation_ttl_s: float = 86400.0,
    max_evaluations: int = 64,
    client_limits: ClientLimits | None = None,
) -> SessionStore:
    """Build the store named by ``spec``: ``memory`` or a ``redis://`` / ``rediss://`` URL."""
    limits: dict[str, Any] = {
        "limits": client_limits,
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
