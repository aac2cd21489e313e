"""integrity-gym: environments for training and evaluating LLM agents on information integrity."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, overload

from integrity_gym import core
from integrity_gym.core import (
    Env,
    EnvCheckError,
    EpisodeFinishedError,
    Grade,
    InvalidActionError,
    StepResult,
    TaskSpec,
    check_env,
    get_spec,
    list_tasks,
)

__version__ = "0.1.0"

if TYPE_CHECKING:
    from integrity_gym.client.client import RemoteEnv


@overload
def make(task_id: str, *, url: None = None, **config: Any) -> Env[Any, Any, Any]: ...
@overload
def make(task_id: str, *, url: str, **config: Any) -> RemoteEnv: ...
def make(task_id: str, *, url: str | None = None, **config: Any) -> Env[Any, Any, Any] | RemoteEnv:
    """Build the environment of ``task_id`` with ``config`` overriding the task's defaults.

    With ``url`` (a running ``igym serve``), return a ``RemoteEnv`` client with the same
    interface instead; ``config`` then takes the client's options (``transport="ws"|"http"``,
    ``admin_token``, ``timeout``).
    """
    if url is None:
        return core.make(task_id, **config)
    from integrity_gym.client.client import RemoteEnv

    spec = get_spec(task_id)
    return RemoteEnv(url, spec.id, spec=spec, **config)


__all__ = [
    "Env",
    "EnvCheckError",
    "EpisodeFinishedError",
    "Grade",
    "InvalidActionError",
    "StepResult",
    "TaskSpec",
    "__version__",
    "check_env",
    "get_spec",
    "list_tasks",
    "make",
]
