"""The toy environment's own agents (``ToyEnv.extras.agents``): ``--agent heuristic`` builds this one."""

from __future__ import annotations

from typing import Any

from integrity_gym.core.registry import TaskSpec
from tests.digits.env import DIGITS, ToyAction, ToyObservation


class LookThenAdd:
    """Look at every digit, then answer their sum: right every time, in four steps."""

    def __init__(self, spec: TaskSpec, seed: int = 0) -> None:
        self.spec = spec

    def act(self, observation: ToyObservation | dict[str, Any]) -> ToyAction:
        seen = observation.seen if isinstance(observation, ToyObservation) else observation["seen"]
        hidden = [i for i in range(DIGITS) if str(i) not in seen]
        return ToyAction(op="look", index=hidden[0]) if hidden else ToyAction(op="answer", value=sum(seen.values()))


AGENTS = {"heuristic": LookThenAdd}
