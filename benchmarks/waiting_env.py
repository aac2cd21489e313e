"""An environment whose step sleeps: integrity-gym's twin of OpenEnv's scaling benchmark env.

OpenEnv's scaling harness (``tests/test_scaling.py`` of burtenshaw/openenv-scaling) measures how
many sessions a server keeps busy at once with an environment whose step blocks in
``time.sleep(wait_seconds)``. This is the same environment for ``igym serve``, so that
``benchmarks/openenv_scaling.py`` can run the harness unmodified against both servers:

* ``reset`` returns an observation (``waited_seconds`` 0, the server's ``pid``, ``step_count`` 0);
* ``step`` with ``{"wait_seconds": W}`` (0 ≤ W ≤ 60) blocks in ``time.sleep(W)``, as OpenEnv's
  does, and returns ``waited_seconds`` (the requested W, so transcripts are deterministic) and
  ``pid``. An episode does not end on a wait: the harness steps once and closes, and a client may
  step again. ``{"finish": true}`` ends it (as does the step budget, ``max_steps``).

The contract ``check_env`` checks asks for hidden truth an observation must not show: here it is
a seeded target total wait (at most 50 ms), and the grade rewards a total wait close to it. It
exists for the checker only; the benchmark never finishes or grades an episode.

Serve it (from the repository root, so ``benchmarks`` imports)::

    PYTHONPATH=. .venv/bin/python -m integrity_gym.server \
        --extra-tasks benchmarks.waiting_env:SPEC --tasks 'waiting/*' --root waiting

(or ``igym serve`` with the same options).
"""

from __future__ import annotations

import os
import random
import time
from typing import Any, ClassVar

from pydantic import Field

from integrity_gym.core.env import Env
from integrity_gym.core.registry import TaskSpec
from integrity_gym.core.seeding import make_rng, stable_id
from integrity_gym.core.types import Action, Grade, Observation, State, StepResult

#: Longest sleep one step may ask for, in seconds.
MAX_WAIT_SECONDS = 60.0
#: Longest hidden target total wait, in seconds (kept short so ``check_env``'s oracle is quick).
MAX_TARGET_SECONDS = 0.05

SPEC = TaskSpec(
    env="waiting",
    name="sleep",
    version=0,
    description="Each step sleeps for the requested seconds (a server-concurrency benchmark).",
    tier="easy",
    success_threshold=0.9,
    max_steps=1000,
    entry="benchmarks.waiting_env:WaitingEnv",
)
TASKS = [SPEC]


class WaitingAction(Action):
    wait_seconds: float = Field(0.0, ge=0.0, le=MAX_WAIT_SECONDS, description="Seconds the step sleeps.")
    finish: bool = Field(False, description="End the episode after this step's wait.")


class WaitingObservation(Observation):
    waited_seconds: float = Field(ge=0.0, description="Seconds the last step slept (as requested).")
    pid: int = Field(description="Process id of the server process that ran the step.")
    step_count: int = Field(ge=0, description="Steps taken.")


class WaitingState(State):
    target_seconds: float = Field(ge=0.0, description="Hidden: the total wait the grade rewards.")
    waited_seconds: float = Field(ge=0.0, description="Seconds the last step slept.")
    total_waited: float = Field(ge=0.0, description="Seconds slept over the episode.")


class WaitingEnv(Env[WaitingAction, WaitingObservation, WaitingState]):
    """Steps block in ``time.sleep``, like OpenEnv's benchmark environment."""

    env_name = "waiting"
    # A step blocks its thread for up to MAX_WAIT_SECONDS: the server must run such steps off its
    # event loop (in a worker thread), or one session's sleep stalls every other session.
    blocking: ClassVar[bool] = True
    action_help = 'Send {"wait_seconds": 1.0} to sleep for a second; add "finish": true to end the episode.'
    action_type = WaitingAction
    observation_type = WaitingObservation
    state_type = WaitingState

    def _reset(self, *, seed: int | None, scenario_id: str | int | None, options: dict[str, Any]) -> WaitingObservation:
        seed = 0 if seed is None else seed
        rng = make_rng("waiting", seed)
        self.s = WaitingState(
            task_id=self.spec.id,
            seed=seed,
            episode_id=stable_id("waiting", seed),
            step_count=0,
            done=False,
            target_seconds=round(rng.uniform(0.0, MAX_TARGET_SECONDS), 3),
            waited_seconds=0.0,
            total_waited=0.0,
        )
        return self._observation()

    def _step(self, action: WaitingAction) -> StepResult[WaitingObservation]:
        if action.wait_seconds > 0:
            time.sleep(action.wait_seconds)
        step_count = self.s.step_count + 1
        self.s = self.s.model_copy(
            update={
                "step_count": step_count,
                "done": action.finish or step_count >= self.max_steps,
                "waited_seconds": action.wait_seconds,
                "total_waited": self.s.total_waited + action.wait_seconds,
            }
        )
        breakdown = {"grade": self._score()} if self.s.done else {"wait": 0.0}
        obs = self._observation()
        return StepResult(
            observation=obs,
            reward=sum(breakdown.values()),
            done=obs.done,
            info={"reward_breakdown": breakdown, "error": None},
        )

    def _score(self) -> float:
        return max(0.0, 1.0 - abs(self.s.total_waited - self.s.target_seconds) / MAX_TARGET_SECONDS)

    def _observation(self) -> WaitingObservation:
        return WaitingObservation(
            task_id=self.spec.id,
            done=self.s.done,
            waited_seconds=self.s.waited_seconds,
            pid=os.getpid(),
            step_count=self.s.step_count,
        )

    def _state(self) -> WaitingState:
        return self.s

    def _load_state(self, state: WaitingState) -> None:
        self.s = state

    def _grade(self) -> Grade:
        score = self._score()
        threshold = self.spec.success_threshold
        return Grade(score=score, success=score >= threshold, threshold=threshold, breakdown={"closeness": score})

    @classmethod
    def sample_action(cls, observation: WaitingObservation, rng: random.Random) -> WaitingAction:
        return WaitingAction(wait_seconds=rng.choice([0.0, 0.001, 0.002]), finish=rng.random() < 0.1)

    @classmethod
    def oracle_action(cls, state: WaitingState) -> WaitingAction:
        return WaitingAction(wait_seconds=max(0.0, state.target_seconds - state.total_waited), finish=True)

    @classmethod
    def noop_action(cls, observation: WaitingObservation) -> WaitingAction:
        return WaitingAction(wait_seconds=0.0)

    @classmethod
    def counterfactual(cls, state: WaitingState, rng: random.Random) -> WaitingState:
        other = round((state.target_seconds + 0.001 + rng.uniform(0.0, MAX_TARGET_SECONDS)) % MAX_TARGET_SECONDS, 3)
        if other == state.target_seconds:
            other = round((other + 0.001) % MAX_TARGET_SECONDS, 3)
        return state.model_copy(update={"target_seconds": other})
