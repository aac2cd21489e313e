"""The system prompt: the task, the answer format, the scoring rule, the payoff and q*."""

from __future__ import annotations

from integrity_gym.envs.selective_verification.models import Modality, ScoringRule

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
