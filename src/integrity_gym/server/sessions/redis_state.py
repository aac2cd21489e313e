"""How ``RedisStore`` keeps an HTTP session's episode in Redis: one hash, written in two parts.

An environment's state splits in two (``Env.static_state_fields``): what its reset set and no step
changes (pii_redaction's document: nine tenths of its state's bytes), and the rest. The session's
hash ``<prefix>:s:<id>`` holds both, so they share one time-to-live and go together on delete or
expiry:

* per episode (at open, and whenever the environment starts another episode: a new
  ``Env.episode_serial``): ``env``, ``task``, ``episode``, ``handle``, ``static`` (the static fields
  as a JSON object; ``{}`` for an environment that declares none) and ``sver``, the session version
  at which that ``static`` was written;
* per step: ``state`` (every other field, a JSON object) and ``ver``.

A process whose copy is current reads only ``ver`` (the use script answers 2). One whose copy is
stale (another process stepped the session) reads ``state`` and ``sver``, and ``static`` only when
the ``sver`` it holds is not the stored one; it rebuilds the episode from the two objects joined.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from integrity_gym.server.sessions.base import AnyEnv, EnvFactory, Session

#: The hash fields read to rebuild a session, in the order of the use script's reply.
READ_FIELDS = ("task", "ver", "handle", "episode", "state", "sver", "static")

# Save a new session's state (no lock: no one else can know it yet). KEYS: state hash, index.
# ARGV: ttl s, index score, session id, then field/value pairs.
SAVE_SCRIPT = """
redis.call('HSET', KEYS[1], unpack(ARGV, 4))
redis.call('EXPIRE', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
return 1
"""

# Take a session's lock and read the session, in one call (``use``). KEYS: state hash, lock. ARGV:
# the lock's token, its lease in ms, the environment's name, the version cached here and the
# ``sver`` of the static part cached here ('' for none). Returns 0 if no such session in this
# environment (the lock is not taken), 1 if another holds the lock, 2 if taken and the cached
# version is current, else the ``READ_FIELDS`` (``static`` false when the cached one is current).
USE_SCRIPT = """
local m = redis.call('HMGET', KEYS[1], 'env', 'ver')
if m[1] ~= ARGV[3] then return 0 end
if not redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
if m[2] == ARGV[4] then return 2 end
local s = redis.call('HMGET', KEYS[1], 'task', 'ver', 'handle', 'episode', 'state', 'sver')
if not s[5] then
  redis.call('DEL', KEYS[2])
  return 0
end
s[7] = false
if s[6] ~= ARGV[5] then s[7] = redis.call('HGET', KEYS[1], 'static') end
return s
"""

# End a use of a session: save the fields given only while the caller still holds its lock, renew
# its time-to-live and index score, and release the lock, in one call. A session gone meanwhile
# (closed by another request, or expired) is not brought back. KEYS: state hash, index, lock. ARGV:
# token, ttl s, index score, session id, then field/value pairs (none for a read-only use, which
# renews whether or not the lock is still ours). 1 if done, 0 if the lock was lost (nothing
# saved), 2 if the session was gone (nothing written).
FINISH_SCRIPT = """
local ours = redis.call('GET', KEYS[3]) == ARGV[1]
if ours then redis.call('DEL', KEYS[3]) end
if #ARGV > 4 and not ours then return 0 end
if redis.call('EXISTS', KEYS[1]) == 0 then return 2 end
if #ARGV > 4 then redis.call('HSET', KEYS[1], unpack(ARGV, 5)) end
redis.call('EXPIRE', KEYS[1], ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[4])
return 1
"""


@dataclass(eq=False)
class StoredSession(Session):
    """An HTTP session as this process last saw it in Redis: what its hash holds of the episode."""

    #: ``(env.episode_serial, episode_id)`` of the episode whose fields the hash holds, as far as
    #: this process knows (None: never written or read here). A step that leaves it unchanged
    #: writes only ``state`` and ``ver``.
    stored_episode: tuple[int, str] | None = None
    #: The ``sver`` and ``static`` of the hash (0 and None: not known here).
    static_ver: int = 0
    static_json: bytes | None = None


@dataclass(frozen=True)
class _Split:
    dynamic: set[str] | None  # the fields saved per step (None: all of them)
    static: set[str]


_SPLITS: dict[type[Any], _Split] = {}


def _split(env: AnyEnv) -> _Split:
    """The environment class's state fields, per step and per episode (checked once per class)."""
    cls = type(env)
    found = _SPLITS.get(cls)
    if found is None:
        static = set(cls.static_state_fields)
        fields = set(cls.state_type.model_fields)
        unknown = static - fields
        if unknown:
            raise ValueError(
                f"{cls.__name__}.static_state_fields names {sorted(unknown)}, which {cls.state_type.__name__} "
                f"does not have; list only fields of the state"
            )
        found = _SPLITS[cls] = _Split(fields - static if static else None, static)
    return found


def state_fields(session: StoredSession) -> tuple[list[Any], tuple[tuple[int, str], bytes] | None]:
    """The hash fields a save of ``session`` writes, and the static part when it writes one.

    Always ``state`` and ``ver``; the episode's fields too (``static`` among them) when the
    environment holds another episode than the one stored. The second value is what to record in
    the session (``record_static``) once the write succeeded.
    """
    env = session.env
    split = _split(env)
    state = env.state()
    serializer = state.__pydantic_serializer__
    fields: list[Any] = ["state", serializer.to_json(state, include=split.dynamic), "ver", session.version]
    episode = (env.episode_serial, session.episode_id)
    if session.stored_episode == episode:
        return fields, None
    static = serializer.to_json(state, include=split.static) if split.static else b"{}"
    fields += ["env", session.env_name, "task", env.spec.id, "episode", session.episode_id]
    fields += ["sver", session.version, "static", static]
    if session.handle is not None:
        fields += ["handle", session.handle]
    return fields, (episode, static)


def record_static(session: StoredSession, written: tuple[tuple[int, str], bytes] | None) -> None:
    """Note in ``session`` the episode fields a save wrote (``state_fields``' second value)."""
    if written is not None:
        session.stored_episode, session.static_json = written
        session.static_ver = session.version


def joined(state: bytes, static: bytes | None) -> bytes:
    """The whole state's JSON: the per-step object and the static one as one object (disjoint keys)."""
    if static is None or static == b"{}":
        return state
    if state == b"{}":
        return static
    if not (state.endswith(b"}") and static.startswith(b"{")):
        raise ValueError("a session's stored state is not two JSON objects; it cannot be rebuilt")
    return state[:-1] + b"," + static[1:]


def complete(fields: list[Any], cached: StoredSession | None) -> list[Any] | None:
    """The use script's ``READ_FIELDS`` with ``static`` filled in from ``cached``; None if it cannot be.

    The script leaves ``static`` out when the ``sver`` it was told of is current; the copy holding it
    may have been dropped here since (closed or reaped): the caller then reads every field again.
    """
    static, sver = fields[6], fields[5]
    if static is not None or sver is None:
        return fields
    if cached is None or cached.static_json is None or cached.static_ver != int(sver):
        return None
    return [*fields[:6], cached.static_json]


def rebuild(factory: EnvFactory, session_id: str, env_name: str, fields: list[Any]) -> StoredSession:
    """The session the ``READ_FIELDS`` describe (``static`` included), rebuilt with ``Env.load_state``."""
    task, version, handle, episode, state_json, sver, static = fields
    env = factory(task.decode())
    env.load_state(env.state_type.model_validate_json(joined(state_json, static)))
    session = StoredSession(
        session_id, env_name, env, "http", version=int(version), handle=None if handle is None else handle.decode()
    )
    if episode is not None:
        session.episode_id = episode.decode()
    if static is not None and sver is not None:
        session.stored_episode = (env.episode_serial, session.episode_id)
        session.static_ver, session.static_json = int(sver), static
    return session
