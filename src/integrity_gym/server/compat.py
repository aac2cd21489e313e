"""One environment at the server root, and the seed clients' dialects (``igym serve --profile``).

An OpenEnv Space serves a single environment at ``/`` (``/ws``, ``/reset``, ``/health`` ...).
``RootMount`` gives our server that shape: a request to ``/<path>`` is answered by
``/<env>/<path>``, while the prefixed paths keep working (the environment's ``/docs`` and
``/openapi.json`` name them).

A profile translates the wire dialect of a seed document's own client, so it runs unmodified:

* ``seed001`` (pii_redaction): reset takes ``task_id``; every action may carry ``confidence``
  (0..1) and ``justification``, which are recorded in the step's metadata and not judged;
  observations have exactly the fields of the seed client's model (``document_id`` added, our
  extra counters moved into ``metadata``, with the step's ``info``).
* ``seed000`` (information_integrity): ids written with leading zeros (``src_001``,
  ``claim_001``) mean ours (``src_1``, ``claim_1``), or, where the item names its sources
  opaquely (``src_3fa2``, the hard tier), the first listed source; observations carry the
  seed's ``episode_id`` (the session's random id of the episode).

Every profile's state (``{"type": "state"}``) carries that ``episode_id`` too, as OpenEnv's
``State(episode_id, step_count)`` does.

Neither reveals anything hidden: ``document_id`` is a keyed hash of the document's id (the
key is drawn per server process), so it names the document within one server without letting
anyone rebuild it from the public generator.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from starlette.types import ASGIApp, Receive, Scope, Send

from integrity_gym.core.env import NotResetError

ProfileName = Literal["seed000", "seed001"]

#: The environment each profile is for.
PROFILE_ENVS: dict[str, str] = {"seed000": "information_integrity", "seed001": "pii_redaction"}


class RootMount:
    """ASGI wrapper serving environment ``env`` at ``/`` besides ``/<env>``."""

    def __init__(self, app: ASGIApp, env: str, keep: tuple[str, ...] = ()) -> None:
        self.app = app
        self.prefix = f"/{env}"
        #: Top-level paths (and their sub-paths) left as they are (a sealed server's /evaluations).
        self.keep = keep

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer ``/<path>`` as ``/<env>/<path>`` (``/`` itself stays the server's index)."""
        if scope["type"] in ("http", "websocket"):
            path: str = scope["path"]
            kept = any(path == k or path.startswith(k + "/") for k in self.keep)
            if not kept and path != "/" and path != self.prefix and not path.startswith(self.prefix + "/"):
                scope = {**scope, "path": self.prefix + path, "raw_path": (self.prefix + path).encode()}
        await self.app(scope, receive, send)


@dataclass(frozen=True)
class Profile:
    """How one seed client's messages map onto ours, and ours onto what it parses."""

    name: str
    #: Reset arguments in the client's spelling → ours.
    reset_data: Callable[[dict[str, Any]], dict[str, Any]]
    #: The client's action and the env it is sent to → (ours, fields recorded in the step's metadata).
    action: Callable[[Any, Any], tuple[Any, dict[str, Any]]]
    #: Our observation (JSON-ready dict), reward, the step's info and the session → the client's observation.
    observation: Callable[[dict[str, Any], float | None, dict[str, Any], Any], dict[str, Any]] | None


# --------------------------------------------------------------------------- seed001
#: Fields of the seed-001 client's ``RedactionObservation`` (besides OpenEnv's done/reward/metadata).
_SEED001_FIELDS = (
    "task_id",
    "visible_text",
    "cursor_position",
    "document_length",
    "redacted_spans",
    "progress_pct",
    "previous_actions",
)
_KEY = secrets.token_bytes(16)


def _seed001_reset(data: dict[str, Any]) -> dict[str, Any]:
    if "task_id" in data and "task" not in data:
        data = {**data, "task": data["task_id"]}
        del data["task_id"]
    return data


def _seed001_action(action: Any, env: Any) -> tuple[Any, dict[str, Any]]:
    if not isinstance(action, dict):
        return action, {}
    recorded: dict[str, Any] = {}
    confidence = action.get("confidence")
    # Only a well-formed confidence is taken off; anything else reaches the env, which says why.
    if isinstance(confidence, int | float) and not isinstance(confidence, bool) and 0.0 <= confidence <= 1.0:
        recorded["confidence"] = float(confidence)
    justification = action.get("justification")
    if isinstance(justification, str) or ("justification" in action and justification is None):
        recorded["justification"] = justification
    if not recorded:
        return action, {}
    return {k: v for k, v in action.items() if k not in recorded}, recorded


def document_id(env: Any) -> str:
    """Opaque id of the document ``env`` is playing (keyed hash: no seed or generator index)."""
    raw = env.document.id
    return "doc-" + hmac.new(_KEY, str(raw).encode(), hashlib.sha256).hexdigest()[:16]


def _seed001_observation(
    obs: dict[str, Any], reward: float | None, info: dict[str, Any], session: Any
) -> dict[str, Any]:
    extra = {k: v for k, v in obs.items() if k not in _SEED001_FIELDS and k != "done"}
    out = {k: obs[k] for k in _SEED001_FIELDS if k in obs}
    out["document_id"] = document_id(session.env)
    out["done"] = bool(obs.get("done", False))
    out["reward"] = reward
    out["metadata"] = {**extra, **info}
    return out


# --------------------------------------------------------------------------- seed000
_PADDED_ID = re.compile(r"\b(src|claim)_0+(\d+)\b")


def _listed_ids(env: Any) -> dict[str, list[str]]:
    """The claim and source ids the current observation lists, in order (none before a reset)."""
    try:
        obs = env.observation()
    except NotResetError:  # the env itself says so when it steps
        return {"src": [], "claim": []}
    return {"src": [s.id for s in obs.available_sources], "claim": [c.id for c in obs.claims]}


def _unpad(value: Any, listed: Callable[[], dict[str, list[str]]]) -> Any:
    """``src_001`` → ``src_1`` where that id exists, else the first listed source (``claim_`` likewise).

    An id the observation lists is kept as written; a number past the list becomes ``src_<n>``,
    which the env refuses with its own message. ``listed`` gives the listed ids; it is asked only
    when a padded id is found (most actions hold none, and the observation is not built for them).
    """

    def ours(match: re.Match[str]) -> str:
        kind, number = match.group(1), int(match.group(2))
        plain, ids = f"{kind}_{number}", listed()[kind]
        if match.group(0) in ids:  # an opaque id that happens to read as a padded number (src_0123)
            return match.group(0)
        if plain in ids or not 1 <= number <= len(ids):
            return plain
        return ids[number - 1]

    if isinstance(value, str):
        return _PADDED_ID.sub(ours, value)
    if isinstance(value, dict):
        return {k: _unpad(v, listed) for k, v in value.items()}
    if isinstance(value, list):
        return [_unpad(v, listed) for v in value]
    return value


def _seed000_action(action: Any, env: Any) -> tuple[Any, dict[str, Any]]:
    if isinstance(action, str):  # an action sent as a JSON string
        try:
            action = json.loads(action)
        except json.JSONDecodeError:
            return action, {}
    return _unpad(action, functools.cache(lambda: _listed_ids(env))), {}


def _seed000_observation(
    obs: dict[str, Any], reward: float | None, info: dict[str, Any], session: Any
) -> dict[str, Any]:
    return {**obs, "episode_id": session.episode_id}


PROFILES: dict[str, Profile] = {
    "seed001": Profile("seed001", _seed001_reset, _seed001_action, _seed001_observation),
    "seed000": Profile("seed000", lambda data: data, _seed000_action, _seed000_observation),
}
