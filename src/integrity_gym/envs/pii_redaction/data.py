"""The hand-written gold set: one markup file per document kind, parsed into validated Documents.

``data/gold/<kind>.txt`` holds the documents of one kind. Each document starts with a header
line ``=== <number> ===``; lines starting with ``#`` before the first header are comments. Inside a
document, every piece of personal data is written inline as ``{{LABEL|text}}``; the braces and the
label are removed and the offsets recorded, so the gold offsets are correct by construction. The
entity text may span a line break. The blank lines right after a header and right before the next
one are not part of the document.
"""

from __future__ import annotations

import re
from functools import cache
from importlib.resources import files
from typing import get_args

from integrity_gym.envs.pii_redaction.models import LABELS, Document, Entity, Kind

_HEADER = re.compile(r"^=== (\d+) ===[ \t]*$", re.MULTILINE)
_MARK = re.compile(r"\{\{([A-Z]+)\|(.*?)\}\}", re.DOTALL)
KINDS: tuple[str, ...] = get_args(Kind)


def parse_markup(kind: Kind, markup: str) -> tuple[Document, ...]:
    """Parse a gold markup file into documents with ids ``gold-<kind>-NN`` (validated)."""
    headers = list(_HEADER.finditer(markup))
    if not headers:
        raise ValueError(f"gold {kind}: no '=== NN ===' document header found")
    preamble = markup[: headers[0].start()]
    stray = [ln for ln in preamble.splitlines() if ln.strip() and not ln.startswith("#")]
    if stray:
        raise ValueError(f"gold {kind}: text before the first header must be '#' comments, got {stray[0]!r}")
    documents: list[Document] = []
    seen: set[str] = set()
    for i, header in enumerate(headers):
        end = headers[i + 1].start() if i + 1 < len(headers) else len(markup)
        doc_id = f"gold-{kind}-{int(header.group(1)):02d}"
        if doc_id in seen:
            raise ValueError(f"gold {kind}: document number {header.group(1)} appears twice")
        seen.add(doc_id)
        documents.append(_parse_document(kind, doc_id, markup[header.end() : end].strip("\n")))
    return tuple(documents)


def _parse_document(kind: Kind, doc_id: str, body: str) -> Document:
    parts: list[str] = []
    entities: list[Entity] = []
    length = 0
    pos = 0
    for mark in _MARK.finditer(body):
        plain = body[pos : mark.start()]
        _check_plain(doc_id, plain)
        parts.append(plain)
        length += len(plain)
        label, value = mark.group(1), mark.group(2)
        if label not in LABELS:
            raise ValueError(f"{doc_id}: unknown label {label!r} in {mark.group(0)!r}; use one of {', '.join(LABELS)}")
        if not value or value != value.strip(" "):
            raise ValueError(f"{doc_id}: entity {mark.group(0)!r} is empty or has spaces at its ends")
        entities.append(Entity(start=length, end=length + len(value), label=label, text=value))
        parts.append(value)
        length += len(value)
        pos = mark.end()
    tail = body[pos:]
    _check_plain(doc_id, tail)
    parts.append(tail)
    text = "".join(parts)
    if not text.strip():
        raise ValueError(f"{doc_id}: the document is empty")
    return Document(id=doc_id, kind=kind, text=text, entities=tuple(entities))


def _check_plain(doc_id: str, plain: str) -> None:
    for token in ("{{", "}}"):
        if token in plain:
            at = plain.index(token)
            raise ValueError(f"{doc_id}: unbalanced {token!r} near {plain[max(0, at - 30) : at + 30]!r}")


@cache
def load_gold(kind: Kind) -> tuple[Document, ...]:
    """The gold documents of ``kind`` (parsed and validated once, then cached)."""
    if kind not in KINDS:
        raise ValueError(f"unknown document kind {kind!r}; choose one of {', '.join(KINDS)}")
    resource = files("integrity_gym.envs.pii_redaction").joinpath("data", "gold", f"{kind}.txt")
    if not resource.is_file():
        raise ValueError(f"gold set file data/gold/{kind}.txt is missing from the package")
    return parse_markup(kind, resource.read_text(encoding="utf-8"))
