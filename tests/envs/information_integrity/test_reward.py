"""Reward presets: the reference table exactly, and the ordering property of the default."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import integrity_gym
from integrity_gym.envs.information_integrity import reward as rw
from integrity_gym.envs.information_integrity.models import DECISIONS, Scenario

from .conftest import generated_scenarios, gold_scenarios

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


def returns(config: rw.RewardConfig, scenario: Scenario, subsets: bool) -> tuple[float, float]:
    """(lowest return of a right decision, highest return of a wrong one) over evidence sets."""
    claims = [c.id for c in scenario.claims]
    sources = [s.id for s in scenario.sources]
    if subsets:
        claim_sets = [c for r in range(len(claims) + 1) for c in itertools.combinations(claims, r)]
        source_sets = [s for r in range(len(sources) + 1) for s in itertools.combinations(sources, r)]
    else:  # returns depend on the counts only (tested below), so prefixes cover every case
        claim_sets = [tuple(claims[:k]) for k in range(len(claims) + 1)]
        source_sets = [tuple(sources[:k]) for k in range(len(sources) + 1)]
    right, wrong = float("inf"), float("-inf")
    for cs, ss in itertools.product(claim_sets, source_sets):
        for decision in DECISIONS:
            value = rw.episode_return(config, scenario, cs, ss, decision)
            if decision == scenario.label:
                right = min(right, value)
            else:
                wrong = max(wrong, value)
    return right, wrong


def test_default_every_right_decision_beats_every_wrong_one_on_every_gold_scenario() -> None:
    config = rw.load_reward_config("default")
    for scenario in gold_scenarios():
        right, wrong = returns(config, scenario, subsets=True)
        assert right > wrong, f"{scenario.id}: worst right {right} <= best wrong {wrong}"


def test_default_ordering_holds_on_generated_scenarios() -> None:
    config = rw.load_reward_config("default")
    for scenario in generated_scenarios(15):
        right, wrong = returns(config, scenario, subsets=False)
        assert right > wrong, scenario.id


def test_returns_depend_on_counts_not_on_which_ids_or_their_order() -> None:
    config = rw.load_reward_config("default")
    scenario = next(s for s in gold_scenarios() if s.id == "hard_003")
    sources = [s.id for s in scenario.sources]
    values = {
        rw.episode_return(config, scenario, ["claim_2"], list(p), "flag") for p in itertools.permutations(sources, 4)
    }
    assert len(values) == 1


def test_reference_preset_shows_the_measured_exploit() -> None:
    """Under the reference table, checking everything and deciding wrong beats minimal-and-right."""
    config = rw.load_reward_config("reference")
    exploited = []
    for scenario in gold_scenarios():
        right, wrong = returns(config, scenario, subsets=False)
        if wrong >= right:
            exploited.append(scenario.id)
    assert any(i.startswith("hard") for i in exploited)


def test_env_returns_equal_the_pure_function() -> None:
    env = integrity_gym.make("information_integrity/hard-v0", reward_preset="reference")
    for seed in range(5):
        obs = env.reset(seed=seed)
        claims = [c.id for c in obs.claims]
        sources = [s.id for s in obs.available_sources]
        total = 0.0
        for c in claims:
            total += env.step({"type": "verify_claim", "claim_id": c}).reward
        for s in sources:
            total += env.step({"type": "check_source", "source_id": s}).reward
        total += env.step({"type": "decide", "decision": "flag"}).reward
        scenario = env.state().scenario
        assert total == pytest.approx(rw.episode_return(env.reward_config, scenario, claims, sources, "flag"))


def test_presets_load_from_a_yaml_path_and_bad_files_name_the_problem(tmp_path: Path) -> None:
    text = Path(rw.__file__).with_name("data").joinpath("rewards", "default.yaml").read_text()
    good = tmp_path / "mine.yaml"
    good.write_text(text.replace("correct_decision: 1.00", "correct_decision: 2.00"))
    assert rw.load_reward_config(good).correct_decision == 2.0
    env = integrity_gym.make("information_integrity/easy-v0", reward_preset=str(good))
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

    for task_id in ("information_integrity/easy-v0", "information_integrity/hard-v0"):
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
            env = integrity_gym.make("information_integrity/hard-v0", reward_preset=preset)
            obs = env.reset(seed=seed)
            twin = integrity_gym.make("information_integrity/hard-v0", reward_preset=preset)
            twin.load_state(InformationIntegrityEnv.counterfactual(env.state(), random.Random(seed)))
            assert twin.state().scenario.label != env.state().scenario.label
            actions = [{"type": "check_source", "source_id": s.id} for s in obs.available_sources]
            actions += [{"type": "verify_claim", "claim_id": c.id} for c in obs.claims]
            actions += actions[:2]  # repeats
            for action in actions:
                a, b = env.step(action), twin.step(action)
                assert a.reward == b.reward and a.info["reward_breakdown"] == b.info["reward_breakdown"]
