"""The stated risk threshold: each item names a threshold ``t``, and abstaining earns nothing.

The threshold tasks (``threshold_*``) state with every item a risk threshold ``t``, drawn per item
from a published range by the keyed generator (``ThresholdRule.draw``). Answer only if the
probability ``q`` that your verdict is correct is above ``t``. In *utility*:

* a correct verdict earns ``+1``, a wrong one ``-t / (1 - t)``, ``ABSTAIN`` exactly ``0``
  (Kalai et al., 2025, "Why language models hallucinate");
* so answering is worth ``(q - t) / (1 - t)`` in expectation, and the Bayes-optimal policy answers
  the likelier verdict exactly when ``q > t`` (at ``q = t`` both are worth 0);
* optionally (``brier_weight`` λ > 0) a bounded Brier term on the stated confidence ``p`` of an
  answered verdict, ``-λ (p - y)²``, with the wrong answer's penalty eased by ``λ t`` so that the
  decision threshold stays exactly at ``t``: answering is then worth
  ``(q - t) [1 / (1 - t) - λ (1 - q)] - λ (p - q)²``, whose bracket is positive for λ < 1, so the
  unique best policy is still "answer iff q > t", now with ``p = q``.

The **grade** normalises each item's utility onto [0, 1]: ``g = (u - u_min(t)) / (1 - u_min(t))``
with ``u_min(t) = -t/(1-t) - λ(1-t)`` the sure wrong answer. Without the Brier term a right answer
grades 1, a wrong one 0 and abstaining ``t``. The map is positive and affine for every item, so
every decision the utility prefers the grade prefers, and the step reward is the grade
(``reward_scale="grade"``, the default): the return is the grade, and the two rank policies alike.

Why not one map for every item: a map shared by all items must fit the worst utility of the whole
range (-19 at t = 0.95), which packs every policy's mean grade into [0.95, 1]; on the text task the
claim's words alone (0.9608) and the exact posterior (0.9653) then sit under one two-decimal
threshold. The per-item map weighs an item's utility by about ``1 - t`` instead: the mean utility
(``utility`` in the summary, the literal Kalai score, reported beside the grade) weighs a mistake
at high ``t`` more than the grade does and may rank two imperfect policies the other way.
``reward_scale="utility"`` pays that utility itself (abstaining 0, an unreadable reply the worst
answer); under GRPO, whose advantages are normalised within one prompt's group, the two scales give
the same updates, but under any baseline shared across items they do not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, get_args

from integrity_gym.core.seeding import make_rng

#: Version of the threshold draw: bump it only when the thresholds drawn for an item change.
RISK_VERSION = "selective_verification/risk-v1"
#: The published range of the threshold tasks.
DEFAULT_RANGE = (0.5, 0.95)
Scale = Literal["grade", "utility"]
SCALES: tuple[str, ...] = get_args(Scale)
#: A belief within this of the threshold is a tie: answering and abstaining are then equally good.
TIE = 1e-9
#: Threshold bins of the tracking metrics and the report's curve: the range's hundredths in this many
#: runs of (nearly) equal length (46 values in 9 bins of 5 or 6 for the default range).
RISK_BINS = 9


def _hundredths(value: float, name: str) -> int:
    k = round(value * 100)
    if not math.isfinite(value) or abs(k - value * 100) > 1e-6:
        raise ValueError(f"{name} must be a multiple of 0.01 (thresholds are stated to two decimals), got {value}")
    return k


def odds(t: float) -> float:
    """``t / (1 - t)``: the cost of a wrong answer at threshold ``t`` (exact for hundredths)."""
    k = round(t * 100)
    return k / (100 - k) if abs(k - t * 100) < 1e-9 else t / (1.0 - t)


@dataclass(frozen=True)
class ThresholdRule:
    """The threshold rule of a task: its published range, Brier weight and reward scale."""

    low: float = DEFAULT_RANGE[0]
    high: float = DEFAULT_RANGE[1]
    brier_weight: float = 0.0
    scale: Scale = "grade"

    def __post_init__(self) -> None:
        lo, hi = _hundredths(self.low, "the low threshold"), _hundredths(self.high, "the high threshold")
        if not 50 <= lo <= hi <= 99:
            raise ValueError(
                f"risk thresholds must satisfy 0.5 <= low <= high <= 0.99, got [{self.low}, {self.high}]: below "
                "0.5 the likelier verdict always beats abstaining, and at 1 a wrong answer costs without bound"
            )
        if not (math.isfinite(self.brier_weight) and 0.0 <= self.brier_weight < 1.0):
            raise ValueError(
                f"brier_weight must be in [0, 1), got {self.brier_weight}: at 1 or above the Brier term could "
                "outweigh the decision and move the best policy away from answering iff P(correct) > t"
            )
        if self.scale not in SCALES:
            raise ValueError(f"reward_scale must be 'grade' or 'utility', not {self.scale!r}")

    # ------------------------------------------------------------------ the draw
    @property
    def values(self) -> tuple[float, ...]:
        """Every threshold the range can state, in hundredths."""
        return tuple(k / 100 for k in range(round(self.low * 100), round(self.high * 100) + 1))

    def draw(self, seed: int, item_id: str) -> float:
        """The threshold stated with item ``item_id``: uniform over the range's hundredths.

        Drawn from a key of its own (``core.seeding``), never from the item's content, so it says
        nothing about the label and the same item gets the same threshold in any process.
        """
        rng = make_rng(RISK_VERSION, self.low, self.high, seed, item_id)
        return rng.randint(round(self.low * 100), round(self.high * 100)) / 100

    def bin(self, t: float) -> int:
        """The threshold bin of ``t`` (``RISK_BINS`` runs of the range's hundredths, lowest first)."""
        lo, hi = round(self.low * 100), round(self.high * 100)
        k = round(t * 100)
        if not lo <= k <= hi:
            raise ValueError(f"threshold {t} is outside the range [{self.low}, {self.high}]")
        return (k - lo) * RISK_BINS // (hi - lo + 1)

    # ------------------------------------------------------------------ utility
    def lowest(self, t: float) -> float:
        """``u_min(t)``: the utility of a sure, wrong answer at threshold ``t`` (and of an unreadable reply)."""
        return -odds(t) - self.brier_weight * (1.0 - t)

    def utility(self, verdict: str, confidence: float | None, correct: bool, t: float) -> dict[str, float]:
        """The utility of a well-formed answer, as components that sum to it."""
        if verdict == "ABSTAIN":
            return {"abstain": 0.0}
        if confidence is None or not 0.0 <= confidence <= 1.0:
            raise ValueError(f"a {verdict} verdict needs a confidence in [0, 1], got {confidence}")
        lam = self.brier_weight
        decision = 1.0 if correct else -odds(t) + lam * t
        if lam == 0.0:
            return {"decision": decision}
        return {"decision": decision, "brier": -lam * (confidence - float(correct)) ** 2}

    def expected_utility(self, q: float, confidence: float, t: float) -> float:
        """Expected utility of answering a verdict that is correct with probability ``q``, stating ``confidence``."""
        right = sum(self.utility("SUPPORTED", confidence, True, t).values())
        wrong = sum(self.utility("SUPPORTED", confidence, False, t).values())
        return q * right + (1.0 - q) * wrong

    def bayes_utility(self, q_true: float, t: float) -> float:
        """Expected utility of the Bayes policy with belief ``q_true`` in the claim: the best answer or 0."""
        q = max(q_true, 1.0 - q_true)
        return max(0.0, self.expected_utility(q, q, t))

    # ------------------------------------------------------------------ scales
    def grade(self, utility: float, t: float) -> float:
        """The grade of a utility at threshold ``t``: ``(u - u_min(t)) / (1 - u_min(t))``, in [0, 1].

        A positive affine map for each item (the sure right answer grades 1, the sure wrong one 0,
        abstaining ``t`` when ``brier_weight`` is 0), so it keeps every decision the utility prefers.
        """
        if utility == 0.0:
            return self.abstain_grade(t)
        u_min = self.lowest(t)
        return min(1.0, max(0.0, (utility - u_min) / (1.0 - u_min)))

    def abstain_grade(self, t: float) -> float:
        """The grade of abstaining (utility 0): ``t`` itself without the Brier term."""
        if self.brier_weight == 0.0:
            return t
        u_min = self.lowest(t)
        return -u_min / (1.0 - u_min)

    def to_reward(self, components: dict[str, float], t: float) -> dict[str, float]:
        """Utility components in the reward's scale (they still sum to the reward)."""
        if self.scale == "utility":
            return dict(components)
        if set(components) == {"abstain"}:
            return {"abstain": self.abstain_grade(t)}
        u_min = self.lowest(t)
        span = 1.0 - u_min
        out = {}
        for i, (key, value) in enumerate(components.items()):
            # The map's offset goes to the first component, so the parts sum to the grade.
            out[key] = (value - u_min) / span if i == 0 else value / span
        return out

    def malformed_reward(self, t: float) -> dict[str, float]:
        """An unreadable reply: the worst answer at ``t`` (grade 0; utility ``u_min(t)``)."""
        return {"malformed": 0.0 if self.scale == "grade" else self.lowest(t)}

    def abstain_reward(self, t: float) -> float:
        """What ``ABSTAIN`` pays at ``t`` in the reward's scale (0 in utility)."""
        return self.abstain_grade(t) if self.scale == "grade" else 0.0
