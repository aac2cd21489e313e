"""Step rewards of pii_redaction: potential-based shaping plus direct bonuses and penalties.

The potential is the grade's own formula, ``Φ = 0.5·F1 + 0.25·LabelAccuracy + 0.25·Utility``,
computed with the same matching and threshold as the grade under the default preset, so the
shaping rewards of an episode sum exactly to ``Φ(final) − Φ(initial)``. Every function here is a
pure function of counts, so it can be tested without an environment.

Under the default preset recall and label accuracy weigh the gold entities (``gold_weights``):
every label present in the document counts the same, every distinct value within a label counts
the same, and the mentions of one value share its weight. Recall counts an entity only when it is
matched *with the right label*; for precision all mentions of one value together count as one
hit, against one per false positive. Redacting forty mentions of one agent's name is then worth one
value of one label, and a span found under the wrong label adds nothing to recall. The
``reference`` preset weighs every mention 1 and counts a match whatever its label, which is the
reference document's formula exactly.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from typing import Literal

from pydantic import Field

from integrity_gym.core.env import WASTED_STEP
from integrity_gym.core.types import WireModel
from integrity_gym.envs.pii_redaction.matching import GoldWeights, MatchCounts

#: Names of the reward components, in the order they are reported in ``info``.
COMPONENTS = (
    "shaping",
    "tp_bonus",
    "fp_penalty",
    "duplicate_penalty",
    "invalid_penalty",
    "miss_penalty",
    "exploration_reward",
    "finish_bonus",
    "skip_miss_penalty",
    "skip_stagnation_penalty",
)

#: IoU above which a redaction matches a gold entity in the final grade.
GRADE_IOU = 0.6


class RewardConfig(WireModel):
    """Magnitudes and rules of the step reward. Use a preset from ``PRESETS``."""

    match_iou: float = Field(GRADE_IOU, gt=0.0, lt=1.0, description="IoU above which a redaction matches (Φ, tp).")
    tp_bonus: float = Field(0.05, ge=0, description="Paid for a redaction that newly matches PII (see ``units``).")
    tp_once: bool = Field(True, description="Pay tp only for a newly matched entity (else for any match).")
    fp_penalty: float = Field(0.05, ge=0, description="Charged × (1 − best IoU) for a redaction matching nothing.")
    duplicate_iou: float = Field(0.8, gt=0.0, le=1.0, description="IoU with an earlier redaction that rejects a span.")
    duplicate_penalty: float = Field(
        WASTED_STEP, ge=0, description="Charged per earlier redaction a duplicate repeats."
    )
    invalid_penalty: float = Field(WASTED_STEP, ge=0, description="Charged for a malformed or out-of-bounds action.")
    miss_penalty: float = Field(0.05, ge=0, description="Charged for PII left unredacted (see ``miss_timing``).")
    miss_timing: Literal["end", "window"] = Field(
        "end",
        description="'end': charged once, on the step that ends the episode, for all the PII still unmatched, "
        "seen or not; 'window': the reference's charge on NEXT_CHUNK (and SKIP) for the entities left in the "
        "window, which an agent avoids by never reading on.",
    )
    exploration_reward: float = Field(0.01, ge=0, description="Paid for NEXT_CHUNK that leaves nothing behind.")
    explore_needs_move: bool = Field(True, description="Pay exploration only when the window actually moves.")
    finish_bonus: float = Field(0.05, ge=0, description="Paid for FINISH once every entity is matched.")
    finish_needs_labels: bool = Field(True, description="The finish bonus also needs every label right.")
    skip_miss_penalty: float = Field(0.0, ge=0, description="Charged per missed entity on SKIP ('window' timing).")
    stagnation_penalty: float = Field(0.005, ge=0, description="Charged × min(cap, consecutive SKIPs − 1).")
    stagnation_cap: int = Field(5, ge=1, description="Cap of the stagnation multiplier.")
    units: Literal["share", "entities"] = Field(
        "share",
        description="'share': tp pays its magnitude × the share of the PII newly redacted with the right label, "
        "a miss charges × the share still unmatched, a false positive × (1 − IoU) / number of gold entities and "
        "exploration × the share of the document newly shown, so each direct term's episode total is at most "
        "its magnitude; 'entities': the reference's per-entity counts (tp × IoU per match).",
    )
    utility: Literal["non_pii", "all"] = Field(
        "non_pii",
        description="'non_pii': 1 − over-redacted non-PII chars / non-PII chars (a perfect agent scores 1); "
        "'all': the reference's 1 − redacted chars / document length.",
    )
    miss_scope: Literal["inside", "overlap"] = Field(
        "inside", description="Count a missed entity when wholly 'inside' the window, or when it 'overlap's it."
    )
    redact_scope: Literal["window", "document"] = Field(
        "window", description="A REDACT must lie inside the visible 'window', or anywhere in the 'document'."
    )
    label_scope: Literal["gold", "matched"] = Field(
        "gold",
        description="LabelAccuracy over 'gold': the weighted share of all the gold redacted with the right label "
        "(a miss counts as a wrong label); over 'matched': the reference's share of the matched redactions "
        "with the right label, which a precise agent keeps near 1 however much it misses.",
    )
    recall: Literal["labelled_values", "mentions"] = Field(
        "labelled_values",
        description="'labelled_values': weighted share of the gold (gold_weights: labels, then distinct "
        "values, then mentions) matched with the right label; 'mentions': the reference's share of gold "
        "mentions matched, whatever the label.",
    )


PRESETS: dict[str, RewardConfig] = {
    "default": RewardConfig(),
    # The reference document's formulas and magnitudes, kept for comparison with published numbers.
    "reference": RewardConfig(
        match_iou=0.4,
        tp_bonus=0.5,
        tp_once=False,
        fp_penalty=0.2,
        duplicate_penalty=0.2,
        invalid_penalty=1.0,
        miss_penalty=0.3,
        miss_timing="window",
        exploration_reward=0.02,
        explore_needs_move=False,
        finish_bonus=1.0,
        finish_needs_labels=False,
        skip_miss_penalty=0.3,
        stagnation_penalty=0.05,
        units="entities",
        utility="all",
        miss_scope="overlap",
        redact_scope="document",
        recall="mentions",
        label_scope="matched",
    ),
}


_NOT_ALNUM = re.compile(r"[\W_]+")


def value_key(text: str) -> str:
    """The value an entity's text stands for: case-folded letters and digits only ("Amy" = "amy")."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _NOT_ALNUM.sub("", folded) or folded


def gold_weights(config: RewardConfig, entities: Sequence[tuple[str, str]]) -> GoldWeights:
    """Weights of the gold entities, given as ``(label, text)``.

    Under ``recall="labelled_values"`` an entity's recall weight is its share of the PII: each
    label present gets 1 / labels, shared equally by its distinct values (``value_key``), each
    shared equally by that value's mentions (the weights sum to 1). Its hit weight, what a
    redaction matching it counts for precision, is 1 / mentions of its value, so all mentions of
    one value together count as one true positive. Under ``"mentions"`` every weight is 1.
    """
    if config.recall == "mentions" or not entities:
        return GoldWeights.units(len(entities))
    values = [(label, value_key(text)) for label, text in entities]
    mentions = Counter(values)
    per_label = Counter(label for label, _ in mentions)
    return GoldWeights(
        recall=tuple(1.0 / (len(per_label) * per_label[v[0]] * mentions[v]) for v in values),
        hit=tuple(1.0 / mentions[v] for v in values),
    )


def precision_of(counts: MatchCounts) -> float:
    """Redactions that hit PII over all redactions, a value's mentions counting once together.

    Each false positive counts 1; the redactions matching gold count their hit weights (see
    ``gold_weights``), so with unit weights this is matched / redactions, and by default forty
    redactions of one repeated name count as one hit and cannot pad precision for a spray of
    false positives. 1.0 when there was nothing to redact and none was made.
    """
    if counts.predictions == 0:
        return 1.0 if counts.gold == 0 else 0.0
    false_positives = counts.predictions - counts.matched
    return counts.hits / (counts.hits + false_positives)


def recall_of(config: RewardConfig, counts: MatchCounts) -> float:
    """Weighted share of the gold matched, with the right label unless ``recall="mentions"`` (1.0 with no gold)."""
    if counts.weight_total == 0:
        return 1.0
    found = counts.weight_matched if config.recall == "mentions" else counts.weight_correct
    return found / counts.weight_total


def f1_score(config: RewardConfig, counts: MatchCounts) -> float:
    """Harmonic mean of ``precision_of`` and ``recall_of``; under ``reference``, ``2·matched / (pred + gold)``."""
    precision, recall = precision_of(counts), recall_of(config, counts)
    return 0.0 if precision + recall == 0 else 2.0 * precision * recall / (precision + recall)


def label_accuracy(config: RewardConfig, counts: MatchCounts) -> float:
    """Weighted share of the gold redacted with the right label (``label_scope="gold"``), or of the matched gold.

    1 with no gold. Over the matched gold (the ``reference`` preset, unit weights) it is right
    labels / matched redactions, 0 when nothing matched: an agent that labels well what it finds
    keeps it near 1 however much it misses, so the grade of a precise agent is about 0.5 + 0.5·F1
    and a third of the PII passes the hard tier. Over the gold, a miss is a wrong label.
    """
    if config.label_scope == "gold":
        return 1.0 if counts.weight_total == 0 else counts.weight_correct / counts.weight_total
    if counts.matched == 0:
        return 1.0 if counts.gold == 0 else 0.0
    return counts.weight_correct / counts.weight_matched


def utility(config: RewardConfig, *, over_redacted: int, non_pii: int, redacted: int, length: int) -> float:
    """How much of the document's useful text survives, per the preset's definition."""
    if config.utility == "all":
        return 1.0 - redacted / length
    return 1.0 if non_pii == 0 else 1.0 - over_redacted / non_pii


def potential(f1: float, label_acc: float, util: float) -> float:
    """Φ (and the grade's score): 0.5·F1 + 0.25·LabelAccuracy + 0.25·Utility."""
    return 0.5 * f1 + 0.25 * label_acc + 0.25 * util


def redact_reward(
    config: RewardConfig,
    *,
    new_matches: list[float],
    best_iou: float,
    gained: float = 0.0,
    gold: int = 0,
    false_positives: int = 0,
) -> dict[str, float]:
    """Direct components of a committed REDACT.

    ``new_matches`` holds the IoU of every entity the redaction newly matched, ``best_iou`` its
    best IoU with any entity. Under ``units="share"`` also: ``gained``, the share of the PII
    (recall weight) it newly put under the right label; ``gold``, the number of gold entities;
    ``false_positives``, the redactions that matched nothing before this one. There a false
    positive is charged ``fp_penalty × (1 − IoU) / gold`` for the first ``gold`` of them and nothing
    after (their cost stays in Φ's precision), so the component's episode total is at most its
    magnitude, like every other direct term.
    """
    if config.units == "share":
        if gained > 0:
            return {"tp_bonus": config.tp_bonus * gained}
        if best_iou <= config.match_iou:
            charged = false_positives < gold
            return {"fp_penalty": -config.fp_penalty * (1.0 - best_iou) / gold} if charged else {}
        return {}  # a match with the wrong label, or of PII already matched: shaping says it
    if config.tp_once:
        if new_matches:
            return {"tp_bonus": config.tp_bonus * sum(new_matches)}
    elif best_iou > config.match_iou:
        return {"tp_bonus": config.tp_bonus * best_iou}
    if best_iou <= config.match_iou:
        return {"fp_penalty": -config.fp_penalty * (1.0 - best_iou)}
    return {}  # overlaps an entity that a better redaction already matched: shaping says it


def duplicate_reward(config: RewardConfig, duplicates: int) -> dict[str, float]:
    """Penalty of a rejected REDACT that repeats ``duplicates`` earlier redactions."""
    return {"duplicate_penalty": -config.duplicate_penalty * duplicates}


def next_chunk_reward(config: RewardConfig, *, missed: int, shown: float) -> dict[str, float]:
    """Components of NEXT_CHUNK: the window's miss penalty ('window' timing), or a reward for clean progress.

    ``missed`` counts the unmatched entities the window leaves behind; ``shown`` is the share of the
    document the move newly brought into view (0 when the window did not move).
    """
    if missed and config.miss_timing == "window":
        return {"miss_penalty": -config.miss_penalty * missed}
    if missed or (shown <= 0 and config.explore_needs_move):
        return {}
    return {"exploration_reward": config.exploration_reward * (shown if config.units == "share" else 1.0)}


def skip_reward(config: RewardConfig, *, missed: int, trailing_skips: int) -> dict[str, float]:
    """Components of SKIP: a miss penalty ('window' timing) and a stagnation penalty after the first SKIP."""
    out = {}
    if missed and config.miss_timing == "window":
        out["skip_miss_penalty"] = -config.skip_miss_penalty * missed
    if trailing_skips > 1:
        out["skip_stagnation_penalty"] = -config.stagnation_penalty * min(config.stagnation_cap, trailing_skips - 1)
    return out


def finish_reward(config: RewardConfig, *, all_matched: bool, all_labelled: bool) -> dict[str, float]:
    """Component of FINISH: the bonus when every entity is matched (and labelled right, if the preset asks)."""
    earned = all_matched and (all_labelled or not config.finish_needs_labels)
    return {"finish_bonus": config.finish_bonus} if earned else {}


def end_reward(config: RewardConfig, *, unmatched: float) -> dict[str, float]:
    """Component of the step that ends the episode ('end' timing): the share of the PII left unredacted.

    ``unmatched`` is the share of the PII (recall weight) not matched with the right label.
    """
    if config.miss_timing != "end" or unmatched <= 0:
        return {}
    return {"miss_penalty": -config.miss_penalty * unmatched}


def invalid_reward(config: RewardConfig) -> dict[str, float]:
    """Penalty of a malformed or out-of-bounds action."""
    return {"invalid_penalty": -config.invalid_penalty}
