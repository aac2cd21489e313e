"""Reward presets: the reference table exactly, and the default's tie between return and grade.

Under ``default`` a right decision reasoned to ``MIN_REASONING`` returns 1 + its reasoning score +
its exploration (at most 0.1) - 0.02 per step after the first - 0.3 if premature - its wasted
steps; any other episode is settled on its last step to 1 + reasoning score (right) or 0 (wrong),
less its wasted steps. These tests play the environment and check that rule to the component.
"""

from __future__ import annotations

import copy
import itertools
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest

import integrity_gym
from integrity_gym.core.env import WASTED_STEP
from integrity_gym.core.registry import latest_task_id
from integrity_gym.envs.information_integrity import reward as rw
from integrity_gym.envs.information_integrity.data import find_gold, load_gold
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
    play_oracle,
    read_gold_text,
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


#: The default preset: small exploration rewards, the decision and its reasoning as graded, one
#: wasted-step charge, settlement with the grade.
DEFAULT_TABLE = {
    "verify_claim": 0.01,
    "check_source": 0.01,
    "multi_source_bonus": 0.005,
    "multi_source_min": 3,
    "exploration_cap": 0.1,
    "correct_decision": 1.0,
    "partial_decision": 0.0,
    "reasoning": 1.0,
    "premature_decision": -0.3,
    "redundant_action": -WASTED_STEP,
    "inefficiency": -0.02,
    "efficient_step_threshold": 1,
    "over_aggression": 0.0,
    "invalid_action": -WASTED_STEP,
    "grade_aligned": True,
    "clip_min": -2.0,
    "clip_max": 2.0,
}


def test_reference_preset_is_the_reference_table() -> None:
    config = rw.load_reward_config("reference")
    for key, value in REFERENCE_TABLE.items():
        assert getattr(config, key) == value, key
    assert config.exploration_cap is None
    # The reference pays nothing for reasoning, settles nothing and does not charge rejected actions.
    assert (config.reasoning, config.grade_aligned, config.invalid_action) == (0.0, False, 0.0)


def test_default_preset_is_the_default_table() -> None:
    config = rw.load_reward_config("default")
    assert {key: getattr(config, key) for key in DEFAULT_TABLE} == DEFAULT_TABLE
    assert WASTED_STEP == 0.05


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


def by_hand(scenario: Scenario, evidence: Sequence[str], decision: Decision, reasoning: float) -> tuple[dict, float]:
    """The decide step's components and the episode's return under default, worked out from the rule.

    For an episode that read ``evidence`` (each id once, nothing wasted) and then decided with
    reasoning worth ``reasoning`` (as the grader scores it).
    """
    claim_ids = {c.id for c in scenario.claims}
    claims = sum(item in claim_ids for item in evidence)
    sources = len(evidence) - claims
    steps_after_first = len(evidence)  # the decision is step len(evidence) + 1
    exploration = min(0.1, 0.01 * claims + 0.01 * sources + (0.005 if sources >= 3 else 0.0))
    premature = claims < 1 or sources < 2
    right = decision == scenario.label
    counted = right and reasoning >= MIN_REASONING
    parts: dict[str, float] = {}
    distance = abs(DECISIONS.index(decision) - DECISIONS.index(scenario.label))
    if distance == 0:
        parts |= {"decision_correct": 1.0, "reasoning": reasoning}
    elif distance == 1:
        parts["decision_partial"] = 0.0
    if decision == "remove" and scenario.label != "remove":
        parts["over_aggression"] = 0.0
    if premature and counted:
        parts["premature_decision"] = -0.3
    if steps_after_first:
        parts["inefficiency"] = -0.02
    if not counted:
        if exploration:
            parts["exploration_refund"] = -exploration
        if steps_after_first:
            parts["inefficiency_refund"] = 0.02 * steps_after_first
    if counted:
        total = 1.0 + reasoning + exploration - 0.02 * steps_after_first - (0.3 if premature else 0.0)
    else:
        total = 1.0 + reasoning if right else 0.0
    return parts, total


def check_ranked_as_graded(outcomes: Iterable[Outcome], scenario: Scenario) -> dict[str, int]:
    """Each outcome's decide step and return are the rule's; per evidence read, a right decision
    reasoned to MIN_REASONING returns more than the same evidence unreasoned, which returns more
    than every wrong decision. The grade: a wrong decision scores 0, a right one reasoned below
    MIN_REASONING its decision and reasoning weights only, and success is score >= threshold.
    Returns counts of the cases met, so that callers can require each to have been exercised.
    """
    grader = GraderFactory.create(scenario.difficulty)
    weights = grader.weights
    seen: dict[str, int] = defaultdict(int)
    groups: dict[tuple[str, ...], list[tuple[Outcome, float]]] = defaultdict(list)
    for outcome in outcomes:
        grade = outcome.grade
        score = grade.breakdown["reasoning_depth"]
        parts, total = by_hand(scenario, outcome.evidence, outcome.decision, score)
        where = (scenario.id, outcome.evidence, outcome.decision, outcome.reasoning)
        assert outcome.breakdown == pytest.approx(parts), where
        assert outcome.total == pytest.approx(total), where
        assert grade.success == (grade.score >= outcome.env.spec.success_threshold), where
        if outcome.decision != scenario.label:
            assert (grade.score, grade.success) == (0.0, False), where
        elif score < MIN_REASONING:
            assert grade.score == pytest.approx(weights["decision_correct"] + weights["reasoning_depth"] * score)
            assert grade.score < grader.ceiling_without_reasons() and not grade.success, where
        groups[outcome.evidence].append((outcome, score))
    for evidence, group in groups.items():
        right = [(o, score) for o, score in group if o.decision == scenario.label]
        unreasoned = next(o.total for o, _ in right if o.reasoning == "none")
        best_wrong = max(o.total for o, _ in group if o.decision != scenario.label)
        assert unreasoned == pytest.approx(1.0) and best_wrong == pytest.approx(0.0), (scenario.id, evidence)
        seen["evidence"] += 1
        for o, score in right:
            if score >= MIN_REASONING:
                assert o.total > unreasoned, (scenario.id, evidence, o.reasoning)
                seen["reasoned"] += 1
                seen["reasoned_premature"] += o.env.state().premature
                seen["reasoned_partial"] += score < 1.0
    return seen


@pytest.mark.parametrize("tier", DIFFICULTIES)
def test_default_returns_follow_the_rule_and_rank_as_the_grade_on_every_gold_scenario(tier: str) -> None:
    """Played in the environment: every subset of claims and sources, then each decision, with no
    reasoning and with the gold statements about what was read (partial reads give partial or void
    reasoning); the decide step's components (reasoning, premature, settlement) are checked one by one.
    """
    for scenario in load_gold(tier):
        outcomes = list(every_subset(scenario, ("none", "read")))
        assert extremes(outcomes, str(scenario.label)) == (pytest.approx(1.0), pytest.approx(0.0)), scenario.id
        seen = check_ranked_as_graded(outcomes, scenario)
        assert seen["evidence"] == 2 ** (len(scenario.claims) + len(scenario.sources))
        assert seen["reasoned"] and seen["reasoned_premature"] and seen["reasoned_partial"], (scenario.id, seen)


def test_default_ordering_holds_on_generated_scenarios() -> None:
    """Every number of claims and sources read, claims first or sources first, then each decision."""
    totals: dict[str, int] = defaultdict(int)
    for scenario in generated_scenarios(2):
        outcomes = list(every_count(scenario, ("none", "read")))
        right, wrong = extremes(outcomes, str(scenario.label))
        assert (right, wrong) == (pytest.approx(1.0), pytest.approx(0.0)), scenario.id
        for key, count in check_ranked_as_graded(outcomes, scenario).items():
            totals[key] += count
    assert totals["reasoned"] and totals["reasoned_premature"] and totals["reasoned_partial"], totals


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
    env = integrity_gym.make(TASK["easy"], reward_preset=str(good))
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

    from integrity_gym.envs.information_integrity.env import InformationIntegrityEnv

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
    # The default's own values: a verify and a check each pay 0.01; every step after the first costs 0.02.
    default = rw.load_reward_config("default")
    assert rw.step_breakdown(default, kind="verify_claim", step_number=1, efficient=1) == {"verify_claim": 0.01}
    assert rw.step_breakdown(default, kind="check_source", step_number=2, efficient=1) == {
        "check_source": 0.01,
        "inefficiency": -0.02,
    }


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
    invalid = rw.step_breakdown(config, kind="invalid", step_number=5, efficient=1)
    assert invalid == {"invalid_action": -WASTED_STEP}  # and no inefficiency on top
    # A decide step is not premature unless the environment says so; a right one carries its reasoning.
    plain = rw.step_breakdown(config, kind="decide", step_number=1, efficient=9, decision="flag", label="flag")
    assert plain == {"decision_correct": 1.0, "reasoning": 0.0}

    def decide(decision: Decision, **kw: object) -> dict[str, float]:
        return rw.step_breakdown(
            config, kind="decide", step_number=1, efficient=9, decision=decision, label="flag", **kw
        )

    assert decide("flag", reasoning=0.6) == {"decision_correct": 1.0, "reasoning": 0.6}
    # A wrong decision earns no reasoning, however good; one tier off and over-aggression pay 0.
    assert decide("allow", reasoning=1.0) == {"decision_partial": 0.0}
    assert decide("remove", reasoning=1.0) == {"decision_partial": 0.0, "over_aggression": 0.0}
    # grade_aligned: the premature penalty only with a right decision reasoned to MIN_REASONING.
    assert decide("flag", premature=True, reasoning=0.6, reasoned=True) == {
        "decision_correct": 1.0, "reasoning": 0.6, "premature_decision": -0.3,
    }  # fmt: skip
    assert decide("flag", premature=True, reasoning=0.4, reasoned=False) == {"decision_correct": 1.0, "reasoning": 0.4}
    assert decide("allow", premature=True, reasoning=0.6, reasoned=True) == {"decision_partial": 0.0}
    # The reference charges it whatever the reasoning, and pays no reasoning.
    reference = rw.load_reward_config("reference")
    late = rw.step_breakdown(
        reference, kind="decide", step_number=1, efficient=9, decision="flag", label="flag",
        premature=True, reasoning=0.4, reasoned=False,
    )  # fmt: skip
    assert late == {"decision_correct": 1.0, "premature_decision": -0.5}
    with pytest.raises(ValueError, match=r"^a decide step needs decision and label$"):
        rw.step_breakdown(config, kind="decide", step_number=1, efficient=9, label="allow")


def test_settle_gives_back_exploration_and_inefficiency_unless_the_grade_counts_them() -> None:
    default, reference = rw.load_reward_config("default"), rw.load_reward_config("reference")
    assert rw.settle(default, exploration_paid=0.045, inefficiency_paid=-0.08, counted=False) == {
        "exploration_refund": -0.045,
        "inefficiency_refund": 0.08,
    }
    assert rw.settle(default, exploration_paid=0.045, inefficiency_paid=-0.08, counted=True) == {}
    assert rw.settle(default, exploration_paid=0.0, inefficiency_paid=0.0, counted=False) == {}
    assert rw.settle(default, exploration_paid=0.0, inefficiency_paid=-0.02, counted=False) == {
        "inefficiency_refund": 0.02
    }
    assert rw.settle(reference, exploration_paid=0.6, inefficiency_paid=-0.1, counted=False) == {}


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
                returns[decision, how] = (leaf.state().total_reward, leaf.grade().breakdown["reasoning_depth"])
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
    where the grades differ, the returns differ the same way."""
    for scenario in scenarios_of(tier, seeds=10):
        played = {variant: play_oracle(scenario, variant) for variant in ORACLE_VARIANTS}
        best, oracle_env = played["oracle"]
        assert oracle_env.grade().score == 1.0
        for variant, (total, env) in played.items():
            assert total <= best + 1e-9, (scenario.id, variant, total, best)
            if env.grade().score < 1.0 - 1e-9:
                assert total < best - 1e-9, (scenario.id, variant)
        # Neither degraded decision is reasoned, so each returns the decision alone: the grade's view.
        assert played["no_reasoning"][0] == pytest.approx(1.0) and played["at_once"][0] == pytest.approx(1.0)
        assert best > 1.5


# ---------------------------------------------------------------- settlement


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


def play_steps(env: object, steps: Iterable[object]) -> list[tuple[float, dict[str, float]]]:
    """Step through ``steps``; each step's (reward, breakdown), the breakdown summing to the reward."""
    out = []
    for step in steps:
        result = env.step(step)  # type: ignore[attr-defined]
        parts = result.info["reward_breakdown"]
        assert sum(parts.values()) == pytest.approx(result.reward)
        out.append((result.reward, parts))
    return out


REFUNDS = ("exploration_refund", "inefficiency_refund")


@pytest.mark.parametrize("tier", DIFFICULTIES)
def test_an_episode_the_grade_does_not_count_returns_its_decision_less_its_wasted_steps(tier: str) -> None:
    """A wrong decision after reading k items returns minus its wasted steps, exactly: the exploration is
    taken back and the inefficiency given back on the decide step, and on no earlier one. A right
    decision without reasoning returns 1 less the same."""
    cases = 0
    for scenario in scenarios_of(tier, seeds=3):
        n = len(scenario.claims) + len(scenario.sources)
        for k, repeats, invalids in ((0, 0, 0), (1, 0, 0), (n, 0, 0), (n, 2, 0), (2, 0, 3), (n, 1, 2)):
            prefix = wasteful_episode(scenario, k, repeats, invalids) if k or repeats or invalids else []
            for decision, how in itertools.product(DECISIONS, ("none", "gold")):
                if decision == scenario.label and how == "gold":
                    continue  # counted by the grade (when every id is read): not settled
                env = start(scenario)
                text = REASONINGS[how](scenario, decision) if decision != scenario.label else None
                steps = play_steps(env, [*prefix, {"type": "decide", "decision": decision, "reasoning": text}])
                wasted = WASTED_STEP * (repeats + invalids)
                expected = (1.0 if decision == scenario.label else 0.0) - wasted
                total = sum(reward for reward, _ in steps)
                assert total == pytest.approx(expected) == env.state().total_reward, (scenario.id, k, decision)
                assert all(not set(REFUNDS) & set(parts) for _, parts in steps[:-1])
                last = steps[-1][1]
                exploration = env.state().exploration_paid
                assert last.get("exploration_refund", 0.0) == pytest.approx(-exploration)
                assert last.get("inefficiency_refund", 0.0) == pytest.approx(-env.state().inefficiency_paid)
                assert (exploration > 0) == (k > 0) and (env.state().inefficiency_paid < 0) == (len(steps) > 1)
                cases += 1
    assert cases > 0


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


def test_a_counted_episode_keeps_its_exploration_and_pays_each_step() -> None:
    """The oracle's episode with its first read repeated: nothing is settled, and the repeat costs
    WASTED_STEP plus the 0.02 of one more step; a rejected action in the same place costs WASTED_STEP alone."""
    for tier in DIFFICULTIES:
        for scenario in scenarios_of(tier, seeds=2):
            best, _ = play_oracle(scenario, "oracle")
            actions = oracle_actions(scenario)
            for extra, cost in ((actions[0], WASTED_STEP + 0.02), ("dance", WASTED_STEP)):
                env = start(scenario)
                steps = play_steps(env, [actions[0], extra, *actions[1:]])
                assert not any(set(REFUNDS) & set(parts) for _, parts in steps), scenario.id
                assert env.grade().breakdown["reasoning_depth"] == 1.0
                assert sum(r for r, _ in steps) == pytest.approx(best - cost) == env.state().total_reward


@pytest.mark.parametrize("waste", ["repeat", "invalid"])
def test_running_out_of_steps_without_a_decision_settles_on_the_last_step(waste: str) -> None:
    """Read k items, then waste every step left (repeats, or rejected actions): the step on which the
    budget runs out, a rejected one included, gives back what was paid and charged for reading."""
    for tier in DIFFICULTIES:
        for scenario in scenarios_of(tier, seeds=2):
            ids = [c.id for c in scenario.claims] + [s.id for s in scenario.sources]
            for k in (1, 3, len(ids)):
                env = start(scenario)
                filler = action(ids[0]) if waste == "repeat" else {"type": "verify_claim", "claim_id": "claim_99"}
                steps = play_steps(env, [action(i) for i in ids[:k]])
                while not env.done:
                    steps += play_steps(env, [filler])
                wasted = env.max_steps - k
                assert env.state().max_steps_reached and env.state().decision is None
                assert sum(r for r, _ in steps) == pytest.approx(-WASTED_STEP * wasted) == env.state().total_reward
                last = steps[-1][1]
                assert last["exploration_refund"] == pytest.approx(-env.state().exploration_paid) != 0.0
                refund = 0.02 * (k - 1 + (wasted if waste == "repeat" else 0))
                assert last.get("inefficiency_refund", 0.0) == pytest.approx(refund)
                assert not any(set(REFUNDS) & set(parts) for _, parts in steps[:-1])
                assert env.grade().score == 0.0


def test_the_return_is_the_sum_of_every_steps_components_and_moves_through_state() -> None:
    """Per step the components sum to the reward; over the episode they sum to the return; and the
    inefficiency charged so far travels in the state, so a restored episode settles the same."""
    from integrity_gym.agents import make_agent

    for tier in DIFFICULTIES:
        task = latest_task_id("information_integrity", tier)
        env = integrity_gym.make(task)
        for agent_name in ("oracle", "heuristic", "random", "noop"):
            for seed in range(5):
                agent = make_agent(agent_name, env, seed=seed)
                obs = env.reset(seed=seed)
                components = 0.0
                while not env.done:
                    result = env.step(agent.act(obs))
                    obs = result.observation
                    assert sum(result.info["reward_breakdown"].values()) == pytest.approx(result.reward)
                    components += sum(result.info["reward_breakdown"].values())
                assert components == pytest.approx(env.state().total_reward), (task, agent_name, seed)
    scenario = find_gold("hard_003")
    env = start(scenario)
    play_steps(env, [action("claim_1"), action("src_2"), action("src_3")])
    assert env.state().inefficiency_paid == pytest.approx(-0.04)
    twin = start(scenario)
    twin.load_state(env.state().model_dump(mode="json"))
    for e in (env, twin):
        e.step({"type": "decide", "decision": "allow"})  # wrong: settled to 0
        assert e.state().total_reward == pytest.approx(0.0)


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
            assert state_after["inefficiency_paid"] == state_before["inefficiency_paid"]
