"""Seed 000's own client speaking to this environment (``igym serve --profile seed000``).

Ids written with leading zeros (``src_001``, ``claim_001``) mean ours (``src_1``, ``claim_1``), or,
where the item names its sources opaquely (``src_3fa2``, the hard tier), the first listed source;
observations carry the seed's ``episode_id`` (the session's random id of the episode).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from typing import Any

from integrity_gym.core.env import NotResetError
from integrity_gym.core.extras import Dialect

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


DIALECT = Dialect("seed000", lambda data: data, _seed000_action, _seed000_observation)
