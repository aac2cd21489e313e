"""A deliberately failing environment: proves a server-side bug leaks nothing to clients."""

from __future__ import annotations

from integrity_gym.core.types import StepResult
from integrity_gym.server.minimal import MINIMAL_TASK, CountAction, CounterEnv, CountObservation

SECRET = "internal-detail-4f2a"


class BrokenEnv(CounterEnv):
    """Fails on every well-formed step, with a message that must never reach a client."""

    env_name = "broken"

    def _step(self, action: CountAction) -> StepResult[CountObservation]:
        raise RuntimeError(f"bug with {SECRET}")


BROKEN_TASK = MINIMAL_TASK.model_copy(update={"env": "broken", "entry": "tests.server.broken:BrokenEnv"})
