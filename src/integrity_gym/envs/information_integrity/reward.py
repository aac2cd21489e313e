"""Dense step rewards, with magnitudes loaded from a YAML preset.

The functions here are pure: they take counts and flags, not an environment; the environment adds
the step rewards to a running total clipped to ``[clip_min, clip_max]``; a step whose reward was
cut by the clip carries a ``clip`` component so that the breakdown still sums to the reward.
"""

from __future__ import annotations

import math
from importlib import resources
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from integrity_gym.core.env import validate_config
from integrity_gym.envs.information_integrity.models import DECISIONS, Decision

StepKind = Literal["verify_claim", "check_source", "decide", "invalid"]
PRESETS: tuple[str, ...] = ("default", "reference")


class RewardConfig(BaseModel):
    """Reward magnitudes. Penalties are negative numbers."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(default="custom", description="Preset name.")
    verify_claim: float = Field(ge=0, description="Per unique claim verified.")
    check_source: float = Field(ge=0, description="Per unique source checked.")
    multi_source_bonus: float = Field(ge=0, description="Once, when multi_source_min unique sources are checked.")
    multi_source_min: int = Field(ge=1, description="Unique sources that earn the bonus.")
    exploration_cap: float | None = Field(ge=0, description="Cap on the sum of the three rewards above; null = none.")
    correct_decision: float = Field(ge=0, description="Decision equals the label.")
    partial_decision: float = Field(ge=0, description="Decision one tier from the label.")
    reasoning: float = Field(
        0.0, ge=0, description="Paid × the reasoning's grade (as the grader scores it) with a right decision."
    )
    premature_decision: float = Field(le=0, description="Deciding before the minimum evidence.")
    grade_aligned: bool = Field(
        False,
        description="Keep the exploration rewards, and charge premature_decision, only when the decision is "
        "right with reasoning worth the grader's min_reasoning, the one case in which the grade counts evidence "
        "and efficiency; otherwise the episode's last step takes the exploration back and gives the inefficiency "
        "charges back (exploration_refund, inefficiency_refund).",
    )
    redundant_action: float = Field(le=0, description="Verifying or checking the same id again.")
    inefficiency: float = Field(le=0, description="Per step beyond efficient_step_threshold.")
    efficient_step_threshold: int | None = Field(
        ge=1, description="Steps allowed before the inefficiency penalty; null = claims + sources + 1."
    )
    over_aggression: float = Field(le=0, description="remove when the label is allow or flag.")
    invalid_action: float = Field(le=0, description="A rejected action (malformed or unknown id).")
    clip_min: float = Field(description="Lower clip of the episode total.")
    clip_max: float = Field(description="Upper clip of the episode total.")

    @model_validator(mode="after")
    def _check_clip(self) -> RewardConfig:
        if self.clip_min >= self.clip_max:
            raise ValueError(f"clip_min ({self.clip_min}) must be below clip_max ({self.clip_max})")
        return self


def load_reward_config(preset: str | Path = "default") -> RewardConfig:
    """Load a preset by name (``default``, ``reference``) or a YAML file by path."""
    if isinstance(preset, str) and preset in PRESETS:
        text = resources.files(__package__).joinpath("data", "rewards", f"{preset}.yaml").read_text("utf-8")
    elif Path(preset).is_file():
        text = Path(preset).read_text("utf-8")
    else:
        raise ValueError(f"reward_preset: {str(preset)!r} is neither a preset ({', '.join(PRESETS)}) nor a YAML file")
    data = yaml.safe_load(text)
    if not isinstance(data, dict):
        raise ValueError(f"reward_preset: {preset} must hold a YAML mapping of component -> value")
    config: RewardConfig = validate_config(RewardConfig, data)
    return config


def efficient_steps(config: RewardConfig, n_claims: int, n_sources: int) -> int:
    """Steps an episode may take before the inefficiency penalty starts."""
    if config.efficient_step_threshold is not None:
        return config.efficient_step_threshold
    return n_claims + n_sources + 1


def _round(value: float) -> float:
    return round(value, 10)


def decision_reward(config: RewardConfig, decision: Decision, label: Decision) -> dict[str, float]:
    """Decision components: decision_correct, decision_partial (one tier off), over_aggression."""
    out: dict[str, float] = {}
    distance = abs(DECISIONS.index(decision) - DECISIONS.index(label))
    # Component names differ from the config keys: "correct_decision" is a key the contract
    # suite treats as ground truth on the wire, and the breakdown travels in step info.
    if distance == 0:
        out["decision_correct"] = config.correct_decision
    elif distance == 1:
        out["decision_partial"] = config.partial_decision
    if decision == "remove" and label != "remove":
        out["over_aggression"] = config.over_aggression
    return out


def step_breakdown(
    config: RewardConfig,
    *,
    kind: StepKind,
    repeated: bool = False,
    sources_checked_after: int = 0,
    exploration_paid: float = 0.0,
    step_number: int,
    efficient: int,
    decision: Decision | None = None,
    label: Decision | None = None,
    premature: bool = False,
    reasoning: float = 0.0,
    reasoned: bool = True,
) -> dict[str, float]:
    """Reward components of one step, before the episode clip.

    ``step_number`` is 1-based; ``exploration_paid`` is what verify/check/bonus rewards paid before
    this step (for the cap); ``sources_checked_after`` counts unique sources after this step;
    ``reasoning`` is the decision's reasoning score in [0, 1] (``reasoning.grade_reasoning``) and
    ``reasoned`` whether it reaches the grader's ``min_reasoning``.
    """
    if kind == "invalid":
        return {"invalid_action": config.invalid_action}
    out: dict[str, float] = {}
    if kind in ("verify_claim", "check_source"):
        if repeated:
            out["redundant_action"] = config.redundant_action
        else:
            earned: dict[str, float] = {kind: config.verify_claim if kind == "verify_claim" else config.check_source}
            if kind == "check_source" and sources_checked_after == config.multi_source_min:
                earned["multi_source_bonus"] = config.multi_source_bonus
            room = math.inf if config.exploration_cap is None else config.exploration_cap - exploration_paid
            for name, value in earned.items():
                paid = max(0.0, min(value, room))
                room -= paid
                out[name] = _round(paid)
    else:
        if decision is None or label is None:
            raise ValueError("a decide step needs decision and label")
        out.update(decision_reward(config, decision, label))
        if decision == label and config.reasoning:
            out["reasoning"] = _round(config.reasoning * reasoning)
        if premature and (not config.grade_aligned or (decision == label and reasoned)):
            out["premature_decision"] = config.premature_decision
    if step_number > efficient:
        out["inefficiency"] = config.inefficiency
    return out


def settle(
    config: RewardConfig, *, exploration_paid: float, inefficiency_paid: float, counted: bool
) -> dict[str, float]:
    """Components of the episode's last step under ``grade_aligned``: take back what the grade will not count.

    ``counted`` is true when the episode ends with a right decision reasoned well enough for the
    grade to count evidence and efficiency. Otherwise the exploration rewards
    (``exploration_paid``: verify/check/bonus, this step included) are taken back
    (``exploration_refund``) and the inefficiency charges (``inefficiency_paid``, negative) given
    back (``inefficiency_refund``): such an episode returns what its decision and reasoning earned,
    less its wasted steps, as its grade counts only those.
    """
    if not config.grade_aligned or counted:
        return {}
    out = {}
    if exploration_paid > 0:
        out["exploration_refund"] = _round(-exploration_paid)
    if inefficiency_paid < 0:
        out["inefficiency_refund"] = _round(-inefficiency_paid)
    return out


def exploration_of(breakdown: dict[str, float]) -> float:
    """The part of a breakdown that counts towards the exploration cap."""
    return sum(breakdown.get(k, 0.0) for k in ("verify_claim", "check_source", "multi_source_bonus"))


def apply_clip(config: RewardConfig, total_before: float, breakdown: dict[str, float]) -> tuple[float, bool]:
    """Add ``breakdown`` to the clipped running total; return (step reward, whether clipped).

    When the clip cuts the step, a ``clip`` component is added to ``breakdown`` in place.
    """
    raw = sum(breakdown.values())
    after = min(config.clip_max, max(config.clip_min, total_before + raw))
    reward = _round(after - total_before)
    clipped = not math.isclose(reward, raw, abs_tol=1e-9)
    if clipped:
        breakdown["clip"] = _round(reward - raw)
    return reward, clipped
