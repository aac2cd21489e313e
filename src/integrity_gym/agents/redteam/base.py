"""What an attack is and the bar it must stay under; shared by every environment's red team."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from integrity_gym.agents.base import Agent, NoopAgent
from integrity_gym.core.env import Env
from integrity_gym.core.registry import TaskSpec, make
from integrity_gym.core.types import Grade


@dataclass(frozen=True)
class Attack:
    """A degenerate agent: it tries to score without doing the task.

    ``build(spec, seed)`` returns an object with ``act(observation) -> action``. An attack sees
    what any agent sees (observations, the public code, the task spec), never the env's state.
    """

    name: str
    description: str
    build: Callable[[TaskSpec, int], Any]
    #: A trivial floor (doing nothing, always abstaining, answering blind): reports show the best
    #: of these beside the baselines, as the score that needs no work at all.
    floor: bool = False
    #: Wins by design in public mode, where anyone can rebuild an item from the code and a seed
    #: (the replay attack): the red team plays it only with an eval secret set.
    secret_only: bool = False
    #: The honest agent whose verdicts this attack restates with another confidence (``build``'s
    #: signature). Such an attack looks at the item, so it may score what that agent scores, but
    #: restating must not pay: it is held to the larger of the bar and that agent's own mean on the
    #: same seeds, so a better baseline never turns its restatement into a failed attack.
    restates: Callable[[TaskSpec, int], Any] | None = None
    #: The tasks it is an attack on (all by default): an attack that is an honest agent on some tasks
    #: (ignoring a threshold that a task does not state) is played only where it is one.
    applies: Callable[[TaskSpec], bool] = lambda spec: True


@dataclass(frozen=True)
class Bar:
    """How far below its task's threshold every attack must stay.

    An attack holds the bar on a task when its mean score over the episodes is at most
    ``limit(spec)`` and it succeeds in at most ``max_success_rate`` of them. The limit is
    ``threshold - margin``, or, with ``headroom_share`` set, ``floor + headroom_share × (threshold
    − floor)``: where the threshold sits close to the trivial floor (selective verification),
    the attacks are held to a share of that gap instead of a fixed distance that would put the
    limit under the floor itself. There the floor agents, whose best mean *is* the floor the
    threshold is built on (re-measured on other items it moves by sampling noise alone), are held to
    the threshold itself.
    """

    margin: float
    why: str
    max_success_rate: float = 1 / 20
    #: The fewest episodes an attack is judged on: a mean over too few noisy episodes (one-step
    #: tasks) cannot tell an attack from a lucky draw at the margin's scale.
    episodes: int = 20
    headroom_share: float | None = None

    def episodes_for(self, spec: TaskSpec) -> int:
        """The fewest episodes an attack on ``spec`` is judged on.

        A limit set by the floor (``headroom_share``) is a share of a gap measured over the task's
        ``bounds_episodes``: the attack is judged on at least those same seeds, so its mean and the
        floor it is compared with carry the same items.
        """
        if self.headroom_share is not None and spec.floor is not None:
            return max(self.episodes, spec.bounds_episodes)
        return self.episodes

    def limit(self, spec: TaskSpec, *, floor: bool = False) -> float:
        """The highest mean score an attack (a floor agent if ``floor``) may reach on ``spec``'s task."""
        if self.headroom_share is not None and spec.floor is not None:
            share = 1.0 if floor else self.headroom_share
            return spec.floor + share * (spec.success_threshold - spec.floor)
        return spec.success_threshold - self.margin


#: Every environment's trivial floor: its own do-nothing action at every step.
DO_NOTHING = Attack(
    "do_nothing",
    "The environment's do-nothing action every step.",
    lambda spec, seed: NoopAgent(make(spec.id)),
    floor=True,
)


def play_once(env: Env[Any, Any, Any], agent: Agent, seed: int) -> tuple[float, Grade]:
    """Play ``env`` from ``reset(seed)`` to its end with ``agent``, then close it: the return and the grade.

    An agent with ``observe(step_result)`` hears every step's result, as under ``igym bench``
    (memory attacks learn from it across episodes).
    """
    obs = env.reset(seed=seed)
    total = 0.0
    observe = getattr(agent, "observe", None)
    while not env.done:
        result = env.step(agent.act(obs))
        if observe is not None:
            observe(result)
        obs, total = result.observation, total + result.reward
    grade = env.grade()
    env.close()
    return total, grade


Kind = Literal["baseline", "attack", "degraded"]


@dataclass(frozen=True)
class Policy:
    """One member of the return-vs-grade audit's panel: ``build(env, seed)`` returns an agent for that episode."""

    name: str
    kind: Kind
    description: str
    build: Callable[[Env[Any, Any, Any], int], Agent]


def degraded(name: str, description: str, build: Callable[[Env[Any, Any, Any], int], Agent]) -> Policy:
    """An honest policy made worse on purpose (an environment's ``DEGRADED``, for the audit)."""
    return Policy(name, "degraded", description, build)
