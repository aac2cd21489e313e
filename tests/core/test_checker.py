"""check_env catches each broken promise: one toy environment per rule, each broken in exactly one way.

A ``check_env`` that returned at once fails every test here that expects an error, and each
expected message names its rule, so a check that fires for the wrong reason fails too. The
mutants of ``core/checker.py`` this file kills are counted in docs/mutation.md.
"""

from __future__ import annotations

import itertools
import math
import random
from typing import Any, ClassVar

import pytest
from pydantic import Field

from integrity_gym.core import checker
from integrity_gym.core.checker import EnvCheckError, check_env
from integrity_gym.core.env import EpisodeFinishedError
from integrity_gym.core.types import Grade, Observation, StepResult
from tests.digits.env import SPEC, ToyAction, ToyEnv, ToyObservation, ToyState


def failures(env_cls: type[ToyEnv]) -> str:
    with pytest.raises(EnvCheckError, match=r"^toy/digits-v0 failed check_env:\n- \[") as caught:
        check_env(env_cls(SPEC))
    return str(caught.value)


def test_a_correct_environment_passes() -> None:
    env = ToyEnv(SPEC)
    check_env(env)
    check_env(env, seed=7, steps=30)
    # Copies (determinism, restored states) are built with the same config.
    check_env(ToyEnv(SPEC, reward_scale=2.5))


def test_check_env_plays_the_seed_it_is_given() -> None:
    class Recording(ToyEnv):
        seeds: ClassVar[list[int | None]] = []

        def _reset(self, *, seed: int | None, **kwargs: Any) -> ToyObservation:
            self.seeds.append(seed)
            return super()._reset(seed=seed, **kwargs)

    check_env(Recording(SPEC), seed=7)
    assert len(Recording.seeds) >= 5 and set(Recording.seeds) == {7}


def test_check_env_plays_the_policy_it_is_given() -> None:
    class NoOracle(ToyEnv):
        @classmethod
        def oracle_action(cls, state: ToyState) -> ToyAction:
            raise NotImplementedError("no oracle for this task")

    with pytest.raises(EnvCheckError, match=r"\[oracle episode\] raised NotImplementedError: no oracle"):
        check_env(NoOracle(SPEC))
    check_env(NoOracle(SPEC), policy=lambda env: ToyAction(op="answer", value=sum(env.state().secret)))


def test_an_exception_inside_a_rule_is_that_rules_failure() -> None:
    class NoGrade(ToyEnv):
        def _grade(self) -> Grade:
            raise ValueError("cannot grade")

    message = failures(NoGrade)
    assert message.endswith("failed check_env:\n- [grade] raised ValueError: cannot grade")


def test_every_failure_is_listed_with_its_rule_and_the_task() -> None:
    class TwoFaults(ToyEnv):
        def _grade(self) -> Grade:
            return Grade.model_construct(score=2.0, success=False, threshold=1.0, breakdown={})

        def close(self) -> None:
            raise RuntimeError("cannot close")

    message = failures(TwoFaults)
    assert message.startswith("toy/digits-v0 failed check_env:")
    assert "\n- [grade] grade score 2.0 is outside [0, 1]" in message
    assert "\n- [close twice] the first close() raised RuntimeError: cannot close" in message


# ----------------------------------------------------------------------------- types


class TupleObservation(ToyObservation):
    extra: Any = None


def test_reset_must_return_the_observation_type() -> None:
    class DictReset(ToyEnv):
        def _reset(self, **kwargs: Any) -> Any:
            return super()._reset(**kwargs).model_dump()

    with pytest.raises(EnvCheckError, match=r"\[types\] reset returned dict"):
        check_env(DictReset(SPEC))


def test_observation_must_survive_a_json_round_trip() -> None:
    class LossyObservation(ToyEnv):
        observation_type = TupleObservation

        def _observation(self) -> Any:
            # A tuple comes back from JSON as a list: the agent would see something else.
            return TupleObservation(**super()._observation().model_dump(), extra=(1, 2))

    with pytest.raises(EnvCheckError, match=r"\[types\] observation JSON round trip differs"):
        check_env(LossyObservation(SPEC))


def test_a_fresh_episode_must_not_be_done() -> None:
    class DoneAtOnce(ToyEnv):
        def _observation(self) -> ToyObservation:
            return super()._observation().model_copy(update={"done": True})

    with pytest.raises(EnvCheckError, match=r"\[types\] a fresh episode is already done"):
        check_env(DoneAtOnce(SPEC))


def test_state_must_return_the_state_type() -> None:
    class DictState(ToyEnv):
        def _state(self) -> Any:
            return self.s.model_dump()

    with pytest.raises(EnvCheckError, match=r"\[types\] state\(\) returned dict, not"):
        check_env(DictState(SPEC))


def test_step_must_return_a_step_result() -> None:
    class TupleStep(ToyEnv):
        def _step(self, action: ToyAction) -> Any:
            r = super()._step(action)
            return (r.observation, r.reward, r.done, r.info)

    with pytest.raises(EnvCheckError, match=r"\[types\] step returned tuple, not StepResult"):
        check_env(TupleStep(SPEC))


def test_step_observation_must_have_the_observation_type() -> None:
    class BareObservation(ToyEnv):
        def _step(self, action: ToyAction) -> Any:
            r = super()._step(action)
            bare = Observation(task_id=self.spec.id, done=r.done)
            return StepResult(observation=bare, reward=r.reward, done=r.done, info=r.info)

    with pytest.raises(EnvCheckError, match=r"\[types\] step observation has the wrong type"):
        check_env(BareObservation(SPEC))


def _with_result(**change: Any) -> type[ToyEnv]:
    class Changed(ToyEnv):
        def _step(self, action: ToyAction) -> Any:
            r = super()._step(action)
            return r.model_copy(update={k: v(r) if callable(v) else v for k, v in change.items()})

    return Changed


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"reward": math.inf, "info": {"reward_breakdown": {"look": math.inf}}}, r"reward inf is not finite"),
        ({"info": {"error": None}}, r"info\['reward_breakdown'\] is missing"),
        ({"info": {"reward_breakdown": {"look": "0.0"}}}, r"reward_breakdown must map component names to numbers"),
        ({"reward": lambda r: r.reward + 0.5}, r"reward [\d.]+ != sum of its breakdown [\d.]+"),
        ({"done": lambda r: not r.done}, r"StepResult\.done disagrees with observation\.done"),
        ({"info": {"reward_breakdown": {"look": 0.0}, "seen": {1, 2}}}, r"info is not JSON-serializable"),
    ],
    ids=["infinite", "no-breakdown", "text-breakdown", "sum", "done", "json"],
)
def test_step_results_are_checked(change: dict[str, Any], message: str) -> None:
    with pytest.raises(EnvCheckError, match=r"\[types\] " + message):
        check_env(_with_result(**change)(SPEC))


def test_a_breakdown_may_differ_from_the_reward_by_rounding_only() -> None:
    rounding = {"reward": 0.0, "info": {"reward_breakdown": {"a": 0.1, "b": 0.2, "c": -0.3}, "error": None}}
    check_env(_with_result(**rounding)(SPEC))


def test_a_clipped_reward_may_differ_from_its_breakdown() -> None:
    clipped = _with_result(reward=lambda r: r.reward + 0.5, info=lambda r: {**r.info, "clipped": True})
    check_env(clipped(SPEC))


# ----------------------------------------------------------------------------- determinism


def test_same_seed_must_give_the_same_transcript() -> None:
    class Drifting(ToyEnv):
        resets = itertools.count()

        def _reset(self, **kwargs: Any) -> ToyObservation:
            super()._reset(**kwargs)
            drift = next(self.resets)
            self.s = self.s.model_copy(update={"secret": [(d + drift) % 10 for d in self.s.secret]})
            return self._observation()

    with pytest.raises(EnvCheckError, match=r"\[determinism\] same seed and actions gave different transcripts"):
        check_env(Drifting(SPEC))


# ----------------------------------------------------------------------------- malformed actions


def test_malformed_actions_must_not_raise() -> None:
    class RaisesOnText(ToyEnv):
        def parse_action(self, action: Any) -> ToyAction:
            if isinstance(action, str):
                raise TypeError("unreadable")
            return super().parse_action(action)

    message = failures(RaisesOnText)
    assert "[malformed action] step('not json at all') raised TypeError: unreadable" in message
    assert "step({'no_such_field': 1}) raised" not in message


def test_every_malformed_action_is_tried() -> None:
    class TwoFaults(ToyEnv):
        # Raises on the first malformed action, says nothing about the third.
        def parse_action(self, action: Any) -> ToyAction:
            if isinstance(action, dict) and "no_such_field" in action:
                raise KeyError("no_such_field")
            return super().parse_action(action)

        def _reject(self, raw: Any, message: str) -> StepResult[ToyObservation]:
            return super()._reject(raw, "" if raw == 12345 else message)

    message = failures(TwoFaults)
    assert "step({'no_such_field': 1}) raised KeyError" in message
    assert "step(12345) gave no error message in info" in message


def test_malformed_actions_must_say_what_was_wrong() -> None:
    class Silent(ToyEnv):
        def _reject(self, raw: Any, message: str) -> StepResult[ToyObservation]:
            return super()._reject(raw, "")

    with pytest.raises(EnvCheckError, match=r"\[malformed action\] step\(\{'no_such_field': 1\}\) gave no error"):
        check_env(Silent(SPEC))


def test_malformed_actions_must_change_nothing_but_the_step_count() -> None:
    class Revealing(ToyEnv):
        def _reject(self, raw: Any, message: str) -> StepResult[ToyObservation]:
            self.s = self.s.model_copy(update={"seen": [1]})
            return super()._reject(raw, message)

    with pytest.raises(EnvCheckError, match=r"\[malformed action\] a malformed action changed the observation"):
        check_env(Revealing(SPEC))


def test_a_final_malformed_answer_may_end_the_episode_when_declared() -> None:
    class EndsOnGarbage(ToyEnv):
        malformed_action_ends_episode = True

        def _reject(self, raw: Any, message: str) -> StepResult[ToyObservation]:
            self.s = self.s.model_copy(update={"step_count": self.s.step_count + 1, "done": True, "answer": -1})
            return self._result({"malformed": 0.0}, error=message)

    class EndsUndeclared(EndsOnGarbage):
        malformed_action_ends_episode = False

    check_env(EndsOnGarbage(SPEC))
    with pytest.raises(EnvCheckError, match=r"\[malformed action\] a malformed action changed the observation"):
        check_env(EndsUndeclared(SPEC))


# ----------------------------------------------------------------------------- oracle episode


def test_state_must_survive_a_json_round_trip() -> None:
    class ForgetfulLoad(ToyEnv):
        def _load_state(self, state: ToyState) -> None:
            super()._load_state(state.model_copy(update={"episode_id": "lost"}))

    with pytest.raises(EnvCheckError, match=r"\[oracle episode\] state JSON round trip differs"):
        check_env(ForgetfulLoad(SPEC))


def test_a_restored_state_must_show_the_same_observation() -> None:
    class ShownOutsideState(ToyEnv):
        # What was revealed lives in an attribute that state() does not carry.
        def _reset(self, **kwargs: Any) -> ToyObservation:
            self.revealed: list[int] = []
            return super()._reset(**kwargs)

        def _step(self, action: ToyAction) -> StepResult[ToyObservation]:
            if action.op == "look":
                self.revealed = sorted({*getattr(self, "revealed", []), action.index})
            return super()._step(action)

        def _observation(self) -> ToyObservation:
            shown = {str(i): self.s.secret[i] for i in getattr(self, "revealed", [])}
            return super()._observation().model_copy(update={"seen": shown})

    with pytest.raises(EnvCheckError, match=r"\[oracle episode\] restored state gives another observation"):
        check_env(ShownOutsideState(SPEC))


def test_a_restored_state_must_continue_identically() -> None:
    class Counting(ToyEnv):
        # A step counter outside the state changes the reward after a restore.
        calls = 0

        def _step(self, action: ToyAction) -> StepResult[ToyObservation]:
            self.calls += 1
            r = super()._step(action)
            breakdown = {**r.info["reward_breakdown"], "calls": float(self.calls)}
            return self._result(breakdown, error=None)

    with pytest.raises(EnvCheckError, match=r"\[oracle episode\] a restored state continued differently"):
        check_env(Counting(SPEC))


class HintObservation(ToyObservation):
    hint: int


def test_observations_must_not_depend_on_hidden_truth() -> None:
    class Leaky(ToyEnv):
        observation_type = HintObservation

        def _observation(self) -> Any:
            # A digit the oracle never looks at: no key looks like ground truth, but the value is.
            hint = self.s.secret[2] if self.s.secret else 0
            return HintObservation(**super()._observation().model_dump(), hint=hint)

    message = failures(Leaky)
    assert "[oracle episode] observation at step 0 depends on hidden truth (counterfactual differs)" in message
    assert "ground-truth key" not in message


class GoldObservation(ToyObservation):
    gold: list[int] = Field(default_factory=list)


def test_observations_must_not_carry_ground_truth_keys() -> None:
    class GoldKey(ToyEnv):
        observation_type = GoldObservation

        def _observation(self) -> Any:
            return GoldObservation(**super()._observation().model_dump())

    message = failures(GoldKey)
    assert "[oracle episode] observation carries the ground-truth key 'gold'" in message
    assert "depends on hidden truth" not in message


class NestedObservation(ToyObservation):
    log: list[dict[str, Any]] = Field(default_factory=list)


def test_ground_truth_keys_are_found_at_any_depth() -> None:
    class NestedGold(ToyEnv):
        observation_type = NestedObservation

        def _observation(self) -> Any:
            log = [{"step": 0}, {"step": 1, "detail": {"answer": None}}]
            return NestedObservation(**super()._observation().model_dump(), log=log)

    with pytest.raises(EnvCheckError, match=r"\[oracle episode\] observation carries the ground-truth key 'answer'"):
        check_env(NestedGold(SPEC))


def test_the_counterfactual_must_alter_hidden_truth() -> None:
    class Vacuous(ToyEnv):
        @classmethod
        def counterfactual(cls, state: ToyState, rng: random.Random) -> ToyState:
            return state

        @classmethod
        def oracle_action(cls, state: ToyState) -> ToyAction:
            return ToyAction(op="answer", value=sum(state.secret))

    with pytest.raises(EnvCheckError, match=r"\[oracle episode\] counterfactual\(\) altered nothing"):
        check_env(Vacuous(SPEC))


def test_the_oracle_episode_must_end(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checker, "MAX_ORACLE_STEPS", 50)

    class Endless(ToyEnv):
        def _configure(self, spec: Any, config: Any) -> None:
            super()._configure(spec, config)
            self.max_steps = 10**9

        @classmethod
        def oracle_action(cls, state: ToyState) -> ToyAction:
            return ToyAction(op="look", index=0)

    message = failures(Endless)
    assert "[oracle episode] the oracle episode did not end" in message
    assert "[done guard]" not in message


# ----------------------------------------------------------------------------- done guard


def test_a_finished_episode_must_refuse_steps() -> None:
    class Unguarded(ToyEnv):
        def step(self, action: Any) -> StepResult[ToyObservation]:
            if self.done:
                return self._result({}, error=None)
            return super().step(action)

    with pytest.raises(
        EnvCheckError, match=r"\[done guard\] stepping a finished episode did not raise EpisodeFinishedError"
    ):
        check_env(Unguarded(SPEC))


def test_a_finished_episode_must_refuse_steps_with_episode_finished_error() -> None:
    class WrongError(ToyEnv):
        def step(self, action: Any) -> StepResult[ToyObservation]:
            if self.done:
                raise RuntimeError("over")
            return super().step(action)

    with pytest.raises(EnvCheckError, match=r"\[done guard\] stepping a finished episode raised RuntimeError, not"):
        check_env(WrongError(SPEC))


def test_a_refused_step_must_change_nothing() -> None:
    class CountsRefusals(ToyEnv):
        def step(self, action: Any) -> StepResult[ToyObservation]:
            if self.done:
                self.s = self.s.model_copy(update={"step_count": self.s.step_count + 1})
                raise EpisodeFinishedError("over")
            return super().step(action)

    with pytest.raises(EnvCheckError, match=r"\[done guard\] stepping a finished episode changed its state"):
        check_env(CountsRefusals(SPEC))


# ----------------------------------------------------------------------------- grade


class ImpureGrade:
    calls = itertools.count()

    @classmethod
    def make(cls, env: ToyEnv) -> Grade:
        return Grade(score=next(cls.calls) % 2, success=False, threshold=1.0, breakdown={})


def _with_grade(make: Any) -> type[ToyEnv]:
    class Graded(ToyEnv):
        def _grade(self) -> Any:
            return make(self)

    return Graded


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda env: {"score": 1.0}, r"grade\(\) returned dict, not Grade"),
        (
            lambda env: Grade.model_construct(score=-0.5, success=False, threshold=1.0, breakdown={}),
            r"grade score -0\.5 is outside \[0, 1\]",
        ),
        (
            lambda env: Grade(score=0.5, success=True, threshold=0.9, breakdown={}),
            r"grade claims success with score 0\.5 below its threshold 0\.9",
        ),
        (ImpureGrade.make, r"grading the same episode twice gave different grades"),
    ],
    ids=["type", "range", "success", "impure"],
)
def test_the_grade_is_checked(make: Any, message: str) -> None:
    with pytest.raises(EnvCheckError, match=r"\[grade\] " + message):
        check_env(_with_grade(make)(SPEC))


def test_success_exactly_at_the_threshold_and_a_zero_score_are_allowed() -> None:
    check_env(_with_grade(lambda env: Grade(score=0.9, success=True, threshold=0.9, breakdown={}))(SPEC))
    check_env(_with_grade(lambda env: Grade(score=0.0, success=False, threshold=0.9, breakdown={}))(SPEC))


# ----------------------------------------------------------------------------- close twice


def test_close_may_be_called_twice() -> None:
    class CloseOnce(ToyEnv):
        def close(self) -> None:
            if self._closed:
                raise RuntimeError("already closed")
            super().close()

    with pytest.raises(
        EnvCheckError, match=r"\[close twice\] the second close\(\) raised RuntimeError: already closed"
    ):
        check_env(CloseOnce(SPEC))
