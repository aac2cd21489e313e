r"""Every task as a ``gymnasium.Env`` (extra ``gymnasium``; docs/interop.md).

``IntegrityGymEnv(task_id, **config)`` wraps the in-process environment of one task. Observations
and actions are text:

* an observation is the JSON of the environment's observation model, ASCII-escaped (every
  character outside printable ASCII written ``\\uXXXX``), so ``Text`` with the printable ASCII
  charset contains every observation exactly; ``decode_observation`` turns it back into the model;
* an action is a JSON object of the environment's action model (or one of its text forms, such as
  ``REDACT 12 30 EMAIL``); ``step`` also takes a mapping or the action model itself. A malformed
  action is the environment's business, exactly as in ``Env.step``: a rejected, charged step with
  the reason in ``info["error"]`` (or, where an episode is one answer, that answer, paid 0).

The JSON schemas of both models and the action help are in ``env.metadata``. ``terminated`` is the
environment ending the episode by its own rules (FINISH, a decision, an answer); ``truncated`` is
the episode's step budget running out; never both. The step that ends an episode, either way,
carries the episode's grade in ``info["grade"]``. ``info`` never carries ``Env.state()``, and the
step-info paths an environment declares as ground truth (``Env.ITEM_FIELDS``) are dropped.

Gymnasium ids map task ids one to one: ``env/name-vN`` <-> ``integrity_gym/env-name-vN``
(``to_gym_id`` and ``to_task_id``); environment and task names never contain ``-``. Gymnasium 1.x loads
no plugins, so ``register_envs()`` registers them; importing ``integrity_gym.gymnasium`` calls it,
which makes ``gymnasium.make("integrity_gym.gymnasium:integrity_gym/<env>-<name>-vN")`` work.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from functools import cache
from typing import Any, SupportsFloat

import gymnasium
from gymnasium import spaces
from pydantic import BaseModel

from integrity_gym.core.env import Env
from integrity_gym.core.registry import get_spec, list_tasks, make

#: The Gymnasium namespace of every task.
NAMESPACE = "integrity_gym"
#: What ``gymnasium.make`` builds for an id of the namespace.
ENTRY_POINT = "integrity_gym.integrations.gymnasium:IntegrityGymEnv"
#: Longest observation the space admits (16 Mi characters; a 192-pixel picture is ~110 K as a data
#: URL). A longer one raises rather than leave the space: pass ``max_observation_chars``.
MAX_OBSERVATION_CHARS = 2**24
#: Longest action the action space describes; ``step`` reads longer ones all the same.
MAX_ACTION_CHARS = 2**14
#: The characters of ASCII-escaped JSON: printable ASCII (``json.dumps`` escapes everything else).
OBSERVATION_CHARSET = "".join(chr(c) for c in range(0x20, 0x7F))
#: An action's characters: JSON with ASCII escapes, whitespace included.
ACTION_CHARSET = OBSERVATION_CHARSET + "\t\n\r"

_GYM_ID = re.compile(rf"^{NAMESPACE}/(?P<env>[a-z][a-z0-9_]*)-(?P<name>[a-z][a-z0-9_]*)-v(?P<version>\d+)$")


def to_gym_id(task: str) -> str:
    """The Gymnasium id of a task: ``env/name-vN`` -> ``integrity_gym/env-name-vN``.

    ``pii_redaction/gdpr_contract_easy-v4`` is ``integrity_gym/pii_redaction-gdpr_contract_easy-v4``;
    an id without ``-vN`` means the task's newest version.
    """
    spec = get_spec(task)
    return f"{NAMESPACE}/{spec.env}-{spec.name}-v{spec.version}"


def to_task_id(env_id: str) -> str:
    """The task id of a Gymnasium id (the inverse of ``to_gym_id``); ``ValueError`` if it is not one."""
    found = _GYM_ID.match(env_id)
    if not found:
        raise ValueError(f"{env_id!r} is not an id of the form {NAMESPACE}/<env>-<task>-v<N>")
    return f"{found['env']}/{found['name']}-v{found['version']}"


def register_envs() -> list[str]:
    """Register every task with Gymnasium (idempotent); return their Gymnasium ids."""
    ids = []
    for spec in list_tasks():
        env_id = to_gym_id(spec.id)
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point=ENTRY_POINT, kwargs={"task_id": spec.id})
        ids.append(env_id)
    return ids


def encode_observation(observation: BaseModel) -> str:
    """The observation as compact JSON with every non-ASCII character escaped (``decode_observation`` reads it)."""
    return json.dumps(json.loads(observation.model_dump_json()), ensure_ascii=True, separators=(",", ":"))


@cache
def _schemas(cls: type[Env[Any, Any, Any]]) -> dict[str, Any]:
    return {
        "action_schema": cls.action_type.model_json_schema(),
        "observation_schema": cls.observation_type.model_json_schema(),
        "action_help": cls.action_help,
    }


def _drop_path(info: dict[str, Any], path: list[str]) -> None:
    """Remove ``info[path[0]][path[1]]...`` where it exists."""
    node: Any = info
    for key in path[:-1]:
        node = node.get(key) if isinstance(node, dict) else None
    if isinstance(node, dict):
        node.pop(path[-1], None)


class IntegrityGymEnv(gymnasium.Env[str, str]):
    """One task of integrity-gym behind Gymnasium's API (text observations and actions)."""

    #: Text frames come when asked for: the frame rate is nominal (Gymnasium's checker wants one).
    metadata: dict[str, Any] = {"render_modes": ["ansi"], "render_fps": 1}  # noqa: RUF012 (Gymnasium's attribute)

    def __init__(
        self,
        task_id: str,
        render_mode: str | None = None,
        *,
        max_observation_chars: int = MAX_OBSERVATION_CHARS,
        **config: Any,
    ) -> None:
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be None or 'ansi', not {render_mode!r}")
        self.render_mode = render_mode
        self._env: Env[Any, Any, Any] = make(task_id, **config)
        cls = type(self._env)
        self.metadata = {**type(self).metadata, "task_id": self._env.spec.id, **copy.deepcopy(_schemas(cls))}
        self._max_observation_chars = max_observation_chars
        self.observation_space = spaces.Text(max_observation_chars, min_length=2, charset=OBSERVATION_CHARSET)
        self.action_space = spaces.Text(MAX_ACTION_CHARS, min_length=1, charset=ACTION_CHARSET)
        self._info_drops = [path.split(".")[1:] for path in cls.ITEM_FIELDS if path.startswith("info.")]

    @property
    def integrity_env(self) -> Env[Any, Any, Any]:
        """The wrapped environment (its ``state()`` holds ground truth: never show it to an agent)."""
        return self._env

    def decode_observation(self, observation: str) -> Any:
        """The observation model of an observation string (what the environment's own agents read)."""
        return self._env.observation_type.model_validate_json(observation)

    def episode_info(self) -> dict[str, Any]:
        """The public facts of the current episode: what ``reset`` returns as ``info``."""
        spec = self._env.spec
        return {
            "task_id": spec.id,
            "tier": spec.tier,
            "success_threshold": spec.success_threshold,
            "max_steps": self._budget(),
        }

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start an episode: ``(observation, info)``.

        ``seed`` is the environment's item seed; without one, the seed is drawn from ``np_random``
        (so ``reset(seed=s)`` then ``reset()`` repeats). ``options`` may hold ``task`` (another task
        of the same environment), ``scenario_id`` and the environment's own reset options.
        """
        super().reset(seed=seed)
        rest = dict(options or {})
        task, scenario_id = rest.pop("task", None), rest.pop("scenario_id", None)
        item_seed = int(self.np_random.integers(0, 2**31)) if seed is None else seed
        obs = self._env.reset(seed=item_seed, task=task, scenario_id=scenario_id, options=rest)
        if task is not None:
            self.metadata["task_id"] = self._env.spec.id
        return self._encode(obs), self.episode_info()

    def step(
        self, action: str | Mapping[str, Any] | BaseModel
    ) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        """Apply one action: ``(observation, reward, terminated, truncated, info)``."""
        result = self._env.step(action)
        info = copy.deepcopy(result.info)
        for path in self._info_drops:
            _drop_path(info, path)
        terminated = truncated = False
        if result.done:
            truncated = self._ended_by_budget()
            terminated = not truncated
            info["grade"] = self._env.grade().model_dump(mode="json")
        return self._encode(result.observation), float(result.reward), terminated, truncated, info

    def render(self) -> str | None:
        """The current observation as text for a person (``render_mode="ansi"``), else None."""
        return self._env.render() if self.render_mode == "ansi" else None

    def close(self) -> None:
        """Close the wrapped environment (twice is harmless)."""
        self._env.close()
        super().close()

    # ------------------------------------------------------------------ helpers
    def _encode(self, observation: BaseModel) -> str:
        text = encode_observation(observation)
        limit = self._max_observation_chars
        if len(text) > limit:
            raise ValueError(
                f"an observation of {self._env.spec.id} is {len(text)} characters, above the observation space's "
                f"{limit}: build the env with a larger max_observation_chars"
            )
        return text

    def _budget(self) -> int:
        """The episode's step budget: the environment's own (it may grow with the item), else the task's."""
        budget = getattr(self._env, "max_steps", None)
        return budget if isinstance(budget, int) else self._env.spec.max_steps

    def _ended_by_budget(self) -> bool:
        """Whether the episode that just ended would still be running with one more step of budget.

        The core says when an episode ends, not why. An environment with a ``max_steps`` (the
        multi-step ones) also ends on it, so the budget is widened for one look at ``done``; one
        without it (selective_verification: one answer, whatever it is) ends by its own rules only.
        """
        env = self._env
        budget = getattr(env, "max_steps", None)
        if not isinstance(budget, int):
            return False
        env.max_steps = budget + 1
        try:
            return not env.done
        finally:
            env.max_steps = budget


__all__ = [
    "NAMESPACE",
    "IntegrityGymEnv",
    "encode_observation",
    "register_envs",
    "to_gym_id",
    "to_task_id",
]
