"""The environment: reset modes, hidden facts, rejections, flags, state, text actions, graders."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import pytest

import integrity_gym
from integrity_gym.core import EpisodeFinishedError, check_env
from integrity_gym.core.env import WASTED_STEP
from integrity_gym.envs.information_integrity.data import load_gold
from integrity_gym.envs.information_integrity.env import InformationIntegrityEnv
from integrity_gym.envs.information_integrity.grader import Grader, GraderFactory

from .conftest import TASK

HARD = TASK["hard"]


def make(task: str = HARD, **config: Any) -> InformationIntegrityEnv:
    env = integrity_gym.make(task, **config)
    assert isinstance(env, InformationIntegrityEnv)
    return env


@pytest.mark.parametrize("config", [{"source": "gold"}, {"reward_preset": "reference"}, {"partition": "train"}])
def test_check_env_passes_in_other_configurations(config: dict[str, Any]) -> None:
    check_env(make(**config))


def test_reset_by_index_by_id_by_generated_id_and_by_difficulty() -> None:
    env = make()
    assert env.reset(scenario_id=2).content == load_gold("hard")[2].content
    assert env.reset(scenario_id="easy_003").task_difficulty == "easy"
    obs = env.reset(scenario_id="gen_medium_train_5")
    assert obs.task_difficulty == "medium" and env.state().scenario.id == "gen_medium_train_5"
    assert env.reset(seed=1, options={"difficulty": "easy"}).task_difficulty == "easy"
    assert env.reset(seed=1, options={"source": "gold"}).content in {s.content for s in load_gold("easy")}


def test_reset_by_task_switches_tier() -> None:
    env = make(TASK["easy"])
    assert env.reset(seed=0, task=HARD).task_difficulty == "hard"


def test_train_and_eval_partitions_use_disjoint_topic_families() -> None:
    env = make()
    families = {
        part: {(env.reset(seed=s, options={"partition": part}), env.state().scenario.family)[1] for s in range(30)}
        for part in ("train", "eval")
    }
    assert families["train"] and families["eval"] and not families["train"] & families["eval"]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"scenario_id": 99}, "scenario_id"),
        ({"scenario_id": "no_such"}, "scenario_id"),
        ({"options": {"colour": "red"}}, "colour"),
        ({"options": {"partition": "test"}}, "partition"),
    ],
)
def test_bad_reset_arguments_raise_a_value_error_naming_the_field(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        make().reset(seed=0, **kwargs)


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"colour": "red"}, "colour"),
        ({"min_sources_checked": -1}, "min_sources_checked"),
        ({"grader": "nope"}, "grader"),
        ({"reward_preset": "nope"}, "reward_preset"),
        ({"source": "web"}, "source"),
    ],
)
def test_bad_config_raises_a_value_error_naming_the_field(config: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        make(**config)


def scenario_json() -> dict[str, Any]:
    return load_gold("medium")[3].model_dump(mode="json") | {"origin": "user", "id": "mine_1"}


def test_user_scenario_file_is_validated_and_its_label_derived(tmp_path: Path) -> None:
    data = scenario_json()
    data.pop("label")
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(data))
    env = make()
    obs = env.reset(options={"scenario_file": str(path)})
    assert obs.content == data["content"] and env.state().scenario.label == "remove"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda d: d["sources"][0].update(stance="maybe"), "sources.0.stance"),
        (lambda d: d["claims"][0].pop("verdict"), "claims.0.verdict"),
        (lambda d: d.update(harm="extreme"), "harm"),
        (lambda d: d.update(label="allow"), "label"),
        (lambda d: d["sources"][1].update(claim_id="claim_9"), "claim_id"),
        (lambda d: d.update(surprise=1), "surprise"),
    ],
)
def test_bad_user_scenarios_are_refused_naming_the_field(tmp_path: Path, change: Any, field: str) -> None:
    data = scenario_json()
    change(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        make().reset(options={"scenario_file": str(path)})


def test_user_scenario_file_that_is_not_json_or_missing(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        make().reset(options={"scenario_file": str(path)})
    with pytest.raises(ValueError, match="does not exist"):
        make().reset(options={"scenario_file": str(tmp_path / "missing.json")})


def test_committed_schema_is_the_model_schema_and_gold_validates_against_it() -> None:
    from integrity_gym.envs.information_integrity.models import Scenario

    schema_file = Path(__file__).parents[3] / "src/integrity_gym/envs/information_integrity/data/scenario.schema.json"
    schema = json.loads(schema_file.read_text())
    assert schema == json.loads(json.dumps(Scenario.model_json_schema())), "regenerate scenario.schema.json"
    jsonschema = pytest.importorskip("jsonschema")
    for tier in ("easy", "medium", "hard"):
        for scenario in load_gold(tier):
            jsonschema.validate(scenario.model_dump(mode="json"), schema)


def test_facts_stay_hidden_until_revealed() -> None:
    env = make()
    obs = env.reset(scenario_id="hard_010")
    assert all(c.verification_status == "unverified" and c.confidence == 0 for c in obs.claims)
    assert all(
        s.stance is None and s.reliability is None and s.date is None and s.text is None for s in obs.available_sources
    )
    obs = env.step({"type": "check_source", "source_id": "src_3"}).observation
    src = next(s for s in obs.available_sources if s.id == "src_3")
    assert (src.stance, src.reliability, src.date, src.satire) == ("supports", 0.84, "2018-10-05", False)
    assert all(s.stance is None for s in obs.available_sources if s.id != "src_3")
    obs = env.step("verify claim_1").observation
    assert obs.claims[0].verification_status == "unknown" and obs.claims[1].verification_status == "unverified"


#: What a rejected action costs: the shared wasted-step charge under default, nothing under reference.
INVALID_COST = {"default": WASTED_STEP, "reference": 0.0}


@pytest.mark.parametrize("preset", ["default", "reference"])
def test_unknown_ids_are_rejected_with_a_message_and_change_only_the_step_count(preset: str) -> None:
    env = make(reward_preset=preset)
    env.reset(scenario_id="hard_001")
    before = env.state()
    result = env.step({"type": "check_source", "source_id": "src_99"})
    after = env.state()
    assert "src_99" in result.info["error"] and "src_1" in result.info["error"]
    assert result.reward == -INVALID_COST[preset] and not result.done
    assert result.info["reward_breakdown"] == {"invalid_action": -INVALID_COST[preset]}
    assert after.step_count == before.step_count + 1 and after.invalid == before.invalid + 1
    assert (after.checked, after.verified) == (before.checked, before.verified)
    assert after.total_reward == before.total_reward - INVALID_COST[preset]
    for bad in ({"type": "decide"}, {"type": "verify_claim", "source_id": "src_1"}, {"type": "shout"}, "dance"):
        assert env.step(bad).info["error"]
    assert env.state().decision is None


def test_premature_redundant_and_max_steps_flags_under_default() -> None:
    """A repeat costs a wasted step; the decide step pays 2 × the grade's terms and takes back the exploration."""
    env = make()
    env.reset(scenario_id="hard_001")  # label flag; decisive claim_1, src_2, src_3
    assert env.step("verify claim_1").info["reward_breakdown"] == {"verify_claim": 0.01}
    result = env.step("verify claim_1")
    assert result.info["reward_breakdown"] == {"redundant_action": -WASTED_STEP}
    assert result.observation.status_flags.redundant_actions == 1
    # Right but unreasoned: the grade counts decision and reasoning only (0.30 + 0.30 × 0), paid twice;
    # no premature penalty (the grade's efficiency is 0 instead, and not counted); the flag still says premature.
    result = env.step("decide flag")
    assert result.done and result.observation.status_flags.premature_decision
    assert result.info["reward_breakdown"] == pytest.approx(
        {"decision_correct": 0.6, "reasoning": 0.0, "exploration_refund": -0.01}
    )
    assert env.grade().score == pytest.approx(0.3)
    assert env.state().total_reward == pytest.approx(2 * 0.3 - WASTED_STEP)
    with pytest.raises(EpisodeFinishedError, match="has ended"):
        env.step("decide remove")
    # Right and reasoned (two of the three gold statements) on one source: every term counts, and
    # the premature decision's efficiency is 0.
    env.reset(scenario_id="hard_001")
    env.step("verify claim_1")
    env.step("check src_2")
    result = env.step("decide flag claim_1 is contested. src_2 supports claim_1.")
    assert result.observation.status_flags.premature_decision
    assert result.info["reward_breakdown"] == pytest.approx(
        {"decision_correct": 0.6, "reasoning": 2 * 0.3 * 2 / 3, "evidence": 2 * 0.3 * 2 / 3, "efficiency": 0.0,
         "exploration_refund": -0.02}
    )  # fmt: skip
    assert env.state().total_reward == pytest.approx(2 * env.grade().score) == pytest.approx(1.4)
    # Out of steps without a decision: the last step takes the exploration back, so the episode
    # returns its wasted steps.
    env.reset(scenario_id="hard_001")
    while not env.done:
        result = env.step("verify claim_2")
    obs = result.observation
    assert obs.status_flags.max_steps_reached and not obs.status_flags.decision_made
    repeats = env.max_steps - 1
    assert result.info["reward_breakdown"] == pytest.approx(
        {"redundant_action": -WASTED_STEP, "exploration_refund": -0.01}
    )
    assert env.state().total_reward == pytest.approx(-WASTED_STEP * repeats)
    assert env.grade().score == 0.0


def test_premature_redundant_and_max_steps_flags_under_reference() -> None:
    """The reference table: a repeat costs 0.1 and a premature decision 0.5, whatever the reasoning."""
    env = make(reward_preset="reference")
    env.reset(scenario_id="hard_001")
    env.step("verify claim_1")
    result = env.step("verify claim_1")
    assert result.info["reward_breakdown"] == {"redundant_action": -0.1}
    assert result.observation.status_flags.redundant_actions == 1
    result = env.step("decide flag")
    assert result.done and result.observation.status_flags.premature_decision
    assert result.info["reward_breakdown"] == {"decision_correct": 1.0, "premature_decision": -0.5}
    with pytest.raises(EpisodeFinishedError, match="has ended"):
        env.step("decide remove")
    env.reset(scenario_id="hard_001")
    while not env.done:
        obs = env.step("verify claim_2").observation
    assert obs.status_flags.max_steps_reached and not obs.status_flags.decision_made
    assert env.grade().score == 0.0


@pytest.mark.parametrize(
    ("preset", "decide_step"),
    [
        # 2 × each easy weight (0.50 / 0.15 / 0.25 / 0.10) at full marks, the three reads taken back.
        (
            "default",
            {
                "decision_correct": 1.0,
                "reasoning": 0.3,
                "evidence": 0.5,
                "efficiency": 0.2,
                "exploration_refund": -0.03,
            },
        ),
        ("reference", {"decision_correct": 1.0}),
    ],
)
def test_sufficient_evidence_flag_and_no_premature_penalty(preset: str, decide_step: dict[str, float]) -> None:
    env = make(reward_preset=preset)
    env.reset(scenario_id="easy_001")
    for action in ("verify claim_1", "check src_1", "check src_3"):
        obs = env.step(action).observation
    assert obs.status_flags.sufficient_evidence
    result = env.step("decide remove claim_1 is false. src_1 refutes claim_1. src_3 refutes claim_1. harm is high.")
    assert result.info["reward_breakdown"] == pytest.approx(decide_step)
    assert not result.observation.status_flags.premature_decision
    assert env.grade().score == 1.0


def test_state_moves_between_instances_through_json() -> None:
    env = make()
    env.reset(seed=3)
    env.step("verify claim_1")
    twin = make()
    twin.load_state(json.loads(env.state().model_dump_json()))
    assert twin.observation() == env.observation()
    assert twin.step("decide allow").model_dump() == env.step("decide allow").model_dump()


def test_render_and_explain_are_readable() -> None:
    env = make()
    env.reset(scenario_id="hard_010")
    env.step("check src_3")
    text = env.render()
    assert "POST:" in text and "src_3" in text and "2018-10-05" in text
    env.step("verify claim_1")
    env.step("check src_1")
    env.step("decide remove claim_1 is false. src_1 refutes claim_1")
    explanation = env.explain()
    assert "The rule's decision is remove" in explanation and "outdated" in explanation and "satire" in explanation


class StrictGrader(Grader):
    weights: ClassVar[dict[str, float]] = {
        "decision_correct": 1.0,
        "evidence_breadth": 0.0,
        "reasoning_depth": 0.0,
        "efficiency": 0.0,
    }


def test_custom_graders_register_and_are_selected_by_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(GraderFactory, "_graders", dict(GraderFactory._graders))  # no trace left for other tests
    GraderFactory.register("strict_test", StrictGrader)
    with pytest.raises(ValueError, match="already registered"):
        GraderFactory.register("strict_test", StrictGrader)
    env = make(grader="strict_test")
    env.reset(scenario_id="hard_010")
    env.step("decide remove")
    assert env.grade().score == 1.0
    with pytest.raises(ValueError, match="sum to 1"):
        GraderFactory.register("broken", type("Broken", (Grader,), {"weights": {"decision_correct": 0.5}}))


def test_text_actions() -> None:
    env = make()
    env.reset(scenario_id="hard_001")
    assert env.step("check_source(src_2)").info["error"] is None
    assert env.step("verify claim_1").info["error"] is None
    result = env.step("decide flag claim_1 is contested")
    assert result.done and env.state().reasoning == "claim_1 is contested"


@pytest.mark.parametrize("tier", ["easy", "medium", "hard"])
def test_a_small_budget_override_grows_from_what_the_post_shows_not_from_the_gold_evidence(tier: str) -> None:
    # Kills: the budget counted from the gold evidence (steps_left then said how many claims and sources
    # mattered, before any of them was looked at).
    env = integrity_gym.make(f"information_integrity/{tier}-v3", max_steps=1)
    sizes = set()
    for seed in range(40):
        obs = env.reset(seed=seed)
        shown = len(obs.claims) + len(obs.available_sources) + 1
        assert obs.steps_left == env.max_steps == shown
        sizes.add(shown)
    assert len(sizes) > 1 or tier == "easy"
