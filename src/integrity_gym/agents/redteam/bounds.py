"""Each task's trivial floor and honest ceiling, from which its threshold follows (``threshold_between``).

The floor is the best mean grade of the environment's floor agents (the red team's attacks marked
``floor``: doing nothing, a constant answer, answering blind); the ceiling is the best an honest
agent can reach: the oracle, or where the answer itself is uncertain the Bayes-optimal agent
(selective verification's text task: the exact posterior). Both are measured on the task's
published sample, eval seeds 0 to ``spec.bounds_episodes - 1`` (100; 1,000 on selective
verification's text tasks, whose whole range is about 0.02 of grade), with the environment's score
(``score_of``: the expected grade where the truth's probability is known, else the grade), and
committed in each environment's ``tasks.py``; ``tests/redteam/test_bounds.py`` measures them again
and requires the committed figures.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from integrity_gym.agents.base import Agent, make_agent
from integrity_gym.agents.redteam import _module, attacks_for, score_of
from integrity_gym.agents.redteam.audit import _from_attack
from integrity_gym.agents.redteam.base import play_once
from integrity_gym.core.env import Env
from integrity_gym.core.registry import TaskSpec, make


@dataclass(frozen=True)
class Bounds:
    """A task's floor and ceiling, and which agents set them."""

    floor: float
    floor_agent: str
    ceiling: float
    ceiling_agent: str


def _mean(spec: TaskSpec, build: Callable[[Env[Any, Any, Any], int], Agent], seeds: Iterable[int]) -> float:
    scores = []
    for seed in seeds:
        env = make(spec.id)
        _, grade = play_once(env, build(env, seed), seed)
        scores.append(score_of(spec, grade))
    return round(sum(scores) / len(scores), 3)


def measure_bounds(spec: TaskSpec, seeds: Iterable[int] | None = None) -> Bounds:
    """Play the floor agents and the ceiling agent on ``spec`` over ``seeds`` (by default its published sample)."""
    seeds = list(range(spec.bounds_episodes) if seeds is None else seeds)
    floors = {
        a.name: _mean(spec, _from_attack(a.build), seeds) for a in attacks_for(spec.env) if a.floor and a.applies(spec)
    }
    floor_agent = max(floors, key=lambda name: (floors[name], name))
    ceiling_agent: str = getattr(_module(spec.env), "ceiling_agent", lambda spec: "oracle")(spec)
    ceiling = _mean(spec, lambda env, seed: make_agent(ceiling_agent, env, seed=seed), seeds)
    return Bounds(floors[floor_agent], floor_agent, ceiling, ceiling_agent)
