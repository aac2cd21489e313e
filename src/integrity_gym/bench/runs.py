"""A run folder as ``igym bench`` wrote it, read back: what ``igym report`` and ``igym view`` show.

A run folder holds ``summary.json`` (``summary.write_summary``), ``episodes.jsonl`` (one
``records.EpisodeRecord`` a line) and ``config.json``. ``load_run`` reads them as plain JSON into a
``RunData``, which answers the questions the report and the viewer ask of a run: its label, its
tasks in play order, a task's threshold, its finished episodes and their grades, one episode's trace.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class RunData:
    """One run folder, loaded."""

    path: Path
    summary: dict[str, Any]
    config: dict[str, Any]
    records: list[dict[str, Any]] = field(default_factory=list)
    #: Legend name; ``label`` plus the run id's tail when several runs share a label.
    display: str = ""

    @property
    def run_id(self) -> str:
        """The run's id."""
        return str(self.summary.get("run_id") or self.config.get("run_id") or self.path.name)

    @property
    def data_mode(self) -> str:
        """How the run's items were derived: public, secret:<fingerprint> or sealed:<fingerprint>."""
        return str(self.config.get("data_mode") or "public")

    @property
    def sealed(self) -> bool:
        """Played as a sealed evaluation: the server drew the items and graded them at the end."""
        return self.data_mode.startswith("sealed:")

    @property
    def label(self) -> str:
        """Agent (and model) of the run, marked when sealed: what legends show."""
        agent = str(self.summary.get("agent") or self.config.get("bench", {}).get("agent") or "?")
        model = self.summary.get("model")
        name = agent if not model or model == agent else f"{agent}: {str(model).rsplit('/', 1)[-1]}"
        return f"{name} [sealed]" if self.sealed else name

    @property
    def tasks(self) -> list[str]:
        """Task ids of the run, in the order the run played them."""
        summarized = self.summary.get("tasks", {})
        ordered = [t["id"] for t in self.config.get("tasks", []) if t.get("id") in summarized]
        return ordered + [t for t in summarized if t not in ordered]

    def threshold(self, task_id: str) -> float | None:
        """Success threshold of a task, from the summary."""
        entry = self.summary.get("tasks", {}).get(task_id)
        return None if not entry or "threshold" not in entry else float(entry["threshold"])

    def completed(self, *, env: str | None = None, task_id: str | None = None) -> list[dict[str, Any]]:
        """Episodes that finished (no error), optionally of one env or task."""
        return [
            r for r in self.records
            if not r.get("error") and r.get("grade") and (env is None or r["env"] == env)
            and (task_id is None or r["task_id"] == task_id)
        ]  # fmt: skip

    def scores(self, task_id: str) -> list[float]:
        """Grades of a task's finished episodes."""
        return [float(r["score"]) for r in self.completed(task_id=task_id)]

    def pick(self, task_id: str, index: int | None = None) -> dict[str, Any] | None:
        """Episode ``index`` of a task, or its median-graded episode (the lower median, lowest index on ties).

        The median, not the best: a trace stands for the run, and the best episode of a random
        agent looks like a good agent's.
        """
        records = self.completed(task_id=task_id)
        if index is not None:
            return next((r for r in records if r["index"] == index), None)
        if not records:
            return None
        ranked = sorted(records, key=lambda r: (r["score"], r["index"]))
        return ranked[(len(ranked) - 1) // 2]

    def trace(self, task_id: str, index: int | None = None) -> list[float]:
        """Step rewards of the picked episode."""
        record = self.pick(task_id, index)
        return [] if record is None else [s["reward"] for s in record["trajectory"]]


def load_run(path: str | Path) -> RunData:
    """Load a run folder (or the path of its summary.json)."""
    folder = Path(path)
    if folder.is_file():
        folder = folder.parent
    summary_path = folder / "summary.json"
    if not summary_path.is_file():
        raise ValueError(f"{folder} is not a run folder: it has no summary.json (run `igym bench` first)")
    summary = json.loads(summary_path.read_text())
    config_path = folder / "config.json"
    config = json.loads(config_path.read_text()) if config_path.is_file() else {}
    records = []
    episodes = folder / "episodes.jsonl"
    if episodes.is_file():
        records = [json.loads(line) for line in episodes.read_text().splitlines() if line.strip()]
    run = RunData(folder, summary, config, records)
    run.display = run.label
    return run
