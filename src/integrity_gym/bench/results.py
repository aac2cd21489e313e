"""The SQLite results database: every run, task summary and episode, for comparison across runs.

The default file is ``outputs/results.sqlite``. It is a view of each run's ``RunRecord``
(``bench.record``): ``start_run`` writes its header, episodes are written as they finish (so an
interrupted run keeps what it finished), ``finish_run`` records the final status and summaries.
Only the standard library is used.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from integrity_gym.bench.record import RunHeader, RunRecord
    from integrity_gym.bench.records import EpisodeRecord

DEFAULT_DB = Path("outputs/results.sqlite")
SCHEMA_VERSION = 2

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    agent TEXT NOT NULL,
    model TEXT NOT NULL,
    tasks TEXT NOT NULL,
    command TEXT NOT NULL,
    out_dir TEXT NOT NULL,
    config_json TEXT NOT NULL,
    data_mode TEXT NOT NULL DEFAULT 'public',
    status TEXT NOT NULL,
    episodes_done INTEGER NOT NULL DEFAULT 0,
    episodes_failed INTEGER NOT NULL DEFAULT 0,
    finished_at TEXT
);
CREATE TABLE IF NOT EXISTS episodes (
    run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    task_id TEXT NOT NULL,
    episode_index INTEGER NOT NULL,
    seed INTEGER NOT NULL,
    env TEXT NOT NULL,
    tier TEXT NOT NULL,
    score REAL,
    success INTEGER,
    total_return REAL NOT NULL,
    steps INTEGER NOT NULL,
    truncated INTEGER NOT NULL,
    error TEXT,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    latency_s REAL,
    breakdown_json TEXT NOT NULL,
    PRIMARY KEY (run_id, task_id, episode_index)
);
CREATE TABLE IF NOT EXISTS task_summaries (
    run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    task_id TEXT NOT NULL,
    tier TEXT NOT NULL,
    episodes INTEGER NOT NULL,
    failed INTEGER NOT NULL,
    mean_score REAL,
    std_score REAL,
    success_rate REAL,
    mean_return REAL,
    threshold REAL NOT NULL,
    metrics_json TEXT NOT NULL,
    PRIMARY KEY (run_id, task_id)
);
CREATE INDEX IF NOT EXISTS episodes_by_task ON episodes(task_id);
"""


#: Seconds a writer waits for another process's write to finish before giving up.
BUSY_TIMEOUT_S = 60.0


class ResultsDB:
    """A results database file; one connection, used from one thread.

    Several processes may write one file at once (parallel ``igym bench`` runs): the database is in
    WAL mode and each connection waits up to ``BUSY_TIMEOUT_S`` for another's write. A SQLite file
    of another application is refused before anything is written to it.
    """

    def __init__(self, path: str | Path = DEFAULT_DB) -> None:
        self.path = Path(path)
        if str(self.path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_S)
            # One writer at a time reads and creates the schema: another process's half-created
            # schema (tables, no version yet) is never mistaken for another application's file.
            self._db.execute("BEGIN IMMEDIATE")
            tables = {name for (name,) in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            ours = "meta" in tables and (
                self._db.execute("SELECT 1 FROM meta WHERE key = 'schema_version'").fetchone() is not None
            )
            if tables and not ours:
                self._db.rollback()
                self._db.close()
                raise ValueError(
                    f"{self.path} is a SQLite database of another application (tables: {', '.join(sorted(tables))}); "
                    "it was left untouched: pass another --db"
                )
            for statement in filter(str.strip, _SCHEMA.split(";")):
                self._db.execute(statement)
            row = self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if row is None:
                self._db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            elif int(row[0]) == 1:  # version 2 added runs.data_mode; every earlier run was public
                self._db.execute("ALTER TABLE runs ADD COLUMN data_mode TEXT NOT NULL DEFAULT 'public'")
                self._db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))
            elif int(row[0]) != SCHEMA_VERSION:
                self._db.rollback()
                raise ValueError(f"{self.path} has schema version {row[0]}, this igym writes {SCHEMA_VERSION}")
            self._db.commit()
            if str(self.path) != ":memory:":
                self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA foreign_keys = ON")
        except sqlite3.DatabaseError as exc:
            raise ValueError(
                f"{self.path} is not an integrity-gym results database ({exc}); pass another --db"
            ) from exc

    def close(self) -> None:
        """Close the connection (twice is harmless)."""
        self._db.close()

    def __enter__(self) -> ResultsDB:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ writing
    def start_run(self, header: RunHeader, *, out_dir: str) -> None:
        """Record a new run as ``running`` (an existing run id is replaced, with its episodes)."""
        with self._db:
            self._db.execute("DELETE FROM runs WHERE run_id = ?", (header.run_id,))
            self._db.execute(
                "INSERT INTO runs (run_id, created_at, agent, model, tasks, command, out_dir, config_json, data_mode,"
                " status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'running')",
                (header.run_id, header.created_at, header.bench.agent, header.bench.model_label,
                 json.dumps(header.task_ids), header.reproduce, out_dir,
                 json.dumps(header.to_json(), sort_keys=True), header.data_mode),
            )  # fmt: skip

    def add_episode(self, run_id: str, record: EpisodeRecord) -> None:
        """Record one finished (or failed) episode: a line of ``episodes.jsonl``."""
        with self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO episodes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id, record.task_id, record.index, record.seed, record.env, record.tier, record.score,
                    None if record.success is None else int(record.success), record.total_return, record.steps,
                    int(record.truncated), record.error, record.usage.prompt_tokens, record.usage.completion_tokens,
                    record.usage.latency_s, json.dumps((record.grade or {}).get("breakdown", {}), sort_keys=True),
                ),
            )  # fmt: skip
            # Counted from the table, so a resumed run that replays a failed episode counts it once.
            self._db.execute(
                "UPDATE runs SET episodes_done = (SELECT COUNT(*) FROM episodes e WHERE e.run_id = runs.run_id"
                " AND e.error IS NULL), episodes_failed = (SELECT COUNT(*) FROM episodes e"
                " WHERE e.run_id = runs.run_id AND e.error IS NOT NULL) WHERE run_id = ?",
                (run_id,),
            )

    def finish_run(self, record: RunRecord, *, finished_at: str) -> None:
        """Record the ended run's status and its per-task summaries (summary.json's ``tasks``)."""
        if record.summary is None:
            raise ValueError("finish_run records an ended run: RunRecord.finish() gives it its summary")
        run_id, status = record.run_id, record.summary.status
        with self._db:
            self._db.execute(
                "UPDATE runs SET status = ?, finished_at = ? WHERE run_id = ?", (status, finished_at, run_id)
            )
            self._db.execute("DELETE FROM task_summaries WHERE run_id = ?", (run_id,))
            for task_id, s in record.summary.tasks.items():
                self._db.execute(
                    "INSERT INTO task_summaries VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        run_id, task_id, s.tier, s.episodes, s.failed, s.mean_score, s.std_score, s.success_rate,
                        s.mean_return, s.threshold, json.dumps(s.metrics, sort_keys=True),
                    ),
                )  # fmt: skip

    # ------------------------------------------------------------------ reading
    def runs(self) -> list[dict[str, Any]]:
        """Every run, newest first."""
        cursor = self._db.execute("SELECT * FROM runs ORDER BY created_at DESC, run_id")
        return [_row(cursor, r) for r in cursor.fetchall()]

    def episodes(self, run_id: str) -> list[dict[str, Any]]:
        """The episodes of one run, by task and index."""
        cursor = self._db.execute("SELECT * FROM episodes WHERE run_id = ? ORDER BY task_id, episode_index", (run_id,))
        return [_row(cursor, r) for r in cursor.fetchall()]

    def task_summaries(self, run_id: str | None = None) -> list[dict[str, Any]]:
        """Per-task summaries joined with their run's agent and model (all runs, or one)."""
        query = (
            "SELECT r.run_id, r.agent, r.model, r.created_at, r.status, t.* FROM task_summaries t "
            "JOIN runs r USING (run_id)"
        )
        args: tuple[Any, ...] = ()
        if run_id is not None:
            query, args = query + " WHERE r.run_id = ?", (run_id,)
        cursor = self._db.execute(query + " ORDER BY t.task_id, r.created_at", args)
        return [_row(cursor, r) for r in cursor.fetchall()]


def _row(cursor: sqlite3.Cursor, row: Sequence[Any]) -> dict[str, Any]:
    return {d[0]: v for d, v in zip(cursor.description, row, strict=True)}
