"""The attacks on pii_redaction fitted on train documents: masked line templates and slot contexts.

``line_templates`` (:class:`LineTemplates`) redacts the slots of every line that a memorised
train frame matches whole; ``slot_contexts`` (:class:`SlotContexts`) redacts what every
memorised (left, right) slot context frames. Both find PII by position, without reading it.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from integrity_gym.agents.redteam.learned.pii_redaction.lines import (
    ContextKey,
    MaskedLine,
    _context_regex,
    _generalise,
    _generalised_key,
    _line_contexts,
    _lines,
    _literal_regex,
    documents,
    masked_lines,
)
from integrity_gym.agents.redteam.learned.pii_redaction.planner import Scored, _Planner
from integrity_gym.core.registry import TaskSpec
from integrity_gym.envs.pii_redaction.models import Document, Label

#: Train documents are long in the hard tier; every tier is fitted on this many at most.
MAX_FIT_DOCUMENTS = 300

# --------------------------------------------------------------------------- line templates


@dataclass
class _Frame:
    """A memorised masked line: literal pieces around labelled slots."""

    key: tuple[str, ...]  # generalised literal pieces, interleaved with labels
    labels: tuple[Label, ...]
    regex: re.Pattern[str]
    support: int = 0
    right: int = 0
    wrong: int = 0

    @property
    def precision(self) -> float:
        return self.right / max(1, self.right + self.wrong)


def _frame_of(line: MaskedLine) -> tuple[tuple[str, ...], tuple[Label, ...], str]:
    pieces, parts, pos = [], ["^"], 0
    for s, e, label in line.slots:
        literal = line.text[pos:s]
        pieces += [_generalise(literal), label]
        parts += [_literal_regex(literal), "(.{1,100}?)"]
        pos = e
    pieces.append(_generalise(line.text[pos:]))
    parts += [_literal_regex(line.text[pos:]), "$"]
    return tuple(pieces), tuple(s[2] for s in line.slots), "".join(parts)


_PREFIX = 8


class _FrameIndex:
    """Frames bucketed by the start of their first literal piece, for matching whole lines."""

    def __init__(self, frames: Iterable[_Frame]) -> None:
        self._buckets: dict[str, list[_Frame]] = defaultdict(list)
        for f in frames:
            self._buckets[f.key[0][:_PREFIX]].append(f)
        for bucket in self._buckets.values():
            bucket.sort(key=lambda f: -f.support)

    def matches(self, line: str) -> Iterator[tuple[_Frame, re.Match[str]]]:
        norm = _generalise(line[: _PREFIX * 4])
        for k in range(min(_PREFIX, len(norm)) + 1):
            for frame in self._buckets.get(norm[:k], ()):
                if len(frame.key[0]) < _PREFIX and len(frame.key[0]) != k:
                    continue
                found = frame.regex.match(line)
                if found:
                    yield frame, found


def _fit_frames(docs: Sequence[Document], *, min_support: int = 2, min_precision: float = 0.5) -> _FrameIndex:
    frames: dict[tuple[str, ...], _Frame] = {}
    for doc in docs:
        keys = set()
        for line in masked_lines(doc):
            if line.slots and "\n" not in line.text:
                key, labels, regex = _frame_of(line)
                if key not in frames:
                    frames[key] = _Frame(key, labels, re.compile(regex, re.DOTALL))
                keys.add(key)
        for key in keys:
            frames[key].support += 1
    index = _FrameIndex(f for f in frames.values() if f.support >= min_support)
    for doc in docs:  # how often each frame is right on the lines it matches in train
        gold = {(e.start, e.end, e.label) for e in doc.entities}
        for start, raw in _lines(doc.text):
            for frame, found in index.matches(raw):
                for g, label in enumerate(frame.labels, start=1):
                    hit = (start + found.start(g), start + found.end(g), label) in gold
                    frame.right += hit
                    frame.wrong += not hit
    return _FrameIndex(f for f in frames.values() if f.support >= min_support and f.precision >= min_precision)


class LineTemplates(_Planner):
    """Redact the slots of every line that a memorised train frame matches whole; nothing else."""

    def __init__(self, spec: TaskSpec, seed: int, index: _FrameIndex) -> None:
        self._index = index
        super().__init__(spec, seed)

    def plan(self, text: str) -> list[Scored]:
        """The slots of the best-supported frame matching each line."""
        out: list[Scored] = []
        for start, line in _lines(text):
            for frame, found in self._index.matches(line):
                score = frame.precision * math.log1p(frame.support)
                out += [
                    (score, start + found.start(g), start + found.end(g), label)
                    for g, label in enumerate(frame.labels, start=1)
                ]
                break
        return out


def _fit_line_templates(spec: TaskSpec, train_seeds: Iterable[int]) -> Callable[[TaskSpec, int], Any]:
    index = _fit_frames(documents(spec, list(train_seeds)[:MAX_FIT_DOCUMENTS], "train"))
    return lambda spec, seed: LineTemplates(spec, seed, index)


# --------------------------------------------------------------------------- slot contexts


@dataclass
class _Context:
    key: ContextKey
    regex: re.Pattern[str]
    support: int = 0
    right: int = 0
    wrong: int = 0

    @property
    def label(self) -> Label:
        return self.key[4]

    @property
    def precision(self) -> float:
        return self.right / max(1, self.right + self.wrong)


def _fit_contexts(docs: Sequence[Document], *, min_support: int = 3, min_precision: float = 0.5) -> list[_Context]:
    found: dict[tuple[str, str, bool, bool, Label], _Context] = {}
    for doc in docs:
        keys = set()
        for line in masked_lines(doc):
            if "\n" in line.text:
                continue
            for key in _line_contexts(line):
                left, right, at_start, at_end, _ = key
                if not (left.strip() or right.strip()):
                    continue
                gkey = _generalised_key(key)
                if gkey not in found:
                    found[gkey] = _Context(key, re.compile(_context_regex(left, right, at_start, at_end)))
                keys.add(gkey)
        for gkey in keys:
            found[gkey].support += 1
    kept = [c for c in found.values() if c.support >= min_support]
    text = "\n".join(d.text for d in docs)
    gold, base = set(), 0
    for doc in docs:
        gold |= {(base + e.start, base + e.end, e.label) for e in doc.entities}
        base += len(doc.text) + 1
    for c in kept:
        for m in c.regex.finditer(text):
            hit = (m.start(1), m.end(1), c.label) in gold
            c.right += hit
            c.wrong += not hit
    return [c for c in kept if c.precision >= min_precision]


class SlotContexts(_Planner):
    """Redact what every memorised (left, right) slot context frames in the text; nothing else."""

    def __init__(self, spec: TaskSpec, seed: int, contexts: list[_Context]) -> None:
        self._contexts = contexts
        super().__init__(spec, seed)

    def plan(self, text: str) -> list[Scored]:
        """Every span a memorised context frames, scored by its train precision and support."""
        return [
            (c.precision * math.log1p(c.support), m.start(1), m.end(1), c.label)
            for c in self._contexts
            for m in c.regex.finditer(text)
        ]


def _fit_slot_contexts(spec: TaskSpec, train_seeds: Iterable[int]) -> Callable[[TaskSpec, int], Any]:
    contexts = _fit_contexts(documents(spec, list(train_seeds)[:MAX_FIT_DOCUMENTS], "train"))
    return lambda spec, seed: SlotContexts(spec, seed, contexts)
