"""What a step keeps between steps (potential, misses in the window, masked window) equals a fresh computation."""

from __future__ import annotations

import random

import pytest

from integrity_gym.core.env import InvalidActionError
from integrity_gym.core.registry import latest_task_id, make
from integrity_gym.envs.pii_redaction import window
from integrity_gym.envs.pii_redaction.env import PiiRedactionEnv
from integrity_gym.envs.pii_redaction.models import RedactionAction

KINDS = ("REDACT", "NEXT_CHUNK", "PREV_CHUNK", "SKIP", "FINISH")


def _fresh_missed(env: PiiRedactionEnv) -> int:
    kept = env._missed
    env._missed = None
    try:
        return env._missed_in_window()
    finally:
        env._missed = kept


def _check(env: PiiRedactionEnv, visible_text: str) -> None:
    assert env._phi == env._potential()
    assert env._missed_in_window() == _fresh_missed(env)
    fresh = window.visible_text(env.document.text, env._cursor, env.config.window_size, env._union)
    assert visible_text == fresh
    # The observation is built unvalidated (a validated list of every span cost each step linear time):
    # it must still be exactly what validation would give, and hold its own copy of the spans.
    obs = env.observation()
    assert type(obs).model_validate(obs.model_dump()) == obs
    assert obs.redacted_spans == env._spans and obs.redacted_spans is not env._spans


def _action(env: PiiRedactionEnv, rng: random.Random) -> object:
    obs = env.observation()
    choice = rng.random()
    if choice < 0.35:
        return env.oracle_action(env.state()).model_dump(exclude_none=True)  # matches a gold entity
    if choice < 0.45:
        return "REDACT 0 0 EMAIL"  # rejected: empty span
    if choice < 0.5 and env._redactions:
        last = env._redactions[-1]
        return {"action_type": "REDACT", "start": last.start, "end": last.end, "label": last.label}  # duplicate
    if choice < 0.55:
        return "not an action"
    action = env.sample_action(obs, rng)
    if action.action_type == "FINISH" and rng.random() < 0.8:
        return {"action_type": "SKIP"}  # keep episodes long enough to see every kind
    return action.model_dump(exclude_none=True)


@pytest.mark.parametrize("name", ["gdpr_contract_easy", "hipaa_medical_medium", "security_logs_hard"])
def test_kept_values_equal_fresh_ones_after_every_action_kind(name: str) -> None:
    env = make(latest_task_id("pii_redaction", name))
    assert isinstance(env, PiiRedactionEnv)
    rng = random.Random(11)
    seen: set[str] = set()
    for seed in range(6):
        obs = env.reset(seed=seed)
        _check(env, obs.visible_text)
        while not obs.done:
            action = _action(env, rng)
            result = env.step(action)
            obs = result.observation
            if isinstance(action, dict):
                seen.add(str(action["action_type"]))
            _check(env, obs.visible_text)
            if rng.random() < 0.05:  # a state moved to another process keeps the same values
                copy = make(env.spec.id)
                assert isinstance(copy, PiiRedactionEnv)
                copy.load_state(env.state())
                _check(copy, copy.observation().visible_text)
                assert copy.observation() == obs
    assert seen == set(KINDS)


def test_a_skip_after_a_redaction_pays_no_stale_shaping() -> None:
    env = make(latest_task_id("pii_redaction", "gdpr_contract_easy"))
    assert isinstance(env, PiiRedactionEnv)
    env.reset(seed=3)
    before = env._potential()
    env.step(env.oracle_action(env.state()))
    after = env._potential()
    assert after > before
    skip = env.step({"action_type": "SKIP"})
    assert skip.info["reward_breakdown"]["shaping"] == 0.0
    assert env._phi == after


def test_bare_actions_parse_as_full_validation_does() -> None:
    env = make(latest_task_id("pii_redaction", "gdpr_contract_easy"))
    for kind in ("NEXT_CHUNK", "PREV_CHUNK", "SKIP", "FINISH"):
        assert env.parse_action({"action_type": kind}) == RedactionAction.model_validate({"action_type": kind})
    for bad in ({"action_type": "REDACT"}, {"action_type": "skip"}, {"action_type": ["SKIP"]}):
        with pytest.raises(InvalidActionError, match="action"):
            env.parse_action(bad)
