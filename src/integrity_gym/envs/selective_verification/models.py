"""Wire and data models of the selective_verification environment."""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import Field

from integrity_gym.core.types import Action, Observation, State, WireModel

Verdict = Literal["SUPPORTED", "REFUTED", "ABSTAIN"]
VERDICTS: tuple[str, ...] = get_args(Verdict)
Split = Literal["balanced", "random", "popular", "adversarial", "all"]
SPLITS: tuple[str, ...] = get_args(Split)
Difficulty = Literal["easy", "medium", "hard"]
DIFFICULTIES: tuple[str, ...] = get_args(Difficulty)
Modality = Literal["image", "text"]
ScoringRule = Literal["brier", "log"]
#: The rule an observation states: a proper scoring rule with a flat abstention payoff, or the
#: stated risk threshold of the threshold tasks (``risk.py``).
StatedRule = Literal["brier", "log", "threshold"]


class VerificationAction(Action):
    """The answer: a verdict on the claim and the probability that this verdict is correct."""

    verdict: Verdict = Field(description="SUPPORTED (the claim is true), REFUTED (false) or ABSTAIN.")
    confidence: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="Probability that the verdict is correct; required unless abstaining, ignored when abstaining.",
    )

    def __str__(self) -> str:
        if self.verdict == "ABSTAIN":
            return "ABSTAIN"
        return f"{self.verdict}({self.confidence})"


class VerificationObservation(Observation):
    """One claim to judge, the image (or passage) it is about, and how answers are scored."""

    item_id: str = Field(description="Stable id of the item (says nothing about the answer).")
    modality: Modality = Field(description="'image' (judge the picture) or 'text' (judge the passage).")
    claim: str = Field(description="The claim to judge.")
    image: str | None = Field(description="The picture as a 'data:image/png;base64,...' URL (image items).")
    image_width: int | None = Field(description="Picture width in pixels (image items).")
    image_height: int | None = Field(description="Picture height in pixels (image items).")
    passage: str | None = Field(description="The passage the claim is about (text items).")
    system_prompt: str = Field(description="Instructions: answer format, scoring rule, payoff, threshold.")
    scoring_rule: StatedRule = Field(
        description="Proper scoring rule applied to answered verdicts, or 'threshold' (the stated risk threshold)."
    )
    abstain_reward: float = Field(description="Flat reward paid for ABSTAIN.")
    threshold: float = Field(
        description="Answering beats abstaining only when P(correct) exceeds it: q* of the flat payoff, or the "
        "risk threshold t this item states (threshold tasks)."
    )
    epsilon: float = Field(description="Clip of the log score (log rule only; reported either way).")


class SceneObject(WireModel):
    """One drawn object: where it is, how it is drawn, and how much of it can be seen."""

    category: str = Field(description="COCO category of the object.")
    x: int = Field(description="Left edge of the rotated glyph's paste position, in pixels.")
    y: int = Field(description="Top edge of the rotated glyph's paste position, in pixels.")
    size: int = Field(ge=4, description="Longest side of the glyph before rotation, in pixels.")
    angle: float = Field(description="Rotation in degrees, counter-clockwise.")
    box: tuple[int, int, int, int] = Field(description="Bounding box (x0, y0, x1, y1) of its opaque pixels.")
    visible_fraction: float = Field(ge=0.0, le=1.0, description="Share of its pixels not covered by later objects.")
    shadow: tuple[int, int, int] | None = Field(
        default=None, description="RGB its darkest shading is drawn in; None draws the glyph's own colours (v1)."
    )
    highlight: tuple[int, int, int] | None = Field(
        default=None, description="RGB its lightest shading is drawn in; None draws the glyph's own colours (v1)."
    )


class Clutter(WireModel):
    """A distracting shape drawn under the objects."""

    shape: Literal["ellipse", "rectangle"] = Field(description="Kind of shape.")
    box: tuple[int, int, int, int] = Field(description="Bounding box (x0, y0, x1, y1).")
    color: tuple[int, int, int, int] = Field(description="RGBA colour.")


class Scene(WireModel):
    """A generated picture: everything needed to draw it, plus its annotations."""

    image_id: str = Field(description="Stable id of the picture; key of the train/eval partition.")
    scene_type: str = Field(description="Kind of place (kitchen, street, ...), drives co-occurrence.")
    difficulty: Difficulty = Field(description="Rendering difficulty: object size, rotation, occlusion, clutter.")
    width: int = Field(ge=16, description="Width in pixels.")
    height: int = Field(ge=16, description="Height in pixels.")
    background: tuple[int, int, int] = Field(description="Background RGB colour (drawn apart from the scene type).")
    render_seed: int = Field(ge=0, description="Seed of the gradient, texture and pixel noise.")
    clutter: tuple[Clutter, ...] = Field(description="Distracting shapes, drawn first.")
    objects: tuple[SceneObject, ...] = Field(description="Objects in drawing order (later ones on top).")


class Item(WireModel):
    """One claim with its picture or passage and the truth about it (never shown to the agent)."""

    item_id: str = Field(description="Stable id of the item.")
    source: Literal["generated", "text", "pope"] = Field(description="Where the item comes from.")
    split: str = Field(description="Sampler that produced the claim: balanced, random, popular, adversarial, text.")
    modality: Modality = Field(description="'image' or 'text'.")
    category: str = Field(description="Object the claim is about.")
    claim: str = Field(description="The claim shown to the agent.")
    label: bool = Field(description="True when the claim is true.")
    scene: Scene | None = Field(default=None, description="The generated picture (generated items).")
    image_path: str | None = Field(default=None, description="Picture file on disk (POPE items).")
    passage: str | None = Field(default=None, description="The passage (text items).")
    true_probability: float | None = Field(
        default=None, ge=0.0, le=1.0, description="Exact probability that the claim is true given the passage."
    )


class AnswerRecord(WireModel):
    """What the agent answered and what it earned."""

    raw: str | None = Field(description="The raw answer text (truncated), if the agent sent text.")
    verdict: Verdict | None = Field(description="Parsed verdict; None when the answer was malformed.")
    confidence: float | None = Field(description="Parsed confidence; None when abstaining or malformed.")
    malformed: bool = Field(description="True when the answer could not be parsed (it pays 0).")
    needed_repair: bool = Field(description="True when the answer parsed only after repairing near-JSON.")
    error: str | None = Field(description="Why the answer was malformed, if it was.")
    reward: float = Field(description="Reward paid.")
    reward_breakdown: dict[str, float] = Field(description="Reward components (they sum to reward).")


class VerificationState(State):
    """Full internal state, ground truth included."""

    config: dict[str, Any] = Field(description="Resolved episode configuration.")
    index: int = Field(ge=0, description="Index of the item within the task's item list.")
    item: Item = Field(description="The item, truth included.")
    answer: AnswerRecord | None = Field(description="The answer, once given.")
