"""The red team: degenerate agents per environment, and the check that none of them scores.

Every environment's ``agents.redteam.<env>`` module declares ``ATTACKS`` (a tuple of
:class:`Attack`) and ``BAR`` (a :class:`Bar`). ``run_redteam`` plays each attack on each task over
eval-partition episodes and reports whether it stayed under the bar; ``igym redteam`` prints the
table and ``tests/redteam`` runs the same check in ``make test``.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from dataclasses import dataclass
from types import ModuleType

from integrity_gym.agents.redteam.base import Attack, Bar
from integrity_gym.core.registry import TaskSpec, list_tasks, make

__all__ = ["Attack", "AttackResult", "Bar", "attacks_for", "bar_for", "run_attack", "run_redteam"]


def _module(env: str) -> ModuleType:
    return importlib.import_module(f"integrity_gym.agents.redteam.{env}")


def attacks_for(env: str) -> tuple[Attack, ...]:
    """The attacks declared for environment ``env``."""
    attacks: tuple[Attack, ...] = _module(env).ATTACKS
    return attacks


def bar_for(env: str) -> Bar:
    """The bar every attack on environment ``env`` must stay under."""
    bar: Bar = _module(env).BAR
    return bar


@dataclass(frozen=True)
class AttackResult:
    """One attack played on one task."""

    task_id: str
    attack: str
    episodes: int
    mean: float
    successes: int
    threshold: float
    limit: float
    max_successes: int

    @property
    def held(self) -> bool:
        """True when the attack stayed under the bar: low mean and (almost) no success."""
        return self.mean <= self.limit and self.successes <= self.max_successes


def run_attack(spec: TaskSpec, attack: Attack, seeds: Iterable[int]) -> AttackResult:
    """Play ``attack`` on ``spec``'s task (eval partition) for each seed."""
    scores: list[float] = []
    successes = 0
    for seed in seeds:
        env = make(spec.id)
        agent = attack.build(spec, seed)
        obs = env.reset(seed=seed)
        while not env.done:
            obs = env.step(agent.act(obs)).observation
        grade = env.grade()
        env.close()
        scores.append(grade.score)
        successes += bool(grade.success)
    bar = bar_for(spec.env)
    n = len(scores)
    return AttackResult(
        task_id=spec.id,
        attack=attack.name,
        episodes=n,
        mean=sum(scores) / n,
        successes=successes,
        threshold=spec.success_threshold,
        limit=bar.limit(spec.success_threshold),
        max_successes=int(bar.max_success_rate * n + 1e-9),
    )


def run_redteam(pattern: str = "*", episodes: int = 20, seed: int = 0) -> list[AttackResult]:
    """Every declared attack on every task matching ``pattern``, over seeds ``seed .. seed+episodes-1``."""
    seeds = range(seed, seed + episodes)
    return [run_attack(spec, attack, seeds) for spec in list_tasks(pattern) for attack in attacks_for(spec.env)]
