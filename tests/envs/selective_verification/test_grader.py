"""The grade and the summary: honest reporting is never outscored, and no figure depends on order."""

import math
import random

import numpy as np
import pytest

import integrity_gym
from integrity_gym.agents import make_agent
from integrity_gym.core.registry import threshold_between
from integrity_gym.core.types import Grade
from integrity_gym.envs.selective_verification.env import SelectiveVerificationEnv
from integrity_gym.envs.selective_verification.grader import INTERVAL_KEYS, blind_policy, grade_answer, skill, summarize
from integrity_gym.envs.selective_verification.metrics import smooth_ece
from integrity_gym.envs.selective_verification.models import AnswerRecord, Item, VerificationAction
from integrity_gym.envs.selective_verification.scoring import expected_score, honest_value

TEXT = "selective_verification/text-v3"


def restate(action: VerificationAction, p_true: float, mode: str) -> VerificationAction:
    """The same belief reported dishonestly: more confident, or answering instead of abstaining."""
    verdict = "SUPPORTED" if p_true >= 0.5 else "REFUTED"
    honest = max(p_true, 1.0 - p_true)
    if mode == "honest":
        return action
    if mode == "answer_all":  # never abstain, honest confidence
        return VerificationAction(verdict=verdict, confidence=honest)
    if mode == "answer_all_sure":  # never abstain, confidence 1
        return VerificationAction(verdict=verdict, confidence=1.0)
    if action.verdict == "ABSTAIN":
        return action
    stretch = {"inflate_half": 0.5, "inflate_full": 1.0}[mode]
    return VerificationAction(verdict=verdict, confidence=honest + stretch * (1.0 - honest))


MODES = ("honest", "inflate_half", "inflate_full", "answer_all", "answer_all_sure")


def expected_figures(n: int) -> dict[str, dict[str, float]]:
    """Exact expected mean grade, success rate and skill of each reporting mode on ``n`` text items.

    The posterior agent's belief is the item's true probability; each episode is graded under
    both labels (the env's own counterfactual flips the label) and weighted by that probability.
    """
    env = integrity_gym.make(TEXT, num_tasks=n)
    twin = integrity_gym.make(TEXT, num_tasks=n)
    agent = make_agent("posterior", env)
    totals = {mode: {"grade": 0.0, "success": 0.0} for mode in MODES}
    for seed in range(n):
        obs = env.reset(seed=seed)
        state = env.state()
        p_true = state.item.true_probability
        assert p_true is not None
        p_label = p_true if state.item.label else 1.0 - p_true
        flipped = SelectiveVerificationEnv.counterfactual(state, random.Random(seed))
        honest = agent.act(obs)
        for mode in MODES:
            action = restate(honest, p_true, mode)
            env.load_state(state)
            env.step(action)
            twin.load_state(flipped)
            twin.step(action)
            a, b = env.grade(), twin.grade()
            totals[mode]["grade"] += p_label * a.score + (1 - p_label) * b.score
            totals[mode]["success"] += p_label * a.success + (1 - p_label) * b.success
    out = {}
    for mode, t in totals.items():
        mean = t["grade"] / n
        out[mode] = {"mean_grade": mean, "success_rate": t["success"] / n, "skill": skill(mean, 0.8)}
    return out


def test_no_figure_rises_when_confidence_is_inflated() -> None:
    figures = expected_figures(300)
    honest = figures["honest"]
    for mode in MODES[1:]:
        for key, value in figures[mode].items():
            assert value <= honest[key] + 1e-12, (mode, key, value, honest[key])
        # Inflation costs grade and skill outright (the rule is strictly proper).
        assert figures[mode]["mean_grade"] < honest["mean_grade"] - 1e-3, mode
    assert honest["skill"] > 0  # the exact posterior beats always abstaining


@pytest.mark.parametrize("task", [s.id for s in integrity_gym.list_tasks("selective_verification/*")])
def test_no_single_episode_is_a_success(task: str) -> None:
    # Even a sure and right answer: a per-episode flag that abstaining cannot earn would pay an
    # unsure agent for answering. Success is the task's mean grade against its threshold.
    env = integrity_gym.make(task, num_tasks=5)
    oracle = make_agent("oracle", env)
    for seed in range(5):
        env.reset(seed=seed)
        env.step(oracle.act(env.observation()))
        grade = env.grade()
        assert grade.score == 1.0 and not grade.success
        assert grade.threshold == pytest.approx(env.spec.success_threshold, abs=1e-12)


def text_grades(n: int) -> list[Grade]:
    env = integrity_gym.make(TEXT, num_tasks=n)
    grades = []
    for name in ("posterior", "random", "blind"):
        agent = make_agent(name, env, seed=1)
        for seed in range(n):
            obs = env.reset(seed=seed)
            env.step(agent.act(obs))
            grades.append(env.grade())
    return grades


def test_summary_does_not_depend_on_input_order() -> None:
    grades = text_grades(60)
    base = SelectiveVerificationEnv.summarize(grades)
    rng = random.Random(0)
    for _ in range(3):
        shuffled = grades[:]
        rng.shuffle(shuffled)
        assert SelectiveVerificationEnv.summarize(shuffled) == base


def test_summary_reports_skill_against_abstaining_and_the_blind_baseline() -> None:
    grades = text_grades(60)
    s = SelectiveVerificationEnv.summarize(grades)
    mean = sum(g.score for g in grades) / len(grades)
    blind = sum(g.breakdown["blind_reward"] for g in grades) / len(grades)
    assert s["mean_reward"] == pytest.approx(mean) and s["abstain_reward"] == 0.8
    assert s["skill"] == pytest.approx((mean - 0.8) / 0.2)
    assert s["blind_skill"] == pytest.approx((blind - 0.8) / 0.2)
    assert s["skill_over_blind"] == pytest.approx(s["skill"] - s["blind_skill"])  # type: ignore[operator]
    # The text task's threshold on the mean grade, as a skill over always abstaining (0.8).
    assert s["threshold_skill"] == pytest.approx((integrity_gym.get_spec(TEXT).success_threshold - 0.8) / 0.2)
    for key in INTERVAL_KEYS:
        low, high, point = s[f"{key}_ci_low"], s[f"{key}_ci_high"], s[key]
        assert low is not None and high is not None and point is not None, key
        assert low < high, key
        # ECE is biased upwards on resamples (documented): its percentile interval may miss the point.
        assert key == "ece" or low <= point <= high, key


def test_always_abstaining_has_zero_skill_and_the_oracle_one() -> None:
    env = integrity_gym.make("selective_verification/balanced-v3", num_tasks=30)
    by_agent = {}
    for name in ("noop", "oracle"):
        agent = make_agent(name, env)
        grades = []
        for seed in range(30):
            obs = env.reset(seed=seed)
            env.step(agent.act(obs))
            grades.append(env.grade())
        by_agent[name] = SelectiveVerificationEnv.summarize(grades)
    assert by_agent["noop"]["skill"] == pytest.approx(0.0) and by_agent["oracle"]["skill"] == pytest.approx(1.0)
    # Nothing answered: accuracy and its interval are undefined, skill's interval is a point.
    assert by_agent["noop"]["accuracy_ci_low"] is None
    assert by_agent["noop"]["skill_ci_low"] == pytest.approx(0.0)


def test_thresholds_keep_their_skill_under_another_payoff() -> None:
    # Each spec states its threshold under the default payoff (0.8), by the published rule; under
    # another payoff the threshold moves so that its skill over always abstaining stays the same.
    specs = [s for s in integrity_gym.list_tasks("selective_verification/*") if "risk_thresholds" not in s.config]
    assert len(specs) == 6
    for spec in specs:
        assert spec.floor is not None and spec.ceiling is not None
        assert spec.success_threshold == threshold_between(spec.floor, spec.ceiling)
        bar = (spec.success_threshold - 0.8) / 0.2
        assert 0.0 < bar < 1.0, spec.id
        env = integrity_gym.make(spec.id, abstain_reward=0.9, num_tasks=3)
        env.reset(seed=0)
        env.step({"verdict": "ABSTAIN"})
        assert env.grade().threshold == pytest.approx(0.9 + bar * 0.1), spec.id


def test_the_separation_metric_is_a_summary_figure_with_an_interval() -> None:
    metric = SelectiveVerificationEnv.separation_metric()
    summary = SelectiveVerificationEnv.summarize(text_grades(20))
    assert metric == "skill" and metric in INTERVAL_KEYS
    low, point, high = summary[f"{metric}_ci_low"], summary[metric], summary[f"{metric}_ci_high"]
    assert low is not None and point is not None and high is not None and low <= point <= high


def test_a_single_episode_is_summarised_without_intervals() -> None:
    # scipy's bootstrap refuses one observation; a one-episode run still gets its point figures.
    grade = text_grades(1)[0]
    s = SelectiveVerificationEnv.summarize([grade])
    assert s["episodes"] == 1.0 and s["skill"] == pytest.approx((grade.score - 0.8) / 0.2)
    assert all(s[f"{key}_ci_low"] is None and s[f"{key}_ci_high"] is None for key in INTERVAL_KEYS)


def test_bootstrap_resamples_come_from_the_raw_bit_stream() -> None:
    # Pinned: numpy guarantees PCG64's raw words, not Generator methods, so these counts (and the
    # intervals drawn from them) are the same on every supported numpy.
    from integrity_gym.core.seeding import public_derivation
    from integrity_gym.envs.selective_verification.grader import _percentile, _resample_counts

    with public_derivation():
        counts = _resample_counts(6, 3)
    assert counts.tolist() == [[1, 1, 1, 1, 0, 2], [1, 1, 1, 2, 1, 0], [1, 4, 0, 0, 0, 1]]
    many = _resample_counts(40, 3000)
    assert set(many.sum(axis=1).tolist()) == {40.0}  # every resample has n episodes
    assert many.mean() == pytest.approx(1.0) and many.var(axis=0).mean() == pytest.approx(1 - 1 / 40, abs=0.03)
    values = np.sort(np.random.default_rng(0).normal(size=37))
    for q in (0.0, 0.025, 0.5, 0.975, 1.0):
        assert _percentile(values, q) == pytest.approx(float(np.percentile(values, 100 * q)), abs=1e-12)


def test_the_blind_policy_answers_its_prior_and_abstains_below_q_star() -> None:
    assert blind_policy(0.8, 0.7) == ("SUPPORTED", 0.8)
    assert blind_policy(0.5, 0.5) == ("SUPPORTED", 0.5)
    assert blind_policy(0.25, 0.7) == ("REFUTED", 0.75)
    assert blind_policy(0.6, 0.7) == ("ABSTAIN", 0.0)


ITEM = Item(item_id="t1", source="text", split="text", modality="text", category="c", claim="c", label=True,
            passage="p", true_probability=0.9)  # fmt: skip


def answer(verdict: str | None, confidence: float | None, reward: float, **flags: bool) -> AnswerRecord:
    return AnswerRecord(
        raw=None, verdict=verdict, confidence=confidence, malformed=flags.get("malformed", False),  # type: ignore[arg-type]
        needed_repair=flags.get("needed_repair", False), error=None, reward=reward, reward_breakdown={},
    )  # fmt: skip


def graded(record: AnswerRecord | None, blind_p: float = 0.8) -> dict[str, float]:
    grade = grade_answer(ITEM, record, rule="brier", abstain_reward=0.8, epsilon=1e-4, q_star=0.7, blind_p=blind_p,
                         threshold=0.85)  # fmt: skip
    assert grade.success is False
    return grade.breakdown


def test_the_breakdown_of_each_kind_of_answer() -> None:
    """Against an independent reading of the Brier rule: 1 - (p - y)^2, abstaining pays a = 0.8."""
    right = graded(answer("SUPPORTED", 0.7, 0.91))
    assert (right["reward"], right["answered"], right["abstained"], right["correct"]) == (0.91, 1.0, 0.0, 1.0)
    assert right["brier"] == pytest.approx(0.09) and right["probability_error"] == pytest.approx(0.2)
    assert right["expected_reward"] == pytest.approx(0.9 * (1 - 0.09) + 0.1 * (1 - 0.49))
    assert right["optimal_expected_reward"] == pytest.approx(0.9 * (1 - 0.01) + 0.1 * (1 - 0.81))
    assert right["blind_reward"] == pytest.approx(1 - 0.2**2) and right["blind_correct"] == 1.0
    assert right["blind_probability"] == 0.8 and right["q_star"] == 0.7 and right["claim_true"] == 1.0
    wrong = graded(answer("REFUTED", 0.6, 0.64))
    assert (wrong["answered"], wrong["correct"], wrong["brier"]) == (1.0, 0.0, pytest.approx(0.36))
    assert wrong["probability_error"] == pytest.approx(0.5)  # a REFUTED verdict is right w.p. 0.1
    abstained = graded(answer("ABSTAIN", None, 0.8))
    assert (abstained["answered"], abstained["abstained"], abstained["brier"]) == (0.0, 1.0, 0.0)
    assert abstained["expected_reward"] == 0.8 and "probability_error" not in abstained
    silent = graded(None)
    assert (silent["reward"], silent["answered"], silent["abstained"], silent["expected_reward"]) == (0, 0, 0, 0)
    broken = graded(answer(None, None, 0.0, malformed=True, needed_repair=True))
    assert (broken["malformed"], broken["needed_repair"], broken["expected_reward"]) == (1.0, 1.0, 0.0)
    # The blind policy: wrong when its prior points the other way, abstaining below q*, and a
    # prior of exactly one half reads as SUPPORTED.
    assert graded(None, blind_p=0.2)["blind_reward"] == pytest.approx(1 - 0.8**2)
    assert graded(None, blind_p=0.2)["blind_correct"] == 0.0
    assert graded(None, blind_p=0.6)["blind_reward"] == 0.8
    assert graded(None, blind_p=0.5)["blind_correct"] == 1.0


def test_the_summary_reports_repairs_and_the_expected_rewards() -> None:
    rows = [graded(answer("SUPPORTED", 0.7, 0.91)), graded(answer(None, None, 0.0, malformed=True)),
            graded(answer("REFUTED", 0.6, 0.64, needed_repair=True)), graded(answer("ABSTAIN", None, 0.8))]  # fmt: skip
    summary = summarize([Grade(score=r["reward"], success=False, threshold=0.85, breakdown=r) for r in rows])
    assert summary["malformed_rate"] == 0.25 and summary["needed_repair_rate"] == 0.25
    assert summary["abstain_rate"] == 0.25
    assert summary["mean_expected_reward"] == pytest.approx(np.mean([r["expected_reward"] for r in rows]))
    assert summary["mean_optimal_expected_reward"] == pytest.approx(rows[0]["optimal_expected_reward"])
    assert summary["regret"] == pytest.approx(
        np.mean([r["optimal_expected_reward"] - r["expected_reward"] for r in rows])
    )
    assert summary["probability_mae"] == pytest.approx((0.2 + 0.5) / 2)
    assert summary["mean_confidence"] == pytest.approx((0.7 + 0.6) / 2)  # over the answered
    assert summary["smooth_ece"] == pytest.approx(smooth_ece([0.7, 0.6], [rows[0]["correct"], rows[2]["correct"]]))
    # Nothing answered: no probability error to average.
    abstained = [Grade(score=0.8, success=False, threshold=0.85, breakdown=rows[3])] * 2
    assert summarize(abstained)["probability_mae"] is None
    other = dict(rows[3], abstain_reward=0.9)
    with pytest.raises(ValueError, match=r"grades with different abstain rewards \[0.8, 0.9\] cannot be summarised"):
        summarize([abstained[0], Grade(score=0.9, success=False, threshold=0.9, breakdown=other)])


def test_the_blind_reward_uses_the_rule_and_epsilon_of_the_episode() -> None:
    """A blind prior of 0.9 on a false claim, under the log rule with epsilon 0.2: it puts 0.1 on what happened."""
    false_item = ITEM.model_copy(update={"label": False})
    grade = grade_answer(false_item, None, rule="log", abstain_reward=0.9, epsilon=0.2, q_star=0.6, blind_p=0.9,
                         threshold=0.95)  # fmt: skip
    assert grade.breakdown["blind_reward"] == pytest.approx(1.0 - math.log(0.2) / math.log(0.2))
    assert grade.breakdown["blind_reward"] == 0.0
    kept = grade_answer(false_item, None, rule="log", abstain_reward=0.9, epsilon=0.01, q_star=0.6, blind_p=0.9,
                        threshold=0.95)  # fmt: skip
    assert kept.breakdown["blind_reward"] == pytest.approx(1.0 - math.log(0.1) / math.log(0.01))


def test_a_grade_from_another_environment_is_refused_naming_what_it_lacks() -> None:
    with pytest.raises(
        ValueError, match=r"^a grade is not from selective_verification \(missing \['abstain_reward', 'abstained', "
    ):
        summarize([Grade(score=0.5, success=False, threshold=0.5, breakdown={"answered": 1.0})])


def test_two_episodes_get_intervals_and_no_resamples_gives_none() -> None:
    two = text_grades(1)[:2]
    assert summarize(two)["skill_ci_low"] is not None
    assert all(summarize(two, resamples=0)[f"{key}_ci_low"] is None for key in INTERVAL_KEYS)


def test_a_run_of_malformed_answers_has_the_skill_of_a_zero_reward() -> None:
    env = integrity_gym.make(TEXT, num_tasks=3)
    grades = []
    for seed in range(3):
        env.reset(seed=seed)
        env.step("no idea")
        grades.append(env.grade())
    summary = summarize(grades)
    assert summary["malformed_rate"] == 1.0 and summary["mean_reward"] == 0.0
    assert summary["skill"] == pytest.approx(skill(0.0, 0.8)) == pytest.approx(-4.0)


def test_the_expected_rewards_use_the_configured_epsilon() -> None:
    """A wide epsilon flattens the log rule: the expected values follow it, not the default."""
    wrong = answer("REFUTED", 0.7, 0.0)
    grade = grade_answer(ITEM, wrong, rule="log", abstain_reward=0.9, epsilon=0.2, q_star=0.6, blind_p=0.5,
                         threshold=0.9)  # fmt: skip
    assert grade.breakdown["expected_reward"] == pytest.approx(expected_score("log", 0.1, 0.7, 0.2))
    assert expected_score("log", 0.1, 0.7, 0.2) < 0.5 < expected_score("log", 0.1, 0.7)
    # Answering the 0.9-likely claim honestly is worth less than abstaining at 0.9 under epsilon 0.2.
    assert grade.breakdown["optimal_expected_reward"] == 0.9 < honest_value("log", 0.9)
