from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from integrity_gym.core.spans import SpanUnion, StaticCoverage, iou, merge, merge_arrays, overlap


def covered(spans: list[tuple[int, int]]) -> set[int]:
    return {i for s, e in spans for i in range(s, e)}


def test_iou_basic_cases() -> None:
    assert iou(0, 10, 0, 10) == 1.0
    assert iou(0, 10, 10, 20) == 0.0
    assert iou(0, 10, 5, 15) == pytest.approx(5 / 15)
    assert overlap(0, 10, 3, 4) == 1
    # Away from 0 (lengths are end - start) and with a one-position overlap (not "disjoint").
    assert iou(100, 110, 105, 125) == pytest.approx(5 / 25)
    assert iou(10, 12, 11, 13) == pytest.approx(1 / 3)


def test_merge_joins_overlapping_and_touching_spans() -> None:
    assert merge([(5, 8), (0, 2), (2, 4), (7, 10), (12, 12)]) == [(0, 4), (5, 10)]
    assert merge([(3, 9), (4, 6), (1, 2)]) == [(1, 2), (3, 9)]  # a span inside another
    assert merge([(4, 2), (6, 6)]) == []  # empty and reversed spans cover nothing


@pytest.mark.parametrize("seed", range(10))
def test_merge_and_merge_arrays_agree_with_brute_force(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(200):
        spans = [(s, s + rng.randint(-3, 12)) for s in (rng.randrange(60) for _ in range(rng.randrange(15)))]
        merged = merge(spans)
        assert covered(merged) == covered(spans)
        assert all(a < b < c for (a, b), (c, _) in itertools.pairwise(merged))  # sorted, apart
        assert all(a < b for a, b in merged)
        starts, ends = merge_arrays(*(np.array([p[i] for p in spans], dtype=np.int64) for i in (0, 1)))
        assert list(zip(starts.tolist(), ends.tolist(), strict=True)) == merged


@pytest.mark.parametrize("seed", range(20))
def test_span_union_matches_brute_force(seed: int) -> None:
    rng = random.Random(seed)
    union, seen = SpanUnion(), set()
    for _ in range(60):
        s = rng.randrange(200)
        e = s + rng.randint(0, 25)
        new = union.add(s, e)
        fresh = covered([(s, e)]) - seen
        assert covered(new) == fresh and sum(b - a for a, b in new) == len(fresh)
        assert all(a < b for a, b in new)  # no empty pieces at touching ends
        seen |= fresh
        assert union.total == len(seen)
        assert list(union) == merge(list(union))
        lo = rng.randrange(200)
        hi = lo + rng.randint(1, 60)
        pieces = list(union.pieces_in(lo, hi))
        assert covered(pieces) == {i for i in seen if lo <= i < hi}
        assert all(a < b for a, b in pieces)  # a piece starting exactly at hi is not in [lo, hi)


@pytest.mark.parametrize("seed", range(10))
def test_static_coverage_matches_brute_force(seed: int) -> None:
    rng = random.Random(seed)
    spans = [(s, s + rng.randint(1, 15)) for s in (rng.randrange(300) for _ in range(30))]
    cover, positions = StaticCoverage(spans), covered(spans)
    assert cover.total == len(positions)
    for _ in range(50):
        a = rng.randrange(320)
        b = a + rng.randint(0, 80)
        assert cover.covered(a, b) == sum(1 for i in positions if a <= i < b)


@pytest.mark.parametrize("seed", range(10))
def test_static_coverage_of_many_spans_at_once_matches_brute_force(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.choice([0, 1, 2, 30])  # empty and single-span unions included
    spans = [(s, s + rng.randint(1, 15)) for s in (rng.randrange(300) for _ in range(n))]
    cover, positions = StaticCoverage(spans), covered(spans)
    # Query spans start and end exactly at span boundaries as well as anywhere.
    edges = [p for span in spans for p in span]
    starts = np.array([rng.choice([*edges, rng.randrange(320)]) if edges else rng.randrange(320) for _ in range(40)])
    ends = starts + np.array([rng.randint(0, 40) for _ in range(40)])
    expected = sum(1 for a, b in zip(starts, ends, strict=True) for i in positions if a <= i < b)
    assert cover.covered_many(starts, ends) == expected


def test_piece_containing() -> None:
    union = SpanUnion()
    union.add(10, 20)
    assert union.piece_containing(15) == (10, 20)
    with pytest.raises(KeyError, match="position 20 is not covered"):
        union.piece_containing(20)
