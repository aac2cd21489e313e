"""The random agent: uniformly random well-formed actions."""

from __future__ import annotations

from typing import Any

from integrity_gym.core.env import Env
from integrity_gym.core.seeding import make_rng


class RandomAgent:
    """Uniformly random well-formed actions, from a private seeded generator."""

    def __init__(self, env: Env[Any, Any, Any], seed: int = 0) -> None:
        self._env_class = env.spec.env_class()
        self._rng = make_rng("agent/random", env.spec.id, seed)

    def act(self, observation: Any) -> Any:
        """Return a random action for ``observation``."""
        return self._env_class.sample_action(observation, self._rng)
