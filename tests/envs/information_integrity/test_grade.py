"""No score without the task: the grade of wrong, unexplained and constant decisions, played in the env."""

from __future__ import annotations

import copy
import itertools
import random
from typing import ClassVar

import pytest

import integrity_gym
from integrity_gym.agents import make_agent
from integrity_gym.core.registry import TaskSpec, list_tasks
from integrity_gym.core.types import Grade
from integrity_gym.envs.information_integrity import rules
from integrity_gym.envs.information_integrity.data import find_gold, load_gold
from integrity_gym.envs.information_integrity.generator import generate
from integrity_gym.envs.information_integrity.grader import (
    MIN_REASONING,
    EpisodeRecord,
    Grader,
    GraderFactory,
    HardGrader,
    summarize,
)
from integrity_gym.envs.information_integrity.models import DECISIONS, DIFFICULTIES, Decision, Scenario
from integrity_gym.envs.information_integrity.tasks import TASKS

from .conftest import ORACLE_VARIANTS, REASONINGS, TASK, THRESHOLDS, action, play_oracle, start, strategies


def play(scenario: Scenario, reads: list[str], decision: Decision, reasoning: str | None) -> Grade:
    env = start(scenario)
    for item in reads:
        env.step(action(item))
    env.step({"type": "decide", "decision": decision, "reasoning": reasoning})
    return env.grade()


def test_each_task_keeps_its_threshold() -> None:
    assert {spec.tier: spec.success_threshold for spec in TASKS} == THRESHOLDS
    for spec in TASKS:
        env = integrity_gym.make(spec.id)
        env.reset(seed=0)
        env.step({"type": "decide", "decision": "flag"})
        assert env.grade().threshold == THRESHOLDS[spec.tier]


#: One gold scenario per tier, and the grades of three ways to play it with every decisive item read:
#: the wrong decision (with the full gold explanation), the right one with no reasoning, and the
#: right one explained. Weights are the reference design's (easy 0.50/0.25/0.15/0.10, ...); with
#: reasoning 0 (below MIN_REASONING) evidence and efficiency do not count, so the unexplained right
#: decision scores its decision weight alone.
PINNED = [
    ("easy_001", 0.0, 0.50, 1.0),
    ("medium_003", 0.0, 0.35, 1.0),
    ("hard_003", 0.0, 0.30, 1.0),
]


@pytest.mark.parametrize(("scenario_id", "wrong", "unexplained", "explained"), PINNED)
def test_pinned_grades_with_perfect_evidence(
    scenario_id: str, wrong: float, unexplained: float, explained: float
) -> None:
    scenario = find_gold(scenario_id)
    gold = rules.gold_evidence(scenario)
    reads = [*gold.claims, *gold.sources]
    text = ". ".join(gold.statements)
    for decision in DECISIONS:
        if decision != scenario.label:
            grade = play(scenario, reads, decision, text)
            assert (grade.score, grade.success) == (wrong, False)
            assert grade.breakdown["evidence_breadth"] == 1.0 and grade.breakdown["reasoning_depth"] == 1.0
    grade = play(scenario, reads, scenario.label, None)  # type: ignore[arg-type]
    assert grade.score == pytest.approx(unexplained) and not grade.success
    assert grade.breakdown["evidence_breadth"] == 1.0 and grade.breakdown["efficiency"] == 1.0  # measured, not counted
    grade = play(scenario, reads, scenario.label, text)  # type: ignore[arg-type]
    assert grade.score == explained and grade.success


def test_a_right_and_reasoned_hard_decision_below_the_threshold_is_no_success() -> None:
    """Half the decisive evidence, half the explanation: 0.70 on hard, just under its 0.71.

    One statement fewer drops the reasoning under the gate, and the score to decision + reasoning only.
    """
    scenario = find_gold("hard_002")
    reasoning = "claim_1 is contested. src_1 supports claim_1. src_2 refutes claim_1"
    grade = play(scenario, ["claim_1", "src_1", "src_2"], "flag", reasoning)
    assert grade.breakdown["decision_correct"] == 1.0 and grade.breakdown["reasoning_depth"] == MIN_REASONING
    assert grade.score == pytest.approx(0.7) and THRESHOLDS["hard"] > 0.7 and not grade.success
    weaker = play(scenario, ["claim_1", "src_1", "src_2"], "flag", "claim_1 is contested. src_1 supports claim_1")
    assert weaker.breakdown["reasoning_depth"] < MIN_REASONING and not weaker.success
    assert weaker.score == pytest.approx(0.3 + 0.3 * weaker.breakdown["reasoning_depth"])


def random_reasoning(rng: random.Random, scenario: Scenario, decision: Decision) -> str | None:
    gold = list(rules.gold_evidence(scenario).statements)
    choice = rng.randrange(4)
    if choice == 0:
        return None
    if choice == 1:
        return ". ".join(rng.sample(gold, rng.randint(1, len(gold))))
    return REASONINGS["gold" if choice == 2 else "stuffed"](scenario, decision)


@pytest.mark.parametrize("tier", DIFFICULTIES)
def test_success_implies_a_right_and_reasoned_decision(tier: str) -> None:
    """Random agents and random strategies (evidence, decision, reasoning) on gold and generated items."""
    task = TASK[tier]
    grades: list[tuple[Grade, bool]] = []
    env = integrity_gym.make(task)
    for seed in range(60):
        agent = make_agent("random", env, seed=seed)
        obs = env.reset(seed=seed)
        while not env.done:
            obs = env.step(agent.act(obs)).observation
        grades.append((env.grade(), env.state().decision == env.state().scenario.label))
    rng = random.Random(f"{tier}-strategies")
    scenarios = list(load_gold(tier)) + [generate(tier, seed, "eval") for seed in range(40)]
    for scenario in scenarios:
        ids = [c.id for c in scenario.claims] + [s.id for s in scenario.sources]
        gold = rules.gold_evidence(scenario)
        for _ in range(8):
            reads = rng.sample(ids, rng.randint(0, len(ids)))
            if rng.random() < 0.5:
                reads = list(dict.fromkeys([*gold.claims, *gold.sources, *reads]))
            decision = rng.choice(DECISIONS)
            grade = play(scenario, reads, decision, random_reasoning(rng, scenario, decision))
            grades.append((grade, decision == scenario.label))
    assert sum(g.success for g, _ in grades) > 20, "the property must be exercised by some successes"
    for grade, right in grades:
        if grade.success:
            assert right and grade.breakdown["reasoning_depth"] >= MIN_REASONING
            assert grade.score >= THRESHOLDS[tier]
        if not right:
            assert grade.score == 0.0 and not grade.success


@pytest.mark.parametrize("tier", DIFFICULTIES)
@pytest.mark.parametrize("source", ["gold", "generated"])
def test_no_constant_decision_reaches_three_quarters_of_the_threshold(tier: str, source: str) -> None:
    """Always the same decision, with each evidence strategy and even the best possible reasoning."""
    scenarios = list(load_gold(tier)) if source == "gold" else [generate(tier, s, "eval") for s in range(24)]
    best = {decision: [0.0] * len(scenarios) for decision in DECISIONS}
    for index, scenario in enumerate(scenarios):
        for reads in strategies(scenario).values():
            env = start(scenario)
            for item in reads:
                env.step(action(item))
            for decision, name in itertools.product(DECISIONS, REASONINGS):
                leaf = copy.deepcopy(env)
                text = REASONINGS[name](scenario, decision)
                leaf.step({"type": "decide", "decision": decision, "reasoning": text})
                best[decision][index] = max(best[decision][index], leaf.grade().score)
    for decision, scores in best.items():
        mean = sum(scores) / len(scores)
        assert mean <= 0.75 * THRESHOLDS[tier], f"always {decision} on {source} {tier}: {mean:.3f}"
        # The best it can do is the share of labels it happens to match, with a perfect grade on those.
        assert mean == pytest.approx(sum(s.label == decision for s in scenarios) / len(scenarios))


def record(scenario: Scenario, **changes: object) -> EpisodeRecord:
    """Every gold item read, the right decision explained, in the fewest steps."""
    gold = rules.gold_evidence(scenario)
    fields: dict[str, object] = {
        "scenario": scenario,
        "verified": gold.claims,
        "checked": gold.sources,
        "decision": scenario.label,
        "reasoning": ". ".join(gold.statements),
        "steps": len(gold.claims) + len(gold.sources) + 1,
        "premature": False,
        "threshold": 0.72,
    }
    return EpisodeRecord.model_validate({**fields, **changes})


def test_the_dimensions_of_a_perfect_slow_undecided_and_premature_episode() -> None:
    scenario = find_gold("hard_003")
    grader = HardGrader()
    assert grader.dimensions(record(scenario)) == {
        "decision_correct": 1.0, "evidence_breadth": 1.0, "reasoning_depth": 1.0, "efficiency": 1.0,
    }  # fmt: skip
    slow = record(scenario, steps=2 * record(scenario).steps)
    assert grader.dimensions(slow)["efficiency"] == 0.5
    # Reasoning on the record counts only with a decision; efficiency only for a timely one.
    undecided = grader.dimensions(record(scenario, decision=None))
    assert undecided == {"decision_correct": 0.0, "evidence_breadth": 1.0, "reasoning_depth": 0.0, "efficiency": 0.0}
    premature = grader.grade(record(scenario, premature=True))
    assert premature.breakdown["efficiency"] == 0.0 and premature.breakdown["premature"] == 1.0
    assert grader.grade(record(scenario)).breakdown["premature"] == 0.0


def test_a_registered_grader_must_have_the_four_weights_summing_to_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(GraderFactory, "_graders", dict(GraderFactory._graders))

    class Lopsided(Grader):
        weights: ClassVar[dict[str, float]] = {
            "decision_correct": 0.7,
            "evidence_breadth": 0.1,
            "reasoning_depth": 0.1,
            "efficiency": 0.1,
        }

    class TooHeavy(Grader):
        weights: ClassVar[dict[str, float]] = {
            "decision_correct": 0.7,
            "evidence_breadth": 0.4,
            "reasoning_depth": 0.3,
            "efficiency": 0.1,
        }

    GraderFactory.register("lopsided", Lopsided)
    assert isinstance(GraderFactory.create("lopsided"), Lopsided)
    with pytest.raises(ValueError, match="weights must cover"):
        GraderFactory.register("too_heavy", TooHeavy)


def test_summarize_averages_each_figure_over_the_episodes() -> None:
    def grade(correct: float, premature: float, success: bool, breadth: float) -> Grade:
        breakdown = {"decision_correct": correct, "premature": premature, "evidence_breadth": breadth,
                     "reasoning_depth": breadth / 2, "efficiency": 1.0 - breadth}  # fmt: skip
        return Grade(score=0.5, success=success, threshold=0.7, breakdown=breakdown)

    grades = [grade(1.0, 0.0, True, 1.0), grade(0.0, 1.0, False, 0.5), grade(1.0, 1.0, False, 0.0),
              grade(1.0, 0.0, True, 0.5)]  # fmt: skip
    assert summarize(grades) == {
        "decision_accuracy": 0.75,
        "premature_rate": 0.5,
        "success_rate": 0.5,
        "mean_evidence_breadth": 0.5,
        "mean_reasoning_depth": 0.25,
        "mean_efficiency": 0.5,
    }
    assert summarize([]) == {"decision_accuracy": None, "premature_rate": None}
    # A breakdown missing a figure counts it as 0.
    bare = Grade(score=0.0, success=False, threshold=0.7, breakdown={})
    assert summarize([bare, *grades[:1]])["mean_evidence_breadth"] == 0.5
    assert summarize([bare, *grades[:1]])["premature_rate"] == 0.0


def test_success_starts_exactly_at_the_threshold_and_at_half_the_explanation() -> None:
    scenario, grader = find_gold("hard_003"), HardGrader()
    slow = record(scenario, steps=2 * record(scenario).steps)
    score = grader.grade(slow).score
    assert 0.72 < score < 1.0
    assert grader.grade(record(scenario, steps=slow.steps, threshold=score)).success
    assert not grader.grade(record(scenario, steps=slow.steps, threshold=score + 1e-9)).success
    half = record(scenario, reasoning="claim_2 is false. src_1 refutes claim_2.", threshold=0.1)
    assert grader.grade(half).breakdown["reasoning_depth"] == MIN_REASONING == 0.5
    assert grader.grade(half).success


def test_only_grader_classes_register_and_an_unknown_name_lists_the_known_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(GraderFactory, "_graders", {k: GraderFactory._graders[k] for k in ("easy", "medium", "hard")})
    for thing in (object(), int):
        with pytest.raises(ValueError, match=r"^grader 'odd' must be a subclass of Grader$"):
            GraderFactory.register("odd", thing)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"registered: easy, hard, medium$"):
        GraderFactory.create("nope")
    assert GraderFactory.names() == ["easy", "hard", "medium"]


def test_the_record_caps_how_much_reasoning_is_read() -> None:
    scenario, grader = find_gold("hard_003"), HardGrader()
    full = record(scenario)
    assert grader.dimensions(full)["reasoning_depth"] == 1.0
    first_statement = len(full.reasoning.split(".")[0])  # type: ignore[union-attr]
    short = grader.dimensions(record(scenario, reasoning_char_cap=first_statement))["reasoning_depth"]
    assert short < 1.0
    # One statement more than the gold explanation: over a cap of 1 (the cap is never below the gold's 4).
    longer = {"reasoning": f"{full.reasoning}. src_6 is outdated", "checked": [s.id for s in scenario.sources]}
    assert grader.dimensions(record(scenario, **longer))["reasoning_depth"] > 0.0
    assert grader.dimensions(record(scenario, **longer, reasoning_statement_cap=1))["reasoning_depth"] == 0.0


# ---------------------------------------------------------------- the grade rule (right but unreasoned)


def builtin_tasks() -> list[TaskSpec]:
    tasks = list_tasks("information_integrity/*")
    assert {spec.tier for spec in tasks} == set(DIFFICULTIES)
    return tasks


def test_the_ceiling_without_reasons_is_below_every_tasks_threshold() -> None:
    for spec in builtin_tasks():
        grader = GraderFactory.create(spec.tier)  # the grader of the task's scenarios
        w = grader.weights
        ceiling = grader.ceiling_without_reasons()
        assert ceiling == pytest.approx(w["decision_correct"] + w["reasoning_depth"] * MIN_REASONING)
        assert ceiling < spec.success_threshold, spec.id


def test_a_right_decision_reasoned_below_min_reasoning_scores_its_decision_and_reasoning_weights_only() -> None:
    """Every decisive item read and in the fewest steps, but one gold statement of four: 0.3 + 0.3 x 0.25."""
    scenario, grader = find_gold("hard_003"), HardGrader()
    quarter = record(scenario, reasoning="src_1 refutes claim_2.")
    dims = grader.dimensions(quarter)
    assert dims == {"decision_correct": 1.0, "evidence_breadth": 1.0, "reasoning_depth": 0.25, "efficiency": 1.0}
    assert grader.grade(quarter).score == pytest.approx(0.3 + 0.3 * 0.25)
    # Evidence and efficiency are not counted below MIN_REASONING: slower or narrower, the same score.
    slow = record(scenario, reasoning="src_1 refutes claim_2.", steps=3 * quarter.steps)
    assert grader.grade(slow).score == grader.grade(quarter).score
    # At MIN_REASONING everything counts: 0.3 + 0.3 + 0.3 x 0.5 + 0.1.
    half = record(scenario, reasoning="claim_2 is false. src_1 refutes claim_2.")
    assert grader.grade(half).score == pytest.approx(0.85)
    # Success is exactly score >= threshold: with a threshold under its score, the quarter succeeds.
    assert grader.grade(record(scenario, reasoning="src_1 refutes claim_2.", threshold=0.375)).success
    assert not grader.grade(record(scenario, reasoning="src_1 refutes claim_2.", threshold=0.376)).success
    # Wrong, it scores 0 whatever the reasoning.
    assert grader.grade(record(scenario, decision="flag")).score == 0.0


@pytest.mark.parametrize("tier", DIFFICULTIES)
def test_the_oracle_without_its_reasoning_scores_exactly_the_decision_weight(tier: str) -> None:
    weight = GraderFactory.create(tier).weights["decision_correct"]
    scenarios = [*load_gold(tier), *(generate(tier, seed, "eval") for seed in range(10))]  # type: ignore[arg-type]
    for scenario in scenarios:
        _, env = play_oracle(scenario, "no_reasoning")
        grade = env.grade()
        assert (grade.score, grade.success) == (weight, False), scenario.id
        assert grade.breakdown["evidence_breadth"] == 1.0 and grade.breakdown["efficiency"] > 0.0
        _, env = play_oracle(scenario, "oracle")
        assert (env.grade().score, env.grade().success) == (1.0, True), scenario.id


def test_success_is_exactly_the_score_reaching_the_threshold_on_the_built_in_tasks() -> None:
    """Baselines, the oracle's degraded versions, and random strategies with random reasoning."""
    rng = random.Random("success-iff-threshold")
    counts = {True: 0, False: 0}
    for spec in builtin_tasks():
        grades: list[Grade] = []
        env = integrity_gym.make(spec.id)
        for name in ("random", "heuristic", "oracle"):
            for seed in range(15):
                agent = make_agent(name, env, seed=seed)
                obs = env.reset(seed=seed)
                while not env.done:
                    obs = env.step(agent.act(obs)).observation
                grades.append(env.grade())
        for seed in range(15):
            scenario = generate(spec.tier, seed, "eval")  # type: ignore[arg-type]
            grades += [play_oracle(scenario, variant)[1].grade() for variant in ORACLE_VARIANTS]
            ids = [c.id for c in scenario.claims] + [s.id for s in scenario.sources]
            for _ in range(6):
                decision = rng.choice(DECISIONS)
                reads = rng.sample(ids, rng.randint(0, len(ids)))
                grades.append(play(scenario, reads, decision, random_reasoning(rng, scenario, decision)))
        for grade in grades:
            assert grade.threshold == spec.success_threshold
            assert grade.success == (grade.score >= spec.success_threshold), (spec.id, grade)
            counts[grade.success] += 1
    assert counts[True] > 50 and counts[False] > 50, counts
