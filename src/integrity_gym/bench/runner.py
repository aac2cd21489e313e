"""Run agents over tasks: episodes in parallel threads, full trajectories, summaries, run folders.

``run_bench`` is the library entry point (``igym bench`` calls it). One run writes, under its
folder: ``run.log`` (``[START]/[STEP]/[END]`` blocks, then the summary), ``episodes.jsonl`` (one
line per episode with the whole trajectory), ``summary.json`` (its figures come from
``bench.summary``) and ``config.json`` (the resolved configuration, the seeds and the command
that reproduces the run): the views of the run's one ``RunRecord`` (``bench.record``). Episodes
are also recorded in the SQLite results database as they finish. Ctrl-C stops the run after the
steps in flight and keeps every finished episode (``bench.pool``, ``bench.signals``); an episode
that raises is recorded with its error and the run goes on (``bench.episode``), but the run's
status is ``failed`` when more than ``max_failures`` episodes failed. Everything that would make
every episode fail (agent, config, extras, server, model endpoint) is checked before the first
episode (``preflight``). ``resume_bench`` continues an interrupted run in its own folder, playing
only the episodes that are missing or failed.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from integrity_gym.bench import logs
from integrity_gym.bench.config import BenchConfig
from integrity_gym.bench.episode import RunInterrupted, play_episode
from integrity_gym.bench.pool import EpisodePool
from integrity_gym.bench.provenance import new_header
from integrity_gym.bench.record import (
    EPISODES_FILE,
    LOG_FILE,
    RUN_FILES,
    RunHeader,
    RunRecord,
    RunStatus,
    RunSummary,
    episode_line,
    plan,
)
from integrity_gym.bench.records import EpisodeRecord, TaskSummary
from integrity_gym.bench.setup import SetupError, build_agent, preflight, select_tasks
from integrity_gym.bench.summary import summarize_records, tier_separation, tier_table
from integrity_gym.core.registry import TaskSpec, get_spec
from integrity_gym.core.types import Grade

if TYPE_CHECKING:
    from integrity_gym.agents.llm import LLMSettings
    from integrity_gym.bench.results import ResultsDB
    from integrity_gym.client.evaluation import SealedEvaluation


@dataclass
class RunResult:
    """What ``run_bench`` returns: the run's record (ended) and where its folder is."""

    record: RunRecord
    out_dir: Path
    resumed: int = 0  # episodes kept from an earlier, interrupted invocation

    @property
    def _header(self) -> RunHeader:
        assert self.record.header is not None  # a run is played from its header
        return self.record.header

    @property
    def run_id(self) -> str:
        """The run's id."""
        return self._header.run_id

    @property
    def config(self) -> BenchConfig:
        """What the run played."""
        return self._header.bench

    @property
    def command(self) -> str:
        """The shell line that plays the same episodes again."""
        return self._header.reproduce

    @property
    def records(self) -> list[EpisodeRecord]:
        """Every episode, by task and index."""
        return self.record.episodes

    @property
    def _summary(self) -> RunSummary:
        assert self.record.summary is not None  # an ended run has its summary
        return self.record.summary

    @property
    def status(self) -> RunStatus:
        """``complete``, ``failed`` (too many failed episodes, or a summary failed) or ``interrupted``."""
        return self._summary.status

    @property
    def summaries(self) -> dict[str, TaskSummary]:
        """Per-task figures, in play order."""
        return self._summary.tasks

    @property
    def tiers(self) -> dict[str, dict[str, Any]]:
        """Per-tier figures (``summary.tier_table``)."""
        return self._summary.tiers

    @property
    def separation(self) -> dict[str, dict[str, Any]]:
        """Per-environment tier separation (``summary.tier_separation``)."""
        return self._summary.tier_separation

    @property
    def failed(self) -> int:
        """Episodes that failed."""
        return sum(1 for r in self.records if r.error)


#: Called from the main thread: ("start", total, specs) once, then ("episode", record) per episode.
ProgressHook = Callable[..., None]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _prepare_folder(out: Path, *, overwrite: bool) -> None:
    """Create the run folder, refusing to replace an earlier run unless asked to."""
    if out.exists() and not out.is_dir():
        raise SetupError(f"--out {out} is a file, not a folder")
    if (out / "config.json").exists() and not overwrite:
        raise SetupError(
            f"{out} already holds a run; pass --overwrite to replace it, --resume {out} to finish it, "
            "or choose another --out"
        )
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise SetupError(f"cannot write the run folder {out}: {exc.strerror or exc}; choose another --out") from exc
    if overwrite:
        for name in RUN_FILES:
            (out / name).unlink(missing_ok=True)


def _open_db(db_path: Path | None) -> ResultsDB | None:
    if db_path is None:
        return None
    from integrity_gym.bench.results import ResultsDB

    try:
        return ResultsDB(db_path)
    except OSError as exc:
        raise SetupError(f"cannot open the results database {db_path}: {exc}; pass another --db or --no-db") from exc


def _resume_llm_settings(bench: BenchConfig, llm_settings: LLMSettings | None) -> LLMSettings | None:
    """The llm agent's settings: given, else from the environment (the run's recorded ones first)."""
    if bench.agent != "llm" or llm_settings is not None:
        return llm_settings
    from integrity_gym.agents.llm import LLMSettings

    # The run's recorded settings win; the key (never recorded) comes from the environment.
    return LLMSettings.from_env(**(bench.llm or {}))


def run_bench(
    pattern: str = "*",
    agent: str = "heuristic",
    *,
    episodes: int = 5,
    seed: int = 0,
    out_dir: Path | None = None,
    config: dict[str, Any] | None = None,
    bench: BenchConfig | None = None,
    db_path: Path | None = None,
    llm_settings: LLMSettings | None = None,
    progress: ProgressHook | None = None,
    stop: threading.Event | None = None,
    command: str | None = None,
    overwrite: bool = False,
    check: bool = True,
) -> RunResult:
    """Play every selected task and write the run folder (and the database row when ``db_path``).

    Either pass ``bench`` or the foundation's arguments (``pattern``, ``agent``, ``episodes``,
    ``seed``, ``config``). Setup is checked before anything is written (``preflight``; ``check``
    turns that off). An existing run in ``out_dir`` is refused unless ``overwrite``. A
    ``KeyboardInterrupt`` stops the run cleanly: the status becomes ``interrupted`` and
    everything finished is written.
    """
    if bench is None:
        bench = BenchConfig.build(tasks=pattern, agent=agent, episodes=episodes, seed=seed, env_config=config or {})
    specs = select_tasks(bench.tasks)
    if bench.agent == "llm" and llm_settings is None:
        from integrity_gym.agents.llm import LLMSettings

        llm_settings = LLMSettings.from_env()
    if llm_settings is not None and bench.llm is None:
        bench = bench.model_copy(update={"llm": llm_settings.public()})
    if check:
        preflight(bench, specs, llm_settings)
    evaluation = _open_evaluation(bench, specs) if bench.sealed else None
    header = new_header(bench, specs, llm_settings, out_dir, overwrite=overwrite, command=command,
                         evaluation=evaluation)  # fmt: skip
    out = out_dir or Path("outputs") / header.run_id
    db = _open_db(db_path)  # before the folder: a bad --db leaves nothing behind
    try:
        _prepare_folder(out, overwrite=overwrite)
    except SetupError:
        if db is not None:
            db.close()
        raise
    record = RunRecord(header=header)
    record.write_config(out)
    return _Run(record, specs, out, db, progress, evaluation).play(llm_settings, stop)


def _open_evaluation(bench: BenchConfig, specs: Sequence[TaskSpec]) -> SealedEvaluation:
    """Ask the sealed server for the run's episodes; ``SetupError`` with the server's reason if it refuses."""
    from integrity_gym.client.evaluation import SealedEvaluation

    assert bench.server is not None  # the config's validator requires it
    try:
        evaluation = SealedEvaluation.open(bench.server, [s.id for s in specs], bench.episodes)
    except (ConnectionError, RuntimeError) as exc:
        raise SetupError(f"the server {bench.server} opened no sealed evaluation: {exc}") from exc
    served = {(e.task_id, e.index) for e in evaluation.episodes}
    missing = [p.key for p in plan(bench, specs) if p.key not in served]
    if missing:
        raise SetupError(f"the sealed evaluation {evaluation.evaluation_id} lacks episodes {missing[:3]}...")
    return evaluation


def _release(records: list[EpisodeRecord], evaluation: SealedEvaluation) -> list[EpisodeRecord]:
    """Close the evaluation and put each episode's released grade and explanation in its record."""
    results = {(r.task_id, r.index): r for r in evaluation.close()}
    out = []
    for record in records:
        result = results.get(record.key)
        if record.error or result is None or result.grade is None:
            out.append(record)
            continue
        grade = Grade.model_validate(result.grade)
        explanation = result.explanation
        if explanation is not None and not isinstance(explanation, str):
            explanation = json.dumps(explanation, indent=1)
        out.append(record.model_copy(update={
            "score": grade.score, "success": grade.success, "threshold": grade.threshold,
            "grade": grade.model_dump(mode="json"), "explanation": explanation,
        }))  # fmt: skip
    return out


def _load_for_resume(out_dir: Path) -> RunRecord:
    """The run in ``out_dir``, its failed episodes dropped; ``SetupError`` when it cannot be resumed."""
    config_path = out_dir / "config.json"
    if not config_path.is_file():
        raise SetupError(f"{out_dir} holds no run to resume (no config.json); start one with `igym bench --out`")
    try:
        record = RunRecord.load(out_dir)
    except (ValueError, KeyError) as exc:
        raise SetupError(f"{config_path} is not a run configuration this igym can resume: {exc}") from exc
    assert record.header is not None  # config.json exists
    if record.header.bench.sealed:
        raise SetupError(
            f"{out_dir} is a sealed evaluation: its handles were handed out once and cannot be played again; "
            "start a new one with `igym bench --server URL --sealed`"
        )
    return record.without_failures()


def resume_bench(
    out_dir: Path,
    *,
    db_path: Path | None = None,
    llm_settings: LLMSettings | None = None,
    progress: ProgressHook | None = None,
    stop: threading.Event | None = None,
    check: bool = True,
) -> RunResult:
    """Continue the run in ``out_dir`` (interrupted, killed or failed): play what is missing or failed.

    The configuration is the run's own ``config.json``; finished episodes are kept as they are, so
    the resulting ``summary.json`` is the one an uninterrupted run would have written.
    """
    record = _load_for_resume(out_dir)
    assert record.header is not None
    bench = record.header.bench
    specs = [get_spec(task_id) for task_id in record.header.task_ids]
    llm_settings = _resume_llm_settings(bench, llm_settings)
    if check:
        preflight(bench, specs, llm_settings)
    db = _open_db(db_path)
    return _Run(record, specs, out_dir, db, progress).play(llm_settings, stop)


class _Run:
    """One invocation playing a run: the record, its folder's files and database row kept in step."""

    def __init__(
        self,
        record: RunRecord,
        specs: list[TaskSpec],
        out: Path,
        db: ResultsDB | None,
        progress: ProgressHook | None,
        evaluation: SealedEvaluation | None = None,
    ) -> None:
        assert record.header is not None
        self.record, self.header, self.specs, self.out = record, record.header, specs, out
        self.db, self.progress, self.evaluation = db, progress, evaluation
        self.kept = len(record.episodes)

    def play(self, llm_settings: LLMSettings | None, stop: threading.Event | None) -> RunResult:
        """Play what the record is missing, then end the run; the ended run."""
        jobs = self.record.missing(plan(self.header.bench, self.specs))
        self._start(len(jobs))
        evaluation = self.evaluation
        handles = {(e.task_id, e.index): e.handle for e in evaluation.episodes} if evaluation else {}
        pool = EpisodePool(self.header.bench, llm_settings, stop or threading.Event(), handles)
        with (self.out / EPISODES_FILE).open("w") as episodes, (self.out / LOG_FILE).open("w") as log:
            for kept in self.record.episodes:
                episodes.write(episode_line(kept))
            episodes.flush()
            interrupted = pool.run(jobs, lambda r: self._add(r, episodes, log))
        return self._end(interrupted)

    def _start(self, to_play: int) -> None:
        if self.db is not None:
            self.db.start_run(self.header, out_dir=str(self.out))
            for kept in self.record.episodes:
                self.db.add_episode(self.header.run_id, kept)
        if self.progress:
            self.progress("start", to_play + self.kept, self.specs)
            for kept in self.record.episodes:
                self.progress("episode", kept)

    def _add(self, episode: EpisodeRecord, episodes: IO[str], log: IO[str]) -> None:
        """A finished episode: into the record, then its line, its log block and its database row."""
        self.record.episodes.append(episode)
        episodes.write(episode_line(episode))
        episodes.flush()
        log.write("\n".join(logs.episode_block(episode, self.header.bench.model_label)) + "\n")
        log.flush()
        if self.db is not None and self.evaluation is None:  # a sealed episode is recorded once graded
            self.db.add_episode(self.header.run_id, episode)
        if self.progress:
            self.progress("episode", episode)

    def _end(self, interrupted: bool) -> RunResult:
        if self.evaluation is not None:
            self.record.episodes = _release(self.record.episodes, self.evaluation)
            if self.db is not None:
                for episode in self.record.episodes:
                    self.db.add_episode(self.header.run_id, episode)
        self.record.finish(self.specs, interrupted=interrupted)
        # Rewritten in a stable order, so two runs of the same command give identical files.
        self.record.write_ended(self.out)
        if self.db is not None:
            self.db.finish_run(self.record, finished_at=_now())
            self.db.close()
        return RunResult(self.record, self.out, self.kept)


__all__ = [
    "BenchConfig",
    "RunInterrupted",
    "RunResult",
    "SetupError",
    "TaskSummary",
    "build_agent",
    "get_spec",
    "play_episode",
    "preflight",
    "resume_bench",
    "run_bench",
    "select_tasks",
    "summarize_records",
    "tier_separation",
    "tier_table",
]
