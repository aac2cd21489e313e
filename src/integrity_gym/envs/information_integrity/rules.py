"""The published labelling rule: ``decide(aggregate(scenario))``.

Every scenario's label is derived from its facts by this module alone, so a label can always be
explained and never silently disagrees with the evidence.

1. A source is *usable* unless it is satire or outdated (published more than
   ``STALE_AFTER_DAYS`` before the review date).
2. For each claim, usable sources that take a side are weighed by reliability:
   ``balance = Σ reliability·sign / Σ reliability`` with supports = +1, refutes = −1.
   The evidence is *contested* when at least one trusted source (reliability ≥
   ``TRUSTED_RELIABILITY``) supports the claim and another trusted source refutes it; otherwise
   *supported* if balance ≥ ``LEAN``, *refuted* if balance ≤ −``LEAN``, else *inconclusive*.
3. A claim's status comes from its fact-check verdict when the verdict is known (false, true,
   partially_true → misleading); when the verdict is unknown it comes from the evidence
   (refuted → false, supported → true, contested → contested, inconclusive → unsupported).
4. Each status maps to a decision given the topic's harm: false → remove (flag when harm is low);
   misleading and contested → flag; unsupported → flag when harm is high, else allow;
   true → allow. The post's decision is the most severe decision over its claims.
"""

from __future__ import annotations

import datetime as dt
from fractions import Fraction
from typing import Literal

from pydantic import Field

from integrity_gym.core.types import WireModel
from integrity_gym.envs.information_integrity.models import (
    DECISIONS,
    ClaimFact,
    Decision,
    Harm,
    Scenario,
    SourceFact,
)

STALE_AFTER_DAYS = 3 * 365
TRUSTED_RELIABILITY = 0.75
CREDIBLE_RELIABILITY = 0.5
LEAN = 0.5

Evidence = Literal["supported", "refuted", "contested", "inconclusive"]
Status = Literal["true", "false", "misleading", "contested", "unsupported"]

_SIGN = {"supports": 1, "refutes": -1, "neutral": 0}
_LEAN = Fraction(repr(LEAN))
_FROM_VERDICT: dict[str, Status] = {"true": "true", "false": "false", "partially_true": "misleading"}
_FROM_EVIDENCE: dict[Evidence, Status] = {
    "supported": "true",
    "refuted": "false",
    "contested": "contested",
    "inconclusive": "unsupported",
}


class ClaimAssessment(WireModel):
    """What the rule concludes about one claim."""

    claim_id: str = Field(description="Claim id.")
    verdict: str = Field(description="Fact-check verdict.")
    balance: float = Field(description="Reliability-weighted stance balance of usable sources, -1..1.")
    evidence: Evidence = Field(description="supported, refuted, contested or inconclusive.")
    status: Status = Field(description="true, false, misleading, contested or unsupported.")
    decision: Decision = Field(description="Decision this claim alone calls for.")
    usable_sources: tuple[str, ...] = Field(description="Ids of sources that count (not satire, not outdated).")


class Aggregate(WireModel):
    """The rule's view of a whole scenario."""

    harm: Harm = Field(description="Harm level of the topic.")
    claims: tuple[ClaimAssessment, ...] = Field(description="One assessment per claim, in claim order.")


def is_outdated(source: SourceFact, as_of: dt.date) -> bool:
    """True if ``source`` was published more than ``STALE_AFTER_DAYS`` before ``as_of``."""
    return (as_of - source.date).days > STALE_AFTER_DAYS


def is_usable(source: SourceFact, as_of: dt.date) -> bool:
    """True if ``source`` counts as evidence (not satire and not outdated)."""
    return not source.satire and not is_outdated(source, as_of)


def weigh(sources: list[SourceFact]) -> tuple[float, Evidence]:
    """Weigh usable sources about one claim: (balance, evidence class)."""
    sided = [s for s in sources if _SIGN[s.stance] != 0]
    # Exact arithmetic on the reliabilities as written (0.6 is 3/5), so a balance on a boundary
    # lands on it: in floats (-0.6 + 0.2) / 0.8 is -0.4999999999999999 and read as inconclusive.
    weights = [Fraction(repr(s.reliability)) for s in sided]
    total = sum(weights, Fraction(0))
    exact = sum((w * _SIGN[s.stance] for w, s in zip(weights, sided, strict=True)), Fraction(0))
    balance = exact / total if total > 0 else Fraction(0)
    trusted_for = any(s.stance == "supports" and s.reliability >= TRUSTED_RELIABILITY for s in sided)
    trusted_against = any(s.stance == "refutes" and s.reliability >= TRUSTED_RELIABILITY for s in sided)
    evidence: Evidence
    if trusted_for and trusted_against:
        evidence = "contested"
    elif balance >= _LEAN:
        evidence = "supported"
    elif balance <= -_LEAN:
        evidence = "refuted"
    else:
        evidence = "inconclusive"
    return round(float(balance), 6), evidence


def status_of(verdict: str, evidence: Evidence) -> Status:
    """A claim's status: the verdict when known, otherwise what the evidence says."""
    return _FROM_VERDICT[verdict] if verdict in _FROM_VERDICT else _FROM_EVIDENCE[evidence]


def decision_for(status: Status, harm: Harm) -> Decision:
    """The decision one claim's status calls for under the topic's harm level."""
    if status == "false":
        return "flag" if harm == "low" else "remove"
    if status in ("misleading", "contested"):
        return "flag"
    if status == "unsupported":
        return "flag" if harm == "high" else "allow"
    return "allow"


def assess_claim(claim: ClaimFact, sources: list[SourceFact], harm: Harm, as_of: dt.date) -> ClaimAssessment:
    """Apply steps 1-4 of the rule to one claim and the sources about it."""
    usable = [s for s in sources if s.claim_id == claim.id and is_usable(s, as_of)]
    balance, evidence = weigh(usable)
    status = status_of(claim.verdict, evidence)
    return ClaimAssessment(
        claim_id=claim.id,
        verdict=claim.verdict,
        balance=balance,
        evidence=evidence,
        status=status,
        decision=decision_for(status, harm),
        usable_sources=tuple(s.id for s in usable),
    )


def aggregate(scenario: Scenario) -> Aggregate:
    """Assess every claim of ``scenario``."""
    sources = list(scenario.sources)
    return Aggregate(
        harm=scenario.harm,
        claims=tuple(assess_claim(c, sources, scenario.harm, scenario.as_of) for c in scenario.claims),
    )


def severity(decision: Decision) -> int:
    """0 for allow, 1 for flag, 2 for remove."""
    return DECISIONS.index(decision)


def decide(agg: Aggregate) -> Decision:
    """The most severe decision over the claims."""
    return max((a.decision for a in agg.claims), key=severity)


def derive_label(scenario: Scenario) -> Decision:
    """``decide(aggregate(scenario))``."""
    return decide(aggregate(scenario))


class GoldEvidence(WireModel):
    """The evidence that justifies a scenario's label, and the statements that state it."""

    label: Decision = Field(description="Derived label.")
    claims: tuple[str, ...] = Field(description="Decisive claim ids (their decision equals the label).")
    sources: tuple[str, ...] = Field(description="Usable sources whose stance carries the decisive status.")
    statements: tuple[str, ...] = Field(description="Canonical typed statements, e.g. 'src_2 refutes claim_1'.")


def _decisive_sources(assessment: ClaimAssessment, scenario: Scenario) -> list[SourceFact]:
    usable = [scenario.source(i) for i in assessment.usable_sources]
    sided = [s for s in usable if s.stance != "neutral"]
    if assessment.status == "false":
        return [s for s in sided if s.stance == "refutes"]
    if assessment.status == "true":
        return [s for s in sided if s.stance == "supports"]
    if assessment.status == "contested":
        return [s for s in sided if s.reliability >= TRUSTED_RELIABILITY]
    if assessment.status == "misleading":
        return [s for s in sided if s.reliability >= CREDIBLE_RELIABILITY]
    return sided


def gold_evidence(scenario: Scenario) -> GoldEvidence:
    """The decisive claims and sources of ``scenario`` and the statements a full explanation makes.

    Decisive claims are those whose own decision equals the label; decisive sources are the usable
    sources about them whose stance points the same way as the claim's status (for a contested
    claim the trusted sources on both sides, for a misleading one the credible sources on either
    side, for an unsupported one every source that takes a side). The topic's harm
    is part of the explanation whenever it changed the outcome (a false or unsupported claim).
    """
    agg = aggregate(scenario)
    label = decide(agg)
    claims: list[str] = []
    sources: list[str] = []
    statements: list[str] = []
    harm_matters = False
    for assessment in agg.claims:
        if assessment.decision != label:
            continue
        claims.append(assessment.claim_id)
        statements.append(f"{assessment.claim_id} is {assessment.status}")
        harm_matters = harm_matters or assessment.status in ("false", "unsupported")
        for source in _decisive_sources(assessment, scenario):
            sources.append(source.id)
            statements.append(f"{source.id} {source.stance} {assessment.claim_id}")
    if harm_matters:
        statements.append(f"harm is {scenario.harm}")
    return GoldEvidence(label=label, claims=tuple(claims), sources=tuple(sources), statements=tuple(statements))


def check_scenario(scenario: Scenario, *, min_claims: int = 1, min_sources: int = 2) -> Scenario:
    """Fill in a missing label and check the scenario is playable; raise ``ValueError`` if not.

    The stored label must equal the rule's output, and the gold evidence must be at least the
    minimum evidence an agent needs before deciding (so the oracle is never premature).
    """
    derived = derive_label(scenario)
    if scenario.label is None:
        scenario = scenario.model_copy(update={"label": derived})
    elif scenario.label != derived:
        raise ValueError(
            f"scenario {scenario.id}: label: stored {scenario.label!r} but the rule derives {derived!r} "
            "from its facts (see rules.py); fix the facts or the label"
        )
    gold = gold_evidence(scenario)
    if len(gold.claims) < min_claims or len(gold.sources) < min_sources:
        raise ValueError(
            f"scenario {scenario.id}: sources: only {len(gold.sources)} decisive source(s) and "
            f"{len(gold.claims)} decisive claim(s); the label must rest on at least {min_sources} "
            f"usable sources and {min_claims} claim(s)"
        )
    return scenario
