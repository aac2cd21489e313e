"""Search backends for the DataCollector: one abstract method, so a web backend is one class."""

from __future__ import annotations

import datetime as dt
from abc import ABC, abstractmethod

from pydantic import Field

from integrity_gym.core.types import WireModel


class SearchHit(WireModel):
    """One retrieved document."""

    doc_id: str = Field(description="Backend-specific document id.")
    url: str = Field(description="Where the document lives.")
    title: str = Field(description="Title or headline.")
    text: str = Field(description="Body or excerpt.")
    date: dt.date | None = Field(default=None, description="Publication date, if known.")
    score: float = Field(description="Relevance score, higher is better (backend-specific scale).")


class SearchBackend(ABC):
    """Something that answers a text query with ranked documents.

    Implement ``search`` (deterministic for a fixed corpus, best first) and pass an instance to
    ``DataCollector``. A web-search backend only needs to turn its API's results into ``SearchHit``.
    """

    @abstractmethod
    def search(self, query: str, limit: int = 10) -> list[SearchHit]:
        """Return at most ``limit`` hits for ``query``, best first."""

    def close(self) -> None:  # noqa: B027 - optional hook, most backends hold nothing
        """Release resources (default: nothing to release)."""
