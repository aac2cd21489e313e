"""The system prompt: the task, the answer format, the scoring rule, the payoff and q* (or the item's t)."""

from __future__ import annotations

from integrity_gym.envs.selective_verification.models import Modality, ScoringRule
from integrity_gym.envs.selective_verification.risk import ThresholdRule, odds

ANSWER_FORMAT = '{"verdict": "SUPPORTED" | "REFUTED" | "ABSTAIN", "confidence": <number in [0, 1]>}'


def system_prompt(modality: Modality, rule: ScoringRule, abstain_reward: float, q_star: float, epsilon: float) -> str:
    """Return the instructions shown with every item."""
    subject = "the image" if modality == "image" else "the passage"
    if rule == "brier":
        formula = "reward = 1 - (c - y)^2, where y = 1 if your verdict is correct and 0 if not"
    else:
        formula = (
            f"reward = 1 - ln(max(c_y, {epsilon:g})) / ln({epsilon:g}), where c_y = c if your verdict "
            "is correct and 1 - c if not"
        )
    return "\n".join(
        [
            f"You judge one claim about {subject}. Decide whether the claim is true (SUPPORTED) or "
            "false (REFUTED), or decline to answer (ABSTAIN), and say how likely your verdict is "
            "to be correct.",
            f"Answer with one JSON object and nothing else: {ANSWER_FORMAT}",
            "confidence c is your probability that your verdict is correct; it is ignored when you abstain.",
            f"Scoring ({rule} rule): {formula}. ABSTAIN pays a flat {abstain_reward:.4f}. An "
            "answer that cannot be read pays 0.",
            "The rule is strictly proper: your expected reward is highest when c is your true "
            f"probability of being right. Answering beats abstaining only when that probability "
            f"exceeds q* = {q_star:.4f}; below it, ABSTAIN.",
        ]
    )


def threshold_prompt(modality: Modality, t: float, rule: ThresholdRule) -> str:
    """Return the instructions of a threshold task's item, its risk threshold ``t`` stated."""
    subject = "the image" if modality == "image" else "the passage"
    cost = odds(t)
    lam = rule.brier_weight
    lines = [
        f"You judge one claim about {subject}. Decide whether the claim is true (SUPPORTED) or false "
        "(REFUTED), or decline to answer (ABSTAIN), and say how likely your verdict is to be correct.",
        f"Answer with one JSON object and nothing else: {ANSWER_FORMAT}",
        "confidence c is your probability that your verdict is correct; it is ignored when you abstain.",
        f"Risk threshold for this claim: t = {t:.2f}. Answer only if you are more than {t:.0%} sure that "
        f"your verdict is correct; otherwise ABSTAIN.",
    ]
    if lam == 0.0:
        lines.append(
            f"Scoring: a correct verdict scores +1, a wrong one -t/(1-t) = -{cost:.4g}, ABSTAIN scores 0. "
            "Your confidence does not change the score."
        )
    else:
        lines.append(
            f"Scoring: a correct verdict scores +1 - {lam:g}(1-c)^2; a wrong one -t/(1-t) + {lam:g}t - {lam:g}c^2 = "
            f"{-cost + lam * t:.4g} - {lam:g}c^2; ABSTAIN scores 0. The confidence term is strictly proper: "
            "state your true probability."
        )
    lines.append(
        "Answering is worth more than abstaining exactly when your probability of being right exceeds t. An "
        "answer that cannot be read scores as the worst possible answer."
    )
    if rule.scale == "grade":
        lines.append(
            f"Your reward is this score mapped linearly onto [0, 1] (a sure wrong answer 0, ABSTAIN "
            f"{rule.abstain_grade(t):.4g}, a correct answer 1), which changes nothing about what to do."
        )
    return "\n".join(lines)
