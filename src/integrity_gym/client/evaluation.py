"""Sealed evaluations: the server draws the items, hands each out once, and grades only at the end.

A held-out evaluation must not let the agent choose what to reset. Against ``igym serve --sealed``
(which holds the eval secret), ``SealedEvaluation.open(url, tasks, episodes)`` asks the server for
an evaluation; it answers with one opaque *handle* per episode. ``RemoteEnv.reset(handle=...)``
starts that episode (once); the observations name no item; grades and explanations stay on the
server until ``close()``, which returns them all. ``igym bench --server URL --sealed`` plays a
whole evaluation this way (docs/evaluation.md).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from integrity_gym.client.protocol import http_error

__all__ = ["SealedEpisode", "SealedEvaluation", "SealedResult"]


@dataclass(frozen=True)
class SealedEpisode:
    """One episode of an evaluation: its handle, task and position."""

    handle: str
    task_id: str
    index: int


@dataclass(frozen=True)
class SealedResult:
    """What the server releases for one episode when the evaluation closes."""

    handle: str
    task_id: str
    index: int
    status: str  # pending (never started), running (cut off by the close) or finished
    steps: int | None
    grade: dict[str, Any] | None
    explanation: Any


def _call(method: str, url: str, body: Any, headers: dict[str, str], timeout: float) -> Any:
    try:
        response = httpx.request(
            method, url, content=None if body is None else json.dumps(body), timeout=timeout, trust_env=False,
            headers={"content-type": "application/json", **headers},
        )  # fmt: skip
    except httpx.HTTPError as exc:
        raise ConnectionError(f"cannot reach {url}: {type(exc).__name__}: {exc}") from exc
    if response.status_code >= 400:
        raise http_error(response.status_code, response.content)
    return response.json()


@dataclass
class SealedEvaluation:
    """An open evaluation on a sealed server (``open`` it; play its ``episodes``; ``close`` it)."""

    url: str
    evaluation_id: str
    data_mode: str
    episodes: list[SealedEpisode]
    timeout: float = 30.0
    headers: dict[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def open(
        cls,
        url: str,
        tasks: Sequence[str],
        episodes: int,
        *,
        repeat_of: str | None = None,
        admin_token: str | None = None,
        timeout: float = 30.0,
    ) -> SealedEvaluation:
        """Ask the sealed server at ``url`` for ``episodes`` episodes of each of ``tasks``.

        ``repeat_of`` replays the items of an earlier evaluation (to compare agents on the same
        items); otherwise the server draws items no earlier evaluation was given.
        """
        token = admin_token if admin_token is not None else os.environ.get("IGYM_ADMIN_TOKEN") or None
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        base = url.rstrip("/")
        body = {"tasks": list(tasks), "episodes": episodes, "repeat_of": repeat_of}
        data = _call("POST", f"{base}/evaluations", body, headers, timeout)
        return cls(
            base, data["evaluation_id"], data["data_mode"],
            [SealedEpisode(e["handle"], e["task_id"], int(e["index"])) for e in data["episodes"]], timeout, headers,
        )  # fmt: skip

    @property
    def sealed_mode(self) -> str:
        """The data mode a run records: ``sealed:<fingerprint of the server's secret>``."""
        return "sealed:" + self.data_mode.split(":", 1)[-1]

    def status(self) -> dict[str, Any]:
        """The server's view of the evaluation (no grades before it is closed)."""
        data: dict[str, Any] = _call("GET", f"{self.url}/evaluations/{self.evaluation_id}", None, self.headers,
                                     self.timeout)  # fmt: skip
        return data

    def close(self) -> list[SealedResult]:
        """Close the evaluation (every handle stops working) and return every episode's result."""
        data = _call("POST", f"{self.url}/evaluations/{self.evaluation_id}/close", None, self.headers, self.timeout)
        fields = ("handle", "task_id", "index", "status", "steps", "grade", "explanation")
        return [SealedResult(**{k: e.get(k) for k in fields}) for e in data["episodes"]]
