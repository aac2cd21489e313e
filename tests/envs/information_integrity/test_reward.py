"""Reward presets: the reference table exactly, and the ordering property of the default."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from pathlib import Path

import pytest

import integrity_gym
from integrity_gym.envs.information_integrity import reward as rw
from integrity_gym.envs.information_integrity.data import find_gold, load_gold
from integrity_gym.envs.information_integrity.models import DIFFICULTIES

from .conftest import Outcome, action, every_count, every_subset, generated_scenarios, start

#: The reference design's reward table, typed in from its README.
REFERENCE_TABLE = {
    "verify_claim": 0.20,
    "check_source": 0.20,
    "multi_source_bonus": 0.20,
    "multi_source_min": 3,
    "correct_decision": 1.00,
    "partial_decision": 0.50,
    "premature_decision": -0.50,
    "redundant_action": -0.10,
    "inefficiency": -0.05,
    "over_aggression": -0.30,
    "clip_min": -2.0,
    "clip_max": 2.0,
}


def test_reference_preset_is_the_reference_table() -> None:
    config = rw.load_reward_config("reference")
    for key, value in REFERENCE_TABLE.items():
        assert getattr(config, key) == value, key
    assert config.exploration_cap is None


def test_reference_components_pay_the_table_values() -> None:
    config = rw.load_reward_config("reference")
    assert rw.step_breakdown(config, kind="verify_claim", step_number=1, efficient=9) == {"verify_claim": 0.2}
    third = rw.step_breakdown(config, kind="check_source", sources_checked_after=3, step_number=3, efficient=9)
    assert third == {"check_source": 0.2, "multi_source_bonus": 0.2}
    assert rw.step_breakdown(config, kind="check_source", repeated=True, step_number=2, efficient=9) == {
        "redundant_action": -0.1
    }
    assert rw.decision_reward(config, "flag", "flag") == {"decision_correct": 1.0}
    assert rw.decision_reward(config, "allow", "flag") == {"decision_partial": 0.5}
    assert rw.decision_reward(config, "remove", "flag") == {"decision_partial": 0.5, "over_aggression": -0.3}
    assert rw.decision_reward(config, "remove", "allow") == {"over_aggression": -0.3}
    late = rw.step_breakdown(
        config, kind="decide", step_number=7, efficient=6, decision="allow", label="allow", premature=True
    )
    assert late == {"decision_correct": 1.0, "premature_decision": -0.5, "inefficiency": -0.05}


def test_the_total_is_clipped_and_the_breakdown_still_sums_to_the_reward() -> None:
    config = rw.load_reward_config("reference")
    parts = {"decision_correct": 1.0, "decision_partial": 0.5}
    reward, clipped = rw.apply_clip(config, 1.8, parts)
    assert clipped and reward == pytest.approx(0.2)
    assert sum(parts.values()) == pytest.approx(reward)


def extremes(outcomes: Iterable[Outcome], label: str) -> tuple[float, float]:
    """(lowest return of a right decision, highest return of a wrong one)."""
    right, wrong = float("inf"), float("-inf")
    for o in outcomes:
        if o.decision == label:
            right = min(right, o.total)
        else:
            wrong = max(wrong, o.total)
    return right, wrong


@pytest.mark.parametrize("tier", DIFFICULTIES)
def test_default_every_right_decision_beats_every_wrong_one_on_every_gold_scenario(tier: str) -> None:
    """Played in the environment: every subset of claims and sources, then each decision.

    The same walk checks the grade: whatever was read, a wrong decision grades 0, and a right one
    without reasoning is never a success.
    """
    for scenario in load_gold(tier):
        outcomes = list(every_subset(scenario))
        right, wrong = extremes(outcomes, str(scenario.label))
        assert right > wrong, f"{scenario.id}: worst right {right} <= best wrong {wrong}"
        assert (right, wrong) == (pytest.approx(0.7), pytest.approx(0.6)), scenario.id
        for outcome in outcomes:
            grade = outcome.grade
            assert not grade.success, (scenario.id, outcome.evidence)
            if outcome.decision != scenario.label:
                assert grade.score == 0.0, (scenario.id, outcome.evidence)


def test_default_ordering_holds_on_generated_scenarios() -> None:
    """Every number of claims and sources read, claims first or sources first, then each decision."""
    for scenario in generated_scenarios(2):
        right, wrong = extremes(every_count(scenario), str(scenario.label))
        assert right > wrong, f"{scenario.id}: worst right {right} <= best wrong {wrong}"


def test_returns_depend_on_counts_not_on_which_ids_or_their_order() -> None:
    scenario = find_gold("hard_003")
    totals = set()
    for order in itertools.permutations([s.id for s in scenario.sources], 4):
        env = start(scenario)
        rewards = [env.step(action(i)).reward for i in ("claim_2", *order)]
        rewards.append(env.step({"type": "decide", "decision": "flag"}).reward)
        totals.add(round(sum(rewards), 9))
    assert len(totals) == 1


def test_reference_preset_shows_the_measured_exploit() -> None:
    """Under the reference table, checking everything and deciding wrong beats minimal-and-right."""
    exploited = []
    for scenario in load_gold("hard"):
        right, wrong = extremes(every_count(scenario, reward_preset="reference"), str(scenario.label))
        if wrong >= right:
            exploited.append(scenario.id)
    assert len(exploited) == len(load_gold("hard"))


def test_presets_load_from_a_yaml_path_and_bad_files_name_the_problem(tmp_path: Path) -> None:
    text = Path(rw.__file__).with_name("data").joinpath("rewards", "default.yaml").read_text()
    good = tmp_path / "mine.yaml"
    good.write_text(text.replace("correct_decision: 1.00", "correct_decision: 2.00"))
    assert rw.load_reward_config(good).correct_decision == 2.0
    env = integrity_gym.make("information_integrity/easy-v1", reward_preset=str(good))
    assert env.reward_config.correct_decision == 2.0
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("premature_decision: -0.30", "premature_decision: 0.30"))
    with pytest.raises(ValueError, match="premature_decision"):
        rw.load_reward_config(bad)
    with pytest.raises(ValueError, match="reward_preset"):
        rw.load_reward_config("no-such-preset")


@pytest.mark.parametrize("preset", ["default", "reference"])
def test_every_step_breakdown_sums_to_its_reward_and_totals_stay_in_the_clip(preset: str) -> None:
    from integrity_gym.agents import make_agent

    for task_id in ("information_integrity/easy-v1", "information_integrity/hard-v1"):
        env = integrity_gym.make(task_id, reward_preset=preset)
        for agent_name in ("noop", "random", "heuristic"):
            for seed in range(4):
                agent = make_agent(agent_name, env, seed=seed)
                obs = env.reset(seed=seed)
                total = 0.0
                while not env.done:
                    result = env.step(agent.act(obs))
                    obs = result.observation
                    assert sum(result.info["reward_breakdown"].values()) == pytest.approx(result.reward)
                    total += result.reward
                    assert -2.0 - 1e-9 <= total <= 2.0 + 1e-9
                assert total == pytest.approx(env.state().total_reward)


def test_exploration_rewards_do_not_depend_on_hidden_facts() -> None:
    """Altering everything unseen (stances, verdicts, the label) leaves verify/check rewards unchanged."""
    import random

    from integrity_gym.envs.information_integrity.env import InformationIntegrityEnv

    for preset in ("default", "reference"):
        for seed in range(6):
            env = integrity_gym.make("information_integrity/hard-v1", reward_preset=preset)
            obs = env.reset(seed=seed)
            twin = integrity_gym.make("information_integrity/hard-v1", reward_preset=preset)
            twin.load_state(InformationIntegrityEnv.counterfactual(env.state(), random.Random(seed)))
            assert twin.state().scenario.label != env.state().scenario.label
            actions = [{"type": "check_source", "source_id": s.id} for s in obs.available_sources]
            actions += [{"type": "verify_claim", "claim_id": c.id} for c in obs.claims]
            actions += actions[:2]  # repeats
            for act in actions:
                a, b = env.step(act), twin.step(act)
                assert a.reward == b.reward and a.info["reward_breakdown"] == b.info["reward_breakdown"]


def test_each_exploration_kind_pays_its_own_component() -> None:
    config = rw.load_reward_config("default").model_copy(update={"verify_claim": 0.15, "check_source": 0.05})
    assert rw.step_breakdown(config, kind="verify_claim", step_number=1, efficient=9) == {"verify_claim": 0.15}
    assert rw.step_breakdown(config, kind="check_source", step_number=1, efficient=9) == {"check_source": 0.05}
    # The multi-source bonus follows a check only, even when the count of sources is right.
    verify = rw.step_breakdown(config, kind="verify_claim", sources_checked_after=3, step_number=4, efficient=9)
    assert verify == {"verify_claim": 0.15}


def test_bad_decide_steps_and_preset_paths_are_named() -> None:
    config = rw.load_reward_config("default")
    with pytest.raises(ValueError, match="a decide step needs decision and label"):
        rw.step_breakdown(config, kind="decide", step_number=1, efficient=9, decision="allow")
    with pytest.raises(ValueError, match=re.escape("'no/such/file.yaml' is neither a preset")):
        rw.load_reward_config("no/such/file.yaml")


def test_the_default_preset_is_loaded_without_an_argument() -> None:
    assert rw.load_reward_config() == rw.load_reward_config("default") != rw.load_reward_config("reference")


def test_preset_errors_name_the_presets_and_the_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=re.escape("is neither a preset (default, reference) nor a YAML file")):
        rw.load_reward_config("nope")
    listed = tmp_path / "listed.yaml"
    listed.write_text("- 1\n- 2\n", "utf-8")
    with pytest.raises(ValueError, match=f"^reward_preset: {re.escape(str(listed))} must hold a YAML mapping"):
        rw.load_reward_config(listed)


def test_efficient_steps_are_one_per_claim_and_source_plus_the_decision() -> None:
    config = rw.load_reward_config("reference").model_copy(update={"efficient_step_threshold": None})
    assert rw.efficient_steps(config, 3, 4) == 8
    assert rw.efficient_steps(config.model_copy(update={"efficient_step_threshold": 5}), 3, 4) == 5


def test_single_components_keep_their_names() -> None:
    config = rw.load_reward_config("default")
    invalid = rw.step_breakdown(config, kind="invalid", step_number=1, efficient=0)
    assert invalid == {"invalid_action": config.invalid_action}
    # A decide step is not premature unless the environment says so.
    plain = rw.step_breakdown(config, kind="decide", step_number=1, efficient=9, decision="flag", label="flag")
    assert plain == {"decision_correct": config.correct_decision}
    with pytest.raises(ValueError, match=r"^a decide step needs decision and label$"):
        rw.step_breakdown(config, kind="decide", step_number=1, efficient=9, label="allow")


def test_the_clip_component_is_what_the_clip_cut_and_rounding_is_no_clip() -> None:
    config = rw.load_reward_config("reference")
    parts = {"decision_correct": 1.0, "decision_partial": 0.5}
    rw.apply_clip(config, 1.8, parts)
    assert parts["clip"] == pytest.approx(-1.3)
    tiny = {"check_source": 1e-12}
    assert rw.apply_clip(config, 0.0, tiny) == (0.0, False) and "clip" not in tiny
