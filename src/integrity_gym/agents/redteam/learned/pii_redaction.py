"""Learned attacks on pii_redaction: models fitted on the public train partition, and a memory attack.

Each attack reads the whole document window by window first (it only keeps what the windows
showed), then plans its redactions over the full text and walks back, redacting every planned
span in the first window that holds it; when the step budget cannot pay for every planned span,
the best-scored ones go first. What differs is the plan:

- ``line_templates`` memorises the *masked line templates* of the train documents (each line
  with its PII values replaced by their labels, runs of letters and digits that hold a digit
  generalised), keeps those seen in at least two train documents that were right at least half
  the time they matched a train line, and on eval redacts the slots of every line that one of
  them matches whole. It finds PII by position, without reading it.
- ``slot_contexts`` memorises the literal text right around each slot (up to ten characters
  either side, within the line) instead of whole lines: the stronger, partial form of the same
  memorisation.
- ``memory`` plays the eval documents in order and remembers every earlier episode. Its own
  policy reads nothing: it redacts seeded random spans of one to four whole tokens under random
  labels. Before exploring it reuses what earlier episodes' rewards (a ``tp_bonus`` in the step's
  reward breakdown) showed to be PII: the same strings anywhere in the text, spans framed by the
  same ten characters either side, spans after the same ten characters, and spans at the same line
  and columns, each with the label that paid. Its control is the same agent with its memory
  emptied at every episode's start (``memory_build(wiped=True)``), which plays exactly the
  explorer's spans; the difference between the two on the same seeds is what memory buys.

A reader fitted on train tokens (a logistic regression on character n-grams, shapes and
neighbouring words, once ``token_model`` here) is not among these attacks: it reads PII, which is
doing the task (it scored 0.846 / 0.716 / 0.408 on generator v3, below the heuristic; the
environment's README keeps the numbers).

The helpers :func:`masked_lines`, :func:`masked_template` and :func:`template_overlap` measure
how many eval lines holding PII have a masked template that the train partition also shows
(``tests/redteam/test_learned_pii_redaction.py`` and the environment's README);
:func:`surface_overlap` reports the same rows to ``igym redteam --learned``. :func:`eval_recurrence`
measures what the memory attack could reuse: how many eval values, frames and positions an
earlier eval document already showed.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal, cast

from integrity_gym.agents.redteam.learned import Learned, Overlap
from integrity_gym.core.registry import TaskSpec, make
from integrity_gym.core.seeding import make_rng
from integrity_gym.envs.pii_redaction.models import Document, Label, RedactionAction, RedactionObservation
from integrity_gym.envs.pii_redaction.window import last_cursor, stride

__all__ = [
    "LEARNED",
    "MemoryAgent",
    "MemoryBank",
    "documents",
    "eval_recurrence",
    "explore",
    "masked_lines",
    "masked_template",
    "memory_build",
    "overlap",
    "surface_overlap",
    "template_overlap",
]

#: Train documents are long in the hard tier; every tier is fitted on this many at most.
MAX_FIT_DOCUMENTS = 300

Span = tuple[int, int, Label]
Scored = tuple[float, int, int, Label]

# --------------------------------------------------------------------------- documents and templates

#: A run of letters and digits holding at least one digit: a timestamp, id, count or version piece.
_DIGIT_TOKEN = re.compile(r"[A-Za-z0-9]*[0-9][A-Za-z0-9]*")
_WILD = "\x01"
_WILD_RE = "[A-Za-z0-9]+"


def documents(spec: TaskSpec, seeds: Iterable[int], partition: str) -> list[Document]:
    """The documents ``spec``'s task plays at ``seeds`` in ``partition`` (train is public; eval is for measuring)."""
    env = make(spec.id, partition=partition)
    out = []
    for seed in seeds:
        env.reset(seed=seed)
        out.append(cast(Document, env.state().document))
    env.close()
    return out


@dataclass(frozen=True)
class MaskedLine:
    """One line of a document: its absolute start, its text, and the PII slots in it (relative offsets)."""

    start: int
    text: str
    slots: tuple[tuple[int, int, Label], ...]


def masked_lines(doc: Document) -> list[MaskedLine]:
    """Every line of ``doc`` with the entities inside it (an entity over a line break joins its two lines)."""
    text = doc.text
    breaks = [i for i, ch in enumerate(text) if ch == "\n"]
    inside = {i for e in doc.entities for i in range(e.start, e.end) if text[i] == "\n"}
    cuts = [i for i in breaks if i not in inside]
    lines: list[MaskedLine] = []
    start = 0
    entities = list(doc.entities)
    k = 0
    for end in [*cuts, len(text)]:
        slots = []
        while k < len(entities) and entities[k].start < end:
            e = entities[k]
            slots.append((e.start - start, e.end - start, e.label))
            k += 1
        lines.append(MaskedLine(start, text[start:end], tuple(slots)))
        start = end + 1
    return lines


def masked_template(line: MaskedLine, *, digits: bool = False) -> str:
    """The line with each PII value replaced by ``{LABEL}`` (and, with ``digits``, every digit run by ``0``)."""
    out, pos = [], 0
    for s, e, label in line.slots:
        piece = line.text[pos:s]
        out += [re.sub(r"\d+", "0", piece) if digits else piece, "{" + label + "}"]
        pos = e
    tail = line.text[pos:]
    out.append(re.sub(r"\d+", "0", tail) if digits else tail)
    return "".join(out)


#: Words a rendering keeps as they are (spoken digits, separators, date words); other words become their case.
_RENDER_WORD_LIST = (
    "zero", "oh", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
    "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty",
    "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety", "hundred", "thousand", "double",
    "triple", "cero", "uno", "dos", "tres", "cuatro", "cinco", "seis", "siete", "ocho", "nueve", "at", "dot",
    "sign", "symbol", "period", "point", "underscore", "dash", "plus", "full", "stop", "area", "code", "then",
    "and", "number", "is", "the", "of", "slash", "first", "second", "third", "fourth", "fifth", "sixth",
    "seventh", "eighth", "ninth", "tenth", "twelfth", "twentieth", "thirtieth", "st", "nd", "rd", "th", "box",
    "po", "apartment", "unit", "flat", "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf",
    "hotel", "india", "juliet", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo",
    "sierra", "tango", "uniform", "victor", "whiskey", "x", "ray", "yankee", "zulu", "january", "february",
    "march", "april", "may", "june", "july", "august", "september", "october", "december", "jan", "feb",
    "mar", "apr", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
)  # fmt: skip
_RENDER_WORDS = frozenset(_RENDER_WORD_LIST)
_RENDER_TOKEN = re.compile(r"[A-Za-z]+|\d+|\s+|.", re.DOTALL)


def rendering(text: str) -> str:
    """How a value is written, without the value: digit runs ``0``, words by case unless telling, spaces kept.

    'Jane Doe' and 'Mark Lee' share the rendering 'Aa Aa'; 'jane dot doe at gmail dot com' is
    'a dot a at a dot a', which no plainly written address shares.
    """
    out = []
    for tok in _RENDER_TOKEN.findall(text):
        if tok.isdigit():
            out.append("0")
        elif tok.isascii() and tok.isalpha():
            low = tok.lower()
            case = "A" if tok.isupper() and len(tok) > 1 else "Aa" if tok[0].isupper() else "a"
            out.append(low if low in _RENDER_WORDS else case)
        elif tok.isspace():
            out.append("\n" if "\n" in tok else " ")
        else:
            out.append(tok)
    return "".join(out)


def template_overlap(spec: TaskSpec, train_seeds: Iterable[int], eval_seeds: Iterable[int]) -> dict[str, float]:
    """How much of the eval partition's PII lines the train partition already shows.

    ``exact``: share of eval lines holding PII whose masked template (values replaced by labels)
    some train line also has; ``digits``: the same with every digit run read as ``0`` (timestamps,
    counts and ids then agree); ``context``: share of eval PII values whose ten characters of
    literal text either side (within the line, digit-bearing tokens generalised) occur around a
    value of the same label in train; ``renderings``: share of eval PII values whose written form
    (:func:`rendering`, with the label) some train value shares; ``values``: share of eval PII
    values (label and text) that also occur in train.
    """
    return overlap(documents(spec, train_seeds, "train"), documents(spec, eval_seeds, "eval"))


#: The forms :func:`overlap` compares, and what each is (``igym redteam --learned`` prints them).
FORMS = {
    "exact": "masked line template (each PII value replaced by its label), per eval line holding PII",
    "digits": "masked line template with every digit run read as 0, per eval line holding PII",
    "context": "literal text within ten characters either side of a PII value (digit-bearing tokens "
    "generalised), per eval value",
    "renderings": "how a PII value is written (digit runs 0, words by case unless telling), per eval value",
    "values": "PII value (label and exact text), per eval value",
}


def _forms(docs: Sequence[Document]) -> dict[str, list[object]]:
    """Every occurrence of every compared form in ``docs``."""
    lines = [ln for d in docs for ln in masked_lines(d) if ln.slots]
    ents = [(e.label, e.text) for d in docs for e in d.entities]
    return {
        "exact": [masked_template(ln) for ln in lines],
        "digits": [masked_template(ln, digits=True) for ln in lines],
        "context": [_generalised_key(k) for ln in lines for k in _line_contexts(ln)],
        "renderings": [(label, rendering(text)) for label, text in ents],
        "values": list(ents),
    }


def _compare(train: Sequence[Document], evals: Sequence[Document]) -> dict[str, tuple[int, int, float]]:
    seen, found = _forms(train), _forms(evals)
    out = {}
    for name, occurrences in found.items():
        known = set(seen[name])
        share = sum(f in known for f in occurrences) / max(1, len(occurrences))
        out[name] = (len(known), len(set(occurrences)), share)
    return out


def overlap(train: Sequence[Document], evals: Sequence[Document]) -> dict[str, float]:
    """:func:`template_overlap` of documents ``evals`` against documents ``train``."""
    shares = {name: share for name, (_, _, share) in _compare(train, evals).items()}
    return {"lines": float(sum(1 for d in evals for ln in masked_lines(d) if ln.slots)), **shares}


def surface_overlap(
    spec: TaskSpec, train_seeds: Iterable[int] = range(300), eval_seeds: Iterable[int] = range(100)
) -> list[Overlap]:
    """The environment's hook for ``igym redteam --learned``: each form's train/eval overlap on ``spec``'s task."""
    rows = _compare(documents(spec, train_seeds, "train"), documents(spec, eval_seeds, "eval"))
    return [Overlap(spec.id, FORMS[name], train, evals, share) for name, (train, evals, share) in rows.items()]


#: What :func:`eval_recurrence` compares, and what each is.
RECURRENCE_FORMS = {
    "values": "PII value (label and exact text)",
    "contexts": "ten characters either side of the value within its line, digit-bearing tokens generalised",
    "lefts": "ten characters before the value with its length in tokens",
    "positions": "line number and columns",
}


def _memory_keys(doc: Document) -> dict[str, list[object]]:
    """Every PII value of ``doc`` keyed as the memory attack keys what paid (contexts not cut at other values)."""
    out: dict[str, list[object]] = {name: [] for name in RECURRENCE_FORMS}
    for ln in masked_lines(doc):
        for s, e, label in ln.slots:
            key = _slot_context(ln.text, 0, len(ln.text), s, e, 0, len(ln.text), label)
            value = ln.text[s:e]
            out["values"].append((label, value))
            out["contexts"].append(_generalised_key(key))
            if key[0].strip():  # as the memory: no key on an empty left
                out["lefts"].append((_generalise(key[0]), key[2], _tokens_in(value) or 1, label))
            out["positions"].append((doc.text.count("\n", 0, ln.start + s), s, e, label))
    return out


def eval_recurrence(docs: Sequence[Document]) -> dict[str, float]:
    """Share of the PII occurrences of ``docs`` (in order) whose form an earlier document already showed.

    Forms as in :data:`RECURRENCE_FORMS`: what a memory of earlier episodes could reuse, measured on the
    gold rather than through an agent's rewards (an upper bound on what the memory attack can learn).
    """
    seen: dict[str, set[object]] = {name: set() for name in RECURRENCE_FORMS}
    hits = dict.fromkeys(RECURRENCE_FORMS, 0)
    total = dict.fromkeys(RECURRENCE_FORMS, 0)
    for doc in docs:
        keys = _memory_keys(doc)
        for name, occurrences in keys.items():
            hits[name] += sum(k in seen[name] for k in occurrences)
            total[name] += len(occurrences)
        for name, occurrences in keys.items():
            seen[name].update(occurrences)
    return {name: hits[name] / max(1, total[name]) for name in RECURRENCE_FORMS}


# --------------------------------------------------------------------------- the shared player


class _Planner:
    """Read the document once, plan spans over the whole text, walk back redacting them within the budget."""

    def __init__(self, spec: TaskSpec, seed: int = 0) -> None:
        self.spec = spec
        self.seed = seed
        self._reset_episode()

    def _reset_episode(self) -> None:
        self._buffer: list[str] = []
        self._text = ""
        self._pending: list[Span] = []
        self._reading = True
        self.last_action: RedactionAction | None = None

    def plan(self, text: str) -> list[Scored]:
        """Scored absolute spans to redact in ``text`` (higher first when the budget is short)."""
        raise NotImplementedError

    def start_episode(self) -> None:
        """Called at every episode's first step (memory attacks use it)."""

    def act(self, observation: RedactionObservation) -> RedactionAction:
        """Read on to the end, then redact the planned spans window by window on the way back, then FINISH."""
        obs = observation
        if obs.step_count == 0:
            self._reset_episode()
            self.start_episode()
        lo = obs.cursor_position
        hi = lo + len(obs.visible_text)
        if self._reading:
            if len(self._buffer) < hi:
                self._buffer.extend(obs.visible_text[len(self._buffer) - lo :])
            if hi < obs.document_length:
                return self._do(RedactionAction(action_type="NEXT_CHUNK"))
            self._reading = False
            self._text = "".join(self._buffer)
            self._pending = self._budgeted(self.plan(self._text), obs)
        for i, (s, e, label) in enumerate(self._pending):
            if lo <= s and e <= hi:
                del self._pending[i]
                return self._do(RedactionAction(action_type="REDACT", start=s, end=e, label=label))
        if self._pending and obs.steps_left > 1 and lo > 0:
            return self._do(RedactionAction(action_type="PREV_CHUNK"))
        return self._do(RedactionAction(action_type="FINISH"))

    def _do(self, action: RedactionAction) -> RedactionAction:
        self.last_action = action
        return action

    def _budgeted(self, scored: list[Scored], obs: RedactionObservation) -> list[Span]:
        """The best spans that the steps left pay for (a REDACT each, the moves back, FINISH), none overlapping."""
        size, length = obs.window_size, obs.document_length
        top, step = last_cursor(length, size), stride(size)
        chosen: list[Span] = []
        lowest = length
        for _, s, e, label in sorted(scored, key=lambda t: (-t[0], t[1])):
            if e - s < 1 or e - s > step or any(s < ce and cs < e for cs, ce, _ in chosen):
                continue
            low = min(lowest, s)
            moves = 0 if low >= top else math.ceil((top - low) / step)
            if len(chosen) + 1 + moves + 1 > obs.steps_left:
                continue
            chosen.append((s, e, label))
            lowest = low
        return sorted(chosen, key=lambda t: -t[0])


def _lines(text: str) -> Iterator[tuple[int, str]]:
    start = 0
    for line in text.split("\n"):
        yield start, line
        start += len(line) + 1


# --------------------------------------------------------------------------- line templates


def _generalise(literal: str) -> str:
    """``literal`` with every letter-and-digit run holding a digit replaced by a wildcard mark."""
    return _DIGIT_TOKEN.sub(_WILD, literal)


def _literal_regex(literal: str) -> str:
    return re.escape(_generalise(literal)).replace(re.escape(_WILD), _WILD_RE)


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

_WIDTH = 10


def _context_regex(left: str, right: str, at_start: bool, at_end: bool) -> str:
    """A line-local regex: ``left``, a slot, ``right``, anchored at the line's start or end where they reach it."""
    head = ("^" if at_start else "") + _literal_regex(left)
    tail = _literal_regex(right) + ("$" if at_end else "")
    return f"(?m){head}([^\n]{{1,100}}?){tail}"


ContextKey = tuple[str, str, bool, bool, Label]


def _slot_context(
    text: str, line_start: int, line_end: int, s: int, e: int, lo: int, hi: int, label: Label
) -> ContextKey:
    """The context key of slot ``[s, e)`` in line ``[line_start, line_end)``, between neighbours ``lo`` and ``hi``."""
    left = text[max(lo, s - _WIDTH) : s]
    right = text[e : min(hi, e + _WIDTH)]
    return left, right, s - len(left) == line_start, e + len(right) == line_end, label


def _line_contexts(line: MaskedLine) -> Iterator[ContextKey]:
    for i, (s, e, label) in enumerate(line.slots):
        lo = line.slots[i - 1][1] if i else 0
        hi = line.slots[i + 1][0] if i + 1 < len(line.slots) else len(line.text)
        yield _slot_context(line.text, 0, len(line.text), s, e, lo, hi, label)


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


def _generalised_key(key: ContextKey) -> tuple[str, str, bool, bool, Label]:
    left, right, at_start, at_end, label = key
    return _generalise(left), _generalise(right), at_start, at_end, label


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


# --------------------------------------------------------------------------- memory

#: A whitespace-delimited token, without the punctuation around it (tokenising, not a shape rule).
_WORD = re.compile(r"[^\s\"'()\[\]<>{},;]+")
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


def _wild_regex(generalised: str) -> str:
    """The regex of a generalised literal (digit-bearing runs already replaced by the wildcard mark)."""
    return re.escape(generalised).replace(re.escape(_WILD), _WILD_RE)


def _generalised_context_regex(left: str, right: str, at_start: bool, at_end: bool) -> str:
    """:func:`_context_regex` of a context whose pieces are already generalised."""
    head = ("^" if at_start else "") + _wild_regex(left)
    tail = _wild_regex(right) + ("$" if at_end else "")
    return f"(?m){head}([^\n]{{1,100}}?){tail}"


@lru_cache(maxsize=65536)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _tokens_in(text: str) -> int:
    return len(_WORD.findall(text))


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


#: The learned attacks on pii_redaction.
LEARNED: tuple[Learned, ...] = (
    Learned(
        "line_templates",
        "Masked line templates of the train documents (PII replaced by its label, digit-bearing tokens "
        "generalised); on eval the slots of every line a memorised template matches whole.",
        _fit_line_templates,
    ),
    Learned(
        "slot_contexts",
        "The literal text within ten characters either side of each PII value in train; on eval every span "
        "those contexts frame.",
        _fit_slot_contexts,
    ),
    Learned(
        "memory",
        "Eval documents in order: a blind explorer (seeded random token spans, random labels) that first "
        "reuses what earned a tp bonus in earlier episodes: the same strings, spans in the same ten-character "
        "context, after the same text, or at the same line and columns.",
        _fit_memory,
        memory=True,
    ),
)
