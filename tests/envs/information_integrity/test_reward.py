"""Reward presets: the reference table exactly, and the default's identity between return and grade.

Under ``default`` (``grade_scale: 2.0``) the decide step pays 2 × each weighted term of the grade
(``Grader.terms``: none for a wrong decision, decision and reasoning only below ``MIN_REASONING``);
exploration is paid as it happens and taken back on the episode's last step
(``exploration_refund``); a repeat and a rejected action each cost ``WASTED_STEP``. So every
episode returns exactly 2 × grade − 0.05 × (redundant + invalid steps). These tests play the
environment and check that to the component.
"""

from __future__ import annotations

import copy
import itertools
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

import integrity_gym
from integrity_gym.core.env import WASTED_STEP
from integrity_gym.core.registry import latest_task_id
from integrity_gym.envs.information_integrity import reward as rw
from integrity_gym.envs.information_integrity import rules
from integrity_gym.envs.information_integrity.data import find_gold, load_gold
from integrity_gym.envs.information_integrity.env import InformationIntegrityEnv
from integrity_gym.envs.information_integrity.generator import generate
from integrity_gym.envs.information_integrity.grader import MIN_REASONING, GraderFactory
from integrity_gym.envs.information_integrity.models import DECISIONS, DIFFICULTIES, Decision, IntegrityAction, Scenario

from .conftest import (
    ORACLE_VARIANTS,
    REASONINGS,
    TASK,
    Outcome,
    action,
    every_count,
    every_subset,
    generated_scenarios,
    grader_of,
    play_oracle,
    read_gold_text,
    record_of,
    start,
    strategies,
)

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

#: What the default preset's decide step pays per unit of grade.
GRADE_SCALE = 2.0

#: The default preset, every field: 2 × the grade's terms on the decide step, small exploration
#: shaping taken back at the end, one wasted-step charge; the reference-only fields unused (0/None).
DEFAULT_TABLE = {
    "name": "default",
    "grade_scale": GRADE_SCALE,
    "verify_claim": 0.01,
    "check_source": 0.01,
    "multi_source_bonus": 0.005,
    "multi_source_min": 3,
    "exploration_cap": 0.1,
    "correct_decision": 0.0,
    "partial_decision": 0.0,
    "premature_decision": 0.0,
    "redundant_action": -WASTED_STEP,
    "inefficiency": 0.0,
    "efficient_step_threshold": None,
    "over_aggression": 0.0,
    "invalid_action": -WASTED_STEP,
    "clip_min": -2.0,
    "clip_max": 2.0,
}

#: Components a default step may carry.
EXPLORATION = ("verify_claim", "check_source", "multi_source_bonus")
DEFAULT_COMPONENTS = {*EXPLORATION, "redundant_action", "invalid_action", "exploration_refund"}


def test_reference_preset_is_the_reference_table() -> None:
    config = rw.load_reward_config("reference")
    for key, value in REFERENCE_TABLE.items():
        assert getattr(config, key) == value, key
    assert config.exploration_cap is None and config.efficient_step_threshold == 6
    # The reference pays fixed amounts (no grade_scale) and does not charge rejected actions.
    assert (config.grade_scale, config.invalid_action) == (None, 0.0)


def test_default_preset_is_the_default_table() -> None:
    config = rw.load_reward_config("default")
    assert config.model_dump() == DEFAULT_TABLE
    assert WASTED_STEP == 0.05
    assert set(rw.GRADE_COMPONENTS) == set(GraderFactory.create("hard").weights)
    assert rw.GRADE_COMPONENTS == {
        "decision_correct": "decision_correct",
        "reasoning_depth": "reasoning",
        "evidence_breadth": "evidence",
        "efficiency": "efficiency",
    }


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


# ---------------------------------------------------------------- the identity, checked per episode


def play_steps(env: InformationIntegrityEnv, steps: Iterable[Any]) -> list[tuple[float, dict[str, float]]]:
    """Step through ``steps``; each step's (reward, breakdown), the breakdown summing to the reward."""
    out = []
    for step in steps:
        result = env.step(step)
        parts = result.info["reward_breakdown"]
        assert sum(parts.values()) == pytest.approx(result.reward, abs=1e-12)
        out.append((result.reward, parts))
    return out


def grade_part(parts: dict[str, float]) -> dict[str, float]:
    """The components of a breakdown that pay the grade's terms."""
    return {k: v for k, v in parts.items() if k in rw.GRADE_COMPONENTS.values()}


def check_identity(env: InformationIntegrityEnv, steps: Sequence[tuple[float, dict[str, float]]]) -> float:
    """Check a finished default episode, every step of it in ``steps``, and return its return:

    - the return is 2 × grade − WASTED_STEP × (redundant + invalid steps), exactly;
    - the decide step pays 2 × ``Grader.terms`` of the episode, keyed by ``GRADE_COMPONENTS``;
    - exploration_refund is on the last step only, and is minus everything exploration paid;
    - no step carries a component the default does not use, and no step was clipped.
    """
    state = env.state()
    assert env.done and len(steps) == state.step_count
    total = sum(reward for reward, _ in steps)
    assert total == pytest.approx(state.total_reward, abs=1e-9)
    wasted = state.redundant + state.invalid
    assert state.total_reward == pytest.approx(GRADE_SCALE * env.grade().score - WASTED_STEP * wasted, abs=1e-9)
    paid = sum(parts.get(k, 0.0) for _, parts in steps for k in EXPLORATION)
    assert state.exploration_paid == pytest.approx(paid, abs=1e-12)
    refunded = [i for i, (_, parts) in enumerate(steps) if "exploration_refund" in parts]
    assert refunded == ([len(steps) - 1] if paid > 0 else [])
    if paid > 0:
        assert steps[-1][1]["exploration_refund"] == pytest.approx(-paid, abs=1e-12)
    for _, parts in steps:
        assert set(parts) <= DEFAULT_COMPONENTS | set(rw.GRADE_COMPONENTS.values()), parts
    for _, parts in steps[:-1]:
        assert not grade_part(parts)
    record = record_of(env)
    assert grader_of(env).grade(record) == env.grade()
    terms = grader_of(env).terms(record)
    assert grade_part(steps[-1][1]) == pytest.approx(
        {rw.GRADE_COMPONENTS[k]: GRADE_SCALE * v for k, v in terms.items()}, abs=1e-9
    )
    if state.decision is None:
        assert terms == {} and env.grade().score == 0.0
    return total


@pytest.mark.parametrize("tier", DIFFICULTIES)
def test_every_baseline_returns_twice_its_grade_less_its_wasted_steps(tier: str) -> None:
    """The oracle, heuristic, random and noop agents on eval seeds of every tier, step by step."""
    from integrity_gym.agents import make_agent

    env = integrity_gym.make(latest_task_id("information_integrity", tier))
    seen: dict[str, int] = defaultdict(int)
    for agent_name in ("oracle", "heuristic", "random", "noop"):
        for seed in range(8):
            agent = make_agent(agent_name, env, seed=seed)
            obs = env.reset(seed=seed)
            steps = []
            while not env.done:
                result = env.step(agent.act(obs))
                obs = result.observation
                parts = result.info["reward_breakdown"]
                assert sum(parts.values()) == pytest.approx(result.reward, abs=1e-12)
                steps.append((result.reward, parts))
            total = check_identity(env, steps)
            state = env.state()
            seen["wasted"] += state.redundant + state.invalid > 0
            seen["right"] += state.decision == state.scenario.label
            seen["truncated"] += state.max_steps_reached
            if agent_name == "oracle":
                assert total == pytest.approx(GRADE_SCALE, abs=1e-9)
            if agent_name == "noop":
                assert state.max_steps_reached and total == pytest.approx(-WASTED_STEP * (env.max_steps - 1))
    assert seen["wasted"] and seen["right"] and seen["truncated"], seen


def test_the_identity_holds_under_a_custom_grade_scale(tmp_path: Path) -> None:
    """The decide step follows ``grade_scale`` (not a hard-coded 2): at 1.5 the oracle returns 1.5."""
    text = Path(rw.__file__).with_name("data").joinpath("rewards", "default.yaml").read_text()
    assert "grade_scale: 2.0" in text
    mine = tmp_path / "scaled.yaml"
    mine.write_text(text.replace("grade_scale: 2.0", "grade_scale: 1.5"))
    for scenario in load_gold("hard")[:3]:
        for variant in ORACLE_VARIANTS:
            total, env = play_oracle(scenario, variant, reward_preset=str(mine))
            assert env.reward_config.grade_scale == 1.5
            assert total == pytest.approx(1.5 * env.grade().score, abs=1e-9), (scenario.id, variant)


# ---------------------------------------------------------------- every subset of the evidence


def extremes(outcomes: Iterable[Outcome], label: str) -> tuple[float, float]:
    """(lowest return of a right decision, highest return of a wrong one)."""
    right, wrong = float("inf"), float("-inf")
    for o in outcomes:
        if o.decision == label:
            right = min(right, o.total)
        else:
            wrong = max(wrong, o.total)
    return right, wrong


def by_hand(
    scenario: Scenario, evidence: Sequence[str], decision: Decision, reasoning: float
) -> tuple[dict[str, float], float, dict[str, float]]:
    """The decide step's components, the return and the four dimensions under default, worked out by hand.

    For an episode that read ``evidence`` (each id once, nothing wasted) and then decided with
    reasoning worth ``reasoning`` (as the grader scores it): the dimensions from the gold evidence,
    the terms by the grade's rule, 2 × each; the exploration taken back on the decide step.
    """
    claim_ids = {c.id for c in scenario.claims}
    claims = sum(item in claim_ids for item in evidence)
    sources = len(evidence) - claims
    exploration = min(0.1, 0.01 * claims + 0.01 * sources + (0.005 if sources >= 3 else 0.0))
    premature = claims < 1 or sources < 2
    gold = rules.gold_evidence(scenario)
    wanted = set(gold.claims) | set(gold.sources)
    dims = {
        "decision_correct": 1.0 if decision == scenario.label else 0.0,
        "evidence_breadth": len(wanted & set(evidence)) / len(wanted),
        "reasoning_depth": reasoning,
        "efficiency": 0.0 if premature else min(1.0, (len(wanted) + 1) / (len(evidence) + 1)),
    }
    weights = GraderFactory.create(scenario.difficulty).weights
    if decision != scenario.label:
        counted: tuple[str, ...] = ()
    elif reasoning < MIN_REASONING:
        counted = ("decision_correct", "reasoning_depth")
    else:
        counted = ("decision_correct", "reasoning_depth", "evidence_breadth", "efficiency")
    parts = {rw.GRADE_COMPONENTS[k]: GRADE_SCALE * weights[k] * dims[k] for k in counted}
    if exploration:
        parts["exploration_refund"] = -exploration
    total = GRADE_SCALE * sum(weights[k] * dims[k] for k in counted)
    return parts, total, dims


def check_ranked_as_graded(outcomes: Iterable[Outcome], scenario: Scenario) -> dict[str, int]:
    """Each outcome's decide step, dimensions and return are the rule's, and the return is 2 × grade.
    Per evidence read, a right decision reasoned to MIN_REASONING returns more than the same
    evidence unreasoned (2 × w_decision), which returns more than every wrong decision (0). The
    grade: a wrong decision scores 0, a right one reasoned below MIN_REASONING its decision and
    reasoning weights only, and success is score >= threshold.
    Returns counts of the cases met, so that callers can require each to have been exercised.
    """
    grader = GraderFactory.create(scenario.difficulty)
    weights = grader.weights
    seen: dict[str, int] = defaultdict(int)
    groups: dict[tuple[str, ...], list[tuple[Outcome, float]]] = defaultdict(list)
    for outcome in outcomes:
        grade = outcome.grade
        score = grade.breakdown["reasoning_depth"]
        parts, total, dims = by_hand(scenario, outcome.evidence, outcome.decision, score)
        where = (scenario.id, outcome.evidence, outcome.decision, outcome.reasoning)
        assert {k: grade.breakdown[k] for k in dims} == pytest.approx(dims), where
        assert outcome.breakdown == pytest.approx(parts), where
        assert outcome.total == pytest.approx(total, abs=1e-9), where
        assert outcome.total == pytest.approx(GRADE_SCALE * grade.score, abs=1e-9), where
        terms = grader.terms(record_of(outcome.env))
        assert grade_part(outcome.breakdown) == pytest.approx(
            {rw.GRADE_COMPONENTS[k]: GRADE_SCALE * v for k, v in terms.items()}, abs=1e-9
        ), where
        assert grade.success == (grade.score >= outcome.env.spec.success_threshold), where
        if outcome.decision != scenario.label:
            assert (grade.score, grade.success) == (0.0, False), where
        elif score < MIN_REASONING:
            assert grade.score == pytest.approx(weights["decision_correct"] + weights["reasoning_depth"] * score)
            assert grade.score < grader.ceiling_without_reasons() and not grade.success, where
        seen["capped"] += -parts.get("exploration_refund", 0.0) == pytest.approx(0.1)
        groups[outcome.evidence].append((outcome, score))
    for evidence, group in groups.items():
        right = [(o, score) for o, score in group if o.decision == scenario.label]
        unreasoned = next(o.total for o, _ in right if o.reasoning == "none")
        best_wrong = max(o.total for o, _ in group if o.decision != scenario.label)
        assert unreasoned == pytest.approx(GRADE_SCALE * weights["decision_correct"]), (scenario.id, evidence)
        assert best_wrong == pytest.approx(0.0, abs=1e-9), (scenario.id, evidence)
        seen["evidence"] += 1
        for o, score in right:
            if score >= MIN_REASONING:
                assert o.total > unreasoned, (scenario.id, evidence, o.reasoning)
                seen["reasoned"] += 1
                seen["reasoned_premature"] += o.env.state().premature
                seen["reasoned_partial"] += score < 1.0
                seen["reasoned_inefficient"] += o.grade.breakdown["efficiency"] < 1.0
    return seen


@pytest.mark.parametrize("tier", DIFFICULTIES)
def test_default_returns_follow_the_rule_and_rank_as_the_grade_on_every_gold_scenario(tier: str) -> None:
    """Played in the environment: every subset of claims and sources, then each decision, with no
    reasoning and with the gold statements about what was read (partial reads give partial or void
    reasoning); each decide step's components are checked one by one, each return against 2 × grade.
    """
    weight = GraderFactory.create(tier).weights["decision_correct"]
    for scenario in load_gold(tier):
        outcomes = list(every_subset(scenario, ("none", "read")))
        right, wrong = extremes(outcomes, str(scenario.label))
        assert (right, wrong) == (pytest.approx(GRADE_SCALE * weight), pytest.approx(0.0, abs=1e-9)), scenario.id
        seen = check_ranked_as_graded(outcomes, scenario)
        assert seen["evidence"] == 2 ** (len(scenario.claims) + len(scenario.sources))
        assert seen["reasoned"] and seen["reasoned_premature"] and seen["reasoned_partial"], (scenario.id, seen)
        assert seen["reasoned_inefficient"], (scenario.id, seen)


def test_default_ordering_holds_on_generated_scenarios() -> None:
    """Every number of claims and sources read, claims first or sources first, then each decision."""
    totals: dict[str, int] = defaultdict(int)
    for scenario in generated_scenarios(2):
        outcomes = list(every_count(scenario, ("none", "read")))
        weight = GraderFactory.create(scenario.difficulty).weights["decision_correct"]
        right, wrong = extremes(outcomes, str(scenario.label))
        assert (right, wrong) == (pytest.approx(GRADE_SCALE * weight), pytest.approx(0.0, abs=1e-9)), scenario.id
        for key, count in check_ranked_as_graded(outcomes, scenario).items():
            totals[key] += count
    assert totals["reasoned"] and totals["reasoned_premature"] and totals["reasoned_partial"], totals
    assert totals["capped"], totals  # some generated scenarios have ten ids or more: the cap binds


def test_reading_rewards_depend_on_counts_not_on_which_ids_or_their_order() -> None:
    """Under either preset the reading steps pay the same, step for step, whichever sources in whichever
    order; under reference so does the whole episode, and under default a wrong decision returns 0."""
    scenario = find_gold("hard_003")  # label remove
    for preset in ("default", "reference"):
        paid, totals = set(), set()
        for order in itertools.permutations([s.id for s in scenario.sources], 4):
            env = start(scenario, reward_preset=preset)
            rewards = tuple(env.step(action(i)).reward for i in ("claim_2", *order))
            paid.add(rewards)
            env.step({"type": "decide", "decision": "flag"})
            totals.add(round(env.state().total_reward, 9))
        assert len(paid) == 1 and len(totals) == 1, preset
        if preset == "default":
            assert paid == {(0.01, 0.01, 0.01, 0.015, 0.01)} and totals == {0.0}


def test_reference_preset_shows_the_measured_exploit() -> None:
    """Under the reference table, checking everything and deciding wrong beats minimal-and-right."""
    exploited = []
    for scenario in load_gold("hard"):
        right, wrong = extremes(every_count(scenario, reward_preset="reference"), str(scenario.label))
        if wrong >= right:
            exploited.append(scenario.id)
    assert len(exploited) == len(load_gold("hard"))


# ---------------------------------------------------------------- configuration


def test_presets_load_from_a_yaml_path_and_bad_files_name_the_problem(tmp_path: Path) -> None:
    text = Path(rw.__file__).with_name("data").joinpath("rewards", "default.yaml").read_text()
    good = tmp_path / "mine.yaml"
    good.write_text(text.replace("redundant_action: -0.05", "redundant_action: -0.20"))
    assert rw.load_reward_config(good).redundant_action == -0.2
    env = integrity_gym.make(TASK["easy"], reward_preset=str(good))
    assert env.reward_config.redundant_action == -0.2
    env.reset(seed=0)
    first = env.observation().claims[0].id
    env.step(action(first))
    assert env.step(action(first)).info["reward_breakdown"] == {"redundant_action": -0.2}
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("redundant_action: -0.05", "redundant_action: 0.05"))
    with pytest.raises(ValueError, match="redundant_action"):
        rw.load_reward_config(bad)
    with pytest.raises(ValueError, match="reward_preset"):
        rw.load_reward_config("no-such-preset")


@pytest.mark.parametrize("key", ["reasoning", "grade_aligned", "inefficency", "bonus"])
def test_a_reward_file_with_an_unknown_key_is_refused_naming_it(tmp_path: Path, key: str) -> None:
    """Including the keys of the removed intermediate design: a stale file fails loudly, not silently."""
    text = Path(rw.__file__).with_name("data").joinpath("rewards", "default.yaml").read_text()
    path = tmp_path / "extra.yaml"
    path.write_text(f"{text}\n{key}: 1.0\n")
    with pytest.raises(ValueError, match=rf"\b{key}\b"):
        rw.load_reward_config(path)
    with pytest.raises(ValueError, match=rf"\b{key}\b"):
        integrity_gym.make(TASK["easy"], reward_preset=str(path))


@pytest.mark.parametrize("scale", ["0", "0.0", "-1.0", "-2"])
def test_a_grade_scale_that_is_not_positive_is_refused(tmp_path: Path, scale: str) -> None:
    text = Path(rw.__file__).with_name("data").joinpath("rewards", "default.yaml").read_text()
    path = tmp_path / "scale.yaml"
    path.write_text(text.replace("grade_scale: 2.0", f"grade_scale: {scale}"))
    with pytest.raises(ValueError, match="grade_scale"):
        rw.load_reward_config(path)
    path.write_text(text.replace("grade_scale: 2.0", "grade_scale: 0.001"))
    assert rw.load_reward_config(path).grade_scale == 0.001


@pytest.mark.parametrize("preset", ["default", "reference"])
def test_every_step_breakdown_sums_to_its_reward_and_totals_stay_in_the_clip(preset: str) -> None:
    from integrity_gym.agents import make_agent

    for task_id in (TASK["easy"], TASK["hard"]):
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

    for preset in ("default", "reference"):
        for seed in range(6):
            env = integrity_gym.make(TASK["hard"], reward_preset=preset)
            obs = env.reset(seed=seed)
            twin = integrity_gym.make(TASK["hard"], reward_preset=preset)
            twin.load_state(InformationIntegrityEnv.counterfactual(env.state(), random.Random(seed)))
            assert twin.state().scenario.label != env.state().scenario.label
            actions = [{"type": "check_source", "source_id": s.id} for s in obs.available_sources]
            actions += [{"type": "verify_claim", "claim_id": c.id} for c in obs.claims]
            actions += actions[:2]  # repeats
            for act in actions:
                a, b = env.step(act), twin.step(act)
                assert a.reward == b.reward and a.info["reward_breakdown"] == b.info["reward_breakdown"]


def test_each_exploration_kind_pays_its_own_component() -> None:
    # Distinct values, all under the default cap of 0.1, so that a swap or a stray cap shows.
    config = rw.load_reward_config("default").model_copy(update={"verify_claim": 0.03, "check_source": 0.02})
    assert rw.step_breakdown(config, kind="verify_claim", step_number=1, efficient=9) == {"verify_claim": 0.03}
    assert rw.step_breakdown(config, kind="check_source", step_number=1, efficient=9) == {"check_source": 0.02}
    # The multi-source bonus follows a check only, even when the count of sources is right.
    verify = rw.step_breakdown(config, kind="verify_claim", sources_checked_after=3, step_number=4, efficient=9)
    assert verify == {"verify_claim": 0.03}
    third = rw.step_breakdown(config, kind="check_source", sources_checked_after=3, step_number=4, efficient=9)
    assert third == {"check_source": 0.02, "multi_source_bonus": 0.005}
    # The cap binds across kinds: 0.095 paid leaves 0.005, and the bonus after it gets nothing.
    capped = rw.step_breakdown(
        config, kind="check_source", sources_checked_after=3, exploration_paid=0.095, step_number=4, efficient=9
    )
    assert capped == {"check_source": 0.005, "multi_source_bonus": 0.0}
    # The default's own values: a verify and a check each pay 0.01, and no step is charged for being late.
    default = rw.load_reward_config("default")
    assert rw.step_breakdown(default, kind="verify_claim", step_number=1, efficient=1) == {"verify_claim": 0.01}
    assert rw.step_breakdown(default, kind="check_source", step_number=20, efficient=1) == {"check_source": 0.01}


def test_bad_decide_steps_and_preset_paths_are_named() -> None:
    config = rw.load_reward_config("reference")
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
    invalid = rw.step_breakdown(config, kind="invalid", step_number=5, efficient=1)
    assert invalid == {"invalid_action": -WASTED_STEP}  # and no inefficiency on top
    repeat = rw.step_breakdown(config, kind="check_source", repeated=True, step_number=5, efficient=1)
    assert repeat == {"redundant_action": -WASTED_STEP}

    def decide(terms: dict[str, float] | None, decision: Decision = "flag", **kw: Any) -> dict[str, float]:
        return rw.step_breakdown(
            config, kind="decide", step_number=30, efficient=1, decision=decision, label="flag",
            grade_terms=terms, **kw,
        )  # fmt: skip

    # Each of the grade's terms, × grade_scale, under its component name; distinct values so a swap shows.
    full = {"decision_correct": 0.3, "evidence_breadth": 0.2, "reasoning_depth": 0.15, "efficiency": 0.05}
    paid = {"decision_correct": 0.6, "evidence": 0.4, "reasoning": 0.3, "efficiency": 0.1}
    assert decide(full) == pytest.approx(paid)
    # Only the terms given: an unreasoned right decision's grade has decision and reasoning only.
    assert decide({"decision_correct": 0.3, "reasoning_depth": 0.0}) == {"decision_correct": 0.6, "reasoning": 0.0}
    # Nothing for a wrong decision (no terms), a premature one is not charged, a late one neither,
    # and no partial credit or over-aggression component: the grade has none.
    assert decide({}, "remove") == {} and decide({}, "allow") == {}
    assert decide(full, premature=True) == decide(full)
    # The reference charges the premature penalty whatever the reasoning, and pays fixed amounts.
    reference = rw.load_reward_config("reference")
    late = rw.step_breakdown(
        reference, kind="decide", step_number=1, efficient=9, decision="flag", label="flag",
        premature=True, grade_terms=full,
    )  # fmt: skip
    assert late == {"decision_correct": 1.0, "premature_decision": -0.5}
    with pytest.raises(ValueError, match=r"^a decide step needs decision and label$"):
        rw.step_breakdown(reference, kind="decide", step_number=1, efficient=9, label="allow")


def test_settle_takes_back_the_exploration_paid_under_grade_scale_only() -> None:
    default, reference = rw.load_reward_config("default"), rw.load_reward_config("reference")
    assert rw.settle(default, exploration_paid=0.045) == {"exploration_refund": -0.045}
    assert rw.settle(default, exploration_paid=0.1) == {"exploration_refund": -0.1}
    assert rw.settle(default, exploration_paid=0.0) == {}
    assert rw.settle(reference, exploration_paid=0.6) == {}


def test_the_clip_component_is_what_the_clip_cut_and_rounding_is_no_clip() -> None:
    config = rw.load_reward_config("reference")
    parts = {"decision_correct": 1.0, "decision_partial": 0.5}
    rw.apply_clip(config, 1.8, parts)
    assert parts["clip"] == pytest.approx(-1.3)
    tiny = {"check_source": 1e-12}
    assert rw.apply_clip(config, 0.0, tiny) == (0.0, False) and "clip" not in tiny


# ---------------------------------------------------------------- the return ranks as the grade does


def scenarios_of(tier: str, seeds: int = 6) -> list[Scenario]:
    """The gold scenarios of ``tier`` and generated ones (eval and train) of the first ``seeds`` seeds."""
    generated = [generate(tier, seed, part) for part in ("eval", "train") for seed in range(seeds)]  # type: ignore[arg-type]
    return [*load_gold(tier), *generated]


@pytest.mark.parametrize("tier", DIFFICULTIES)
def test_reasoned_beats_unreasoned_beats_wrong_for_every_evidence_strategy(tier: str) -> None:
    """Each named evidence strategy on gold and generated scenarios, then each decision and reasoning."""
    reasoned = 0
    for scenario in scenarios_of(tier):
        for name, reads in strategies(scenario).items():
            env = start(scenario)
            for item in reads:
                env.step(action(item))
            returns: dict[tuple[Decision, str], tuple[float, float]] = {}
            for decision, how in itertools.product(DECISIONS, ("none", "read", "gold", "stuffed")):
                leaf = copy.deepcopy(env)
                text = read_gold_text(scenario, reads) if how == "read" else REASONINGS[how](scenario, decision)
                leaf.step({"type": "decide", "decision": decision, "reasoning": text})
                total = leaf.state().total_reward
                assert total == pytest.approx(GRADE_SCALE * leaf.grade().score, abs=1e-9), (scenario.id, name, how)
                returns[decision, how] = (total, leaf.grade().breakdown["reasoning_depth"])
            label = scenario.label
            unreasoned = returns[label, "none"][0]  # type: ignore[index]
            best_wrong = max(total for (decision, _), (total, _) in returns.items() if decision != label)
            assert unreasoned > best_wrong, (scenario.id, name)
            for (decision, how), (total, score) in returns.items():
                if decision == label and score >= MIN_REASONING:
                    assert total > unreasoned, (scenario.id, name, how)
                    reasoned += 1
    assert reasoned >= 2 * len(scenarios_of(tier)), "the decisive and everything strategies reason fully"


@pytest.mark.parametrize("tier", DIFFICULTIES)
def test_the_oracle_returns_at_least_what_its_degraded_versions_return(tier: str) -> None:
    """Against the oracle with its reasoning deleted, reading everything first, and deciding at once;
    where the grades differ, the returns differ the same way, by exactly twice as much."""
    weights = GraderFactory.create(tier).weights
    strictly = 0
    for scenario in scenarios_of(tier, seeds=10):
        played = {variant: play_oracle(scenario, variant) for variant in ORACLE_VARIANTS}
        best, oracle_env = played["oracle"]
        assert oracle_env.grade().score == 1.0 and best == pytest.approx(GRADE_SCALE, abs=1e-9)
        for variant, (total, env) in played.items():
            assert total <= best + 1e-9, (scenario.id, variant, total, best)
            grade = env.grade().score
            assert best - total == pytest.approx(GRADE_SCALE * (1.0 - grade), abs=1e-9), (scenario.id, variant)
            if grade < 1.0 - 1e-9:
                assert total < best - 1e-9, (scenario.id, variant)
        # Neither degraded decision is reasoned (none; or citing nothing read), so each returns
        # twice the decision's weight alone, as graded.
        for variant in ("no_reasoning", "at_once"):
            assert played[variant][0] == pytest.approx(GRADE_SCALE * weights["decision_correct"]), variant
        everything, env = played["reads_everything"]
        n = len(scenario.claims) + len(scenario.sources)
        assert env.state().step_count == n + 1 and env.grade().breakdown["reasoning_depth"] == 1.0
        strictly += everything < best - 1e-9
    assert strictly, "reading non-decisive items costs efficiency somewhere"


# ---------------------------------------------------------------- wasted steps and the refund


def wasteful_episode(scenario: Scenario, k: int, repeats: int, invalids: int) -> list[object]:
    """Read the first ``k`` ids (claims first), with ``repeats`` re-reads and ``invalids`` rejected actions mixed in."""
    ids = [c.id for c in scenario.claims] + [s.id for s in scenario.sources]
    steps: list[object] = [action(i) for i in ids[:k]]
    for n in range(repeats):
        steps.insert(min(len(steps), 1 + 2 * n), action(ids[0]))
    bad = ({"type": "check_source", "source_id": "src_99"}, "dance", {"type": "decide"})
    for n in range(invalids):
        steps.insert(min(len(steps), 2 + 3 * n), bad[n % len(bad)])
    return steps


@pytest.mark.parametrize("tier", DIFFICULTIES)
def test_wasted_steps_cost_exactly_a_wasted_step_each_beyond_the_grade(tier: str) -> None:
    """Reading k items with repeats and rejected actions mixed in, then each decision and reasoning:
    the return is 2 × grade − 0.05 per wasted step, exactly; the exploration is taken back on the
    decide step and on no earlier one; a repeat and a rejection each pay −0.05 on their own step."""
    cases: dict[str, int] = defaultdict(int)
    for scenario in scenarios_of(tier, seeds=3):
        n = len(scenario.claims) + len(scenario.sources)
        for k, repeats, invalids in ((0, 0, 0), (1, 0, 0), (n, 0, 0), (n, 2, 0), (2, 0, 3), (n, 1, 2), (0, 0, 2)):
            prefix = wasteful_episode(scenario, k, repeats, invalids)
            ids = [c.id for c in scenario.claims] + [s.id for s in scenario.sources]
            for decision, how in itertools.product(DECISIONS, ("none", "read", "gold")):
                env = start(scenario)
                text = read_gold_text(scenario, ids[:k]) if how == "read" else REASONINGS[how](scenario, decision)
                steps = play_steps(env, [*prefix, {"type": "decide", "decision": decision, "reasoning": text}])
                state = env.state()
                assert (state.redundant, state.invalid) == (repeats, invalids), (scenario.id, k)
                total = check_identity(env, steps)
                assert total == pytest.approx(
                    GRADE_SCALE * env.grade().score - WASTED_STEP * (repeats + invalids), abs=1e-9
                )
                assert (state.exploration_paid > 0) == (k > 0)
                for _, parts in steps[:-1]:
                    assert parts in (
                        {"redundant_action": -WASTED_STEP},
                        {"invalid_action": -WASTED_STEP},
                    ) or not {"redundant_action", "invalid_action"} & set(parts)
                cases["wasted"] += repeats + invalids > 0
                succeeded = env.grade().success
                cases["succeeded_and_wasted"] += repeats + invalids > 0 and succeeded
    assert cases["wasted"] and cases["succeeded_and_wasted"], cases


def oracle_actions(scenario: Scenario) -> list[IntegrityAction]:
    """The oracle's actions on ``scenario``, in order, the decision last."""
    from integrity_gym.agents import make_agent

    env = start(scenario)
    oracle = make_agent("oracle", env)
    obs, actions = env.observation(), []
    while not env.done:
        actions.append(oracle.act(obs))
        obs = env.step(actions[-1]).observation
    return actions


def test_a_repeat_or_a_rejection_in_the_oracles_episode_costs_a_wasted_step_and_its_efficiency() -> None:
    """The oracle's episode with one wasted step after its first read: that step pays −0.05 alone,
    and the episode returns 2 × grade − 0.05, where the grade's efficiency counts the extra step."""
    for tier in DIFFICULTIES:
        w_efficiency = GraderFactory.create(tier).weights["efficiency"]
        for scenario in scenarios_of(tier, seeds=2):
            best, _ = play_oracle(scenario, "oracle")
            actions = oracle_actions(scenario)
            optimal = len(actions)
            for extra, component in ((actions[0], "redundant_action"), ("dance", "invalid_action")):
                env = start(scenario)
                steps = play_steps(env, [actions[0], extra, *actions[1:]])
                assert steps[1] == (-WASTED_STEP, {component: -WASTED_STEP}), scenario.id
                grade = env.grade()
                assert grade.breakdown["reasoning_depth"] == 1.0
                assert grade.breakdown["efficiency"] == pytest.approx(optimal / (optimal + 1))
                total = check_identity(env, steps)
                cost = WASTED_STEP + GRADE_SCALE * w_efficiency * (1 - optimal / (optimal + 1))
                assert total == pytest.approx(best - cost, abs=1e-9) and total < best


@pytest.mark.parametrize("waste", ["repeat", "invalid", "mixed"])
def test_running_out_of_steps_without_a_decision_refunds_on_the_last_step(waste: str) -> None:
    """Read k items, then waste every step left (repeats, rejected actions, or both with a rejected one
    last): the step on which the budget runs out takes back what reading paid, so the episode returns
    −0.05 per wasted step and nothing for its reading."""
    for tier in DIFFICULTIES:
        for scenario in scenarios_of(tier, seeds=2):
            ids = [c.id for c in scenario.claims] + [s.id for s in scenario.sources]
            for k in (1, 3, len(ids)):
                env = start(scenario)
                steps = play_steps(env, [action(i) for i in ids[:k]])
                while not env.done:
                    left = env.max_steps - env.state().step_count
                    invalid = waste == "invalid" or (waste == "mixed" and left % 2 == 1)
                    filler = {"type": "verify_claim", "claim_id": "claim_99"} if invalid else action(ids[0])
                    steps += play_steps(env, [filler])
                state = env.state()
                assert state.max_steps_reached and state.decision is None
                wasted = env.max_steps - k
                assert state.redundant + state.invalid == wasted
                assert check_identity(env, steps) == pytest.approx(-WASTED_STEP * wasted, abs=1e-9)
                last_component = "redundant_action" if waste == "repeat" else "invalid_action"
                assert steps[-1][1] == pytest.approx(
                    {last_component: -WASTED_STEP, "exploration_refund": -state.exploration_paid}
                )
                assert state.exploration_paid > 0 and env.grade().score == 0.0


def test_exploration_paid_travels_in_the_state_so_a_restored_episode_refunds_the_same() -> None:
    scenario = find_gold("hard_003")  # label remove
    env = start(scenario)
    play_steps(env, [action("claim_1"), action("src_2"), action("src_3"), action("src_4")])
    assert env.state().exploration_paid == pytest.approx(0.045)
    twin = start(scenario)
    twin.load_state(env.state().model_dump(mode="json"))
    for e in (env, twin):
        result = e.step({"type": "decide", "decision": "allow"})  # wrong: the grade is 0
        assert result.info["reward_breakdown"] == pytest.approx({"exploration_refund": -0.045})
        assert e.state().total_reward == pytest.approx(0.0, abs=1e-9)


def test_an_invalid_action_costs_exactly_a_wasted_step_and_changes_nothing_else() -> None:
    """Under default, whatever is rejected: the reward is -WASTED_STEP, the breakdown has that one
    component, and the observation and state change only in the step count, history and total."""
    bad_actions = (
        {"type": "check_source", "source_id": "src_99"},
        {"type": "verify_claim", "claim_id": "claim_9"},
        {"type": "verify_claim", "source_id": "src_1"},
        {"type": "decide"},
        {"type": "decide", "decision": "ban"},
        {"type": "shout"},
        "dance",
        '{"type": "check_source"',
    )
    moving = {"step_count", "steps_left", "interaction_history"}
    scenario = find_gold("hard_003")
    actions = oracle_actions(scenario)
    for done_before in range(len(actions)):  # before each of the oracle's steps
        env = start(scenario)
        play_steps(env, actions[:done_before])
        for bad in bad_actions:
            obs_before, state_before = env.observation().model_dump(), env.state().model_dump()
            result = env.step(bad)
            assert result.info["error"], bad
            assert result.reward == -WASTED_STEP and result.info["reward_breakdown"] == {"invalid_action": -WASTED_STEP}
            obs_after, state_after = result.observation.model_dump(), env.state().model_dump()
            assert {k: v for k, v in obs_after.items() if k not in moving} == {
                k: v for k, v in obs_before.items() if k not in moving
            }
            assert obs_after["step_count"] == obs_before["step_count"] + 1
            changed = {k for k in state_after if state_after[k] != state_before[k]}
            assert changed == {"step_count", "history", "invalid", "total_reward"}, (bad, changed)
            assert state_after["total_reward"] == pytest.approx(state_before["total_reward"] - WASTED_STEP)


def test_a_redundant_check_costs_exactly_a_wasted_step_and_changes_nothing_else() -> None:
    """Re-reading any id already read: the reward is -WASTED_STEP under the one component
    redundant_action, and only the step count, history, redundant count and total move."""
    moving_obs = {"step_count", "steps_left", "interaction_history", "status_flags"}
    for scenario in (find_gold("hard_003"), find_gold("easy_001"), generate("medium", 4, "eval")):
        ids = [c.id for c in scenario.claims] + [s.id for s in scenario.sources]
        env = start(scenario)
        play_steps(env, [action(i) for i in ids])
        for item in ids[: env.max_steps - len(ids) - 1]:  # never the budget's last step, which refunds
            obs_before, state_before = env.observation().model_dump(), env.state().model_dump()
            result = env.step(action(item))
            assert result.info["error"] is None
            assert (result.reward, result.info["reward_breakdown"]) == (
                -WASTED_STEP,
                {"redundant_action": -WASTED_STEP},
            ), item
            obs_after, state_after = result.observation.model_dump(), env.state().model_dump()
            assert {k: v for k, v in obs_after.items() if k not in moving_obs} == {
                k: v for k, v in obs_before.items() if k not in moving_obs
            }
            flags_before, flags_after = obs_before["status_flags"], obs_after["status_flags"]
            assert flags_after == {**flags_before, "redundant_actions": flags_before["redundant_actions"] + 1}
            changed = {k for k in state_after if state_after[k] != state_before[k]}
            assert changed == {"step_count", "history", "redundant", "total_reward"}, (item, changed)
            assert state_after["total_reward"] == pytest.approx(state_before["total_reward"] - WASTED_STEP)
