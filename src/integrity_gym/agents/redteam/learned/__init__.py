"""Learned attacks: models fitted on the train partition that try to score on eval without the task.

The rule-based red team plays fixed strategies; an RL user produces something stronger, a model
fitted on the training items. Each environment's ``agents.redteam.learned.<env>`` module declares
``LEARNED`` (a tuple of :class:`Learned`) and may declare ``surface_overlap(spec)`` (a list of
:class:`Overlap`: how much of each kind of surface form eval shares with train). A learned
attack is fitted on train-partition episodes with only what an agent may see without doing the
task (the observation before any evidence is read, the words of what was read without its
structured fields, the claim's words, a picture's global statistics), or it plays the eval
episodes in order and remembers every earlier episode's observations and rewards (a *memory*
attack). It is then scored on eval seeds under the same
:class:`~integrity_gym.agents.redteam.base.Bar` as every other attack. ``igym redteam --learned``
runs them (scikit-learn, the ``learned`` extra) and ``tests/redteam/test_learned_*.py`` keep
them under the bar in ``make test``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from integrity_gym.agents.redteam.base import Attack
from integrity_gym.core.registry import TaskSpec, env_extras

__all__ = ["TRAIN_EPISODES", "Learned", "Overlap", "as_attack", "learned_for", "overlap_for", "train_episodes_for"]

#: Train-partition episodes a learned attack is fitted on unless told otherwise.
TRAIN_EPISODES = 300


@dataclass(frozen=True)
class Learned:
    """A learned attack on one environment.

    ``fit(spec, train_seeds)`` fits the model on the train partition of ``spec``'s task (seeds
    ``train_seeds``) and returns ``build(spec, seed) -> agent`` for eval episodes. A memory attack
    ignores ``train_seeds`` and returns a ``build`` whose agents share one memory: the red team
    plays eval seeds in increasing order and calls ``agent.observe(step_result)`` after every step
    (as ``igym bench`` does), so the agent of seed ``s`` knows everything seeds before ``s`` showed.
    """

    name: str
    #: What the model reads, in one sentence (docs/redteam.md prints it beside the row).
    features: str
    fit: Callable[[TaskSpec, Iterable[int]], Callable[[TaskSpec, int], Any]]
    #: Tasks it applies to (all of the environment's by default).
    applies: Callable[[TaskSpec], bool] = lambda spec: True
    memory: bool = False

    @property
    def attack_name(self) -> str:
        """Its name in red-team tables, ``learned:<name>``."""
        return f"learned:{self.name}"


@dataclass(frozen=True)
class Overlap:
    """How much of one kind of surface form the eval partition shares with the train partition."""

    task_id: str
    #: What is compared, e.g. "source text (claim, topic and outlet masked)".
    form: str
    #: Distinct forms in the train and eval samples.
    train: int
    eval: int
    #: Share of the eval sample's occurrences whose form also occurs in the train sample.
    shared: float


def _module(env: str) -> ModuleType | None:
    """The learned-attack module environment ``env`` declares (``EnvExtras.learned``), if any."""
    return env_extras(env).module("learned")


def learned_for(env: str) -> tuple[Learned, ...]:
    """The learned attacks on environment ``env`` (none for an environment without a module)."""
    module = _module(env)
    learned: tuple[Learned, ...] = () if module is None else module.LEARNED
    return learned


def train_episodes_for(env: str) -> int:
    """Training items the learned attacks of ``env`` are fitted on: its module's ``TRAIN_EPISODES``, else 300."""
    count: int = getattr(_module(env), "TRAIN_EPISODES", TRAIN_EPISODES)
    return count


def overlap_for(spec: TaskSpec) -> list[Overlap]:
    """The train/eval surface overlap of ``spec``'s task: its environment module's ``surface_overlap(spec)``."""
    hook = getattr(_module(spec.env), "surface_overlap", None)
    return [] if hook is None else list(hook(spec))


def as_attack(spec: TaskSpec, learned: Learned, train_seeds: Iterable[int]) -> Attack:
    """Fit ``learned`` on ``spec``'s train partition and wrap the result as an :class:`Attack`."""
    return Attack(learned.attack_name, learned.features, learned.fit(spec, train_seeds))
