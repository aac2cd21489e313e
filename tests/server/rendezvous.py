"""Environments whose steps meet at a barrier: they finish only if the server runs them at once.

Served by tests/server/test_blocking.py in a real server process. A ``meet`` step waits (at most
``TIMEOUT_S``) until ``PARTIES`` steps of its class are waiting together: on a server that steps
on its event loop the first one holds the loop, no other can arrive, and every one reports
``met: false``. ``Declared`` says it blocks (``Env.blocking``); ``Undeclared`` does not, and its
``stall`` step holds the loop long enough for the server to find that out.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any, ClassVar, Literal

from pydantic import Field

from integrity_gym.core.env import Env
from integrity_gym.core.registry import TaskSpec
from integrity_gym.core.types import Action, Grade, Observation, State, StepResult

PARTIES = 4
TIMEOUT_S = 8.0


class MeetAction(Action):
    op: Literal["meet", "stall"] = Field(description="Wait at the barrier, or hold the caller for 0.3 s.")


class MeetObservation(Observation):
    met: bool | None = Field(description="Whether the last meet found every party (None before one).")


class MeetState(State):
    met: bool | None = Field(description="As observed.")


class _Meeting(Env[MeetAction, MeetObservation, MeetState]):
    action_type = MeetAction
    observation_type = MeetObservation
    state_type = MeetState
    barrier: ClassVar[threading.Barrier]

    def _reset(self, *, seed: int | None, scenario_id: str | int | None, options: dict[str, Any]) -> MeetObservation:
        self.s = MeetState(task_id=self.spec.id, seed=seed, episode_id="", step_count=0, done=False, met=None)
        return self._observation()

    def _step(self, action: MeetAction) -> StepResult[MeetObservation]:
        met: bool | None = None
        if action.op == "stall":
            time.sleep(0.3)
        else:
            try:
                self.barrier.wait(TIMEOUT_S)
                met = True
            except threading.BrokenBarrierError:
                met = False
                self.barrier.reset()
        self.s = self.s.model_copy(update={"step_count": self.s.step_count + 1, "met": met})
        return StepResult(observation=self._observation(), reward=0.0, done=False, info={"error": None})

    def _observation(self) -> MeetObservation:
        return MeetObservation(task_id=self.spec.id, done=False, met=self.s.met)

    def _state(self) -> MeetState:
        return self.s

    def _load_state(self, state: MeetState) -> None:
        self.s = state

    def _grade(self) -> Grade:
        return Grade(score=0.0, success=False, threshold=1.0, breakdown={})

    @classmethod
    def sample_action(cls, observation: MeetObservation, rng: random.Random) -> MeetAction:
        return MeetAction(op="stall")

    @classmethod
    def oracle_action(cls, state: MeetState) -> MeetAction:
        return MeetAction(op="stall")

    @classmethod
    def noop_action(cls, observation: MeetObservation) -> MeetAction:
        return MeetAction(op="stall")

    @classmethod
    def counterfactual(cls, state: MeetState, rng: random.Random) -> MeetState:
        return state


class Declared(_Meeting):
    env_name = "declared"
    blocking = True
    barrier = threading.Barrier(PARTIES)


class Undeclared(_Meeting):
    env_name = "undeclared"
    barrier = threading.Barrier(PARTIES)


def _spec(env: str, cls: str) -> TaskSpec:
    return TaskSpec(env=env, name="meet", version=0, description="Steps that meet at a barrier.", tier="easy",
                    success_threshold=1.0, max_steps=100, entry=f"tests.server.rendezvous:{cls}")  # fmt: skip


TASKS = [_spec("declared", "Declared"), _spec("undeclared", "Undeclared")]
