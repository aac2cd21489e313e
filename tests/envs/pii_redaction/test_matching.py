from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from integrity_gym.core.spans import iou
from integrity_gym.envs.pii_redaction import matching
from integrity_gym.envs.pii_redaction.matching import GoldWeights, IncrementalMatcher, Span, match, tally


def brute_force_best(pred: list[Span], gold: list[Span], threshold: float) -> tuple[int, int]:
    """(max matched, max label-correct among maximum matchings) by enumeration."""
    best = (0, 0)
    # Enumerate injective partial maps gold -> pred (small inputs only).
    options: list[list[int | None]] = [[None, *range(len(pred))] for _ in gold]
    for choice in itertools.product(*options):
        used = [p for p in choice if p is not None]
        if len(used) != len(set(used)):
            continue
        pairs = [(g, p) for g, p in enumerate(choice) if p is not None]
        if any(iou(pred[p][0], pred[p][1], gold[g][0], gold[g][1]) <= threshold for g, p in pairs):
            continue
        score = (len(pairs), sum(pred[p][2] == gold[g][2] for g, p in pairs))
        best = max(best, score)
    return best


def random_case(rng: random.Random, overlapping_gold: bool) -> tuple[list[Span], list[Span]]:
    gold: list[Span] = []
    pos = 0
    for _ in range(rng.randint(1, 4)):
        start = pos + rng.randint(0 if overlapping_gold else 1, 6)
        end = start + rng.randint(3, 9)
        gold.append((start, end, rng.choice("AB")))
        pos = start + 2 if overlapping_gold else end
    pred = []
    for _ in range(rng.randint(0, 4)):
        g = rng.choice(gold)
        start = max(0, g[0] + rng.randint(-3, 3))
        pred.append((start, max(start + 1, g[1] + rng.randint(-3, 3)), rng.choice("AB")))
    return pred, gold


@pytest.mark.parametrize("threshold", [0.6, 0.4, 0.2])
@pytest.mark.parametrize("overlapping_gold", [False, True])
def test_matching_is_optimal_against_brute_force(threshold: float, overlapping_gold: bool) -> None:
    rng = random.Random(f"{threshold}{overlapping_gold}")
    for _ in range(150):
        pred, gold = random_case(rng, overlapping_gold)
        pairs = match(pred, gold, threshold)
        assert len(set(pairs.values())) == len(pairs)  # one to one
        assert all(iou(*pred[p][:2], *gold[g][:2]) > threshold for g, p in pairs.items())
        got = (len(pairs), sum(pred[p][2] == gold[g][2] for g, p in pairs.items()))
        assert got == brute_force_best(pred, gold, threshold)


def test_matching_does_not_depend_on_action_order() -> None:
    rng = random.Random(3)
    for _ in range(100):
        pred, gold = random_case(rng, overlapping_gold=False)
        counts = set()
        for _ in range(5):
            rng.shuffle(pred)
            pairs = match(pred, gold, 0.6)
            counts.add((len(pairs), sum(pred[p][2] == gold[g][2] for g, p in pairs.items())))
        assert len(counts) == 1


@pytest.mark.parametrize("threshold", [0.6, 0.3])
def test_incremental_matcher_agrees_with_batch_matching(threshold: float) -> None:
    rng = random.Random(11)
    for _ in range(100):
        pred, gold = random_case(rng, overlapping_gold=rng.random() < 0.5)
        weights = GoldWeights(
            recall=tuple(rng.choice([0.5, 0.25, 1 / 3]) for _ in gold), hit=tuple(rng.choice([1.0, 0.5]) for _ in gold)
        )
        inc = IncrementalMatcher(gold, threshold, weights)
        matched = 0
        for k, p in enumerate(pred):
            newly = inc.add(p)
            batch = match(pred[: k + 1], gold, threshold)
            assert inc.counts().matched == len(batch) == matched + len(newly)
            matched = len(batch)
            assert inc.counts().label_correct == sum(pred[q][2] == gold[g][2] for g, q in batch.items())
            # The running weighted totals equal the batch tally the grade uses.
            batch_counts = tally(pred[: k + 1], gold, batch, weights)
            assert inc.counts().weight_matched == pytest.approx(batch_counts.weight_matched, abs=1e-12)
            assert inc.counts().weight_correct == pytest.approx(batch_counts.weight_correct, abs=1e-12)
            assert inc.counts().hits == pytest.approx(batch_counts.hits, abs=1e-12)
            assert inc.counts().label_correct == batch_counts.label_correct


def test_a_sub_span_of_a_matched_entity_is_not_matched_twice() -> None:
    inc = IncrementalMatcher([(10, 30, "NAME")], 0.6)
    assert inc.add((10, 30, "NAME")) == [(0, 1.0)]
    assert inc.add((11, 30, "NAME")) == []  # no second credit for the same entity
    assert inc.counts().matched == 1


def test_matching_compares_only_nearby_spans_not_all_pairs(monkeypatch: pytest.MonkeyPatch) -> None:
    """3,000 gold spans and 3,000 predictions: about one candidate each, never 9 million pairs."""
    gold = [(i * 20, i * 20 + 10, "EMAIL") for i in range(3000)]
    pred = [(s + 1, e, lab) for s, e, lab in gold]
    examined: list[int] = []
    sweep = matching.candidate_pairs

    def counting(*args: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        pi, gi = sweep(*args)
        examined.append(len(pi))
        return pi, gi

    monkeypatch.setattr(matching, "candidate_pairs", counting)
    assert len(match(pred, gold, 0.6)) == 3000
    assert examined and sum(examined) <= 2 * (len(pred) + len(gold))

    inc = IncrementalMatcher(gold, 0.6)
    for p in pred:
        inc.add(p)
        inc.best_iou(p[0], p[1])
    assert inc.counts().matched == 3000
    assert inc.comparisons <= 4 * len(pred)


def test_weights_must_fit_the_gold() -> None:
    with pytest.raises(ValueError, match="got 2 and 1 weights for 1 gold spans"):
        IncrementalMatcher([(0, 5, "NAME")], 0.6, GoldWeights(recall=(0.5, 0.5), hit=(1.0,)))


#: A component where every prediction overlaps both gold spans above 0.6, so the batch matcher
#: must solve an assignment: each prediction covers exactly the gold span of the other label.
CROSSED_GOLD: list[Span] = [(0, 10, "NAME"), (1, 11, "EMAIL")]
CROSSED_PRED: list[Span] = [(1, 11, "NAME"), (0, 10, "EMAIL")]


def test_a_right_label_beats_a_higher_iou_in_an_assignment() -> None:
    # Right labels: IoU 9/11 twice; crossed: IoU 1.0 twice but wrong labels.
    assert match(CROSSED_PRED, CROSSED_GOLD, 0.6) == {0: 0, 1: 1}


def test_ties_break_the_same_way_in_stars_and_in_assignments() -> None:
    """Two predictions with the same IoU (2/3) against one gold span: the earlier one wins, always."""
    gold: list[Span] = [(2, 14, "NAME")]
    pred: list[Span] = [(4, 12, "NAME"), (0, 18, "NAME")]  # nested: the later start ends earlier
    assert iou(4, 12, 2, 14) == iou(0, 18, 2, 14)
    assert match(pred, gold, 0.6) == {0: 1}
    # The same pair beside a component that needs an assignment (shifted out of the way).
    shifted_gold = [(s + 100, e + 100, label) for s, e, label in CROSSED_GOLD]
    shifted_pred = [(s + 100, e + 100, label) for s, e, label in CROSSED_PRED]
    assert match(pred + shifted_pred, gold + shifted_gold, 0.6) == {0: 1, 1: 2, 2: 3}


def test_the_incremental_matcher_takes_gold_spans_in_any_order() -> None:
    gold: list[Span] = [(50, 60, "EMAIL"), (0, 10, "NAME"), (20, 30, "PHONE")]
    inc = IncrementalMatcher(gold, 0.6)
    assert inc.add((0, 10, "NAME")) == [(1, 1.0)]
    assert inc.add((51, 60, "EMAIL")) == [(0, 0.9)]
    assert inc.add((20, 29, "PHONE")) == [(2, 0.9)]
    assert inc.best_iou(0, 10) == 1.0 and inc.best_iou(35, 45) == 0.0
