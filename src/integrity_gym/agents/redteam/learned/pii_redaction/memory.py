"""The memory attack on pii_redaction: a blind explorer that reuses what earlier eval episodes paid for."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal, cast

from integrity_gym.agents.redteam.learned.pii_redaction.lines import (
    _WORD,
    ContextKey,
    _generalise,
    _generalised_context_regex,
    _generalised_key,
    _lines,
    _slot_context,
    _tokens_in,
    _wild_regex,
)
from integrity_gym.agents.redteam.learned.pii_redaction.planner import Scored, Span, _Planner
from integrity_gym.core.registry import TaskSpec
from integrity_gym.core.seeding import make_rng
from integrity_gym.envs.pii_redaction.models import Label

_TRIM_END = ".:!?"
#: Labels the blind explorer draws from, uniformly.
_LABELS: tuple[Label, ...] = ("NAME", "EMAIL", "PHONE", "ADDRESS", "DOB", "SSN")
#: How many tokens an explored span holds, and how often (1 token most often, up to 4).
_NGRAMS = (1, 1, 1, 2, 2, 3, 4)

#: Where a remembered span came from: what the memory keys it on.
Source = Literal["value", "context", "left", "position"]
LeftKey = tuple[str, bool, int, Label]
PositionKey = tuple[int, int, int, Label]


@dataclass
class _Record:
    """How often one remembered item paid (a tp bonus) and failed when it was redacted again."""

    paid: int = 0
    failed: int = 0

    @property
    def trusted(self) -> bool:
        return self.paid > self.failed


@dataclass
class MemoryBank:
    """What a memory attack carries from one eval episode to the next.

    Every redaction that earned a ``tp_bonus`` is remembered four ways: its string (``values``),
    the literal text within ten characters either side of it on its line (``contexts``, digit-bearing
    tokens generalised, and only when the span did not cut a token), the text before it with its
    length in tokens (``lefts``), and its line number and columns
    (``positions``). Each item keeps its own record of how often it paid when reused; one that
    failed as often as it paid is no longer used. ``paid_by`` counts the tp bonuses each source
    earned on later episodes: where a memory gain comes from.
    """

    values: dict[tuple[str, Label], _Record] = field(default_factory=dict)
    contexts: dict[ContextKey, _Record] = field(default_factory=dict)
    lefts: dict[LeftKey, _Record] = field(default_factory=dict)
    positions: dict[PositionKey, _Record] = field(default_factory=dict)
    episodes: int = 0
    paid_by: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    tried_by: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def clear(self) -> None:
        """Forget everything earlier episodes showed (the memory-wiped control)."""
        for table in (self.values, self.contexts, self.lefts, self.positions):
            table.clear()

    def __len__(self) -> int:
        return len(self.values) + len(self.contexts) + len(self.lefts) + len(self.positions)


def explore(text: str, rng: Any) -> list[Span]:
    """Seeded random spans of one to four whole tokens within a line, each with a random label: reads nothing."""
    tokens = []
    for start, line in _lines(text):
        words = [
            (start + m.start(), start + m.start() + len(m.group().rstrip(_TRIM_END))) for m in _WORD.finditer(line)
        ]
        tokens.append([(s, e) for s, e in words if e > s])
    flat = [(i, j) for i, line in enumerate(tokens) for j in range(len(line))]
    rng.shuffle(flat)
    out = []
    for i, j in flat:
        n = min(rng.choice(_NGRAMS), len(tokens[i]) - j)
        out.append((tokens[i][j][0], tokens[i][j + n - 1][1], rng.choice(_LABELS)))
    return out


@lru_cache(maxsize=65536)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


class MemoryAgent(_Planner):
    """A blind explorer with a memory of the eval episodes before this one.

    Its own policy reads nothing: it redacts seeded random spans of whole tokens under random
    labels (:func:`explore`). Before exploring it reuses what earlier episodes' rewards showed to
    be PII (:class:`MemoryBank`): the same strings anywhere in the text, and spans framed by the
    same context, after the same text or at the same line and columns, each with the label that
    paid. ``wiped`` is the control: the same agent, its memory emptied at every episode's start,
    so it plays exactly the explorer's spans (seeded by the task and seed alone).
    """

    def __init__(self, spec: TaskSpec, seed: int, bank: MemoryBank, *, wiped: bool = False) -> None:
        self._bank = bank
        self._wiped = wiped
        self._sources: dict[tuple[int, int, Label], list[tuple[Source, Any]]] = {}
        super().__init__(spec, seed)

    def start_episode(self) -> None:
        """A new episode: the wiped control forgets what earlier episodes showed."""
        if self._wiped:
            self._bank.clear()
        self._bank.episodes += 1

    def _recall(self, text: str) -> Iterator[tuple[float, int, int, Label, Source, Any]]:
        bank = self._bank
        for (value, label), rec in bank.values.items():
            if rec.trusted:
                for m in re.finditer(rf"(?<!\w){re.escape(value)}(?!\w)", text):
                    yield 4.0, m.start(), m.end(), label, "value", (value, label)
        for ckey, rec in bank.contexts.items():
            if rec.trusted:
                for m in _compiled(_generalised_context_regex(*ckey[:4])).finditer(text):
                    yield 3.0, m.start(1), m.end(1), ckey[4], "context", ckey
        for lkey, rec in bank.lefts.items():
            left, at_start, n, label = lkey
            if rec.trusted:
                head = ("^" if at_start else "") + _wild_regex(left)
                for m in _compiled(rf"(?m){head}(\S+(?:[ \t]+\S+){{{n - 1}}})").finditer(text):
                    s, e = m.start(1), m.end(1)
                    e = s + len(text[s:e].rstrip(_TRIM_END + ",;"))
                    if e > s:
                        yield 2.0, s, e, label, "left", lkey
        if bank.positions:
            lines = list(_lines(text))
            for pkey, rec in bank.positions.items():
                index, s, e, label = pkey
                if rec.trusted and index < len(lines) and e <= len(lines[index][1]):
                    yield 1.5, lines[index][0] + s, lines[index][0] + e, label, "position", pkey

    def plan(self, text: str) -> list[Scored]:
        """What memory recalls (each with its label), then the explorer's random spans in their seeded order."""
        out: list[Scored] = []
        self._sources = {}
        for score, s, e, label, source, key in self._recall(text):
            if s < e:
                out.append((score, s, e, label))
                self._sources.setdefault((s, e, label), []).append((source, key))
        rng = make_rng("memory-explore", self.spec.id, self.seed)
        spans = explore(text, rng)
        out += [(1.0 - i / (len(spans) + 1), s, e, label) for i, (s, e, label) in enumerate(spans)]
        return out

    def observe(self, result: Any) -> None:
        """Learn from the reward of our last REDACT: a tp bonus means the span was PII under that label."""
        action = self.last_action
        if action is None or action.action_type != "REDACT" or action.start is None or action.end is None:
            return
        breakdown = (result.info or {}).get("reward_breakdown") or {}
        paid = breakdown.get("tp_bonus", 0.0) > 0
        s, e, label = action.start, action.end, cast(Label, action.label)
        bank = self._bank
        for source, key in self._sources.get((s, e, label), ()):
            tables: dict[str, dict[Any, _Record]] = {
                "value": bank.values,
                "context": bank.contexts,
                "left": bank.lefts,
                "position": bank.positions,
            }
            record = tables[source][key]
            record.paid += paid
            record.failed += not paid
            bank.tried_by[source] += 1
            bank.paid_by[source] += paid
        if not paid:
            return
        text = self._text
        line_start = text.rfind("\n", 0, s) + 1
        line_end = text.find("\n", e)
        line_end = len(text) if line_end < 0 else line_end
        bank.values.setdefault((text[s:e], label), _Record(paid=1))
        key = _slot_context(text, line_start, line_end, s, e, line_start, line_end, label)
        left, right, at_start, _, _ = key
        # A frame is the text around a value, in whole tokens: a span that paid while cutting a token (IoU
        # above 0.6 is enough) would otherwise key on a fragment of the value itself.
        cut_left = s > 0 and text[s - 1].isalnum() and text[s].isalnum()
        cut_right = e < len(text) and text[e - 1].isalnum() and text[e].isalnum()
        if (left.strip() or right.strip()) and not (cut_left or cut_right):
            bank.contexts.setdefault(_generalised_key(key), _Record(paid=1))
        if "\n" not in text[s:e]:
            if left.strip() and not cut_left:
                bank.lefts.setdefault((_generalise(left), at_start, _tokens_in(text[s:e]) or 1, label), _Record(paid=1))
            index = text.count("\n", 0, s)
            bank.positions.setdefault((index, s - line_start, e - line_start, label), _Record(paid=1))


def memory_build(*, wiped: bool = False, bank: MemoryBank | None = None) -> Callable[[TaskSpec, int], Any]:
    """A ``build`` whose agents share one memory (``wiped``: each episode starts from an empty one)."""
    shared = MemoryBank() if bank is None else bank
    return lambda spec, seed: MemoryAgent(spec, seed, shared, wiped=wiped)


def _fit_memory(spec: TaskSpec, train_seeds: Iterable[int]) -> Callable[[TaskSpec, int], Any]:
    del spec, train_seeds
    return memory_build()
