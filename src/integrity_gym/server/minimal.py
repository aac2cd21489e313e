"""A minimal environment for measuring the server itself (benchmarks) and testing its protocol.

It is not registered: ``create_app(tasks=[MINIMAL_TASK])`` serves it. Each step adds ``amount``
to a running total; the episode ends at ``FINISH`` or after ``max_steps``; the hidden target is
the ground truth, and the grade is 1 when the total equals it.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field

from integrity_gym.core.env import Env
from integrity_gym.core.registry import TaskSpec
from integrity_gym.core.seeding import make_rng, stable_id
from integrity_gym.core.types import Action, Grade, Observation, State, StepResult


class CountAction(Action):
    """Add ``amount`` to the total, or finish."""

    kind: Literal["ADD", "FINISH"] = Field(description="ADD or FINISH.")
    amount: int = Field(default=0, ge=-10, le=10, description="ADD only: how much to add.")


class CountObservation(Observation):
    """The running total and the step counter (the target is hidden)."""

    total: int = Field(description="Sum of the amounts added so far.")
    step_count: int = Field(ge=0, description="Steps taken so far.")


class CountState(State):
    """Full state: the hidden target included."""

    target: int = Field(description="The total the agent should reach (ground truth).")
    total: int = Field(description="Running total.")
    finished: bool = Field(description="True after FINISH.")
    max_steps: int = Field(ge=1, description="Step budget.")


class CounterEnv(Env[CountAction, CountObservation, CountState]):
    """Reach a hidden target total by adding small amounts."""

    env_name = "minimal"
    action_type = CountAction
    observation_type = CountObservation
    state_type = CountState

    def _configure(self, spec: TaskSpec, config: Mapping[str, Any]) -> None:
        self._max_steps = spec.max_steps
        self._st = CountState(
            task_id=spec.id,
            seed=None,
            episode_id="-",
            step_count=0,
            done=False,
            target=0,
            total=0,
            finished=False,
            max_steps=spec.max_steps,
        )

    def _reset(self, *, seed: int | None, scenario_id: str | int | None, options: dict[str, Any]) -> CountObservation:
        rng = make_rng("minimal", seed if seed is not None else 0)
        self._st = CountState(
            task_id=self.spec.id,
            seed=seed,
            episode_id=stable_id(self.spec.id, seed),
            step_count=0,
            done=False,
            target=rng.randint(-20, 20),
            total=0,
            finished=False,
            max_steps=self._max_steps,
        )
        return self._observation()

    def _advance(self, total: int, finished: bool) -> None:
        steps = self._st.step_count + 1
        done = finished or steps >= self._st.max_steps
        self._st = self._st.model_copy(update={"total": total, "finished": finished, "step_count": steps, "done": done})

    def _step(self, action: CountAction) -> StepResult[CountObservation]:
        before = abs(self._st.target - self._st.total)
        total = self._st.total + (action.amount if action.kind == "ADD" else 0)
        self._advance(total, action.kind == "FINISH")
        reward = float(before - abs(self._st.target - total))
        obs = self._observation()
        return StepResult(
            observation=obs,
            reward=reward,
            done=obs.done,
            info={"reward_breakdown": {"progress": reward}, "error": None},
        )

    def _reject(self, raw: Any, message: str) -> StepResult[CountObservation]:
        self._advance(self._st.total, False)
        obs = self._observation()
        return StepResult(
            observation=obs, reward=-0.1, done=obs.done, info={"reward_breakdown": {"invalid": -0.1}, "error": message}
        )

    def _is_done(self) -> bool:
        return self._st.done

    def _observation(self) -> CountObservation:
        return CountObservation(
            task_id=self._st.task_id, done=self._st.done, total=self._st.total, step_count=self._st.step_count
        )

    def _state(self) -> CountState:
        return self._st

    def _load_state(self, state: CountState) -> None:
        self._st = state

    def _grade(self) -> Grade:
        score = 1.0 if self._st.total == self._st.target else 0.0
        return Grade(
            score=score,
            success=score >= self.spec.success_threshold,
            threshold=self.spec.success_threshold,
            breakdown={"exact": score},
        )

    @classmethod
    def sample_action(cls, observation: CountObservation, rng: random.Random) -> CountAction:
        """A random ADD."""
        return CountAction(kind="ADD", amount=rng.randint(-3, 3))

    @classmethod
    def oracle_action(cls, state: CountState) -> CountAction:
        """Move towards the target; finish on it."""
        gap = state.target - state.total
        if gap == 0:
            return CountAction(kind="FINISH")
        return CountAction(kind="ADD", amount=max(-10, min(10, gap)))

    @classmethod
    def noop_action(cls, observation: CountObservation) -> CountAction:
        """Add nothing."""
        return CountAction(kind="ADD", amount=0)

    @classmethod
    def counterfactual(cls, state: CountState, rng: random.Random) -> CountState:
        """Move the hidden target."""
        return state.model_copy(update={"target": state.target + rng.randint(1, 5)})


MINIMAL_TASK = TaskSpec(
    env="minimal",
    name="count",
    version=0,
    description="Reach a hidden total (server benchmarks and protocol tests only).",
    tier="easy",
    success_threshold=1.0,
    max_steps=1_000_000,
    entry="integrity_gym.server.minimal:CounterEnv",
)
