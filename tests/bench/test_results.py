from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from integrity_gym.bench.config import BenchConfig
from integrity_gym.bench.record import RunHeader, RunRecord, RunSummary
from integrity_gym.bench.records import EpisodeRecord, TaskSummary, Usage
from integrity_gym.bench.results import ResultsDB


def record(task: str, index: int, score: float | None, error: str | None = None) -> EpisodeRecord:
    return EpisodeRecord(
        task_id=task, env=task.split("/")[0], tier="easy", index=index, seed=10 + index, agent="llm", threshold=0.5,
        score=score, success=None if score is None else score >= 0.5, total_return=1.5, steps=3, error=error,
        usage=Usage(prompt_tokens=100, completion_tokens=20, latency_s=0.5),
        grade=None if score is None else {"breakdown": {"f1": score}},
    )  # fmt: skip


def header(run_id: str, created_at: str, agent: str, model: str | None, tasks: list[str], data_mode: str = "public",
           command: str = "igym bench") -> RunHeader:  # fmt: skip
    bench = BenchConfig(agent=agent, llm=None if model is None else {"model_name": model})
    return RunHeader(run_id=run_id, created_at=created_at, bench=bench, tasks=[{"id": t} for t in tasks], seeds=[0],
                     environment={}, reproduce=command, python="3", igym_version="0", data_mode=data_mode)  # fmt: skip


def ended(run: RunHeader, status: str, tasks: dict[str, TaskSummary]) -> RunRecord:
    summary = RunSummary.model_validate({
        "tasks": tasks, "run_id": run.run_id, "status": status, "agent": run.bench.agent,
        "model": run.bench.model_label, "tiers": {}, "tier_separation": {}, "reproduce": run.reproduce,
        "episodes_failed": 0,
    })  # fmt: skip
    return RunRecord(header=run, summary=summary)


def test_a_run_its_episodes_and_summaries_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "results.sqlite"
    with ResultsDB(path) as db:
        r1 = header("r1", "2026-01-01T00:00:00", "llm", "m", ["e/a-v0"])
        db.start_run(r1, out_dir="outputs/r1")
        db.add_episode("r1", record("e/a-v0", 0, 0.75))
        db.add_episode("r1", record("e/a-v0", 1, None, "RuntimeError: boom"))
        summary = TaskSummary(tier="easy", episodes=1, failed=1, mean_score=0.75, success_rate=1.0, mean_return=1.5,
                              threshold=0.5, metrics={"m": None})  # fmt: skip
        db.finish_run(ended(r1, "complete", {"e/a-v0": summary}), finished_at="2026-01-01T00:01:00")
    with ResultsDB(path) as db:  # reopened: everything persisted
        (run,) = db.runs()
        assert (run["status"], run["episodes_done"], run["episodes_failed"], run["model"]) == ("complete", 1, 1, "m")
        episodes = db.episodes("r1")
        assert [e["score"] for e in episodes] == [0.75, None] and episodes[1]["error"] == "RuntimeError: boom"
        assert episodes[0]["prompt_tokens"] == 100 and episodes[0]["breakdown_json"] == '{"f1": 0.75}'
        (row,) = db.task_summaries("r1")
        assert row["mean_score"] == 0.75 and row["agent"] == "llm"
        assert db.task_summaries("other") == []
        # The failed episode played again (a resume) is counted once, as done.
        db.add_episode("r1", record("e/a-v0", 1, 0.5))
        assert (db.runs()[0]["episodes_done"], db.runs()[0]["episodes_failed"]) == (2, 0)
        # Recording the same run id again replaces it.
        db.start_run(header("r1", "2026-01-02T00:00:00", "heuristic", None, [], command="c"), out_dir="o")
        assert db.episodes("r1") == [] and db.runs()[0]["agent"] == "heuristic"


def test_a_file_that_is_not_a_results_database_is_a_clear_error(tmp_path: Path) -> None:
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(ValueError, match="not an integrity-gym results database"):
        ResultsDB(junk)
    other = tmp_path / "other.sqlite"
    ResultsDB(other).close()
    with sqlite3.connect(other) as con:
        con.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(ValueError, match="schema version 99"):
        ResultsDB(other)


def test_runs_record_their_data_mode_and_version_1_databases_migrate(tmp_path: Path) -> None:
    old = tmp_path / "v1.sqlite"
    with sqlite3.connect(old) as con:  # a database written by schema version 1 (no data_mode column)
        con.executescript(
            "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
            "INSERT INTO meta VALUES ('schema_version', '1');"
            "CREATE TABLE runs (run_id TEXT PRIMARY KEY, created_at TEXT NOT NULL, agent TEXT NOT NULL,"
            " model TEXT NOT NULL, tasks TEXT NOT NULL, command TEXT NOT NULL, out_dir TEXT NOT NULL,"
            " config_json TEXT NOT NULL, status TEXT NOT NULL, episodes_done INTEGER NOT NULL DEFAULT 0,"
            " episodes_failed INTEGER NOT NULL DEFAULT 0, finished_at TEXT);"
            "INSERT INTO runs (run_id, created_at, agent, model, tasks, command, out_dir, config_json, status)"
            " VALUES ('old', 't', 'a', 'm', '[]', 'c', 'o', '{}', 'complete');"
        )
    with ResultsDB(old) as db:
        db.start_run(header("new", "t", "llm", "m", [], data_mode="secret:0123456789ab"), out_dir="o")
        modes = {run["run_id"]: run["data_mode"] for run in db.runs()}
    assert modes == {"old": "public", "new": "secret:0123456789ab"}
    with sqlite3.connect(old) as con:
        assert con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("2",)
