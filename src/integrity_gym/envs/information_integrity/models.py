"""Wire and data models of the information_integrity environment.

A scenario stores *facts* (claim verdicts; each source's stance, reliability, date, type and satire
flag; the topic's harm level). Its label is not an opinion stored beside them: it is the output
of the published rule ``rules.decide(rules.aggregate(facts))``, and loaders refuse a scenario
whose stored label disagrees with the rule.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal, get_args

from pydantic import Field, model_validator

from integrity_gym.core.types import Action, Observation, State, WireModel

Decision = Literal["allow", "flag", "remove"]
DECISIONS: tuple[Decision, ...] = get_args(Decision)
Verdict = Literal["true", "false", "partially_true", "unknown"]
VERDICTS: tuple[Verdict, ...] = get_args(Verdict)
Stance = Literal["supports", "refutes", "neutral"]
STANCES: tuple[Stance, ...] = get_args(Stance)
SourceType = Literal["official", "academic", "news", "blog", "social", "satire"]
SOURCE_TYPES: tuple[SourceType, ...] = get_args(SourceType)
Harm = Literal["low", "medium", "high"]
HARMS: tuple[Harm, ...] = get_args(Harm)
Difficulty = Literal["easy", "medium", "hard"]
DIFFICULTIES: tuple[Difficulty, ...] = get_args(Difficulty)
ActionType = Literal["verify_claim", "check_source", "decide"]
ACTION_TYPES: tuple[ActionType, ...] = get_args(ActionType)
ClaimStatus = Literal["unverified", "true", "false", "partially_true", "unknown"]
Origin = Literal["gold", "generated", "user"]

_ID_PATTERN = r"^[A-Za-z][A-Za-z0-9_-]{0,39}$"


class ClaimFact(WireModel):
    """One checkable claim in the post and the verdict a fact-check returns for it."""

    id: str = Field(pattern=_ID_PATTERN, description="Claim id, e.g. 'claim_1'.")
    text: str = Field(min_length=1, description="The claim in one sentence.")
    verdict: Verdict = Field(description="Fact-check verdict: true, false, partially_true or unknown.")
    confidence: float = Field(ge=0.0, le=1.0, description="Confidence of the fact-check in its verdict.")


class SourceFact(WireModel):
    """One source retrieved about a claim, with the facts that decide how much it counts."""

    id: str = Field(pattern=_ID_PATTERN, description="Source id, e.g. 'src_1'.")
    claim_id: str = Field(description="Id of the claim this source speaks to.")
    title: str = Field(min_length=1, description="Headline or page title (visible before checking).")
    url: str = Field(min_length=1, description="Where the source lives (visible before checking).")
    text: str = Field(min_length=1, description="Excerpt of the source (hidden until check_source).")
    stance: Stance = Field(description="What the source says about its claim: supports, refutes or neutral.")
    reliability: float = Field(ge=0.0, le=1.0, description="Track-record reliability of the outlet, 0..1.")
    source_type: SourceType = Field(description="Kind of outlet.")
    date: dt.date = Field(description="Publication date (ISO 8601).")
    satire: bool = Field(default=False, description="True for satire or parody; such sources carry no weight.")


class Scenario(WireModel):
    """A post to moderate, the facts behind it, and its derived label.

    The published JSON schema of this model (``data/scenario.schema.json``) is what user scenario
    files are validated against.
    """

    id: str = Field(pattern=_ID_PATTERN, description="Stable scenario id.")
    difficulty: Difficulty = Field(description="Tier: easy, medium or hard.")
    topic: str = Field(min_length=1, description="Short topic line.")
    content: str = Field(min_length=1, description="The post under review.")
    harm: Harm = Field(description="Harm level of the topic if a false claim spreads: low, medium or high.")
    as_of: dt.date = Field(description="Date of review; sources older than the staleness window are outdated.")
    claims: tuple[ClaimFact, ...] = Field(min_length=1, description="Claims in the post.")
    sources: tuple[SourceFact, ...] = Field(min_length=2, description="Sources available to check.")
    label: Decision | None = Field(
        default=None,
        description="allow, flag or remove. Optional in user files (then derived); if given it must "
        "equal rules.decide(rules.aggregate(...)).",
    )
    family: str = Field(default="handwritten", description="Template family (generated) or 'handwritten'.")
    origin: Origin = Field(default="user", description="gold, generated or user.")
    notes: str = Field(default="", description="Free notes for reviewers; never shown to the agent.")

    @model_validator(mode="after")
    def _check_ids(self) -> Scenario:
        claim_ids = [c.id for c in self.claims]
        source_ids = [s.id for s in self.sources]
        for name, ids in (("claims", claim_ids), ("sources", source_ids)):
            dupes = sorted({i for i in ids if ids.count(i) > 1})
            if dupes:
                raise ValueError(f"{name}: duplicate id(s) {', '.join(dupes)}")
        shared = sorted(set(claim_ids) & set(source_ids))
        if shared:
            raise ValueError(f"ids used for both a claim and a source: {', '.join(shared)}")
        for i, source in enumerate(self.sources):
            if source.claim_id not in claim_ids:
                raise ValueError(f"sources.{i}.claim_id: {source.claim_id!r} is not one of the claims {claim_ids}")
        return self

    def claim(self, claim_id: str) -> ClaimFact:
        """The claim with id ``claim_id`` (KeyError if absent)."""
        for claim in self.claims:
            if claim.id == claim_id:
                return claim
        raise KeyError(claim_id)

    def source(self, source_id: str) -> SourceFact:
        """The source with id ``source_id`` (KeyError if absent)."""
        for source in self.sources:
            if source.id == source_id:
                return source
        raise KeyError(source_id)


class IntegrityAction(Action):
    """One action: verify a claim, check a source, or decide (which ends the episode)."""

    type: ActionType = Field(description="verify_claim, check_source or decide.")
    claim_id: str | None = Field(default=None, description="verify_claim only: the claim to verify.")
    source_id: str | None = Field(default=None, description="check_source only: the source to read.")
    decision: Decision | None = Field(default=None, description="decide only: allow, flag or remove.")
    reasoning: str | None = Field(
        default=None,
        max_length=20_000,
        description="Optional. On decide it is graded: typed statements such as 'src_2 refutes "
        "claim_1', 'claim_1 is false', 'harm is high' (see the README).",
    )

    @model_validator(mode="after")
    def _check_fields(self) -> IntegrityAction:
        needed = {"verify_claim": "claim_id", "check_source": "source_id", "decide": "decision"}[self.type]
        given = {n: getattr(self, n) for n in ("claim_id", "source_id", "decision")}
        if given[needed] is None:
            raise ValueError(f"{self.type} needs {needed}")
        extra = [n for n, v in given.items() if v is not None and n != needed]
        if extra:
            raise ValueError(f"{self.type} takes {needed} only, not {', '.join(extra)}")
        return self

    def __str__(self) -> str:
        target = self.claim_id or self.source_id or self.decision
        return f"{self.type}({target})"


class ClaimView(WireModel):
    """A claim as the agent sees it; the status stays 'unverified' until verify_claim."""

    id: str = Field(description="Claim id.")
    text: str = Field(description="The claim.")
    verification_status: ClaimStatus = Field(description="'unverified', or the verdict once verified.")
    confidence: float = Field(ge=0.0, le=1.0, description="Fact-check confidence; 0 until verified.")


class SourceView(WireModel):
    """A source as the agent sees it: title and url always, the rest after check_source."""

    id: str = Field(description="Source id.")
    claim_id: str = Field(description="Claim the source was retrieved for.")
    title: str = Field(description="Headline or page title.")
    url: str = Field(description="Where the source lives.")
    checked: bool = Field(description="True once check_source has been called on it.")
    text: str | None = Field(default=None, description="Excerpt (after checking).")
    stance: Stance | None = Field(default=None, description="supports / refutes / neutral (after checking).")
    reliability: float | None = Field(default=None, description="Outlet reliability 0..1 (after checking).")
    source_type: SourceType | None = Field(default=None, description="Kind of outlet (after checking).")
    date: str | None = Field(default=None, description="Publication date, ISO 8601 (after checking).")
    satire: bool | None = Field(default=None, description="Satire or parody (after checking).")


class StatusFlags(WireModel):
    """Episode flags shown to the agent."""

    decision_made: bool = Field(description="True once decide was called.")
    sufficient_evidence: bool = Field(description="True once the minimum evidence has been gathered.")
    premature_decision: bool = Field(description="True if the decision came before sufficient evidence.")
    redundant_actions: int = Field(ge=0, description="Repeated verify/check actions so far.")
    max_steps_reached: bool = Field(description="True if the step budget ran out.")


class HistoryEntry(WireModel):
    """One line of the interaction history."""

    step: int = Field(ge=1, description="Step number (1-based).")
    action: str = Field(description="The action as text, e.g. 'check_source(src_2)'.")
    outcome: str = Field(description="What happened: revealed, repeated, decided, or the error.")
    reward: float = Field(description="Reward of the step.")
    reasoning: str | None = Field(default=None, description="Reasoning sent with the action, if any.")


class IntegrityObservation(Observation):
    """What the agent sees. Hidden facts appear only after the action that reveals them.

    No episode id: it is a hash of the seed, and a seed found by searching hashes rebuilds the
    generated scenario, label included, from the public code. The id stays in the (admin) state.
    """

    content: str = Field(description="The post under review.")
    topic: str = Field(description="Short topic line.")
    harm_level: Harm = Field(description="Harm level of the topic (moderation policy input).")
    review_date: str = Field(description="Date of review (ISO 8601); sources much older are outdated.")
    claims: list[ClaimView] = Field(description="Claims in the post.")
    available_sources: list[SourceView] = Field(description="Sources that can be checked.")
    interaction_history: list[HistoryEntry] = Field(description="Every step so far, oldest first.")
    status_flags: StatusFlags = Field(description="Episode flags.")
    step_count: int = Field(ge=0, description="Steps taken so far (invalid ones included).")
    steps_left: int = Field(ge=0, description="Steps remaining in the budget.")
    task_difficulty: Difficulty = Field(description="Tier of the scenario.")


class IntegrityState(State):
    """Full internal state, ground truth included; enough to rebuild the episode."""

    config: dict[str, Any] = Field(description="Resolved episode configuration.")
    scenario: Scenario = Field(description="The scenario with every hidden fact and its label.")
    difficulty: Difficulty = Field(description="Tier the episode is graded as.")
    max_steps: int = Field(ge=1, description="Step budget.")
    verified: list[str] = Field(description="Claim ids verified, in order.")
    checked: list[str] = Field(description="Source ids checked, in order.")
    history: list[HistoryEntry] = Field(description="Interaction history.")
    decision: Decision | None = Field(description="Final decision, if made.")
    reasoning: str | None = Field(description="Reasoning sent with the decision.")
    premature: bool = Field(description="The decision came before sufficient evidence.")
    redundant: int = Field(ge=0, description="Repeated verify/check actions.")
    invalid: int = Field(ge=0, description="Rejected actions.")
    exploration_paid: float = Field(description="Exploration reward paid so far (before clipping).")
    total_reward: float = Field(description="Sum of step rewards so far (clipped running total).")
    max_steps_reached: bool = Field(description="The step budget ran out.")
