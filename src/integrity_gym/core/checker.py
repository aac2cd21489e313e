"""``check_env``: the checks every integrity-gym environment (and any plugin task) must pass."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from integrity_gym.core.env import Env, EpisodeFinishedError
from integrity_gym.core.seeding import make_rng
from integrity_gym.core.types import Grade, StepResult

AnyEnv = Env[Any, Any, Any]
Policy = Callable[[AnyEnv], Any]


class EnvCheckError(AssertionError):
    """Raised by ``check_env`` with every failed check listed, each prefixed by its rule."""


@dataclass
class _Report:
    rule: str = ""
    failures: list[str] = field(default_factory=list)

    def check(self, ok: bool, message: str) -> bool:
        if not ok:
            self.failures.append(f"[{self.rule}] {message}")
        return ok


def _dump(model: BaseModel) -> str:
    return model.model_dump_json()


def _transcript(env: AnyEnv, seed: int, steps: int) -> list[str]:
    """Reset with ``seed`` and play seeded random actions; return everything the agent saw."""
    rng = make_rng("check_env", seed)
    obs = env.reset(seed=seed)
    out = [_dump(obs)]
    for _ in range(steps):
        if env.done:
            break
        result = env.step(type(env).sample_action(obs, rng))
        obs = result.observation
        out.append(_dump(result))
    return out


def _fresh(env: AnyEnv) -> AnyEnv:
    return type(env)(env.spec, **env._config_overrides)


def _check_step_result(report: _Report, env: AnyEnv, result: Any) -> None:
    if not report.check(isinstance(result, StepResult), f"step returned {type(result).__name__}, not StepResult"):
        return
    report.check(isinstance(result.observation, env.observation_type), "step observation has the wrong type")
    report.check(math.isfinite(result.reward), f"reward {result.reward} is not finite")
    breakdown = result.info.get("reward_breakdown")
    numeric = report.check(isinstance(breakdown, dict), "info['reward_breakdown'] is missing") and report.check(
        all(isinstance(k, str) and isinstance(v, float | int) for k, v in breakdown.items()),
        "reward_breakdown must map component names to numbers",
    )
    if numeric:
        report.check(
            math.isclose(sum(breakdown.values()), result.reward, abs_tol=1e-6) or "clipped" in result.info,
            f"reward {result.reward} != sum of its breakdown {sum(breakdown.values())}",
        )
    report.check(result.done == result.observation.done, "StepResult.done disagrees with observation.done")
    try:
        json.dumps(result.info)
    except (TypeError, ValueError) as exc:
        report.check(False, f"info is not JSON-serializable: {exc}")


def _find_key(obj: Any, keys: frozenset[str]) -> str | None:
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in keys:
                return str(k)
            found = _find_key(v, keys)
            if found:
                return found
    elif isinstance(obj, list):
        for v in obj:
            found = _find_key(v, keys)
            if found:
                return found
    return None


#: Keys whose presence in an observation means ground truth is on the wire.
FORBIDDEN_OBSERVATION_KEYS = frozenset(
    {"ground_truth", "gold", "entities", "label_truth", "remaining_entities", "answer", "correct_decision"}
)

#: Steps after which an oracle episode that has not ended counts as endless.
MAX_ORACLE_STEPS = 10_000

_STEP_FIELDS = frozenset({"step_count", "steps_left", "previous_actions", "interaction_history"})


def _strip_step_fields(obs: BaseModel, ignore_done: bool) -> dict[str, Any]:
    skip = _STEP_FIELDS | {"done"} if ignore_done else _STEP_FIELDS
    return {k: v for k, v in obs.model_dump().items() if k not in skip}


# Each rule below checks one promise of the Env contract; its name prefixes its failure messages.


def _types(report: _Report, env: AnyEnv, seed: int, steps: int, policy: Policy | None) -> None:
    cls = type(env)
    obs = env.reset(seed=seed)
    if not report.check(isinstance(obs, env.observation_type), f"reset returned {type(obs).__name__}"):
        return
    report.check(obs == env.observation_type.model_validate_json(_dump(obs)), "observation JSON round trip differs")
    report.check(not obs.done, "a fresh episode is already done")
    state = env.state()
    report.check(isinstance(state, env.state_type), f"state() returned {type(state).__name__}, not {env.state_type}")
    result = env.step(cls.sample_action(obs, make_rng("check_env/types", seed)))
    _check_step_result(report, env, result)


def _determinism(report: _Report, env: AnyEnv, seed: int, steps: int, policy: Policy | None) -> None:
    first, second = _transcript(_fresh(env), seed, steps), _transcript(_fresh(env), seed, steps)
    report.check(first == second, "same seed and actions gave different transcripts")


def _malformed_actions(report: _Report, env: AnyEnv, seed: int, steps: int, policy: Policy | None) -> None:
    # Rejected in info['error'], never raised, and nothing but the step counters changes.
    env.reset(seed=seed)
    before = env.observation()
    for bad in ({"no_such_field": 1}, "not json at all", 12345, None):
        try:
            bad_result = env.step(bad)
        except Exception as exc:
            report.check(False, f"step({bad!r}) raised {type(exc).__name__}: {exc}")
            continue
        _check_step_result(report, env, bad_result)
        report.check(bool(bad_result.info.get("error")), f"step({bad!r}) gave no error message in info")
        if env.done:
            break
    after = env.observation()
    # Envs whose unreadable answer is a final (malformed) answer may end the episode there.
    ends = type(env).malformed_action_ends_episode
    report.check(
        _strip_step_fields(before, ends) == _strip_step_fields(after, ends),
        "a malformed action changed the observation beyond the step counters",
    )


def _oracle_episode(report: _Report, env: AnyEnv, seed: int, steps: int, policy: Policy | None) -> None:
    """Along an oracle episode: state round trip, resumption, hidden truth, ground-truth keys."""
    cls = type(env)
    env.reset(seed=seed)
    rng = make_rng("check_env/counterfactual", seed)
    act = policy or (lambda e: cls.oracle_action(e.state()))
    guard = 0
    while not env.done and guard < MAX_ORACLE_STEPS:
        guard += 1
        state = env.state()
        state_json = _dump(state)
        restored = _fresh(env)
        restored.load_state(cls.state_type.model_validate_json(state_json))
        report.check(_dump(restored.state()) == state_json, "state JSON round trip differs")
        report.check(restored.observation() == env.observation(), "restored state gives another observation")
        altered = cls.counterfactual(state, rng)
        if guard == 1:
            # An unchanged state would make the hidden-truth check below prove nothing.
            report.check(_dump(altered) != state_json, "counterfactual() altered nothing at the start of the episode")
        twin = _fresh(env)
        twin.load_state(altered)
        report.check(
            twin.observation() == env.observation(),
            f"observation at step {state.step_count} depends on hidden truth (counterfactual differs)",
        )
        leaked = _find_key(json.loads(_dump(env.observation())), FORBIDDEN_OBSERVATION_KEYS)
        report.check(leaked is None, f"observation carries the ground-truth key {leaked!r}")
        action = act(env)
        live = env.step(action)
        replay = restored.step(action)
        report.check(_dump(live) == _dump(replay), "a restored state continued differently")
        _check_step_result(report, env, live)
    report.check(env.done, "the oracle episode did not end")


def _done_guard(report: _Report, env: AnyEnv, seed: int, steps: int, policy: Policy | None) -> None:
    if not env.done:
        return  # the oracle episode's failure is already reported
    frozen = _dump(env.state())
    try:
        env.step(type(env).noop_action(env.observation()))
        report.check(False, "stepping a finished episode did not raise EpisodeFinishedError")
    except EpisodeFinishedError:
        pass
    except Exception as exc:
        report.check(False, f"stepping a finished episode raised {type(exc).__name__}, not EpisodeFinishedError")
    report.check(_dump(env.state()) == frozen, "stepping a finished episode changed its state")


def _grade(report: _Report, env: AnyEnv, seed: int, steps: int, policy: Policy | None) -> None:
    grade = env.grade()
    if not report.check(isinstance(grade, Grade), f"grade() returned {type(grade).__name__}, not Grade"):
        return
    report.check(0.0 <= grade.score <= 1.0, f"grade score {grade.score} is outside [0, 1]")
    report.check(
        not grade.success or grade.score >= grade.threshold,
        f"grade claims success with score {grade.score} below its threshold {grade.threshold}",
    )
    report.check(env.grade() == grade, "grading the same episode twice gave different grades")


def _close_twice(report: _Report, env: AnyEnv, seed: int, steps: int, policy: Policy | None) -> None:
    for call in ("first", "second"):
        try:
            env.close()
        except Exception as exc:
            report.check(False, f"the {call} close() raised {type(exc).__name__}: {exc}")


_RULES: tuple[tuple[str, Callable[[_Report, AnyEnv, int, int, Policy | None], None]], ...] = (
    ("types", _types),
    ("determinism", _determinism),
    ("malformed action", _malformed_actions),
    ("oracle episode", _oracle_episode),
    ("done guard", _done_guard),
    ("grade", _grade),
    ("close twice", _close_twice),
)


def check_env(env: AnyEnv, *, seed: int = 0, steps: int = 12, policy: Policy | None = None) -> None:
    """Check that ``env`` honours integrity-gym's contracts; raise ``EnvCheckError`` if not.

    Checked, each failure prefixed by its rule: [types] of every return value and the
    observation's JSON round trip; [determinism] (same seed, same transcript); [malformed action]s
    are rejected in ``info['error']`` without raising or changing anything; along an [oracle
    episode], the full state's JSON round trip and identical continuation from a restored state,
    that no observation changes when hidden truth is altered (``Env.counterfactual``, which must
    alter something) and that no observation carries a ground-truth key; the [done guard] (a
    finished episode refuses steps and stays unchanged); the [grade] (a ``Grade`` in [0, 1],
    success only at or above its threshold, the same when asked twice); [close twice]. An
    exception inside a rule is reported as that rule's failure.
    """
    report = _Report()
    for rule, check in _RULES:
        report.rule = rule
        try:
            check(report, env, seed, steps, policy)
        except Exception as exc:
            report.check(False, f"raised {type(exc).__name__}: {exc}")
    if report.failures:
        raise EnvCheckError(f"{env.spec.id} failed check_env:\n- " + "\n- ".join(report.failures))
