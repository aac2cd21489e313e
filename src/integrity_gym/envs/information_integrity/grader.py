"""Graders: a pure function of an episode record to a ``Grade``.

Four dimensions, weighted per tier as in the reference design, but with no score without the
task: the evidence, reasoning and efficiency dimensions count only when the decision is right, so
a wrong decision (or none) grades 0 however much was read, and a success needs the right
decision, reasoning worth at least ``min_reasoning`` and a score at or above the threshold.

- ``decision_correct``: 1 if the decision equals the label, else 0 (no partial credit, so
  always answering the middle option ``flag`` cannot collect half marks);
- ``evidence_breadth``: share of the gold evidence (decisive claims and sources) the agent looked
  at;
- ``reasoning_depth``: ``reasoning.grade_reasoning`` of the decision's reasoning;
- ``efficiency``: ``min(1, optimal steps / steps taken)``, 0 without a decision or when the
  decision came before the minimum evidence.

Custom graders: subclass ``Grader`` and ``GraderFactory.register("name", cls)``; select one with
the task config ``grader="name"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from pydantic import Field

from integrity_gym.core.types import Grade, WireModel
from integrity_gym.envs.information_integrity import rules
from integrity_gym.envs.information_integrity.models import Decision, Scenario
from integrity_gym.envs.information_integrity.reasoning import grade_reasoning


class EpisodeRecord(WireModel):
    """Everything a grader needs about one episode."""

    scenario: Scenario = Field(description="The scenario, label included.")
    verified: tuple[str, ...] = Field(description="Claim ids verified.")
    checked: tuple[str, ...] = Field(description="Source ids checked.")
    decision: Decision | None = Field(description="Final decision, if any.")
    reasoning: str | None = Field(description="Reasoning sent with the decision.")
    steps: int = Field(ge=0, description="Steps taken, invalid ones included.")
    premature: bool = Field(description="Decision came before the minimum evidence.")
    threshold: float = Field(ge=0, le=1, description="Success threshold of the task.")
    reasoning_char_cap: int = Field(default=2000, ge=1, description="Characters of reasoning read.")
    reasoning_statement_cap: int = Field(default=20, ge=1, description="Statements allowed before reasoning scores 0.")


#: Reasoning score a success needs: at least half of the gold explanation, with nothing unread or
#: misread (see ``reasoning``), so a right decision with no reasons, or with made-up ones, fails.
MIN_REASONING = 0.5


class Grader:
    """Weighted sum of the four dimensions when the decision is right, else 0; subclasses set ``weights``."""

    min_reasoning: ClassVar[float] = MIN_REASONING

    weights: ClassVar[dict[str, float]] = {
        "decision_correct": 0.25,
        "evidence_breadth": 0.25,
        "reasoning_depth": 0.25,
        "efficiency": 0.25,
    }

    def dimensions(self, record: EpisodeRecord) -> dict[str, float]:
        """The four dimension values in [0, 1]."""
        scenario = record.scenario
        gold = rules.gold_evidence(scenario)
        decided = record.decision is not None
        correct = 1.0 if decided and record.decision == scenario.label else 0.0
        seen = set(record.verified) | set(record.checked)
        wanted = set(gold.claims) | set(gold.sources)
        breadth = len(wanted & seen) / len(wanted)
        reasoning = grade_reasoning(
            record.reasoning if decided else None,
            scenario,
            seen,
            char_cap=record.reasoning_char_cap,
            statement_cap=record.reasoning_statement_cap,
        ).score
        optimal = len(wanted) + 1
        efficiency = min(1.0, optimal / max(1, record.steps)) if decided and not record.premature else 0.0
        return {
            "decision_correct": correct,
            "evidence_breadth": round(breadth, 10),
            "reasoning_depth": round(reasoning, 10),
            "efficiency": round(efficiency, 10),
        }

    def grade(self, record: EpisodeRecord) -> Grade:
        """Grade ``record``; the breakdown also says whether the decision was premature.

        The dimensions are reported as measured. The score is their weighted sum when the decision
        is right and its reasoning is worth at least ``min_reasoning``; a right decision with
        weaker reasoning scores its decision and reasoning weights only (evidence and efficiency
        count when the agent says what they showed), which stays under every task's threshold; a
        wrong decision scores 0. Reading everything and then deciding wrongly, or deciding the same
        way every time, therefore earns nothing on the episodes it gets wrong, and a success
        (score at or above the threshold) always has a right decision and reasons.
        """
        dims = self.dimensions(record)
        weighted = round(sum(self.terms(record, dims).values()), 10)
        score = min(1.0, max(0.0, weighted))
        breakdown = {**dims, "premature": 1.0 if record.premature else 0.0}
        return Grade(score=score, success=score >= record.threshold, threshold=record.threshold, breakdown=breakdown)

    def terms(self, record: EpisodeRecord, dims: dict[str, float] | None = None) -> dict[str, float]:
        """The weighted dimensions the score adds up.

        None for a wrong decision; decision and reasoning only when the reasoning is below
        ``min_reasoning``; all four otherwise.
        """
        dims = self.dimensions(record) if dims is None else dims
        if dims["decision_correct"] != 1.0:
            return {}
        counted = self.weights
        if dims["reasoning_depth"] < self.min_reasoning:
            counted = {k: self.weights[k] for k in ("decision_correct", "reasoning_depth")}
        return {k: w * dims[k] for k, w in counted.items()}

    def ceiling_without_reasons(self) -> float:
        """The highest score a right decision earns with reasoning below ``min_reasoning`` (just under it)."""
        return self.weights["decision_correct"] + self.weights["reasoning_depth"] * self.min_reasoning


class EasyGrader(Grader):
    """Easy tier: the decision matters most."""

    weights: ClassVar[dict[str, float]] = {
        "decision_correct": 0.50,
        "evidence_breadth": 0.25,
        "reasoning_depth": 0.15,
        "efficiency": 0.10,
    }


class MediumGrader(Grader):
    """Medium tier: evidence weighs as much as the decision."""

    weights: ClassVar[dict[str, float]] = {
        "decision_correct": 0.35,
        "evidence_breadth": 0.35,
        "reasoning_depth": 0.20,
        "efficiency": 0.10,
    }


class HardGrader(Grader):
    """Hard tier: decision, evidence and reasoning weigh the same."""

    weights: ClassVar[dict[str, float]] = {
        "decision_correct": 0.30,
        "evidence_breadth": 0.30,
        "reasoning_depth": 0.30,
        "efficiency": 0.10,
    }


class GraderFactory:
    """Graders by name: ``easy``, ``medium``, ``hard`` built in; ``register`` adds more."""

    _graders: ClassVar[dict[str, type[Grader]]] = {
        "easy": EasyGrader,
        "medium": MediumGrader,
        "hard": HardGrader,
    }

    @classmethod
    def register(cls, name: str, grader: type[Grader]) -> None:
        """Register ``grader`` under ``name``; raise ``ValueError`` if the name is taken."""
        if name in cls._graders:
            raise ValueError(f"a grader named {name!r} is already registered")
        if not (isinstance(grader, type) and issubclass(grader, Grader)):
            raise ValueError(f"grader {name!r} must be a subclass of Grader")
        weights = grader.weights
        if set(weights) != set(Grader.weights) or abs(sum(weights.values()) - 1.0) > 1e-9:
            raise ValueError(f"grader {name!r}: weights must cover {sorted(Grader.weights)} and sum to 1")
        cls._graders[name] = grader

    @classmethod
    def create(cls, name: str) -> Grader:
        """An instance of the grader registered as ``name``."""
        try:
            return cls._graders[name]()
        except KeyError:
            raise ValueError(
                f"grader: unknown grader {name!r}; registered: {', '.join(sorted(cls._graders))}"
            ) from None

    @classmethod
    def names(cls) -> list[str]:
        """Registered grader names."""
        return sorted(cls._graders)


def summarize(grades: Sequence[Grade]) -> dict[str, float | None]:
    """Dataset metrics: decision accuracy, premature rate, mean of each dimension."""
    if not grades:
        return {"decision_accuracy": None, "premature_rate": None}
    n = len(grades)
    out: dict[str, float | None] = {
        "decision_accuracy": sum(g.breakdown.get("decision_correct", 0.0) for g in grades) / n,
        "premature_rate": sum(g.breakdown.get("premature", 0.0) for g in grades) / n,
        "success_rate": sum(1.0 for g in grades if g.success) / n,
    }
    for key in ("evidence_breadth", "reasoning_depth", "efficiency"):
        out[f"mean_{key}"] = sum(g.breakdown.get(key, 0.0) for g in grades) / n
    return out
