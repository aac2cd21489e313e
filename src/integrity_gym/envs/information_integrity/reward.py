"""Dense step rewards, with magnitudes loaded from a YAML preset.

The functions here are pure: they take counts and flags, not an environment; the environment adds
the step rewards to a running total clipped to ``[clip_min, clip_max]``; a step whose reward was
cut by the clip carries a ``clip`` component so that the breakdown still sums to the reward.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from integrity_gym.core.env import validate_config
from integrity_gym.envs.information_integrity.models import DECISIONS, Decision

StepKind = Literal["verify_claim", "check_source", "decide", "invalid"]
#: Under ``grade_scale``, the component that pays each of the grade's dimensions.
GRADE_COMPONENTS: dict[str, str] = {
    "decision_correct": "decision_correct",
    "reasoning_depth": "reasoning",
    "evidence_breadth": "evidence",
    "efficiency": "efficiency",
}
PRESETS: tuple[str, ...] = ("default", "reference")


#: The fixed decision table of the reference design, which ``grade_scale`` replaces.
_FIXED_DECISION_TABLE = (
    "correct_decision",
    "partial_decision",
    "premature_decision",
    "inefficiency",
    "over_aggression",
)


class RewardConfig(BaseModel):
    """Reward magnitudes. Penalties are negative numbers."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(default="custom", description="Preset name.")
    verify_claim: float = Field(ge=0, description="Per unique claim verified.")
    check_source: float = Field(ge=0, description="Per unique source checked.")
    multi_source_bonus: float = Field(ge=0, description="Once, when multi_source_min unique sources are checked.")
    multi_source_min: int = Field(ge=1, description="Unique sources that earn the bonus.")
    exploration_cap: float | None = Field(ge=0, description="Cap on the sum of the three rewards above; null = none.")
    grade_scale: float | None = Field(
        None,
        gt=0,
        description="Set: the decide step pays grade_scale × each weighted term of the grade (decision_correct, "
        "reasoning, evidence, efficiency; nothing for a wrong decision), the exploration rewards are shaping "
        "that the episode's last step takes back (exploration_refund), and correct_decision, partial_decision, "
        "premature_decision, inefficiency and over_aggression are not used, so the return is exactly "
        "grade_scale × grade less the wasted steps. Null: the reference table's fixed amounts.",
    )
    correct_decision: float = Field(0.0, ge=0, description="Decision equals the label (grade_scale null).")
    partial_decision: float = Field(0.0, ge=0, description="Decision one tier from the label (grade_scale null).")
    premature_decision: float = Field(0.0, le=0, description="Deciding before the minimum evidence (grade_scale null).")
    redundant_action: float = Field(le=0, description="Verifying or checking the same id again.")
    inefficiency: float = Field(0.0, le=0, description="Per step beyond efficient_step_threshold (grade_scale null).")
    efficient_step_threshold: int | None = Field(
        None, ge=1, description="Steps allowed before the inefficiency penalty; null = claims + sources + 1."
    )
    over_aggression: float = Field(0.0, le=0, description="remove when the label is allow or flag (grade_scale null).")
    invalid_action: float = Field(le=0, description="A rejected action (malformed or unknown id).")
    clip_min: float = Field(description="Lower clip of the episode total.")
    clip_max: float = Field(description="Upper clip of the episode total.")

    @model_validator(mode="after")
    def _check_clip(self) -> RewardConfig:
        if self.clip_min >= self.clip_max:
            raise ValueError(f"clip_min ({self.clip_min}) must be below clip_max ({self.clip_max})")
        if self.grade_scale is not None:
            unused = [k for k in _FIXED_DECISION_TABLE if getattr(self, k) != 0]
            if unused:
                raise ValueError(
                    f"{', '.join(unused)}: not used with grade_scale (the decide step pays the grade's own terms); "
                    "remove them, or set grade_scale to null for the fixed table"
                )
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
    grade_terms: Mapping[str, float] | None = None,
) -> dict[str, float]:
    """Reward components of one step, before the episode clip.

    ``step_number`` is 1-based; ``exploration_paid`` is what verify/check/bonus rewards paid before
    this step (for the cap); ``sources_checked_after`` counts unique sources after this step;
    ``grade_terms`` are the weighted terms the grade will count for this decision
    (``Grader.terms``), paid × ``grade_scale`` when it is set.
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
    elif config.grade_scale is not None:
        if grade_terms is None:
            raise ValueError("a decide step under grade_scale needs the grade's terms (Grader.terms)")
        out.update({GRADE_COMPONENTS[k]: _round(config.grade_scale * v) for k, v in grade_terms.items()})
        return out
    else:
        if decision is None or label is None:
            raise ValueError("a decide step needs decision and label")
        out.update(decision_reward(config, decision, label))
        if premature:
            out["premature_decision"] = config.premature_decision
    if config.grade_scale is None and step_number > efficient:
        out["inefficiency"] = config.inefficiency
    return out


def settle(config: RewardConfig, *, exploration_paid: float) -> dict[str, float]:
    """Component of the episode's last step under ``grade_scale``: the exploration rewards taken back.

    Exploration is shaping there: it credits reading as it happens and sums to zero over the
    episode, so the return is the grade's own terms (× ``grade_scale``) less the wasted steps.
    ``exploration_paid`` is everything verify/check/bonus paid, this step included.
    """
    if config.grade_scale is None or exploration_paid <= 0:
        return {}
    return {"exploration_refund": _round(-exploration_paid)}


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
