"""One-to-one matching of predicted spans to gold entities, independent of action order.

Candidate pairs (IoU above the threshold) are found by sort-and-sweep: gold starts are sorted,
and a prediction can only pair with gold spans starting within one maximum gold length of it.
The candidate graph splits into connected components. A component with a single gold span or a
single prediction is solved exactly by taking its best pair; with a threshold of 0.5 or more
and disjoint gold spans every component has this form, so greedy is optimal. Anything else is
solved per component with the Hungarian algorithm (``scipy.optimize.linear_sum_assignment``).

A matching first maximises the number of pairs, then the number with the right label (the
grade's own objectives), then IoU; remaining ties go to the smaller (start, end, label), so the
result never depends on the order spans were added.

``IncrementalMatcher`` keeps the matching up to date as predictions arrive, re-solving only the
component a new prediction touches, so a step costs the same however many spans exist.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linear_sum_assignment

from integrity_gym.core.spans import iou

Span = tuple[int, int, str]  # (start, end, label)


@dataclass(frozen=True)
class GoldWeights:
    """Per gold span: its share of recall, and what a redaction matching it counts for precision."""

    recall: tuple[float, ...]
    hit: tuple[float, ...]

    @classmethod
    def units(cls, n: int) -> GoldWeights:
        """Every span weighs 1 for both (plain counts)."""
        return cls((1.0,) * n, (1.0,) * n)


@dataclass(frozen=True)
class MatchCounts:
    """Totals of a matching; the ``weight_*`` fields sum the gold's recall weights, ``hits`` their hit weights."""

    matched: int
    label_correct: int
    predictions: int
    gold: int
    weight_matched: float
    weight_correct: float
    weight_total: float
    hits: float


class _GoldIndex:
    """Gold spans sorted by start, for candidate lookups in O(log n + k)."""

    def __init__(self, gold: Sequence[Span]) -> None:
        order = sorted(range(len(gold)), key=lambda i: (gold[i][0], gold[i][1]))
        self.gold = gold
        self.order = order
        self.starts = [gold[i][0] for i in order]
        self.max_len = max((e - s for s, e, _ in gold), default=0)
        #: Gold spans compared so far (the sweep keeps this near the number of overlaps).
        self.comparisons = 0

    def near(self, start: int, end: int) -> range:
        """Positions (in ``order``) of the gold spans that may overlap ``[start, end)``."""
        lo = bisect_left(self.starts, start - self.max_len)
        hi = bisect_left(self.starts, end)
        self.comparisons += max(0, hi - lo)
        return range(lo, hi)

    def candidates(self, pred: Span, threshold: float) -> list[tuple[int, float]]:
        start, end, _ = pred
        out = []
        for k in self.near(start, end):
            g = self.order[k]
            gs, ge, _ = self.gold[g]
            score = iou(start, end, gs, ge)
            if score > threshold:
                out.append((g, score))
        return out


def _rank(pred: Span, gold: Span, score: float) -> tuple[bool, float, int, int, str]:
    """Sort key of a pair: best first (correct label, higher IoU, then the smaller span)."""
    return (pred[2] != gold[2], -score, pred[0], pred[1], pred[2])


def _component(
    seed: int, pred_edges: Sequence[dict[int, float]], gold_edges: Sequence[dict[int, float]]
) -> tuple[list[int], list[int]]:
    """Return the predictions and gold spans connected to prediction ``seed``."""
    preds, golds, frontier = {seed}, set(), [seed]
    while frontier:
        for g in pred_edges[frontier.pop()]:
            if g not in golds:
                golds.add(g)
                fresh = gold_edges[g].keys() - preds
                preds |= fresh
                frontier.extend(fresh)
    return sorted(preds), sorted(golds)


def _solve_component(
    preds: list[int],
    golds: list[int],
    edges: dict[tuple[int, int], float],
    pred_spans: Sequence[Span],
    gold_spans: Sequence[Span],
) -> dict[int, int]:
    """Return gold index -> prediction index for one connected component."""
    if len(golds) == 1 or len(preds) == 1:
        (p, g), _ = min(edges.items(), key=lambda item: _rank(pred_spans[item[0][0]], gold_spans[item[0][1]], item[1]))
        return {g: p}
    # Hungarian: maximise the number of pairs first, then correct labels, then IoU.
    weight = np.zeros((len(preds), len(golds)))
    p_pos = {p: i for i, p in enumerate(preds)}
    g_pos = {g: j for j, g in enumerate(golds)}
    for (p, g), score in edges.items():
        label_ok = pred_spans[p][2] == gold_spans[g][2]
        weight[p_pos[p], g_pos[g]] = 1_000_000.0 + (1_000.0 if label_ok else 0.0) + score
    rows, cols = linear_sum_assignment(weight, maximize=True)
    return {golds[c]: preds[r] for r, c in zip(rows, cols, strict=True) if weight[r, c] > 0}


class IncrementalMatcher:
    """The optimal matching of a growing set of predictions against fixed gold spans."""

    def __init__(self, gold: Sequence[Span], threshold: float, weights: GoldWeights | None = None) -> None:
        self.threshold = threshold
        self.gold = list(gold)
        weights = GoldWeights.units(len(self.gold)) if weights is None else weights
        if not len(weights.recall) == len(weights.hit) == len(self.gold):
            raise ValueError(
                f"got {len(weights.recall)} and {len(weights.hit)} weights for {len(self.gold)} gold spans"
            )
        self.weights = weights.recall
        self.hit_weights = weights.hit
        self._weight_total = sum(self.weights)
        self._weight_matched = 0.0
        self._weight_correct = 0.0
        self._hits = 0.0
        self.preds: list[Span] = []
        self._index = _GoldIndex(self.gold)
        self._pred_edges: list[dict[int, float]] = []  # pred -> {gold: iou}
        self._gold_edges: list[dict[int, float]] = [{} for _ in self.gold]  # gold -> {pred: iou}
        self.gold_to_pred: dict[int, int] = {}
        self.label_correct = 0

    def best_iou(self, start: int, end: int) -> float:
        """Best IoU of ``[start, end)`` with any gold span (0.0 if none overlaps)."""
        best = 0.0
        for k in self._index.near(start, end):
            gs, ge, _ = self.gold[self._index.order[k]]
            best = max(best, iou(start, end, gs, ge))
        return best

    def add(self, pred: Span) -> list[tuple[int, float]]:
        """Add a prediction; return ``(gold index, IoU of its pair)`` for each newly matched gold."""
        p = len(self.preds)
        self.preds.append(pred)
        edges = dict(self._index.candidates(pred, self.threshold))
        self._pred_edges.append(edges)
        for g, score in edges.items():
            self._gold_edges[g][p] = score
        if not edges:
            return []
        preds, golds = _component(p, self._pred_edges, self._gold_edges)
        before = {g for g in golds if g in self.gold_to_pred}
        for g in golds:
            old = self.gold_to_pred.pop(g, None)
            if old is not None:
                self._weight_matched -= self.weights[g]
                self._hits -= self.hit_weights[g]
                if self.preds[old][2] == self.gold[g][2]:
                    self.label_correct -= 1
                    self._weight_correct -= self.weights[g]
        comp_edges = {(q, g): s for q in preds for g, s in self._pred_edges[q].items()}
        solution = _solve_component(preds, golds, comp_edges, self.preds, self.gold)
        for g, q in solution.items():
            self.gold_to_pred[g] = q
            self._weight_matched += self.weights[g]
            self._hits += self.hit_weights[g]
            if self.preds[q][2] == self.gold[g][2]:
                self.label_correct += 1
                self._weight_correct += self.weights[g]
        return [(g, self._gold_edges[g][solution[g]]) for g in sorted(solution.keys() - before)]

    @property
    def comparisons(self) -> int:
        """Gold spans compared with predictions so far (grows with overlaps, not with n x m)."""
        return self._index.comparisons

    def counts(self) -> MatchCounts:
        """Current totals."""
        return MatchCounts(
            matched=len(self.gold_to_pred),
            label_correct=self.label_correct,
            predictions=len(self.preds),
            gold=len(self.gold),
            weight_matched=self._weight_matched,
            weight_correct=self._weight_correct,
            weight_total=self._weight_total,
            hits=self._hits,
        )


def tally(pred: Sequence[Span], gold: Sequence[Span], pairs: dict[int, int], weights: GoldWeights) -> MatchCounts:
    """Totals of the matching ``pairs`` (gold index -> prediction index), as ``IncrementalMatcher.counts``."""
    w = weights.recall
    correct = [g for g, p in pairs.items() if pred[p][2] == gold[g][2]]
    return MatchCounts(
        matched=len(pairs),
        label_correct=len(correct),
        predictions=len(pred),
        gold=len(gold),
        weight_matched=sum(w[g] for g in sorted(pairs)),
        weight_correct=sum(w[g] for g in sorted(correct)),
        weight_total=sum(w),
        hits=sum(weights.hit[g] for g in sorted(pairs)),
    )


def match(pred: Sequence[Span], gold: Sequence[Span], threshold: float) -> dict[int, int]:
    """Return the optimal one-to-one matching ``gold index -> prediction index`` (IoU > threshold).

    Candidate pairs are found and scored with numpy. When every component is a star (one gold
    span or one prediction in it — always the case at IoU ≥ 0.5 with disjoint gold spans), each
    star's best pair is picked with one lexicographic sort; otherwise components are solved
    one by one as in ``IncrementalMatcher``.
    """
    if not pred or not gold:
        return {}
    labels = {label: code for code, label in enumerate(sorted({s[2] for s in pred} | {s[2] for s in gold}))}
    p_start, p_end, p_label = _columns(pred, labels)
    g_start, g_end, g_label = _columns(gold, labels)
    pi, gi = candidate_pairs(p_start, p_end, g_start, g_end)
    inter = np.maximum(0, np.minimum(p_end[pi], g_end[gi]) - np.maximum(p_start[pi], g_start[gi]))
    score = inter / ((p_end[pi] - p_start[pi]) + (g_end[gi] - g_start[gi]) - inter)
    keep = score > threshold
    pi, gi, score = pi[keep], gi[keep], score[keep]
    deg_p = np.bincount(pi, minlength=len(pred))[pi]
    deg_g = np.bincount(gi, minlength=len(gold))[gi]
    if np.any((deg_p > 1) & (deg_g > 1)):
        return _match_by_components(pred, gold, pi.tolist(), gi.tolist(), score.tolist())
    wrong = p_label[pi] != g_label[gi]
    result: dict[int, int] = {}
    # Stars around a gold span (every prediction in them has one candidate): best prediction wins.
    star = deg_p == 1
    gold_keys = (p_label[pi], p_end[pi], p_start[pi], -score, wrong, gi)
    first = _first_per_group(np.lexsort(tuple(k[star] for k in gold_keys)), gi[star])
    result.update(zip(gi[star][first].tolist(), pi[star][first].tolist(), strict=True))
    # Stars around a prediction (its gold candidates have no other prediction): best gold wins.
    rest = ~star
    pred_keys = (g_end[gi], g_start[gi], -score, wrong, pi)
    first = _first_per_group(np.lexsort(tuple(k[rest] for k in pred_keys)), pi[rest])
    result.update(zip(gi[rest][first].tolist(), pi[rest][first].tolist(), strict=True))
    return result


def candidate_pairs(
    p_start: np.ndarray, p_end: np.ndarray, g_start: np.ndarray, g_end: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(prediction, gold) index pairs that may overlap, by sort-and-sweep over gold starts.

    A prediction is paired only with the gold spans starting less than one maximum gold length
    before it and before its end, so the pairs number about n + m + overlaps, never n x m.
    """
    order = np.lexsort((g_end, g_start))
    sorted_starts = g_start[order]
    lo = np.searchsorted(sorted_starts, p_start - int((g_end - g_start).max()), "left")
    hi = np.searchsorted(sorted_starts, p_end, "left")
    counts = hi - lo
    pi = np.repeat(np.arange(len(p_start)), counts)
    gi = order[lo[pi] + np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)]
    return pi, gi


def _columns(spans: Sequence[Span], labels: dict[str, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Starts, ends and label codes of ``spans`` as integer arrays."""
    n = len(spans)
    return (
        np.fromiter((s[0] for s in spans), np.int64, n),
        np.fromiter((s[1] for s in spans), np.int64, n),
        np.fromiter((labels[s[2]] for s in spans), np.int64, n),
    )


def _first_per_group(sort_order: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Indices (into the unsorted arrays) of the first row of each group after sorting."""
    grouped = group[sort_order]
    is_first = np.ones(len(grouped), dtype=bool)
    is_first[1:] = grouped[1:] != grouped[:-1]
    return sort_order[is_first]


def _match_by_components(
    pred: Sequence[Span], gold: Sequence[Span], pi: list[int], gi: list[int], score: list[float]
) -> dict[int, int]:
    pred_edges: list[dict[int, float]] = [{} for _ in pred]
    gold_edges: list[dict[int, float]] = [{} for _ in gold]
    for p, g, s in sorted(zip(pi, gi, score, strict=True), key=lambda e: (e[0], gold[e[1]][:2])):
        pred_edges[p][g] = s
        gold_edges[g][p] = s
    seen: set[int] = set()
    result: dict[int, int] = {}
    for p0 in range(len(pred)):
        if p0 in seen or not pred_edges[p0]:
            continue
        preds, golds = _component(p0, pred_edges, gold_edges)
        seen.update(preds)
        comp_edges = {(q, g): s for q in preds for g, s in pred_edges[q].items()}
        result.update(_solve_component(preds, golds, comp_edges, pred, gold))
    return result
