"""The task registry: every task has a versioned id ``env/task-vN`` and builds one ``Env``.

Built-in tasks come from one explicit list of environment packages (each exposes ``TASKS`` in
its ``tasks`` module); third-party packages add tasks through the entry-point group
``integrity_gym.tasks``, whose entries load to a ``TaskSpec`` or an iterable of them.
"""

from __future__ import annotations

import difflib
import fnmatch
import importlib
import re
from collections.abc import Iterable
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

from pydantic import Field, computed_field, field_validator, model_validator

from integrity_gym.core.extras import EnvExtras
from integrity_gym.core.types import WireModel

if TYPE_CHECKING:
    from integrity_gym.core.env import Env

ENTRY_POINT_GROUP = "integrity_gym.tasks"

#: The built-in environments, in display order. Each ``integrity_gym.envs.<name>.tasks``
#: module defines ``TASKS: tuple[TaskSpec, ...]``.
BUILTIN_ENVS: tuple[str, ...] = ("pii_redaction", "information_integrity", "selective_verification")

#: Every built-in task's success threshold sits this share of the way from its trivial floor to its
#: ceiling (``threshold_between``): a success means closing two thirds of the gap that doing nothing
#: leaves to the best an honest agent can do.
THRESHOLD_SHARE = 2 / 3

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_ID = re.compile(r"^(?P<env>[a-z][a-z0-9_]*)/(?P<name>[a-z][a-z0-9_]*)(?:-v(?P<version>\d+))?$")


def threshold_between(floor: float, ceiling: float, share: float = THRESHOLD_SHARE) -> float:
    """The published rule: ``floor + share × (ceiling − floor)``, to two decimals (the task's threshold)."""
    return round(floor + share * (ceiling - floor), 2)


class TaskSpec(WireModel):
    """Everything needed to build and judge one task."""

    env: str = Field(description="Environment name, e.g. 'pii_redaction'.")
    name: str = Field(description="Task name within the environment, e.g. 'gdpr_contract_easy'.")
    version: int = Field(ge=0, description="Bumped whenever what the task scores changes.")
    description: str = Field(description="One line on what the task asks of an agent.")
    tier: str = Field(description="Difficulty tier: 'easy', 'medium' or 'hard'.")
    success_threshold: float = Field(ge=0.0, le=1.0, description="Grade at or above which an episode succeeds.")
    floor: float | None = Field(
        None, ge=0.0, le=1.0, description="Mean grade of the best trivial agent (nothing, a constant, blind)."
    )
    ceiling: float | None = Field(None, ge=0.0, le=1.0, description="Mean grade the best honest agent can reach.")
    bounds_episodes: int = Field(
        100,
        ge=1,
        description="The floor and ceiling are means over eval seeds 0 to bounds_episodes - 1 (more where one "
        "episode is noisy against the task's whole range).",
    )
    per_episode_success: bool = Field(
        True, description="False where success is judged on the task's mean grade only (see the env's README)."
    )
    max_steps: int = Field(ge=1, description="Step budget of one episode (see ``budget`` where it grows).")
    budget: str | None = Field(
        None,
        description="What max_steps counts, where an episode's budget is not max_steps itself, in words that "
        "follow the number: 'decisions (redactions, FINISH) + the NEXT_CHUNK moves across the document'.",
    )
    entry: str = Field(description="'module:Class' of the Env implementation.")
    config: dict[str, Any] = Field(default_factory=dict, description="Default config of the task.")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def budget_text(self) -> str:
        """The step budget in words: "<max_steps> <budget>", else "<max_steps> step(s)"."""
        return f"{self.max_steps} {self.budget or ('step' if self.max_steps == 1 else 'steps')}"

    @field_validator("env", "name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError(f"{value!r} must be lower-case letters, digits and underscores")
        return value

    @model_validator(mode="after")
    def _check_bounds(self) -> TaskSpec:
        if self.floor is None or self.ceiling is None:
            return self
        wanted = threshold_between(self.floor, self.ceiling)
        if self.floor > self.ceiling or abs(self.success_threshold - wanted) > 1e-9:
            raise ValueError(
                f"{self.env}/{self.name}: success_threshold {self.success_threshold} must be "
                f"threshold_between(floor={self.floor}, ceiling={self.ceiling}) = {wanted}"
            )
        return self

    @computed_field  # type: ignore[prop-decorator]
    @property
    def id(self) -> str:
        """The versioned task id, ``env/name-vN``."""
        return f"{self.env}/{self.name}-v{self.version}"

    def env_class(self) -> type[Env[Any, Any, Any]]:
        """Import and return the Env class named by ``entry``."""
        module_name, _, attr = self.entry.partition(":")
        cls: type[Env[Any, Any, Any]] = getattr(importlib.import_module(module_name), attr)
        return cls


class Registry:
    """A set of task specs keyed by versioned id; registering an id twice raises."""

    def __init__(self) -> None:
        self._specs: dict[str, TaskSpec] = {}

    def register(self, spec: TaskSpec) -> None:
        """Add ``spec``; raise ``ValueError`` if its id is already registered."""
        if spec.id in self._specs:
            raise ValueError(f"task id {spec.id!r} is already registered")
        self._specs[spec.id] = spec

    def get(self, task_id: str) -> TaskSpec:
        """Return the spec of ``task_id``; without ``-vN`` the newest version is returned."""
        if task_id in self._specs:
            return self._specs[task_id]
        match = _ID.match(task_id)
        if match and match["version"] is None:
            versions = [s for s in self._specs.values() if (s.env, s.name) == (match["env"], match["name"])]
            if versions:
                return max(versions, key=lambda s: s.version)
        hint = difflib.get_close_matches(task_id, self._specs, n=3)
        suggestion = f"; did you mean {', '.join(hint)}?" if hint else "; `igym list` shows every task"
        raise KeyError(f"unknown task {task_id!r}{suggestion}")

    def all(self) -> list[TaskSpec]:
        """Every registered spec, in registration order."""
        return list(self._specs.values())

    def select(self, pattern: str) -> list[TaskSpec]:
        """Specs whose id matches the shell glob ``pattern`` (comma-separated globs allowed)."""
        globs = [p.strip() for p in pattern.split(",") if p.strip()]
        return [s for s in self._specs.values() if any(fnmatch.fnmatchcase(s.id, g) for g in globs)]


def _load_default() -> Registry:
    registry = Registry()
    for env_name in BUILTIN_ENVS:
        module = importlib.import_module(f"integrity_gym.envs.{env_name}.tasks")
        for spec in module.TASKS:
            registry.register(spec)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        loaded = ep.load()
        specs: Iterable[TaskSpec] = [loaded] if isinstance(loaded, TaskSpec) else loaded
        for spec in specs:
            if not isinstance(spec, TaskSpec):
                raise TypeError(f"entry point {ep.name!r} must give TaskSpec objects, got {type(spec).__name__}")
            registry.register(spec)
    return registry


_default: Registry | None = None


def default_registry() -> Registry:
    """The process-wide registry of built-in and plugin tasks, loaded on first use."""
    global _default
    if _default is None:
        _default = _load_default()
    return _default


def get_spec(task_id: str) -> TaskSpec:
    """Return the spec of a registered task (see ``Registry.get``)."""
    return default_registry().get(task_id)


def latest_task_id(env: str, name: str) -> str:
    """The id of the newest registered version of task ``env/name``."""
    found = [s for s in default_registry().all() if s.env == env and s.name == name]
    if not found:
        raise KeyError(f"no task {env}/{name} is registered; see `igym list`")
    return max(found, key=lambda s: s.version).id


def env_class(env: str) -> type[Env[Any, Any, Any]]:
    """The class of registered environment ``env`` (``KeyError`` naming it if there is none)."""
    spec = next((s for s in default_registry().all() if s.env == env), None)
    if spec is None:
        raise KeyError(f"no environment {env!r} is registered; see `igym list`")
    return spec.env_class()


def env_extras(env: str) -> EnvExtras:
    """What environment ``env`` adds to the generic tools (``Env.extras`` of its class)."""
    return env_class(env).extras


def list_tasks(pattern: str = "*") -> list[TaskSpec]:
    """Return the registered tasks whose id matches ``pattern``."""
    return default_registry().select(pattern)


def make(task_id: str, **config: Any) -> Env[Any, Any, Any]:
    """Build the environment of ``task_id`` in this process, ``config`` overriding the task's defaults.

    ``integrity_gym.make(task_id, url=...)`` builds a client of a running server instead; the core
    knows no client.
    """
    spec = get_spec(task_id)
    return spec.env_class()(spec, **config)
