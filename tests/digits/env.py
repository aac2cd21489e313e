"""A fourth environment in a folder of its own, and the correct env ``check_env``'s tests break one promise at a time.

Three hidden digits; ``look`` reveals one, ``answer`` submits their sum and ends the episode. The
config ``reward_scale`` multiplies every reward, so a copy built without the config would differ.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field

from integrity_gym.core.env import Env
from integrity_gym.core.extras import EnvExtras
from integrity_gym.core.registry import TaskSpec
from integrity_gym.core.seeding import make_rng, stable_id
from integrity_gym.core.types import Action, Grade, Observation, State, StepResult

DIGITS = 3

SPEC = TaskSpec(
    env="toy",
    name="digits",
    version=0,
    description="Sum three hidden digits.",
    tier="easy",
    success_threshold=1.0,
    max_steps=8,
    entry="tests.digits.env:ToyEnv",
)


class ToyAction(Action):
    op: Literal["look", "answer"] = Field(description="Reveal a digit or answer.")
    index: int = Field(0, ge=0, lt=DIGITS, description="look: which digit.")
    value: int = Field(0, ge=0, description="answer: the claimed sum.")


class ToyObservation(Observation):
    seen: dict[str, int] = Field(description="Revealed digits by index.")
    step_count: int = Field(ge=0, description="Steps taken.")


class ToyState(State):
    secret: list[int] = Field(description="The hidden digits.")
    seen: list[int] = Field(description="Indices revealed so far.")
    answer: int | None = Field(description="The submitted sum, if any.")


class ToyEnv(Env[ToyAction, ToyObservation, ToyState]):
    """Correct in every respect ``check_env`` checks."""

    env_name = "toy"
    # What the folder adds to the generic tools: its own heuristic agent and page view.
    extras = EnvExtras(agents="tests.digits.agents", view="view.js")
    action_type = ToyAction
    observation_type = ToyObservation
    state_type = ToyState

    def _configure(self, spec: TaskSpec, config: Mapping[str, Any]) -> None:
        self.max_steps = spec.max_steps
        self.reward_scale = float(config.get("reward_scale", 1.0))
        self.s = ToyState(
            task_id=spec.id, seed=None, episode_id="", step_count=0, done=False, secret=[], seen=[], answer=None
        )

    def _reset(self, *, seed: int | None, scenario_id: str | int | None, options: dict[str, Any]) -> ToyObservation:
        seed = 0 if seed is None else seed
        rng = make_rng("toy", seed)
        secret = [rng.randrange(10) for _ in range(DIGITS)]
        self.s = ToyState(
            task_id=self.spec.id,
            seed=seed,
            episode_id=stable_id("toy", seed),
            step_count=0,
            done=False,
            secret=secret,
            seen=[],
            answer=None,
        )
        return self._observation()

    def _advance(self, **update: Any) -> None:
        step_count = self.s.step_count + 1
        done = update.get("answer") is not None or step_count >= self.max_steps
        self.s = self.s.model_copy(update={**update, "step_count": step_count, "done": done})

    def _step(self, action: ToyAction) -> StepResult[ToyObservation]:
        if action.op == "look":
            self._advance(seen=sorted({*self.s.seen, action.index}))
            breakdown = {"look": 0.0}
        else:
            self._advance(answer=action.value)
            breakdown = {"answer": self.reward_scale if action.value == sum(self.s.secret) else 0.0}
        return self._result(breakdown, error=None)

    def _result(self, breakdown: dict[str, float], error: str | None) -> StepResult[ToyObservation]:
        obs = self._observation()
        info = {"reward_breakdown": breakdown, "error": error}
        return StepResult(observation=obs, reward=sum(breakdown.values()), done=obs.done, info=info)

    def _reject(self, raw: Any, message: str) -> StepResult[ToyObservation]:
        self._advance()
        return self._result({}, error=message)

    def _observation(self) -> ToyObservation:
        return ToyObservation(
            task_id=self.spec.id,
            done=self.s.done,
            seen={str(i): self.s.secret[i] for i in self.s.seen},
            step_count=self.s.step_count,
        )

    def _state(self) -> ToyState:
        return self.s

    def _load_state(self, state: ToyState) -> None:
        self.s = state

    def _grade(self) -> Grade:
        score = 1.0 if self.s.answer == sum(self.s.secret) else 0.0
        return Grade(score=score, success=score >= 1.0, threshold=1.0, breakdown={"correct": score})

    @classmethod
    def sample_action(cls, observation: ToyObservation, rng: random.Random) -> ToyAction:
        hidden = [i for i in range(DIGITS) if str(i) not in observation.seen]
        if hidden and rng.random() < 0.7:
            return ToyAction(op="look", index=rng.choice(hidden))
        return ToyAction(op="answer", value=rng.randrange(28))

    @classmethod
    def oracle_action(cls, state: ToyState) -> ToyAction:
        # Look at every digit first: the hidden-truth check then runs with some, and finally with
        # no, truth hidden (where a counterfactual has nothing left to alter).
        hidden = [i for i in range(DIGITS) if i not in state.seen]
        if hidden:
            return ToyAction(op="look", index=hidden[0])
        return ToyAction(op="answer", value=sum(state.secret))

    @classmethod
    def noop_action(cls, observation: ToyObservation) -> ToyAction:
        return ToyAction(op="look", index=0)

    @classmethod
    def counterfactual(cls, state: ToyState, rng: random.Random) -> ToyState:
        secret = [d if i in state.seen else (d + 1 + rng.randrange(9)) % 10 for i, d in enumerate(state.secret)]
        return state.model_copy(update={"secret": secret})
