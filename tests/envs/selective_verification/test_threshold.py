"""The threshold tasks: the stated risk threshold, its optimal policy, its grade and its figures."""

from __future__ import annotations

import json
import random
from collections import defaultdict
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

import integrity_gym
from integrity_gym.agents import make_agent
from integrity_gym.agents.prompts.selective_verification import make_adapter
from integrity_gym.core.types import Grade
from integrity_gym.envs.selective_verification.env import SelectiveVerificationEnv, VerificationConfig
from integrity_gym.envs.selective_verification.grader import _resample_counts, summarize
from integrity_gym.envs.selective_verification.models import VerificationAction
from integrity_gym.envs.selective_verification.reward import threshold_reward
from integrity_gym.envs.selective_verification.risk import DEFAULT_RANGE, RISK_BINS, ThresholdRule

TEXT = "selective_verification/threshold_text-v1"
THRESHOLD_TASKS = [s.id for s in integrity_gym.list_tasks("selective_verification/threshold_*")]
T_GRID = ThresholdRule().values
Q_GRID = np.round(np.linspace(0.0, 1.0, 201), 3)
P_GRID = np.round(np.linspace(0.0, 1.0, 101), 2)
RULES = [
    ThresholdRule(),
    ThresholdRule(scale="utility"),
    ThresholdRule(brier_weight=0.3),
    ThresholdRule(brier_weight=0.9, scale="utility"),
]


def _actions() -> list[tuple[str, float | None]]:
    return [("ABSTAIN", None)] + [(v, float(p)) for v in ("SUPPORTED", "REFUTED") for p in P_GRID]


@pytest.mark.parametrize("rule", RULES, ids=lambda r: f"brier{r.brier_weight}-{r.scale}")
def test_the_bayes_policy_is_the_unique_maximiser_over_a_grid(rule: ThresholdRule) -> None:
    # For every stated threshold t and belief q that the claim is true, the expected reward of every
    # action (the env's own reward function, both labels weighted by q) is highest for the Bayes policy:
    # the likelier verdict iff max(q, 1 - q) > t (with a truthful confidence when a Brier term pays for it),
    # else ABSTAIN; every action that decides otherwise earns strictly less.
    actions = _actions()
    for t in T_GRID:
        paid = np.array(
            [
                [sum(threshold_reward(v, p, label, rule=rule, t=t).values()) for label in (True, False)]
                for v, p in actions
            ]
        )
        expected = np.outer(Q_GRID, paid[:, 0]) + np.outer(1.0 - Q_GRID, paid[:, 1])  # (q, action)
        for qi, q in enumerate(Q_GRID):
            best_q = max(q, 1.0 - q)
            row = expected[qi]
            top = row.max()
            winners = [actions[i] for i in np.flatnonzero(row >= top - 1e-12)]
            if abs(best_q - t) < 1e-9:
                continue  # a tie: answering and abstaining are worth the same
            if best_q < t:
                assert winners == [("ABSTAIN", None)], (t, q, winners)
                assert row[0] == pytest.approx(0.0 if rule.scale == "utility" else rule.abstain_grade(t), abs=1e-12)
                continue
            verdict = "SUPPORTED" if q > 0.5 else "REFUTED"
            assert {v for v, _ in winners} == {verdict}, (t, q, winners)
            if rule.brier_weight > 0:
                # the truthful confidence, or both grid points next to it when it falls between them
                assert all(p is not None and abs(p - best_q) <= 0.005 + 1e-9 for _, p in winners), (t, q, winners)
            # strictly: abstaining and the other verdict earn less than the best answer
            others = [i for i, (v, _) in enumerate(actions) if v != verdict]
            assert row[others].max() < top - 1e-12


@pytest.mark.parametrize("rule", RULES, ids=lambda r: f"brier{r.brier_weight}-{r.scale}")
def test_abstaining_earns_exactly_nothing_and_the_grade_is_the_utility_normalised(rule: ThresholdRule) -> None:
    for t in T_GRID:
        assert rule.utility("ABSTAIN", None, False, t) == {"abstain": 0.0}
        abstain = sum(threshold_reward("ABSTAIN", None, True, rule=rule, t=t).values())
        assert abstain == (0.0 if rule.scale == "utility" else rule.abstain_grade(t))
        if rule.brier_weight == 0:
            assert rule.abstain_grade(t) == t  # exactly: abstaining grades its own threshold
            assert rule.utility("SUPPORTED", 0.7, False, t)["decision"] == pytest.approx(-t / (1 - t), rel=1e-12)
        grades = [
            rule.grade(sum(rule.utility(v, p, c, t).values()), t) for v, p in _actions()[1:] for c in (True, False)
        ]
        assert min(grades) == pytest.approx(0.0, abs=1e-12) and max(grades) == 1.0
        # the worst answer is what an unreadable reply pays, in either scale
        assert sum(rule.malformed_reward(t).values()) == (0.0 if rule.scale == "grade" else rule.lowest(t))
        # one positive affine map per item: grade differences are utility differences times 1 / (1 - u_min(t))
        u = np.array([-1.0, 0.0, 0.4, 1.0])
        g = np.array([rule.grade(float(x), t) for x in u])
        assert np.allclose(np.diff(g) / np.diff(u), 1.0 / (1.0 - rule.lowest(t)))


def test_thresholds_are_drawn_from_the_published_range_by_their_own_key() -> None:
    rule = ThresholdRule()
    assert T_GRID[0] == 0.5 and T_GRID[-1] == 0.95 and len(T_GRID) == 46
    drawn = [rule.draw(0, f"item-{i}") for i in range(4600)]
    assert set(drawn) == set(T_GRID)  # every stated value occurs, and no other
    counts = np.array([drawn.count(t) for t in T_GRID])
    assert counts.min() > 60 and counts.max() < 140  # uniform: 100 each in expectation
    assert [rule.draw(0, f"item-{i}") for i in range(50)] == drawn[:50]  # the key alone decides
    assert sum(rule.draw(1, f"item-{i}") != drawn[i] for i in range(100)) > 80  # another dataset seed, others
    assert ThresholdRule(0.6, 0.6).draw(0, "x") == 0.6
    # Bins: RISK_BINS runs of consecutive hundredths, 5 or 6 values each.
    bins = [rule.bin(t) for t in T_GRID]
    assert bins == sorted(bins) and set(bins) == set(range(RISK_BINS))
    assert {bins.count(b) for b in range(RISK_BINS)} <= {5, 6}


@pytest.mark.parametrize("task", THRESHOLD_TASKS)
def test_the_threshold_is_stated_and_says_nothing_about_the_label(task: str) -> None:
    n = 400 if task == TEXT else 150  # pictures take a while to draw
    env = integrity_gym.make(task, num_tasks=n)
    adapter = make_adapter(env.spec)
    by_label: dict[bool, list[float]] = {True: [], False: []}
    for seed in range(n):
        obs = env.reset(seed=seed)
        t = obs.threshold
        assert obs.scoring_rule == "threshold" and 0.5 <= t <= 0.95 and round(t * 100) == pytest.approx(t * 100)
        assert f"t = {t:.2f}" in obs.system_prompt and obs.abstain_reward == t
        user = adapter.user(obs, None)
        text = user if isinstance(user, str) else user[0]["text"]
        assert f"t = {t:.2f}" in text  # the LLM's user message states it too
        dumped = json.loads(obs.model_dump_json())
        assert "true_probability" not in json.dumps(dumped) and "label" not in dumped
        # t is a function of the config and the item id alone: the state gives it back
        twin = integrity_gym.make(task, num_tasks=n)
        twin.load_state(env.state())
        assert twin.observation() == obs
        by_label[env.state().item.label].append(t)
    a, b = np.array(by_label[True]), np.array(by_label[False])
    spread = np.sqrt(a.var() / a.size + b.var() / b.size)
    assert abs(a.mean() - b.mean()) < 3.5 * spread  # no dependence on the label beyond noise


@pytest.mark.parametrize("task", THRESHOLD_TASKS)
def test_the_return_is_the_grade_and_malformed_replies_are_the_worst_answer(task: str) -> None:
    env = integrity_gym.make(task, num_tasks=40)
    for name in ("oracle", "noop", "random", "heuristic"):
        agent = make_agent(name, env, seed=3)
        for seed in range(12):
            obs = env.reset(seed=seed)
            result = env.step(agent.act(obs))
            grade = env.grade()
            assert result.reward == pytest.approx(grade.score, abs=1e-12)
            assert grade.score == pytest.approx(grade.breakdown["reward"], abs=1e-12)
            if name == "oracle":
                assert grade.score == 1.0
            if name == "noop":
                assert grade.score == obs.threshold and grade.breakdown["utility"] == 0.0
    env.reset(seed=0)
    result = env.step("I am quite sure")
    assert result.reward == 0.0 and env.grade().score == 0.0 and env.grade().breakdown["utility"] < -1.0
    utility = integrity_gym.make(task, num_tasks=40, reward_scale="utility")
    obs = utility.reset(seed=0)
    assert utility.step({"verdict": "ABSTAIN"}).reward == 0.0 and obs.abstain_reward == 0.0
    utility.reset(seed=0)
    worst = utility.step("garbage").reward
    assert worst == pytest.approx(-obs.threshold / (1 - obs.threshold)) and utility.grade().score == 0.0


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"risk_thresholds": (0.4, 0.9)}, "0.5 <= low"),
        ({"risk_thresholds": (0.5, 1.0)}, "0.5 <= low"),
        ({"risk_thresholds": (0.505, 0.9)}, "multiple of 0.01"),
        ({"risk_thresholds": (0.9, 0.6)}, "low <= high"),
        ({"risk_thresholds": DEFAULT_RANGE, "brier_weight": 1.0}, "brier_weight"),
        ({"risk_thresholds": DEFAULT_RANGE, "abstain_reward": 0.85}, "flat-payoff tasks only"),
        ({"risk_thresholds": DEFAULT_RANGE, "scoring_rule": "log"}, "flat-payoff tasks only"),
        ({"brier_weight": 0.2}, "threshold tasks only"),
        ({"reward_scale": "utility"}, "threshold tasks only"),
    ],
)
def test_bad_threshold_configs_are_refused_with_a_reason(config: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        VerificationConfig.model_validate(config)


def test_a_flat_task_states_no_risk_threshold() -> None:
    env = integrity_gym.make("selective_verification/text-v3")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="states no risk threshold"):
        env.risk_threshold()
    assert env.observation().scoring_rule == "brier"


# ---------------------------------------------------------------------- the posterior and its rivals
def _play(task: str, name: str, n: int, **config: Any) -> list[Grade]:
    env = integrity_gym.make(task, num_tasks=max(n, 10), **config)
    agent = make_agent(name, env, seed=0)
    grades = []
    for seed in range(n):
        obs = env.reset(seed=seed)
        env.step(agent.act(obs))
        grades.append(env.grade())
    return grades


def test_the_posterior_agent_tracks_the_bayes_curve() -> None:
    grades = _play(TEXT, "posterior", 300)
    s = summarize(grades)
    assert s["tracking_error"] is not None and s["tracking_error"] <= 0.02
    assert s["tracking_error"] == 0.0 and s["decision_regret"] == pytest.approx(0.0, abs=1e-12)
    assert s["calibration_regret"] == pytest.approx(0.0, abs=1e-12)
    assert s["regret"] == pytest.approx(0.0, abs=1e-12)
    assert all(g.breakdown["abstained"] == g.breakdown["bayes_abstains"] for g in grades)


def test_a_threshold_ignoring_agent_scores_clearly_below_the_posterior() -> None:
    from integrity_gym.agents.redteam.selective_verification import ATTACKS

    spec = integrity_gym.get_spec(TEXT)
    attacks = {a.name: a for a in ATTACKS}
    means = {}
    for name in ("ignores_threshold", "never_abstains", "blind_ignores_threshold"):
        expected = []
        for seed in range(200):
            env = integrity_gym.make(TEXT)
            agent = attacks[name].build(spec, seed)
            env.step(agent.act(env.reset(seed=seed)))
            expected.append(env.grade().breakdown["expected_grade"])
        means[name] = float(np.mean(expected))
    posterior = float(np.mean([g.breakdown["expected_grade"] for g in _play(TEXT, "posterior", 200)]))
    blind = float(np.mean([g.breakdown["expected_grade"] for g in _play(TEXT, "blind", 200)]))
    # The same exact posterior answered against q* = 0.7236 instead of the stated t keeps little of the
    # posterior's gain over the claim text's prior; never abstaining falls below the prior itself.
    assert means["ignores_threshold"] < posterior - 0.01
    assert means["ignores_threshold"] - blind < (posterior - blind) / 2
    assert means["never_abstains"] < blind and means["blind_ignores_threshold"] < blind
    assert all(m < spec.success_threshold for m in means.values())


# ---------------------------------------------------------------------- the figures, computed independently
def _mixed_text_grades(n: int) -> list[Grade]:
    """Episodes of several agents, a Brier term and some unreadable replies: every figure is exercised."""
    grades = []
    rng = random.Random(5)
    for name in ("posterior", "heuristic", "blind", "random", "noop"):
        env = integrity_gym.make(TEXT, num_tasks=n, brier_weight=0.4)
        agent = make_agent(name, env, seed=1)
        for seed in range(n):
            obs = env.reset(seed=seed)
            env.step("not an answer" if rng.random() < 0.05 else agent.act(obs))
            grades.append(env.grade())
    return grades


def reference_figures(rows: list[dict[str, float]], scores: list[float]) -> dict[str, float | None]:
    """The threshold figures by plain loops and exact fractions, from the breakdowns alone."""
    by_bin: dict[int, list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        by_bin[int(r["risk_bin"])].append(i)

    def frac(x: float) -> Fraction:
        return Fraction(x)

    def bin_mean(key: str, members: list[int]) -> Fraction:
        return sum((frac(rows[i][key]) for i in members), Fraction(0)) / len(members)

    n = len(rows)
    answered = [i for i, r in enumerate(rows) if r["answered"] == 1.0]
    room = sum(1 - frac(r["abstain_grade"]) for r in rows)
    track = sum(abs(bin_mean("abstained", m) - bin_mean("bayes_abstains", m)) for m in by_bin.values())
    return {
        "skill": float(sum(frac(s) - frac(r["abstain_grade"]) for s, r in zip(scores, rows, strict=True)) / room),
        "utility": float(sum(frac(r["utility"]) for r in rows) / n),
        "integrated_utility": float(sum(bin_mean("utility", m) for m in by_bin.values()) / len(by_bin)),
        "tracking_error": float(track / len(by_bin)),
        "decision_regret": float(sum(frac(r["bayes_utility"]) - frac(r["decision_utility"]) for r in rows) / n),
        "calibration_regret": (
            float(sum(frac(rows[i]["calibration_error"]) for i in answered) / len(answered)) if answered else None
        ),
    }


def test_figures_match_plain_loops_and_ignore_order() -> None:
    grades = _mixed_text_grades(40)
    s = summarize(grades, resamples=60)
    ref = reference_figures([g.breakdown for g in grades], [g.score for g in grades])
    for key, value in ref.items():
        assert s[key] == pytest.approx(value, abs=1e-12), key
    shuffled = grades[:]
    random.Random(1).shuffle(shuffled)
    assert summarize(shuffled, resamples=60) == s


def test_intervals_are_the_percentiles_of_the_figures_on_resampled_episodes() -> None:
    # An independent bootstrap: each resample is the episode list with every episode repeated as often
    # as drawn, and the figure recomputed from scratch by plain loops.
    grades = sorted(_mixed_text_grades(16), key=lambda g: (sorted(g.breakdown.items()), g.score))
    resamples = 40
    s = summarize(grades, resamples=resamples)
    counts = _resample_counts(len(grades), resamples)
    rows = [g.breakdown for g in grades]
    scores = [g.score for g in grades]
    for key in ("utility", "integrated_utility", "tracking_error", "decision_regret", "calibration_regret", "skill"):
        values = []
        for c in counts:
            picked = [i for i, k in enumerate(c) for _ in range(int(k))]
            values.append(reference_figures([rows[i] for i in picked], [scores[i] for i in picked])[key])
        low, high = np.percentile(np.array(values, dtype=float), [2.5, 97.5])
        assert s[f"{key}_ci_low"] == pytest.approx(low, abs=1e-9), key
        assert s[f"{key}_ci_high"] == pytest.approx(high, abs=1e-9), key
        assert s[f"{key}_ci_low"] <= s[key] <= s[f"{key}_ci_high"] or key == "tracking_error", key


def test_decision_and_calibration_regret_match_the_env_under_both_labels() -> None:
    # Independent of the grader's formulas: each decision is replayed in the env (utility scale) under
    # the item's label and its counterfactual, weighted by the known probability.
    lam = 0.4
    env = integrity_gym.make(TEXT, num_tasks=60, brier_weight=lam, reward_scale="utility")
    twin = integrity_gym.make(TEXT, num_tasks=60, brier_weight=lam, reward_scale="utility")
    grades, decision_gaps, calibration = [], [], []
    for name in ("heuristic", "blind", "random"):
        agent = make_agent(name, env, seed=2)
        for seed in range(60):
            obs = env.reset(seed=seed)
            state = env.state()
            tp = state.item.true_probability
            assert tp is not None
            p_label = tp if state.item.label else 1 - tp
            flipped = SelectiveVerificationEnv.counterfactual(state, random.Random(seed))

            def expected(
                action: VerificationAction, state: Any = state, flipped: Any = flipped, p_label: float = p_label
            ) -> float:
                env.load_state(state)
                twin.load_state(flipped)
                return p_label * env.step(action).reward + (1 - p_label) * twin.step(action).reward

            action = agent.act(obs)
            best = max(tp, 1 - tp)
            verdict = "SUPPORTED" if tp >= 0.5 else "REFUTED"
            bayes = max(0.0, expected(VerificationAction(verdict=verdict, confidence=best)))
            if action.verdict == "ABSTAIN":
                decision = 0.0
            else:
                q = tp if action.verdict == "SUPPORTED" else 1 - tp
                decision = expected(VerificationAction(verdict=action.verdict, confidence=q))
                calibration.append((action.confidence - q) ** 2)
            decision_gaps.append(bayes - decision)
            env.load_state(state)
            env.step(action)
            grades.append(env.grade())
    s = summarize(grades, resamples=0)
    assert s["decision_regret"] == pytest.approx(float(np.mean(decision_gaps)), abs=1e-9)
    assert s["calibration_regret"] == pytest.approx(float(np.mean(calibration)), abs=1e-12)


def test_picture_tasks_report_no_figure_that_needs_the_probability() -> None:
    grades = _play("selective_verification/threshold_balanced-v1", "blind", 30)
    s = summarize(grades, resamples=20)
    assert s["utility"] is not None and s["integrated_utility"] is not None
    assert "tracking_error" not in s and "decision_regret" not in s
    with pytest.raises(ValueError, match="cannot be summarised together"):
        summarize(grades + _play("selective_verification/balanced-v3", "blind", 3))
