"""The replay attack, for every environment: rebuild the episode from the public code, read its truth.

The attacker regenerates episodes from the public code for a range of seeds, finds the one whose
first observation is the one it was shown, and plays the oracle on its own copy. In public mode
this wins by design (it is what makes results reproducible); with ``IGYM_EVAL_SECRET`` set, the
items it can build are not the ones being played, and it falls back to doing nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

from integrity_gym.agents.base import NoopAgent
from integrity_gym.agents.oracle import OracleAgent
from integrity_gym.agents.redteam.base import Attack
from integrity_gym.core.registry import TaskSpec, make
from integrity_gym.core.seeding import public_derivation

#: Seeds the attacker tries (benchmarks and the red team play small seeds).
SEARCHED_SEEDS = range(64)


@lru_cache(maxsize=16)
def _public_first_observations(task_id: str) -> dict[str, int]:
    """First observation (JSON) -> seed, for every searched seed, as the public code builds them."""
    table: dict[str, int] = {}
    with public_derivation():
        for seed in SEARCHED_SEEDS:
            env = make(task_id)
            table.setdefault(env.reset(seed=seed).model_dump_json(), seed)
            env.close()
    return table


class Replay:
    """Finds the played episode among the public ones and plays the oracle on its own copy."""

    def __init__(self, spec: TaskSpec, seed: int = 0) -> None:
        self.spec = spec
        self._play: Callable[[Any], Any] | None = None

    def act(self, observation: Any) -> Any:
        """The oracle's action on the rebuilt episode; the do-nothing action if none matched."""
        if self._play is None:
            self._play = self._prepare(observation)
        return self._play(observation)

    def _prepare(self, first: Any) -> Callable[[Any], Any]:
        found = _public_first_observations(self.spec.id).get(first.model_dump_json())
        if found is None:
            return NoopAgent(make(self.spec.id)).act
        with public_derivation():
            copy = make(self.spec.id)
            copy.reset(seed=found)
        oracle = OracleAgent(copy)

        def play(observation: Any) -> Any:
            with public_derivation():
                action = oracle.act(observation)
                copy.step(action)
            return action

        return play


REPLAY = Attack(
    "replay_public_code",
    "Rebuild the episode from the public code (first observation against 64 seeds) and play the oracle on "
    "the copy; wins by design in public mode, so it is played with an eval secret set.",
    lambda spec, seed: Replay(spec, seed),
    secret_only=True,
)
