"""Interval maths shared by the environments: half-open character spans ``[start, end)``."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator
from functools import cached_property
from itertools import accumulate

import numpy as np


def overlap(a_start: int, a_end: int, b_start: int, b_end: int) -> int:
    """Return the number of positions two half-open spans share."""
    return max(0, min(a_end, b_end) - max(a_start, b_start))


def iou(a_start: int, a_end: int, b_start: int, b_end: int) -> float:
    """Return the intersection-over-union of two half-open spans (0.0 when disjoint)."""
    inter = overlap(a_start, a_end, b_start, b_end)
    if inter == 0:
        return 0.0
    return inter / ((a_end - a_start) + (b_end - b_start) - inter)


def merge_arrays(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised ``merge``: the union of spans as sorted arrays of disjoint starts and ends."""
    keep = ends > starts
    starts, ends = starts[keep], ends[keep]
    if len(starts) == 0:
        return starts, ends
    order = np.lexsort((ends, starts))
    starts, ends = starts[order], ends[order]
    reach = np.maximum.accumulate(ends)
    opens = np.ones(len(starts), dtype=bool)
    opens[1:] = starts[1:] > reach[:-1]
    group_end = np.append(np.flatnonzero(opens)[1:] - 1, len(starts) - 1)
    return starts[opens], reach[group_end]


def merge(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Return the union of ``spans`` as sorted, disjoint, non-adjacent spans.

    The list version of ``merge_arrays``: for the few spans of one document a sorted sweep is
    about ten times faster than numpy's fixed cost per call.
    """
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if end <= start:
            continue
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


class StaticCoverage:
    """A fixed union of spans answering "how many covered positions lie in [a, b)?" in O(log n)."""

    def __init__(self, spans: Iterable[tuple[int, int]]) -> None:
        merged = merge(spans)
        self._starts = [s for s, _ in merged]
        self._ends = [e for _, e in merged]
        self._prefix = [0, *accumulate(e - s for s, e in merged)]

    @cached_property
    def _arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The starts, ends and prefix sums as arrays, built on the first ``covered_many``."""
        starts, ends, prefix = (np.array(a, dtype=np.int64) for a in (self._starts, self._ends, self._prefix))
        return starts, ends, prefix

    def covered_many(self, starts: np.ndarray, ends: np.ndarray) -> int:
        """Return the covered positions summed over many spans ``[starts[i], ends[i])`` at once."""
        return int(self._covered_before_many(ends).sum() - self._covered_before_many(starts).sum())

    def _covered_before_many(self, pos: np.ndarray) -> np.ndarray:
        starts, ends, prefix = self._arrays
        if len(starts) == 0:
            return np.zeros(len(pos), dtype=np.int64)
        i = np.searchsorted(starts, pos, "right")
        j = np.maximum(i - 1, 0)
        return np.where(i == 0, 0, prefix[j] + np.minimum(pos, ends[j]) - starts[j])

    def _covered_before(self, pos: int) -> int:
        i = bisect_right(self._starts, pos)
        if i == 0:
            return 0
        return self._prefix[i - 1] + min(pos, self._ends[i - 1]) - self._starts[i - 1]

    def covered(self, start: int, end: int) -> int:
        """Return how many positions of ``[start, end)`` the union covers."""
        if end <= start:
            return 0
        return self._covered_before(end) - self._covered_before(start)

    @property
    def total(self) -> int:
        """Total number of covered positions."""
        return self._prefix[-1]


class SpanUnion:
    """A growing union of spans kept as sorted disjoint pieces.

    ``add`` returns the positions the new span covers for the first time, so callers can keep
    running totals (e.g. over-redacted characters) without rescanning the union.
    """

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._ends: list[int] = []
        self.total = 0

    def add(self, start: int, end: int) -> list[tuple[int, int]]:
        """Add ``[start, end)`` and return the newly covered pieces, in order."""
        if end <= start:
            return []
        lo = bisect_left(self._ends, start)  # first piece ending at or after start
        hi = bisect_right(self._starts, end)  # pieces starting after end are untouched
        new: list[tuple[int, int]] = []
        cursor = start
        for i in range(lo, hi):
            s, e = self._starts[i], self._ends[i]
            if s > cursor:
                new.append((cursor, min(s, end)))
            cursor = max(cursor, e)
        if cursor < end:
            new.append((cursor, end))
        merged_start = min(start, self._starts[lo]) if lo < hi else start
        merged_end = max(end, self._ends[hi - 1]) if lo < hi else end
        self._starts[lo:hi] = [merged_start]
        self._ends[lo:hi] = [merged_end]
        self.total += sum(e - s for s, e in new)
        return new

    def pieces_in(self, start: int, end: int) -> Iterator[tuple[int, int]]:
        """Yield the union's pieces that overlap ``[start, end)``, clipped to it."""
        i = bisect_right(self._ends, start)
        while i < len(self._starts) and self._starts[i] < end:
            yield max(start, self._starts[i]), min(end, self._ends[i])
            i += 1

    def piece_containing(self, pos: int) -> tuple[int, int]:
        """Return the whole piece that covers position ``pos`` (``KeyError`` if none does)."""
        i = bisect_right(self._starts, pos) - 1
        if i < 0 or self._ends[i] <= pos:
            raise KeyError(f"position {pos} is not covered")
        return self._starts[i], self._ends[i]

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return zip(self._starts, self._ends, strict=True)

    def __len__(self) -> int:
        return len(self._starts)
