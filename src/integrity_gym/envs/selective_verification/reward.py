"""Step reward of an answer: a proper score, the flat abstention payoff, or 0 when malformed.

Threshold tasks pay by their stated risk threshold instead (``risk.ThresholdRule``).
"""

from __future__ import annotations

from integrity_gym.envs.selective_verification.models import ScoringRule
from integrity_gym.envs.selective_verification.risk import ThresholdRule
from integrity_gym.envs.selective_verification.scoring import score


def answer_reward(
    verdict: str,
    confidence: float | None,
    label: bool,
    *,
    rule: ScoringRule,
    abstain_reward: float,
    epsilon: float,
) -> dict[str, float]:
    """Return the reward breakdown of a well-formed answer (its values sum to the reward)."""
    if verdict == "ABSTAIN":
        return {"abstain": abstain_reward}
    if confidence is None:
        raise ValueError(f"a {verdict} verdict needs a confidence")
    correct = (verdict == "SUPPORTED") == label
    return {f"{rule}_score": score(rule, confidence, correct, epsilon)}


def malformed_reward() -> dict[str, float]:
    """Return the breakdown of an unreadable answer: 0, never more than the lowest answer reward."""
    return {"malformed": 0.0}


def threshold_reward(
    verdict: str, confidence: float | None, label: bool, *, rule: ThresholdRule, t: float
) -> dict[str, float]:
    """Return the reward breakdown of a well-formed answer to an item stating risk threshold ``t``."""
    correct = verdict != "ABSTAIN" and (verdict == "SUPPORTED") == label
    return rule.to_reward(rule.utility(verdict, confidence, correct, t), t)
