"""The oracle agent: reads ground truth, for tests and upper bounds."""

from __future__ import annotations

from typing import Any

from integrity_gym.core.env import Env


class OracleAgent:
    """Reads the full state, ground truth included: an upper bound for tests, not a baseline."""

    def __init__(self, env: Env[Any, Any, Any], seed: int = 0) -> None:
        self._env = env
        self._env_class = env.spec.env_class()

    def act(self, observation: Any) -> Any:
        """Return the best action given the environment's hidden state."""
        return self._env_class.oracle_action(self._env.state())
