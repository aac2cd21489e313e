"""Seed 001's own client speaking to this environment (``igym serve --profile seed001``).

Its reset takes ``task_id``; every action may carry ``confidence`` (0..1) and ``justification``,
which are recorded in the step's metadata and not judged; observations have exactly the fields of
that client's model (``document_id`` added, our extra counters moved into ``metadata``, with the
step's ``info``). ``document_id`` is a keyed hash of the document's id (the key is drawn per server
process): it names the document within one server without letting anyone rebuild it from the
public generator.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Any

from integrity_gym.core.extras import Dialect

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


DIALECT = Dialect("seed001", _seed001_reset, _seed001_action, _seed001_observation)
