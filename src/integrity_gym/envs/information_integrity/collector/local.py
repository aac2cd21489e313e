"""Local-corpus search on SQLite FTS5 (standard library) over a folder of JSONL documents.

Each line of every ``*.jsonl`` file under the folder is one document with ``url``, ``title`` and
``text`` (required), and ``id`` and ``date`` (optional, ISO 8601). Ranking is BM25 with the title
weighted double; ties are broken by document id, so results never depend on load order.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from integrity_gym.envs.information_integrity.collector.backend import SearchBackend, SearchHit

_WORD = re.compile(r"[A-Za-z0-9]+")
_STOPWORDS = frozenset(
    (
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "has",
        "have",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "their",
        "this",
        "to",
        "was",
        "were",
        "will",
        "with",
        "not",
        "no",
        "all",
        "any",
        "can",
        "every",
        "than",
        "then",
        "there",
        "they",
        "we",
        "you",
        "your",
        "our",
        "into",
        "over",
        "more",
        "most",
    )
)


def query_terms(text: str) -> list[str]:
    """Lower-cased content words of ``text``, in order, without repeats or stopwords."""
    words = [w.lower() for w in _WORD.findall(text)]
    return list(dict.fromkeys(w for w in words if w not in _STOPWORDS and len(w) > 1))


def _documents(folder: Path) -> Iterator[tuple[str, str, str, str, str | None]]:
    files = sorted(folder.rglob("*.jsonl"))
    if not files:
        raise ValueError(f"corpus: no *.jsonl files under {folder}")
    for file in files:
        with file.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                where = f"{file.name}:{number}"
                try:
                    doc: Any = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ValueError(f"corpus: {where} is not valid JSON: {exc.msg}") from exc
                if not isinstance(doc, dict):
                    raise ValueError(f"corpus: {where} must be a JSON object")
                missing = [k for k in ("url", "title", "text") if not isinstance(doc.get(k), str) or not doc[k]]
                if missing:
                    raise ValueError(f"corpus: {where} lacks {', '.join(missing)}")
                date = doc.get("date")
                if date is not None:
                    try:
                        date = dt.date.fromisoformat(str(date)).isoformat()
                    except ValueError:
                        raise ValueError(f"corpus: {where} date {date!r} is not ISO 8601 (YYYY-MM-DD)") from None
                yield str(doc.get("id") or f"{file.stem}:{number}"), doc["url"], doc["title"], doc["text"], date


class LocalCorpusBackend(SearchBackend):
    """BM25 search over a folder of JSONL documents, indexed in SQLite FTS5."""

    def __init__(self, corpus: str | Path, *, index_path: str | Path | None = None) -> None:
        folder = Path(corpus)
        if not folder.is_dir():
            raise ValueError(f"corpus: {str(corpus)!r} is not a folder")
        self._db = sqlite3.connect(str(index_path) if index_path else ":memory:")
        self._db.execute("DROP TABLE IF EXISTS docs")
        self._db.execute(
            "CREATE VIRTUAL TABLE docs USING fts5(doc_id UNINDEXED, url UNINDEXED, title, body, "
            "date UNINDEXED, tokenize='porter unicode61')"
        )
        self.count = self._insert(_documents(folder))

    def _insert(self, rows: Iterable[tuple[str, str, str, str, str | None]]) -> int:
        with self._db:
            cursor = self._db.executemany("INSERT INTO docs VALUES (?, ?, ?, ?, ?)", rows)
        return int(cursor.rowcount)

    def search(self, query: str, limit: int = 10) -> list[SearchHit]:
        """BM25-ranked hits for any of the content words of ``query``."""
        terms = query_terms(query)
        if not terms or limit <= 0:
            return []
        match = " OR ".join(f'"{t}"' for t in terms)
        rows = self._db.execute(
            "SELECT doc_id, url, title, body, date, bm25(docs, 0.0, 0.0, 2.0, 1.0, 0.0) AS rank "
            "FROM docs WHERE docs MATCH ? ORDER BY rank, doc_id LIMIT ?",
            (match, limit),
        ).fetchall()
        return [
            SearchHit(
                doc_id=r[0],
                url=r[1],
                title=r[2],
                text=r[3],
                date=dt.date.fromisoformat(r[4]) if r[4] else None,
                score=round(-float(r[5]), 6),
            )
            for r in rows
        ]

    def close(self) -> None:
        """Close the SQLite connection."""
        self._db.close()
