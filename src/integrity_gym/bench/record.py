"""The one typed record of a run, and its views: the files of a run folder.

A ``RunRecord`` is what a run is in memory: its ``RunHeader`` (the resolved configuration,
``config.json``), its episodes (``EpisodeRecord``, the lines of ``episodes.jsonl``) and, once it
ends, its ``RunSummary`` (status and per-task figures, ``summary.json``). The runner builds it,
resume reads it back (``RunRecord.load``) and asks it what is ``missing``, the results database
records it (``bench.results``), and the report and the viewer read run folders through it
(``bench.runs``). ``run.log`` is written from it too (``log_lines``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from integrity_gym.bench import logs
from integrity_gym.bench.config import BenchConfig
from integrity_gym.bench.records import EpisodeRecord, TaskSummary
from integrity_gym.bench.summary import summarize_records, summary_lines, tier_separation, tier_table
from integrity_gym.core.registry import TaskSpec

CONFIG_FILE, EPISODES_FILE, SUMMARY_FILE, LOG_FILE = "config.json", "episodes.jsonl", "summary.json", "run.log"
#: The files a run folder holds (``--overwrite`` removes them).
RUN_FILES = (CONFIG_FILE, EPISODES_FILE, SUMMARY_FILE, LOG_FILE)

#: ``running`` until the run ends; ``failed``: too many failed episodes, or a summary failed.
RunStatus = Literal["running", "complete", "failed", "interrupted"]


class SealedReference(BaseModel):
    """The sealed evaluation a run played (``config.json``'s ``evaluation``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(description="The evaluation's id on the server.")
    server: str = Field(description="The server's URL.")


class RunHeader(BaseModel):
    """A run's resolved configuration: ``config.json``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str = Field(description="Sortable unique id: UTC time, agent (and model), random tail.")
    created_at: str = Field(description="When the run started (UTC, ISO 8601).")
    bench: BenchConfig = Field(description="What the run plays.")
    tasks: list[dict[str, Any]] = Field(description="The selected tasks' specs (JSON), in play order.")
    seeds: list[int] = Field(description="The seed of every episode index.")
    environment: dict[str, str] = Field(description="Environment variables that configure the run.")
    reproduce: str = Field(description="The shell line that plays the same episodes again.")
    invoked_as: str | None = Field(None, description="The command line that started the run.")
    python: str = Field(description="Python version.")
    igym_version: str = Field(description="integrity-gym version.")
    data_mode: str = Field(description="How the items were derived: public, secret:<fp>, sealed:<fp>, ...")
    evaluation: SealedReference | None = Field(None, description="The sealed evaluation played, if any.")

    @property
    def task_ids(self) -> list[str]:
        """The selected tasks' ids, in play order."""
        return [str(t["id"]) for t in self.tasks]

    def to_json(self) -> dict[str, Any]:
        """``config.json``'s content (``evaluation`` only in a sealed run's)."""
        return self.model_dump(mode="json", exclude={"evaluation"} if self.evaluation is None else set())


class RunSummary(BaseModel):
    """A finished run's figures: ``summary.json`` (its keys in this order)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tasks: dict[str, TaskSummary] = Field(description="Per task, in play order.")
    run_id: str
    status: RunStatus
    agent: str
    model: str = Field(description="The model played, else the agent.")
    tiers: dict[str, dict[str, Any]] = Field(description="Per tier over every task (summary.tier_table).")
    tier_separation: dict[str, dict[str, Any]] = Field(description="Per environment (summary.tier_separation).")
    reproduce: str
    episodes_failed: int = Field(ge=0)


@dataclass(frozen=True)
class PlannedEpisode:
    """One episode a run plays: its task, index (``epoch * seeds + position``), seed and epoch."""

    spec: TaskSpec
    index: int
    seed: int
    epoch: int

    @property
    def key(self) -> tuple[str, int]:
        """The episode's identity in its run, as ``EpisodeRecord.key``."""
        return self.spec.id, self.index


def plan(bench: BenchConfig, specs: Sequence[TaskSpec]) -> list[PlannedEpisode]:
    """Every episode of a run, in play order: per task, per epoch, per seed."""
    seeds = bench.seed_list()
    return [
        PlannedEpisode(spec, epoch * len(seeds) + i, seed, epoch)
        for spec in specs
        for epoch in range(bench.epochs)
        for i, seed in enumerate(seeds)
    ]


def read_episodes(path: Path) -> list[EpisodeRecord]:
    """The records of an ``episodes.jsonl``; a line cut short by a crash is skipped."""
    if not path.is_file():
        return []
    out = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        try:
            out.append(EpisodeRecord.model_validate_json(line))
        except ValidationError:
            continue  # the last line of a killed run may be half written
    return out


def episode_line(record: EpisodeRecord) -> str:
    """One line of ``episodes.jsonl``."""
    return record.model_dump_json() + "\n"


class RunRecord(BaseModel):
    """A run: header, episodes and (once ended) summary. The run folder's files are its views.

    A folder written without ``config.json`` (or before the run ended, without ``summary.json``)
    loads with that part ``None``.
    """

    model_config = ConfigDict(extra="forbid")

    header: RunHeader | None = Field(None, description="config.json.")
    episodes: list[EpisodeRecord] = Field(default_factory=list, description="episodes.jsonl, finished first.")
    summary: RunSummary | None = Field(None, description="summary.json (None while the run goes on).")

    # ------------------------------------------------------------------ reading a folder
    @classmethod
    def load(cls, folder: Path) -> RunRecord:
        """The run in ``folder`` as written: whichever of its files exist."""
        config, summary = folder / CONFIG_FILE, folder / SUMMARY_FILE
        return cls(
            header=RunHeader.model_validate_json(config.read_text()) if config.is_file() else None,
            episodes=read_episodes(folder / EPISODES_FILE),
            # json.loads reads the Infinity that json.dumps writes for an unbounded error (tier_separation).
            summary=RunSummary.model_validate(json.loads(summary.read_text())) if summary.is_file() else None,
        )

    # ------------------------------------------------------------------ resume
    @property
    def done_keys(self) -> set[tuple[str, int]]:
        """Episodes that finished (a failed one is played again)."""
        return {r.key for r in self.episodes if not r.error}

    def missing(self, planned: Sequence[PlannedEpisode]) -> list[PlannedEpisode]:
        """What of ``planned`` is still to play: every episode that did not finish."""
        done = self.done_keys
        return [p for p in planned if p.key not in done]

    def without_failures(self) -> RunRecord:
        """The record a resume continues: the finished episodes only, no summary yet."""
        return RunRecord(header=self.header, episodes=[r for r in self.episodes if not r.error])

    # ------------------------------------------------------------------ ending
    def finish(self, specs: Sequence[TaskSpec], *, interrupted: bool) -> RunSummary:
        """Sort the episodes, summarize them per task and decide the status; returns the summary."""
        header = self._header()
        self.episodes = sorted(self.episodes, key=lambda r: (r.task_id, r.index))
        by_task = {spec.id: [r for r in self.episodes if r.task_id == spec.id] for spec in specs}
        tasks = {spec.id: summarize_records(spec, by_task[spec.id]) for spec in specs if by_task[spec.id]}
        failed = sum(1 for r in self.episodes if r.error)
        status: RunStatus = "interrupted" if interrupted else "complete"
        if status == "complete" and (
            failed > header.bench.max_failures or any(s.summary_error for s in tasks.values())
        ):
            status = "failed"
        self.summary = RunSummary(
            tasks=tasks, run_id=header.run_id, status=status, agent=header.bench.agent,
            model=header.bench.model_label, tiers=tier_table(tasks), tier_separation=tier_separation(tasks),
            reproduce=header.reproduce, episodes_failed=failed,
        )  # fmt: skip
        return self.summary

    def _header(self) -> RunHeader:
        if self.header is None:
            raise ValueError("a run without its configuration (config.json) cannot be played or summarized")
        return self.header

    # ------------------------------------------------------------------ views
    @property
    def run_id(self) -> str:
        """The run's id (from the header, else the summary; '' for neither)."""
        if self.header is not None:
            return self.header.run_id
        return self.summary.run_id if self.summary is not None else ""

    def summary_text(self) -> str:
        """``summary.json`` ('{}' before the run ended).

        Dumped by ``json``, not pydantic's JSON mode: an infinite standard error (a tier without an
        interval) stays ``Infinity`` instead of becoming null.
        """
        payload = {} if self.summary is None else self.summary.model_dump()
        return json.dumps(payload, indent=2, default=str) + "\n"

    def summary_json(self) -> dict[str, Any]:
        """``summary.json``'s content, as JSON reads it ({} before the run ended)."""
        loaded: dict[str, Any] = json.loads(self.summary_text())
        return loaded

    def episodes_json(self) -> list[dict[str, Any]]:
        """The lines of ``episodes.jsonl``, as JSON reads them."""
        return [json.loads(episode_line(r)) for r in self.episodes]

    def config_json(self) -> dict[str, Any]:
        """``config.json``'s content ({} for a folder without one)."""
        return {} if self.header is None else self.header.to_json()

    def log_lines(self) -> list[str]:
        """``run.log``: every episode's block, then the plain-text summary."""
        header = self._header()
        lines = [line for r in self.episodes for line in logs.episode_block(r, header.bench.model_label)]
        if self.summary is not None:
            s = self.summary
            lines += summary_lines(s.tasks, s.tiers, s.tier_separation, s.status, s.reproduce)
        return lines

    def write_config(self, folder: Path) -> None:
        """Write ``config.json``."""
        folder.mkdir(parents=True, exist_ok=True)
        (folder / CONFIG_FILE).write_text(json.dumps(self.config_json(), indent=2, sort_keys=True) + "\n")

    def write_ended(self, folder: Path) -> None:
        """Write the ended run's ``episodes.jsonl`` (in a stable order), ``summary.json`` and ``run.log``."""
        (folder / EPISODES_FILE).write_text("".join(episode_line(r) for r in self.episodes))
        # Insertion order: tasks as played, metrics as the environment lists them.
        (folder / SUMMARY_FILE).write_text(self.summary_text())
        (folder / LOG_FILE).write_text("\n".join(self.log_lines()) + "\n")


def merge_records(records: Sequence[RunRecord]) -> RunRecord:
    """Several runs as one (the report pools the runs of one agent/model): tasks and episodes together.

    The first run's header and summary lead; a task summarized by several runs keeps the first's.
    """
    first = records[0]
    header, summary = first.header, first.summary
    tasks = dict(summary.tasks) if summary is not None else {}
    specs = list(header.tasks) if header is not None else []
    for other in records[1:]:
        if other.summary is not None:
            for task_id, s in other.summary.tasks.items():
                tasks.setdefault(task_id, s)
        if other.header is not None:
            known = {t.get("id") for t in specs}
            specs += [t for t in other.header.tasks if t.get("id") not in known]
    return RunRecord(
        header=None if header is None else header.model_copy(update={"tasks": specs}),
        episodes=[e for r in records for e in r.episodes],
        summary=None if summary is None else summary.model_copy(update={"tasks": tasks}),
    )


__all__ = [
    "RUN_FILES",
    "PlannedEpisode",
    "RunHeader",
    "RunRecord",
    "RunStatus",
    "RunSummary",
    "SealedReference",
    "episode_line",
    "plan",
    "read_episodes",
]
