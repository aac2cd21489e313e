"""A run folder as ``igym bench`` wrote it, read back: what ``igym report`` and ``igym view`` show.

``load_run`` reads the folder through the run's typed record (``bench.record.RunRecord.load``:
``config.json``, ``episodes.jsonl`` and ``summary.json``) into a ``RunData``, which answers the
questions the report and the viewer ask of a run: its label, its tasks in play order, a task's
threshold, its finished episodes and their grades, one episode's trace. Its ``summary``,
``config`` and ``records`` are the files' JSON, as the figures read them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from integrity_gym.bench.record import SUMMARY_FILE, RunRecord


@dataclass
class RunData:
    """One run folder, loaded."""

    path: Path
    record: RunRecord
    #: Legend name; ``label`` plus the run id's tail when several runs share a label.
    display: str = ""

    @cached_property
    def summary(self) -> dict[str, Any]:
        """``summary.json``, as JSON."""
        return self.record.summary_json()

    @cached_property
    def config(self) -> dict[str, Any]:
        """``config.json``, as JSON ({} for a folder without one)."""
        return self.record.config_json()

    @cached_property
    def records(self) -> list[dict[str, Any]]:
        """The lines of ``episodes.jsonl``, as JSON."""
        return self.record.episodes_json()

    @property
    def run_id(self) -> str:
        """The run's id."""
        return self.record.run_id or self.path.name

    @property
    def data_mode(self) -> str:
        """How the run's items were derived: public, secret:<fingerprint> or sealed:<fingerprint>."""
        header = self.record.header
        return header.data_mode if header is not None and header.data_mode else "public"

    @property
    def sealed(self) -> bool:
        """Played as a sealed evaluation: the server drew the items and graded them at the end."""
        return self.data_mode.startswith("sealed:")

    @property
    def label(self) -> str:
        """Agent (and model) of the run, marked when sealed: what legends show."""
        summary, header = self.record.summary, self.record.header
        agent = summary.agent if summary is not None else header.bench.agent if header is not None else "?"
        model = summary.model if summary is not None else None
        name = agent if not model or model == agent else f"{agent}: {model.rsplit('/', 1)[-1]}"
        return f"{name} [sealed]" if self.sealed else name

    @property
    def tasks(self) -> list[str]:
        """Task ids of the run, in the order the run played them."""
        summarized = self.record.summary.tasks if self.record.summary is not None else {}
        played = self.record.header.task_ids if self.record.header is not None else []
        ordered = [t for t in played if t in summarized]
        return ordered + [t for t in summarized if t not in ordered]

    def threshold(self, task_id: str) -> float | None:
        """Success threshold of a task, from the summary."""
        entry = self.record.summary.tasks.get(task_id) if self.record.summary is not None else None
        return None if entry is None else entry.threshold

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
    if not (folder / SUMMARY_FILE).is_file():
        raise ValueError(f"{folder} is not a run folder: it has no summary.json (run `igym bench` first)")
    try:
        record = RunRecord.load(folder)
    except ValidationError as exc:
        raise ValueError(f"{folder} holds a run this igym cannot read: {exc}") from exc
    run = RunData(folder, record)
    run.display = run.label
    return run
