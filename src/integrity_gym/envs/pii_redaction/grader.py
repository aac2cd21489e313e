"""Final grade of a pii_redaction episode: a pure function of the document and the redactions."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from integrity_gym.core.spans import StaticCoverage, merge_arrays
from integrity_gym.core.types import Grade
from integrity_gym.envs.pii_redaction.matching import match, tally
from integrity_gym.envs.pii_redaction.models import Document, Redaction
from integrity_gym.envs.pii_redaction.reward import (
    GRADE_IOU,
    RewardConfig,
    f1_score,
    gold_weights,
    label_accuracy,
    potential,
    precision_of,
    recall_of,
    utility,
)


def grade_redactions(
    document: Document, redactions: Sequence[Redaction], config: RewardConfig, success_threshold: float
) -> Grade:
    """Grade ``redactions`` of ``document``: one-to-one matching at IoU > 0.6.

    Recall and label accuracy weigh the gold as ``config`` says (``reward.gold_weights``). The
    breakdown reports precision, recall, F1, label accuracy, utility, the plain share of gold
    mentions matched, and leakage: gold characters left visible (``leaked_pii_chars``) and their
    share of all gold characters.
    """
    gold = [(e.start, e.end, e.label) for e in document.entities]
    pred = [(r.start, r.end, r.label) for r in redactions]
    pairs = match(pred, gold, GRADE_IOU)
    counts = tally(pred, gold, pairs, gold_weights(config, [(e.label, e.text) for e in document.entities]))
    matched = counts.matched

    starts, ends = merge_arrays(
        np.fromiter((r.start for r in redactions), np.int64, len(redactions)),
        np.fromiter((r.end for r in redactions), np.int64, len(redactions)),
    )
    gold_cover = StaticCoverage((e.start, e.end) for e in document.entities)
    redacted_total = int((ends - starts).sum())
    pii_hidden = gold_cover.covered_many(starts, ends)
    over = redacted_total - pii_hidden
    non_pii = len(document.text) - gold_cover.total

    f1 = f1_score(config, counts)
    label_acc = label_accuracy(config, counts)
    util = utility(config, over_redacted=over, non_pii=non_pii, redacted=redacted_total, length=len(document.text))
    score = min(1.0, max(0.0, potential(f1, label_acc, util)))
    leaked = gold_cover.total - pii_hidden
    return Grade(
        score=score,
        success=score >= success_threshold,
        threshold=success_threshold,
        breakdown={
            "precision": precision_of(counts),
            "recall": recall_of(config, counts),
            "mention_recall": matched / len(gold) if gold else 1.0,
            "f1": f1,
            "label_accuracy": label_acc,
            "utility": util,
            "leaked_pii_chars": float(leaked),
            "leaked_pii_fraction": leaked / gold_cover.total if gold_cover.total else 0.0,
            "over_redacted_chars": float(over),
            "true_positives": float(matched),
            "false_positives": float(len(pred) - matched),
            "false_negatives": float(len(gold) - matched),
        },
    )
