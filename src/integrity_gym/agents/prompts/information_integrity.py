"""Prompts for information_integrity: investigate a post's claims and sources, then decide."""

from __future__ import annotations

from typing import Any

from integrity_gym.agents.prompts import ActionReadError, UserContent, strict_object
from integrity_gym.core.registry import TaskSpec

TYPES = ("verify_claim", "check_source", "decide")
DECISIONS = ("allow", "flag", "remove")
MAX_REASONING = 300

_SYSTEM = """You are a content moderator. A post makes claims; sources about them can be read. \
Investigate, then decide what to do with the post.
Each reply is one action, a JSON object {"type": ..., "target": ..., "decision": ..., "reasoning": ...}:
- verify_claim: "target" is a claim id; reveals the fact-check verdict of that claim.
- check_source: "target" is a source id; reveals its text, stance, reliability, type and date.
- decide: "decision" is allow, flag or remove; this ends the episode. Decide only after \
verifying at least one claim and checking a few sources; deciding earlier is penalised, and \
repeating a check is wasted.
"target" is ignored for decide and "decision" is ignored otherwise (use "allow"). Remove posts \
whose claims are false and harmful, flag misleading, contested or unsupported ones, allow true \
ones. Satire and outdated sources should count for little.
The reasoning of a decision is graded only by typed statements, one per sentence, citing ids you \
checked: "src_2 refutes claim_1.", "src_3 supports claim_1.", "claim_1 is false." (true, false, \
misleading, contested, unsupported), "src_4 is satire.", "src_5 is outdated.", "harm is high." \
A wrong decision scores nothing. The reasoning scores nothing if it cites an id you did not check, \
contradicts what you read, or names no decisive source you checked; wrong claim statuses cost \
precision. Keep it short."""


class IntegrityAdapter:
    """Shows the post, claims, sources as far as revealed and the history; reads one action."""

    def system(self, spec: TaskSpec, observation: Any) -> str:
        """The moderation task, the actions and how reasoning is graded."""
        return f"{_SYSTEM}\nTask: {spec.description}"

    def user(self, observation: Any, feedback: str | None) -> UserContent:
        """The observation as compact text."""
        obs = observation
        lines = [
            f"Post (topic: {obs.topic}; harm level: {obs.harm_level}; review date: {obs.review_date}):",
            f'"{obs.content}"',
            "Claims:",
        ]
        for c in obs.claims:
            status = (
                "unverified"
                if c.verification_status == "unverified"
                else (f"{c.verification_status} (confidence {c.confidence:.2f})")
            )
            lines.append(f"- {c.id}: {c.text} [{status}]")
        lines.append("Sources:")
        for s in obs.available_sources:
            if s.checked:
                lines.append(
                    f"- {s.id} (about {s.claim_id}) {s.title}: {s.stance}, reliability {s.reliability:.2f}, "
                    f"{s.source_type}, {s.date}{', SATIRE' if s.satire else ''}. {s.text}"
                )
            else:
                lines.append(f"- {s.id} (about {s.claim_id}) {s.title}: not checked")
        flags = obs.status_flags
        lines.append(
            "Enough evidence to decide: " + ("yes" if flags.sufficient_evidence else "not yet") + f". Steps left: "
            f"{obs.steps_left}."
        )
        if obs.interaction_history:
            lines.append("History:")
            lines += [f"{h.step}. {h.action}: {h.outcome} (reward {h.reward:+.2f})" for h in obs.interaction_history]
        if feedback:
            lines.append(f"Your last action was rejected: {feedback}")
        lines.append("Reply with the next action.")
        return "\n".join(lines)

    def text_only(self, observation: Any) -> str | None:
        """No images here."""
        return None

    def schema(self, observation: Any) -> dict[str, Any]:
        """Type, target (one of the ids on show), decision and reasoning, all required."""
        ids = [c.id for c in observation.claims] + [s.id for s in observation.available_sources]
        return strict_object(
            {
                "type": {"type": "string", "enum": list(TYPES)},
                "target": {"type": "string", "enum": ids},
                "decision": {"type": "string", "enum": list(DECISIONS)},
                "reasoning": {"type": "string", "maxLength": MAX_REASONING},
            }
        )

    def to_action(self, data: dict[str, Any], observation: Any) -> Any:
        """Map the flat reply to an IntegrityAction mapping."""
        kind = str(data.get("type") or data.get("action") or "").strip().lower()
        if kind not in TYPES:
            raise ActionReadError(f"type {data.get('type')!r} is not one of {', '.join(TYPES)}")
        if kind == "decide":
            decision = str(data.get("decision") or "").strip().lower()
            if decision not in DECISIONS:
                raise ActionReadError(f"decision {data.get('decision')!r} is not one of {', '.join(DECISIONS)}")
            reasoning = data.get("reasoning")
            return {"type": kind, "decision": decision, "reasoning": str(reasoning)[:2000] if reasoning else None}
        key = "claim_id" if kind == "verify_claim" else "source_id"
        target = data.get("target") or data.get(key) or data.get("id")
        if not target:
            raise ActionReadError(f"{kind} needs a target id")
        return {"type": kind, key: str(target).strip()}


#: The reply's start in GRPO training and its eval when no ``--prefill`` is given: the reply format's
#: first key, so the model starts a readable action.
PREFILL = '{"type": "'


def make_adapter(spec: TaskSpec) -> IntegrityAdapter:
    """The information_integrity adapter."""
    return IntegrityAdapter()
