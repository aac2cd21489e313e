"""Wire and data models of the pii_redaction environment."""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import Field, model_validator

from integrity_gym.core.types import Action, Observation, State, WireModel

Label = Literal["EMAIL", "PHONE", "SSN", "NAME", "ADDRESS", "DOB"]
LABELS: tuple[str, ...] = get_args(Label)
ActionType = Literal["REDACT", "NEXT_CHUNK", "PREV_CHUNK", "SKIP", "FINISH"]
ACTION_TYPES: tuple[str, ...] = get_args(ActionType)
Kind = Literal["contract", "clinical", "security"]


class Entity(WireModel):
    """One piece of personal data in a document: ``text[start:end]`` is exactly ``text``."""

    start: int = Field(ge=0, description="Absolute offset of the first character.")
    end: int = Field(gt=0, description="Absolute offset one past the last character.")
    label: Label = Field(description="PII category.")
    text: str = Field(min_length=1, description="The entity's characters, as they appear.")

    @model_validator(mode="after")
    def _check_length(self) -> Entity:
        if self.end - self.start != len(self.text):
            raise ValueError(f"entity {self.text!r}: end - start = {self.end - self.start} != len(text)")
        return self


class Document(WireModel):
    """A document to redact and its gold entities, validated against the text on load."""

    id: str = Field(description="Stable id; also the key of the train/eval partition.")
    kind: Kind = Field(description="Document family: contract (easy), clinical (medium), security (hard).")
    text: str = Field(min_length=1, description="Full document text.")
    entities: tuple[Entity, ...] = Field(description="Gold entities, sorted by start, non-overlapping.")

    @model_validator(mode="after")
    def _check_entities(self) -> Document:
        previous_end = 0
        for entity in self.entities:
            if entity.end > len(self.text):
                raise ValueError(f"document {self.id}: entity {entity.text!r} ends past the text")
            if self.text[entity.start : entity.end] != entity.text:
                found = self.text[entity.start : entity.end]
                raise ValueError(
                    f"document {self.id}: text[{entity.start}:{entity.end}] is {found!r}, "
                    f"but the entity says {entity.text!r}"
                )
            if entity.start < previous_end:
                raise ValueError(f"document {self.id}: entity {entity.text!r} overlaps the one before it")
            previous_end = entity.end
        return self


class RedactionAction(Action):
    """One agent action. ``REDACT`` needs absolute ``start``, ``end`` and ``label``."""

    action_type: ActionType = Field(description="REDACT, NEXT_CHUNK, PREV_CHUNK, SKIP or FINISH.")
    start: int | None = Field(default=None, description="REDACT only: absolute start offset.")
    end: int | None = Field(default=None, description="REDACT only: absolute end offset (exclusive).")
    label: Label | None = Field(default=None, description="REDACT only: PII category of the span.")

    @model_validator(mode="after")
    def _check_fields(self) -> RedactionAction:
        spanned = (self.start, self.end, self.label)
        if self.action_type == "REDACT":
            missing = [n for n, v in zip(("start", "end", "label"), spanned, strict=True) if v is None]
            if missing:
                raise ValueError(f"REDACT needs {', '.join(missing)}")
        elif any(v is not None for v in spanned):
            raise ValueError(f"{self.action_type} takes no start, end or label")
        return self

    def __str__(self) -> str:
        if self.action_type == "REDACT":
            return f"REDACT({self.start},{self.end},{self.label})"
        return self.action_type


class RedactionObservation(Observation):
    """What the agent sees: one window of the document, its own redactions, and progress."""

    visible_text: str = Field(
        description="Window of the document starting at cursor_position. Redacted characters are "
        "masked one for one ('[REDACTED]' then '█' for spans of 10+ characters, '█' only for "
        "shorter ones), so every offset stays valid."
    )
    cursor_position: int = Field(ge=0, description="Absolute offset of the window's first character.")
    window_size: int = Field(ge=1, description="Characters per window.")
    document_length: int = Field(ge=1, description="Characters in the whole document.")
    redacted_spans: list[tuple[int, int]] = Field(description="Every (start, end) committed so far, in order.")
    progress_pct: float = Field(ge=0.0, le=1.0, description="window end / document length.")
    previous_actions: list[str] = Field(description="The last five actions, oldest first.")
    step_count: int = Field(ge=0, description="Steps taken so far.")
    steps_left: int = Field(ge=0, description="Steps remaining in the budget.")


class Redaction(WireModel):
    """A committed redaction."""

    start: int = Field(ge=0, description="Absolute start offset.")
    end: int = Field(gt=0, description="Absolute end offset (exclusive).")
    label: Label = Field(description="Label the agent gave.")


class RedactionState(State):
    """Full internal state, ground truth included."""

    config: dict[str, Any] = Field(description="Resolved episode configuration.")
    document: Document = Field(description="The document and its gold entities.")
    cursor_position: int = Field(ge=0, description="Window start.")
    redactions: list[Redaction] = Field(description="Committed redactions, in order.")
    action_log: list[str] = Field(description="Every action taken, as text.")
    trailing_skips: int = Field(ge=0, description="Consecutive SKIP actions at the end of the log.")
    finished: bool = Field(description="True after FINISH.")
    total_reward: float = Field(description="Sum of step rewards so far.")
