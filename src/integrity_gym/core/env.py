"""The environment base class every integrity-gym environment implements."""

from __future__ import annotations

import itertools
import json
import random
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic

from pydantic import BaseModel, ValidationError

from integrity_gym.core.extras import EnvExtras
from integrity_gym.core.types import ActT, Grade, ObsT, StateT, StepResult

if TYPE_CHECKING:
    from integrity_gym.core.registry import TaskSpec


#: Longest ``info["error"]`` a rejected action gets.
MAX_ERROR_CHARS = 500

#: What a wasted step costs under every environment's default reward: an action the environment
#: rejects (malformed, unknown id, out of bounds) or that repeats one already taken changes nothing,
#: uses a step of the budget and is charged this much, so a policy cannot hide from a step's cost by
#: writing something unreadable. Where an episode is a single answer (selective_verification), an
#: unreadable answer is that answer and earns the environment's lowest reward instead.
WASTED_STEP = 0.05


#: Seeds are 64-bit signed integers: every generator's item ids and keyed draws are built for them.
SEED_LIMIT = 2**63

#: Episode serials (``Env.episode_serial``): one counter for the whole process, so no two episodes
#: of any two instances ever share one.
_EPISODE_SERIALS = itertools.count(1)


class InvalidActionError(ValueError):
    """An action the environment cannot carry out; the message says what was wrong."""


class EpisodeFinishedError(RuntimeError):
    """Raised when stepping an episode that has already ended (nothing is changed)."""


class NotResetError(RuntimeError):
    """Raised when stepping, grading or reading state before the first ``reset``."""


def _number(value: float) -> str:
    """A breakdown figure as a person reads it: counts whole, shares to three decimals."""
    return str(int(value)) if float(value).is_integer() and abs(value) >= 1 else f"{value:.3f}"


def describe_validation_error(error: ValidationError) -> str:
    """Turn a pydantic error into one readable line naming each offending field."""
    parts = []
    for err in error.errors():
        where = ".".join(str(p) for p in err["loc"]) or "action"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


def validate_config(config_type: type[BaseModel], values: Mapping[str, Any]) -> Any:
    """Build a frozen config, turning pydantic's error into a ``ValueError`` that names fields."""
    try:
        return config_type.model_validate(dict(values))
    except ValidationError as exc:
        raise ValueError(f"invalid {config_type.__name__}: {describe_validation_error(exc)}") from exc


class Env(ABC, Generic[ActT, ObsT, StateT]):
    """An episodic environment: ``reset`` → ``step``… → ``grade``.

    Subclasses implement the ``_``-prefixed hooks. The base class owns the contracts every
    environment shares: actions are parsed with a clear error instead of an exception, a
    finished episode refuses further steps without changing anything, and the full state is a
    JSON-serializable model from which an identical environment can be rebuilt.
    """

    env_name: ClassVar[str]
    #: One paragraph shown by ``igym play``: the actions and how to type them.
    action_help: ClassVar[str] = "Type an action as a JSON object."
    #: Reset options that read the local file system. A server refuses them from clients (a
    #: remote user sends the content itself instead).
    local_only_options: ClassVar[frozenset[str]] = frozenset()
    #: True when an unreadable action is the agent's final answer (recorded as malformed and
    #: paid, ending the episode) rather than a rejected step; ``check_env`` allows for it.
    malformed_action_ends_episode: ClassVar[bool] = False
    #: False when no single episode can be a success (``Grade.success`` always false) and the
    #: threshold applies to the task's mean grade: reports then show no success rate.
    episode_success: ClassVar[bool] = True
    #: What a sealed server (``igym serve --sealed``) blanks in its sessions: observation fields
    #: that name the item (an id a client could reset by, or match across sessions), and
    #: ``"info.<key>[.<key>...]"`` paths of a step's ``info`` that name it or carry ground truth.
    #: Observation fields are blanked (``""`` for text, null where allowed); info paths dropped.
    ITEM_FIELDS: ClassVar[tuple[str, ...]] = ()
    #: A line ``igym play`` prints under the action help: the short form ``typed_action`` reads, if any.
    play_help: ClassVar[str] = ""
    #: What the environment adds to the generic tools (its agents, prompt, red team, page view, seed
    #: dialects): the one place those tools look. The default adds nothing.
    extras: ClassVar[EnvExtras] = EnvExtras()
    #: True when a reset or step may wait (a tool call, a sandbox, a judge, a sleep): the server then
    #: runs them in worker threads, so a waiting session never holds up the others. A server also
    #: treats an environment as blocking once one of its calls has taken ``BLOCKING_AFTER_S``.
    blocking: ClassVar[bool] = False
    action_type: ClassVar[type[BaseModel]]
    #: The configuration model the default ``_configure`` validates into ``self.config`` (None: none taken).
    config_type: ClassVar[type[BaseModel] | None] = None
    observation_type: ClassVar[type[BaseModel]]
    state_type: ClassVar[type[BaseModel]]
    #: Fields of ``state_type`` that only ``reset`` (or ``load_state``) sets and no step changes: the
    #: episode's document or scenario, its configuration. A store that saves the state after every
    #: step (the Redis session store) writes them once per episode and only the other fields per
    #: step. Empty (the default): the whole state is saved every time. A field listed here that a
    #: step does change would be lost when a session moves between server processes
    #: (tests/server/test_static_state.py steps every environment that lists some and checks it).
    static_state_fields: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, spec: TaskSpec, **config: Any) -> None:
        if spec.env != self.env_name:
            raise ValueError(f"task {spec.id!r} belongs to {spec.env!r}, not {self.env_name!r}")
        self.spec = spec
        self._config_overrides = dict(config)
        self._configure(spec, {**spec.config, **config})
        self._started = False
        self._closed = False
        self._episode_serial = 0

    # ----------------------------------------------------------------- public API
    def reset(
        self,
        *,
        seed: int | None = None,
        task: str | None = None,
        scenario_id: str | int | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> ObsT:
        """Start a new episode and return its first observation.

        ``seed`` picks the item deterministically; ``task`` switches to another task of the same
        environment; ``scenario_id`` picks a specific item (by id or index); ``options`` holds
        environment-specific choices.
        """
        if seed is not None and not -SEED_LIMIT <= seed < SEED_LIMIT:
            raise ValueError(f"seed must be an integer in [-2**63, 2**63), got {seed}")
        self._episode_serial = next(_EPISODE_SERIALS)  # before any change: a reset failing half-way changes too
        if task is not None and task != self.spec.id:
            from integrity_gym.core.registry import get_spec

            spec = get_spec(task)
            if spec.env != self.env_name:
                raise ValueError(f"task {spec.id!r} is not a {self.env_name} task")
            self.spec = spec
            self._configure(spec, {**spec.config, **self._config_overrides})
        obs = self._reset(seed=seed, scenario_id=scenario_id, options=dict(options or {}))
        self._started = True
        return obs

    def step(self, action: ActT | Mapping[str, Any] | str) -> StepResult[ObsT]:
        """Apply one action. A malformed action is rejected in ``info['error']``, never raised."""
        self._require_started()
        if self.done:
            raise EpisodeFinishedError(f"the episode of {self.spec.id} has ended; call reset() to start a new one")
        try:
            parsed = self.parse_action(action)
        except InvalidActionError as exc:
            message = str(exc)  # messages quote the action: a huge action must not make a huge reply
            if len(message) > MAX_ERROR_CHARS:
                message = message[: MAX_ERROR_CHARS - 1] + "…"
            return self._reject(action, message)
        return self._step(parsed)

    def parse_action(self, action: Any) -> ActT:
        """Turn a model instance, a mapping or a JSON string into this env's action type."""
        if isinstance(action, self.action_type):
            return action  # type: ignore[return-value]
        if isinstance(action, str):
            try:
                action = json.loads(action)
            except json.JSONDecodeError as exc:
                raise InvalidActionError(f"action is not valid JSON: {exc.msg}") from exc
            except RecursionError as exc:  # the parser recurses once per level of nesting
                raise InvalidActionError("action is JSON nested too deeply to read; send a flat object") from exc
        if isinstance(action, BaseModel):
            action = action.model_dump()
        if not isinstance(action, Mapping):
            raise InvalidActionError(
                f"action must be a {self.action_type.__name__}, a mapping or a JSON object, not {type(action).__name__}"
            )
        try:
            return self.action_type.model_validate(dict(action))  # type: ignore[return-value]
        except ValidationError as exc:
            raise InvalidActionError(describe_validation_error(exc)) from exc

    @property
    def done(self) -> bool:
        """True once the current episode has ended."""
        return self._started and self._is_done()

    def observation(self) -> ObsT:
        """Return the current observation (no ground truth)."""
        self._require_started()
        return self._observation()

    def render(self) -> str:
        """Return the current observation as text for a person (``igym play``)."""
        return self.observation().model_dump_json(indent=2)

    def explain(self) -> str:
        """Explain the episode's outcome in words (``igym play`` and reports)."""
        grade = self.grade()
        parts = ", ".join(f"{k}={_number(v)}" for k, v in grade.breakdown.items())
        verdict = "reaches" if grade.success else "is below"
        return f"score {grade.score:.3f} {verdict} the threshold {grade.threshold:.2f} ({parts})"

    def state(self) -> StateT:
        """Return the full internal state, ground truth included (debugging and audit only)."""
        self._require_started()
        return self._state()

    def grade(self) -> Grade:
        """Grade the episode so far: score in [0, 1], success flag and per-dimension breakdown."""
        self._require_started()
        return self._grade()

    def load_state(self, state: StateT | Mapping[str, Any]) -> None:
        """Restore an episode from ``state()`` output (e.g. a session moved between servers)."""
        parsed = state if isinstance(state, self.state_type) else self.state_type.model_validate(state)
        self._episode_serial = next(_EPISODE_SERIALS)
        self._load_state(parsed)  # type: ignore[arg-type]
        self._started = True

    @property
    def episode_serial(self) -> int:
        """A number no other episode in this process has: drawn anew by every ``reset`` and ``load_state``.

        0 before the first. The ``static_state_fields`` can only change when it does, so a store
        that wrote them at one serial need not write them again until it changes.
        """
        return self._episode_serial

    def close(self) -> None:
        """Release resources. Closing twice is harmless."""
        self._closed = True

    @classmethod
    def typed_action(cls, line: str) -> Any:
        """The action ``igym play`` sends for a line a person typed.

        The line itself, unless the environment has a shorter form for hands (selective
        verification: ``VERDICT [confidence]``).
        """
        return line

    def __enter__(self) -> Env[ActT, ObsT, StateT]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------- agent hooks
    @classmethod
    @abstractmethod
    def sample_action(cls, observation: ObsT, rng: random.Random) -> ActT:
        """Return a uniformly random well-formed action for ``observation`` (random agent)."""

    @classmethod
    @abstractmethod
    def oracle_action(cls, state: StateT) -> ActT:
        """Return the best action given the full state, ground truth included (oracle agent)."""

    @classmethod
    @abstractmethod
    def noop_action(cls, observation: ObsT) -> ActT:
        """Return the action of an agent that does nothing useful (a trivial baseline)."""

    @classmethod
    @abstractmethod
    def counterfactual(cls, state: StateT, rng: random.Random) -> StateT:
        """Return ``state`` with every piece of truth the agent has not yet seen altered.

        ``check_env`` uses it to prove observations carry no hidden truth: the observation of
        the altered state must equal the original one.
        """

    @classmethod
    def separation_metric(cls) -> str:
        """The figure on which ``igym bench`` compares tiers (higher on easier tiers).

        ``"mean_score"`` (the default) is the mean grade with its t-interval; any other name is a
        ``summarize`` figure that comes with ``<name>_ci_low`` and ``<name>_ci_high``.
        """
        return "mean_score"

    @classmethod
    def summarize(cls, grades: Sequence[Grade]) -> dict[str, float | None]:
        """Dataset-level metrics over many graded episodes of one task, beyond the mean score.

        ``None`` marks a metric that is undefined for these episodes (never a silent 0).
        """
        return {}

    # ----------------------------------------------------------------- subclass hooks
    # Every environment has _reset, _step, _observation, _state, _load_state and _grade; _configure,
    # _reject and _is_done have defaults that fit an environment whose state says when it is done.

    def _configure(self, spec: TaskSpec, config: Mapping[str, Any]) -> None:
        """Validate and store the episode configuration (raise ``ValueError`` when invalid).

        By default ``config`` is validated into ``self.config`` with ``config_type`` (an environment
        without one takes no configuration) and ``self.max_steps`` is the task's.
        """
        if self.config_type is None:
            if config:
                raise ValueError(f"{self.env_name} takes no configuration, got: {', '.join(sorted(config))}")
            self.config: Any = None
        else:
            self.config = validate_config(self.config_type, config)
        self.max_steps = spec.max_steps

    @abstractmethod
    def _reset(self, *, seed: int | None, scenario_id: str | int | None, options: dict[str, Any]) -> ObsT:
        """Load an item and return the first observation."""

    @abstractmethod
    def _step(self, action: ActT) -> StepResult[ObsT]:
        """Apply a well-formed action."""

    def _reject(self, raw: Any, message: str) -> StepResult[ObsT]:
        """Account for an action that could not be carried out, changing nothing else.

        By default: no reward, nothing changed, the message in ``info["error"]``. An environment
        that counts rejected actions against its step cap overrides it.
        """
        return StepResult(
            observation=self._observation(),
            reward=0.0,
            done=self._is_done(),
            info={"reward_breakdown": {}, "error": message},
        )

    def _is_done(self) -> bool:
        """Whether the episode has ended; by default the state's ``done``."""
        return bool(self._state().done)

    @abstractmethod
    def _observation(self) -> ObsT: ...

    @abstractmethod
    def _state(self) -> StateT: ...

    @abstractmethod
    def _load_state(self, state: StateT) -> None: ...

    @abstractmethod
    def _grade(self) -> Grade: ...

    def _require_started(self) -> None:
        if not self._started:
            raise NotResetError(f"call reset() on {self.spec.id} before using it")
