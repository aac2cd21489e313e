"""Documents as lines, for the learned attacks on pii_redaction: masked lines, renderings, slot contexts.

A *masked line* is a line of a document with its PII slots; its *template* has every value replaced by
its label. A slot's *context* is the literal text within ten characters either side of it on its line.
Literal text is *generalised* by reading every run of letters and digits that holds a digit as a
wildcard, so that timestamps, ids and counts agree.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import cast

from integrity_gym.core.registry import TaskSpec, make
from integrity_gym.envs.pii_redaction.models import Document, Label

#: A run of letters and digits holding at least one digit: a timestamp, id, count or version piece.
_DIGIT_TOKEN = re.compile(r"[A-Za-z0-9]*[0-9][A-Za-z0-9]*")
_WILD = "\x01"
_WILD_RE = "[A-Za-z0-9]+"
#: A whitespace-delimited token, without the punctuation around it (tokenising, not a shape rule).
_WORD = re.compile(r"[^\s\"'()\[\]<>{},;]+")
_WIDTH = 10

ContextKey = tuple[str, str, bool, bool, Label]


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


def _lines(text: str) -> Iterator[tuple[int, str]]:
    start = 0
    for line in text.split("\n"):
        yield start, line
        start += len(line) + 1


def _generalise(literal: str) -> str:
    """``literal`` with every letter-and-digit run holding a digit replaced by a wildcard mark."""
    return _DIGIT_TOKEN.sub(_WILD, literal)


def _literal_regex(literal: str) -> str:
    return _wild_regex(_generalise(literal))


def _wild_regex(generalised: str) -> str:
    """The regex of a generalised literal (digit-bearing runs already replaced by the wildcard mark)."""
    return re.escape(generalised).replace(re.escape(_WILD), _WILD_RE)


def _context_regex(left: str, right: str, at_start: bool, at_end: bool) -> str:
    """A line-local regex: ``left``, a slot, ``right``, anchored at the line's start or end where they reach it."""
    return _generalised_context_regex(_generalise(left), _generalise(right), at_start, at_end)


def _generalised_context_regex(left: str, right: str, at_start: bool, at_end: bool) -> str:
    """:func:`_context_regex` of a context whose pieces are already generalised."""
    head = ("^" if at_start else "") + _wild_regex(left)
    tail = _wild_regex(right) + ("$" if at_end else "")
    return f"(?m){head}([^\n]{{1,100}}?){tail}"


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


def _generalised_key(key: ContextKey) -> tuple[str, str, bool, bool, Label]:
    left, right, at_start, at_end, label = key
    return _generalise(left), _generalise(right), at_start, at_end, label


def _tokens_in(text: str) -> int:
    return len(_WORD.findall(text))
