"""What a sealed server hides and refuses: item fields of observations and info, resets that name an item."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any, get_args

from integrity_gym.server.security import ApiError

if TYPE_CHECKING:
    from integrity_gym.core.env import Env
    from integrity_gym.server.service import ResetRequest

#: Reset fields that choose an item: a sealed reset sends none of them beside its handle.
NAMING_FIELDS = ("seed", "scenario_id", "options", "task", "difficulty")
#: Fields a seed-client profile adds to observations that name the item (``compat.py``).
PROFILE_ITEM_FIELDS = ("document_id",)
NOT_SEALED = "this server is not sealed; start it with igym serve --sealed"
SEALED_RESET = (
    "this server is sealed: episodes are handed out by POST /evaluations, and each is started by resetting "
    'with its handle alone ({"handle": "<handle>"})'
)
SEALED_UNTIL_CLOSED = (
    "this session plays a sealed evaluation: its grade, explanation and state are released when the "
    "evaluation is closed (POST /evaluations/<id>/close), or to the admin token"
)


@lru_cache(maxsize=64)
def _sealing(env_class: type[Env[Any, Any, Any]]) -> tuple[dict[str, Any], tuple[tuple[str, ...], ...]]:
    """(observation field -> blank value, info paths to drop) of ``env_class.ITEM_FIELDS``."""
    fields = env_class.observation_type.model_fields
    blanks: dict[str, Any] = {}
    paths: list[tuple[str, ...]] = []
    for name in env_class.ITEM_FIELDS:
        if name.startswith("info."):
            paths.append(tuple(name.split(".")[1:]))
            continue
        if name not in fields:
            raise ValueError(f"{env_class.__name__}.ITEM_FIELDS names {name!r}, not a field of its observation")
        annotation = fields[name].annotation
        options = get_args(annotation) or (annotation,)
        if type(None) in options:
            blanks[name] = None
        elif str in options:
            blanks[name] = ""
        elif int in options or float in options:
            blanks[name] = 0
        else:
            blanks[name] = None
    return blanks, tuple(paths)


def seal_observation(env_class: type[Env[Any, Any, Any]], obs: Any) -> Any:
    """``obs`` with every field that names the item blanked (``Env.ITEM_FIELDS``)."""
    blanks, _ = _sealing(env_class)
    return obs.model_copy(update=blanks) if blanks else obs


def seal_info(env_class: type[Env[Any, Any, Any]], info: Mapping[str, Any]) -> dict[str, Any]:
    """A step's ``info`` without the ``info.``-paths of ``Env.ITEM_FIELDS`` (ids, ground truth)."""
    _, paths = _sealing(env_class)
    out = dict(info)
    for path in paths:
        node: Any = out
        for key in path[:-1]:
            if not isinstance(node, dict) or not isinstance(node.get(key), dict):
                node = None
                break
            node[key] = dict(node[key])
            node = node[key]
        if isinstance(node, dict):
            node.pop(path[-1], None)
    return out


def seal_profile_observation(shaped: dict[str, Any]) -> dict[str, Any]:
    """A seed-client profile's observation without its item id."""
    return {k: ("" if k in PROFILE_ITEM_FIELDS else v) for k, v in shaped.items()}


def refuse_unsealed_reset(request: ResetRequest) -> str:
    """The handle of a sealed reset; 403 ``SEALED`` for a reset that has none or names an item."""
    if request.handle is None:
        raise ApiError(403, "SEALED", SEALED_RESET)
    named = [name for name in NAMING_FIELDS if getattr(request, name) is not None]
    if named:
        raise ApiError(
            403,
            "SEALED",
            f"{', '.join(named)} would choose the item: {SEALED_RESET}",
        )
    return request.handle


def refuse_handle(request: ResetRequest) -> None:
    """On a server that is not sealed, a reset with a handle is a mistake (422)."""
    if request.handle is not None:
        message = f"handle: {NOT_SEALED} (handles come from POST /evaluations of a sealed server)"
        raise ApiError(
            422,
            "VALIDATION_ERROR",
            message,
            errors=[{"loc": ["body", "handle"], "msg": message, "type": "value_error"}],
        )
