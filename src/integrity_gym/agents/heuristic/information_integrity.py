"""Heuristic baseline for information_integrity: reliability-weighted stance aggregation.

It reads only the observation: it verifies every claim, checks a bounded number of sources per
claim (more for claims whose fact-check verdict is unknown), drops sources the check revealed to
be satire or older than three years, weighs the rest by reliability, and applies the moderation
policy published in the environment's README. Its reasoning states only what it saw. It never
reads the state or the label; its mistakes come from the sources it chose not to check.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from integrity_gym.core.registry import TaskSpec
from integrity_gym.envs.information_integrity import rules
from integrity_gym.envs.information_integrity.models import (
    DECISIONS,
    IntegrityAction,
    IntegrityObservation,
    SourceView,
)

#: Sources checked per claim when the claim has a verdict, and when it has none.
KNOWN_BUDGET = 1
UNKNOWN_BUDGET = 2
STALE_DAYS = 3 * 365
TRUSTED = 0.75
_SIGN = {"supports": 1, "refutes": -1}


class HeuristicAgent:
    """Verify claims, check a few sources per claim, weigh them, decide with typed statements."""

    def __init__(self, spec: TaskSpec, seed: int = 0) -> None:
        self.spec = spec
        self.seed = seed

    def act(self, observation: Any) -> IntegrityAction:
        """Next action for ``observation`` (a model or its JSON-like dict)."""
        obs = (
            observation
            if isinstance(observation, IntegrityObservation)
            else IntegrityObservation.model_validate(observation)
        )
        for claim in obs.claims:
            if claim.verification_status == "unverified":
                return IntegrityAction(type="verify_claim", claim_id=claim.id)
        if obs.steps_left > 1:
            target = self._next_source(obs)
            if target is not None:
                return IntegrityAction(type="check_source", source_id=target)
        decision, reasoning = self._decide(obs)
        return IntegrityAction(type="decide", decision=decision, reasoning=reasoning)

    def _next_source(self, obs: IntegrityObservation) -> str | None:
        # Claims without a verdict first: their sources decide them.
        order = sorted(obs.claims, key=lambda c: c.verification_status != "unknown")
        for claim in order:
            budget = UNKNOWN_BUDGET if claim.verification_status == "unknown" else KNOWN_BUDGET
            mine = [s for s in obs.available_sources if s.claim_id == claim.id]
            if sum(s.checked for s in mine) >= budget:
                continue
            for source in mine:
                if not source.checked:
                    return source.id
        if sum(s.checked for s in obs.available_sources) < 2:
            spare = [s for s in obs.available_sources if not s.checked]
            return spare[0].id if spare else None
        return None

    @staticmethod
    def _usable(source: SourceView, review: dt.date) -> bool:
        if not source.checked or source.satire or source.date is None:
            return False
        return (review - dt.date.fromisoformat(source.date)).days <= STALE_DAYS

    def _decide(self, obs: IntegrityObservation) -> tuple[str, str]:
        review = dt.date.fromisoformat(obs.review_date)
        harm = obs.harm_level
        per_claim: list[tuple[str, str, str, list[SourceView]]] = []
        for claim in obs.claims:
            usable = [s for s in obs.available_sources if s.claim_id == claim.id and self._usable(s, review)]
            sided = [s for s in usable if s.stance in _SIGN and s.reliability is not None]
            status, backing = self._status(claim.verification_status, sided)
            per_claim.append((claim.id, status, rules.decision_for(status, harm), backing))  # published policy
        decision = max((d for _, _, d, _ in per_claim), key=DECISIONS.index)
        statements: list[str] = []
        for claim_id, claim_status, calls_for, backing in per_claim:
            if calls_for != decision:
                continue
            statements.append(f"{claim_id} is {claim_status}")
            statements.extend(f"{s.id} {s.stance} {claim_id}" for s in backing)
            if claim_status in ("false", "unsupported"):
                statements.append(f"harm is {harm}")
        return decision, ". ".join(dict.fromkeys(statements)) + "."

    @staticmethod
    def _status(verdict: str, sided: list[SourceView]) -> tuple[rules.Status, list[SourceView]]:
        weights = [(s, float(s.reliability or 0.0), _SIGN[str(s.stance)]) for s in sided]
        total = sum(w for _, w, _ in weights)
        balance = sum(w * sign for _, w, sign in weights) / total if total else 0.0
        trusted_for = [s for s, w, sign in weights if sign > 0 and w >= TRUSTED]
        trusted_against = [s for s, w, sign in weights if sign < 0 and w >= TRUSTED]
        supporting = [s for s, _, sign in weights if sign > 0]
        refuting = [s for s, _, sign in weights if sign < 0]
        if verdict == "false":
            return "false", refuting
        if verdict == "true":
            return "true", supporting
        if verdict == "partially_true":
            return "misleading", [s for s, w, _ in weights if w >= 0.5]
        if trusted_for and trusted_against:
            return "contested", trusted_for + trusted_against
        if balance >= 0.5:
            return "true", supporting
        if balance <= -0.5:
            return "false", refuting
        return "unsupported", [s for s, _, _ in weights]


#: The agents ``--agent NAME`` builds for this environment (``EnvExtras.agents``).
AGENTS = {"heuristic": HeuristicAgent}
