"""Explainability: a structured record of an episode's reasoning and template-written explanations.

``reasoning_record`` lays out, claim by claim, what the rule concludes and which of that evidence
the agent actually saw; ``explain_episode`` turns it and the grade into a few plain sentences for
``igym play`` and benchmark traces. Templates only: the text is reproducible and never invented.
"""

from __future__ import annotations

from typing import Any

from integrity_gym.core.types import Grade
from integrity_gym.envs.information_integrity import rules
from integrity_gym.envs.information_integrity.grader import MIN_REASONING, EpisodeRecord
from integrity_gym.envs.information_integrity.models import IntegrityObservation, Scenario
from integrity_gym.envs.information_integrity.reasoning import grade_reasoning


def describe_source(scenario: Scenario, source_id: str) -> str:
    """One line on what checking a source revealed."""
    s = scenario.source(source_id)
    extra = []
    if s.satire:
        extra.append("satire")
    if rules.is_outdated(s, scenario.as_of):
        extra.append("outdated")
    tail = f" [{', '.join(extra)}]" if extra else ""
    stance = "is neutral on" if s.stance == "neutral" else s.stance
    return f"{s.id} {stance} {s.claim_id}; reliability {s.reliability:.2f}, {s.source_type}, {s.date.isoformat()}{tail}"


def reasoning_record(record: EpisodeRecord) -> dict[str, Any]:
    """Structured account of the episode: per-claim conclusions and the evidence the agent saw."""
    scenario = record.scenario
    agg = rules.aggregate(scenario)
    gold = rules.gold_evidence(scenario)
    seen = set(record.verified) | set(record.checked)
    claims = []
    for a in agg.claims:
        claims.append(
            {
                "claim_id": a.claim_id,
                "verdict": a.verdict,
                "verified": a.claim_id in record.verified,
                "usable_sources": list(a.usable_sources),
                "balance": a.balance,
                "evidence": a.evidence,
                "status": a.status,
                "calls_for": a.decision,
                "decisive": a.claim_id in gold.claims,
            }
        )
    discounted = [
        {"source_id": s.id, "why": "satire" if s.satire else "outdated", "checked": s.id in record.checked}
        for s in scenario.sources
        if not rules.is_usable(s, scenario.as_of)
    ]
    graded = grade_reasoning(
        record.reasoning,
        scenario,
        seen,
        char_cap=record.reasoning_char_cap,
        statement_cap=record.reasoning_statement_cap,
    )
    return {
        "scenario_id": scenario.id,
        "harm": scenario.harm,
        "label": scenario.label,
        "decision": record.decision,
        "premature": record.premature,
        "claims": claims,
        "discounted_sources": discounted,
        "decisive_sources": list(gold.sources),
        "decisive_sources_seen": [s for s in gold.sources if s in seen],
        "gold_statements": list(gold.statements),
        "statements_made": [s.text for s in graded.statements],
        "statements_correct": [s.text for s in graded.correct],
        "reasoning_over_cap": graded.over_cap,
        "reasoning_void": graded.void,
        "reasoning_submitted": record.reasoning or "",
        "reasoning_unread": list(graded.ignored),
    }


def explain_episode(record: EpisodeRecord, grade: Grade) -> str:
    """A few sentences: why the label follows from the facts, and how the episode scored."""
    info = reasoning_record(record)
    lines = []
    for c in info["claims"]:
        basis = (
            f"its fact-check verdict is {c['verdict']}"
            if c["verdict"] != "unknown"
            else f"no fact-check verdict, and the usable sources are {c['evidence']} (balance {c['balance']:+.2f})"
        )
        lines.append(
            f"- {c['claim_id']} is {c['status']}: {basis}; under {info['harm']} harm it calls for {c['calls_for']}."
        )
    for d in info["discounted_sources"]:
        lines.append(f"- {d['source_id']} does not count: it is {d['why']}.")
    decided = info["decision"] or "nothing (no decision)"
    verdict = "correct" if info["decision"] == info["label"] else "not the rule's decision"
    lines.insert(0, f"The rule's decision is {info['label']}; the agent decided {decided} ({verdict}).")
    seen, wanted = len(info["decisive_sources_seen"]), len(info["decisive_sources"])
    lines.append(f"The agent saw {seen} of the {wanted} decisive source(s).")
    made, correct = len(info["statements_made"]), len(info["statements_correct"])
    submitted = info["reasoning_submitted"].strip()
    if submitted:
        shown = submitted if len(submitted) <= 400 else submitted[:400] + "…"
        lines.append(f'Its reasoning: "{shown}"')
    if info["reasoning_unread"]:
        unread = "; ".join(f"'{s}'" for s in info["reasoning_unread"][:5])
        lines.append(
            f"Not understood (no typed statement found, so not graded): {unread}. Typed statements read "
            "'src_2 refutes claim_1', 'claim_1 is false', 'src_3 is satire', 'harm is high'."
        )
    if info["reasoning_over_cap"]:
        lines.append(f"Its reasoning made {made} statements, over the cap, so reasoning scored 0.")
    elif info["reasoning_void"]:
        lines.append(f"Its reasoning scored 0: {info['reasoning_void']}.")
    else:
        lines.append(
            f"Its reasoning made {made} typed statement(s), {correct} correct, against "
            f"{len(info['gold_statements'])} expected: {'; '.join(info['gold_statements'])}."
        )
    if info["premature"]:
        lines.append("The decision came before the minimum evidence (premature).")
    parts = ", ".join(f"{k} {v:.2f}" for k, v in grade.breakdown.items())
    if info["decision"] != info["label"]:
        lines.append("A decision that is not the rule's grades 0, whatever was read.")
    elif grade.breakdown.get("reasoning_depth", 0.0) < MIN_REASONING:
        lines.append(
            f"Reasoning below {MIN_REASONING} of the gold explanation: the score counts the decision and the "
            "reasoning only, not the evidence read or the efficiency."
        )
    outcome = "a success" if grade.success else "no success"
    lines.append(f"Score {grade.score:.3f} ({parts}); {outcome} (threshold {grade.threshold:.2f}).")
    return "\n".join(lines)


def render_observation(obs: IntegrityObservation) -> str:
    """The observation as text for a person."""
    out = [
        f"[{obs.task_difficulty}] {obs.topic} — harm {obs.harm_level}, reviewed {obs.review_date}",
        f"POST: {obs.content}",
        "",
        "CLAIMS:",
    ]
    for c in obs.claims:
        status = (
            c.verification_status
            if c.verification_status == "unverified"
            else f"{c.verification_status} ({c.confidence:.2f})"
        )
        out.append(f"  {c.id}: {c.text}  [{status}]")
    out.append("SOURCES:")
    for s in obs.available_sources:
        if s.checked:
            flags = " SATIRE" if s.satire else ""
            out.append(
                f"  {s.id} (on {s.claim_id}) {s.title}\n      {s.stance}, reliability {s.reliability:.2f}, "
                f"{s.source_type}, {s.date}{flags} — {s.url}\n      {s.text}"
            )
        else:
            out.append(f"  {s.id} (on {s.claim_id}) {s.title}  [not checked]")
    f = obs.status_flags
    out.append(
        f"step {obs.step_count}, {obs.steps_left} left; sufficient evidence: {f.sufficient_evidence}; "
        f"redundant: {f.redundant_actions}"
    )
    for h in obs.interaction_history[-5:]:
        out.append(f"  #{h.step} {h.action} -> {h.outcome} ({h.reward:+.2f})")
    return "\n".join(out)
