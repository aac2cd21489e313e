from __future__ import annotations

import json
import math

import pytest

import integrity_gym
from integrity_gym.core import EpisodeFinishedError, NotResetError
from integrity_gym.core.env import WASTED_STEP
from integrity_gym.envs.pii_redaction.env import PiiRedactionEnv

from .conftest import synthetic_document

BAD_ACTIONS = [
    None,
    42,
    "",
    "   ",
    "DANCE",
    "REDACT",
    "REDACT 1 2",
    "REDACT a b EMAIL",
    "REDACT 5 2 EMAIL",
    "REDACT 3 3 EMAIL",
    "REDACT -4 2 EMAIL",
    "REDACT 1 99999 EMAIL",
    "REDACT 1 5 PASSPORT",
    "NEXT_CHUNK 5",
    "{not json",
    "[1, 2]",
    {},
    {"action_type": "JUMP"},
    {"action_type": "REDACT", "start": 1, "end": 5},
    {"action_type": "REDACT", "start": "one", "end": 5, "label": "EMAIL"},
    {"action_type": "REDACT", "start": 1.5, "end": 5, "label": "EMAIL"},
    {"action_type": "SKIP", "label": "EMAIL"},
    {"action_type": "FINISH", "extra": True},
    ["REDACT", 1, 5, "EMAIL"],
]


def progress_state(env: PiiRedactionEnv) -> str:
    """The state without the step counter and action log, which every step advances."""
    state = json.loads(env.state().model_dump_json())
    for key in ("step_count", "action_log", "total_reward", "done"):
        state.pop(key)
    return json.dumps(state, sort_keys=True)


@pytest.mark.parametrize("bad", BAD_ACTIONS, ids=repr)
def test_invalid_actions_never_raise_and_never_change_state(env: PiiRedactionEnv, bad: object) -> None:
    env.reset(seed=0, options={"document": synthetic_document(1)})
    env.step("REDACT 0 5 NAME")
    before = progress_state(env)
    result = env.step(bad)  # type: ignore[arg-type]
    assert result.info["error"], "a rejected action must say why"
    assert result.reward == pytest.approx(-WASTED_STEP)
    assert result.info["reward_breakdown"]["invalid_penalty"] == pytest.approx(-WASTED_STEP)
    assert progress_state(env) == before


@pytest.mark.parametrize("bad", ["DANCE", "REDACT 5 2 EMAIL", {"action_type": "REDACT", "start": 1}], ids=repr)
def test_invalid_actions_cost_one_under_the_reference_preset(bad: object) -> None:
    env = integrity_gym.make("pii_redaction/gdpr_contract_easy", window_size=500, reward_preset="reference")
    assert isinstance(env, PiiRedactionEnv)
    env.reset(seed=0, options={"document": synthetic_document(1)})
    env.step("REDACT 0 5 NAME")
    before = progress_state(env)
    result = env.step(bad)
    assert result.info["error"] and result.reward == pytest.approx(-1.0)
    assert progress_state(env) == before


def test_budget_ends_the_episode(env: PiiRedactionEnv) -> None:
    obs = env.reset(seed=0, options={"document": synthetic_document(2)})
    # The task's 40 decisions plus the NEXT_CHUNK moves that cross the document once.
    budget = 40 + math.ceil((obs.document_length - 500) / 250)
    assert obs.steps_left == budget
    for _ in range(budget):
        result = env.step("DANCE")
    assert result.done and result.observation.steps_left == 0
    with pytest.raises(EpisodeFinishedError, match="has ended"):
        env.step("FINISH")


def test_using_an_env_before_reset_is_a_clear_error() -> None:
    env = integrity_gym.make("pii_redaction/gdpr_contract_easy-v4")
    with pytest.raises(NotResetError, match="reset"):
        env.step("FINISH")


def test_window_size_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PII_WINDOW_SIZE", "200")
    env = integrity_gym.make("pii_redaction/gdpr_contract_easy-v4")
    obs = env.reset(seed=0, options={"document": synthetic_document(3)})
    assert obs.window_size == 200 and len(obs.visible_text) == 200
    # An explicit per-episode value wins over the variable.
    assert (
        integrity_gym.make("pii_redaction/gdpr_contract_easy-v4", window_size=300)
        .reset(seed=0, options={"document": synthetic_document(3)})
        .window_size
        == 300
    )
    monkeypatch.setenv("PII_WINDOW_SIZE", "wide")
    with pytest.raises(ValueError, match="PII_WINDOW_SIZE"):
        integrity_gym.make("pii_redaction/gdpr_contract_easy-v4")


@pytest.mark.parametrize(
    ("config", "fragment"),
    [
        ({"window_size": 5}, "window_size"),
        ({"reward_preset": "lenient"}, "reward_preset"),
        ({"source": "web"}, "source"),
    ],
)
def test_bad_config_names_the_field(config: dict[str, object], fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        integrity_gym.make("pii_redaction/gdpr_contract_easy-v4", **config)


def test_unknown_reset_option_is_refused(env: PiiRedactionEnv) -> None:
    with pytest.raises(ValueError, match="unknown reset option"):
        env.reset(seed=0, options={"colour": "blue"})


def test_observation_fields_and_progress(env: PiiRedactionEnv) -> None:
    obs = env.reset(seed=0, options={"document": synthetic_document(4, length=1200)})
    assert obs.cursor_position == 0 and obs.progress_pct == pytest.approx(500 / obs.document_length)
    while obs.progress_pct < 1.0:
        obs = env.step("NEXT_CHUNK").observation
    assert obs.cursor_position == obs.document_length - 500
    assert obs.previous_actions[-1] == "NEXT_CHUNK" and len(obs.previous_actions) <= 5


def test_a_state_restores_into_a_new_instance(env: PiiRedactionEnv) -> None:
    env.reset(seed=0, options={"document": synthetic_document(5)})
    for action in ("REDACT 0 9 EMAIL", "NEXT_CHUNK", "SKIP"):
        env.step(action)
    twin = integrity_gym.make("pii_redaction/gdpr_contract_easy-v4", window_size=500)
    twin.load_state(json.loads(env.state().model_dump_json()))
    assert twin.observation() == env.observation()
    assert twin.step("SKIP").model_dump() == env.step("SKIP").model_dump()


def test_scenario_by_gold_index_and_by_generated_id() -> None:
    env = integrity_gym.make("pii_redaction/gdpr_contract_easy-v4")
    env.reset(scenario_id=0)
    gold_id = env.state().document.id
    env.reset(scenario_id=gold_id)
    assert env.state().document.id == gold_id
    env.reset(seed=3)
    generated = env.state().document.id
    env.reset(scenario_id=generated)
    assert env.state().document.id == generated
    with pytest.raises(ValueError, match="unknown document id"):
        env.reset(scenario_id="contract-nope")


def test_partitions_pick_documents_of_their_side() -> None:
    from integrity_gym.core.seeding import partition_of

    for partition in ("train", "eval"):
        env = integrity_gym.make("pii_redaction/gdpr_contract_easy-v4", partition=partition)
        for seed in range(5):
            env.reset(seed=seed)
            assert partition_of(env.state().document.id) == partition
