import math

import numpy as np
import pytest

from integrity_gym.envs.selective_verification.env import VerificationConfig
from integrity_gym.envs.selective_verification.reward import answer_reward
from integrity_gym.envs.selective_verification.scoring import (
    DEFAULT_Q_STAR,
    answer_floor,
    check_abstain_reward,
    default_abstain_reward,
    expected_score,
    honest_value,
    q_star,
    score,
)

GRID = np.round(np.linspace(0.0, 1.0, 1001), 3)


@pytest.mark.parametrize("rule", ["brier", "log"])
@pytest.mark.parametrize("belief", [0.05, 0.2, 0.5, 0.6, 0.7236, 0.8, 0.93, 0.99])
def test_rules_are_strictly_proper(rule: str, belief: float) -> None:
    expected = np.array([expected_score(rule, belief, float(p)) for p in GRID])  # type: ignore[arg-type]
    best = GRID[int(np.argmax(expected))]
    assert best == pytest.approx(belief, abs=1e-3)
    # strictly: every report more than a grid step away earns strictly less
    far = np.abs(GRID - belief) > 2e-3
    assert np.all(expected[far] < expected.max())


@pytest.mark.parametrize("rule", ["brier", "log"])
def test_rewards_lie_in_unit_interval_and_malformed_never_pays_more(rule: str) -> None:
    rewards = [score(rule, float(p), c) for p in GRID for c in (True, False)]  # type: ignore[arg-type]
    assert min(rewards) >= 0.0 and max(rewards) <= 1.0
    assert min(rewards) == pytest.approx(0.0)  # the malformed payoff (0) equals the lowest answer reward


def test_q_star_of_brier_default() -> None:
    assert q_star("brier", 0.8) == pytest.approx(0.7236, abs=5e-5)
    assert pytest.approx((1 + math.sqrt(0.2)) / 2) == DEFAULT_Q_STAR
    assert honest_value("brier", q_star("brier", 0.8)) == pytest.approx(0.8)


def test_log_default_reproduces_the_threshold() -> None:
    a = default_abstain_reward("log")
    assert answer_floor("log") == pytest.approx(1 - math.log(0.5) / math.log(1e-4))
    assert answer_floor("log") == pytest.approx(0.9247, abs=5e-5)
    assert q_star("log", a) == pytest.approx(q_star("brier", 0.8), abs=1e-9)
    for eps in (1e-2, 1e-6):
        assert q_star("log", default_abstain_reward("log", eps), eps) == pytest.approx(DEFAULT_Q_STAR, abs=1e-9)


@pytest.mark.parametrize("rule", ["brier", "log"])
def test_abstaining_is_optimal_exactly_below_q_star(rule: str) -> None:
    a = default_abstain_reward(rule)  # type: ignore[arg-type]
    qs = q_star(rule, a)  # type: ignore[arg-type]
    for q in np.linspace(0.5, 1.0, 101):
        assert (honest_value(rule, float(q)) < a) == (q < qs - 1e-12)  # type: ignore[arg-type]


@pytest.mark.parametrize(("rule", "a"), [("brier", 0.75), ("brier", 0.55), ("log", 0.9), ("brier", 1.0)])
def test_dominated_or_useless_payoff_is_refused(rule: str, a: float) -> None:
    with pytest.raises(ValueError, match=r"q\*"):
        check_abstain_reward(rule, a)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="abstain_reward"):
        VerificationConfig(scoring_rule=rule, abstain_reward=a)  # type: ignore[arg-type]


def test_config_picks_the_per_rule_default() -> None:
    assert VerificationConfig().payoff == 0.8
    log = VerificationConfig(scoring_rule="log")
    assert log.payoff == pytest.approx(default_abstain_reward("log"))
    assert log.threshold == pytest.approx(VerificationConfig().threshold)


def test_rule_arguments_are_checked_at_their_bounds() -> None:
    with pytest.raises(ValueError, match=r"epsilon must be in \(0, 0.5\), got 0.5"):
        score("log", 0.9, True, epsilon=0.5)
    assert score("log", 0.9, True, epsilon=0.49) > 0
    with pytest.raises(ValueError, match=r"confidence must be in \[0, 1\], got 1.5"):
        score("brier", 1.5, True)
    with pytest.raises(ValueError, match=r"belief must be in \[0, 1\], got 1.5"):
        expected_score("brier", 1.5, 0.9)


def test_expected_and_honest_values_use_the_given_epsilon() -> None:
    """Against the log rule written out: 1 - ln(max(p, eps)) / ln(eps)."""
    eps = 0.01

    def log_rule(p: float) -> float:
        return 1.0 - math.log(max(p, eps)) / math.log(eps)

    assert expected_score("log", 0.8, 0.7, eps) == pytest.approx(0.8 * log_rule(0.7) + 0.2 * log_rule(0.3))
    assert expected_score("log", 0.9, 1.0, eps) == pytest.approx(0.9 * log_rule(1.0) + 0.1 * log_rule(0.0))
    assert honest_value("log", 0.25, eps) == pytest.approx(0.75 * log_rule(0.75) + 0.25 * log_rule(0.25))


def test_the_environment_pays_the_log_score_with_its_configured_epsilon() -> None:
    import integrity_gym

    env = integrity_gym.make("selective_verification/text-v3", scoring_rule="log", epsilon=0.01)
    env.reset(seed=3)
    env.step({"verdict": "SUPPORTED", "confidence": 0.5})
    wrong = "REFUTED" if env.grade().breakdown["claim_true"] == 1.0 else "SUPPORTED"
    env.reset(seed=3)
    # A sure wrong answer puts 0.001 on what happened, clipped to epsilon: 1 - ln(0.01)/ln(0.01) = 0
    # (0.25 under the default epsilon 1e-4).
    assert env.step({"verdict": wrong, "confidence": 0.999}).reward == pytest.approx(0.0)


def test_errors_name_what_is_wrong() -> None:
    with pytest.raises(ValueError, match=r"^scoring_rule must be 'brier' or 'log', not 'hinge'$"):
        score("hinge", 0.5, True)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^a REFUTED verdict needs a confidence$"):
        answer_reward("REFUTED", None, True, rule="brier", abstain_reward=0.8, epsilon=1e-4)


def test_the_domain_edges_of_epsilon_and_belief() -> None:
    with pytest.raises(ValueError, match=r"^epsilon must be in \(0, 0.5\), got 0.0$"):
        score("log", 0.5, True, epsilon=0.0)
    assert expected_score("brier", 0.0, 0.0) == pytest.approx(1.0)  # certain it is false, and says so
