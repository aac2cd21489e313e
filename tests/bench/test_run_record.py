"""The one typed record of a run (bench.record): the run folder's files, resume, the database, the report
and the viewer are all views of it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from integrity_gym.bench import episode
from integrity_gym.bench.config import BenchConfig
from integrity_gym.bench.protocols import EpisodeAgent
from integrity_gym.bench.record import RunRecord, merge_records, plan
from integrity_gym.bench.records import EpisodeRecord
from integrity_gym.bench.runner import RunResult, run_bench
from integrity_gym.bench.runs import load_run
from integrity_gym.bench.setup import select_tasks
from integrity_gym.report.inputs import merge_by_label

GDPR = "pii_redaction/gdpr_contract_easy-v4"
INFO = "information_integrity/easy-v3"


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunResult, Path]:
    folder = tmp_path_factory.mktemp("record")
    bench = BenchConfig.build(tasks=f"{GDPR},{INFO}", agent="random", episodes=2, max_steps=3)
    return run_bench(bench=bench, out_dir=folder / "run", db_path=folder / "results.sqlite"), folder


def test_the_files_of_a_run_folder_are_exact_views_of_its_record(played: tuple[RunResult, Path]) -> None:
    # Kills: a view that drops, renames or reorders what the writer wrote (the formats must not change).
    result, folder = played
    out = folder / "run"
    loaded = RunRecord.load(out)
    assert loaded == result.record
    assert loaded.summary_text() == (out / "summary.json").read_text()
    assert json.dumps(loaded.config_json(), indent=2, sort_keys=True) + "\n" == (out / "config.json").read_text()
    assert [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()] == loaded.episodes_json()
    assert "\n".join(loaded.log_lines()) + "\n" == (out / "run.log").read_text()
    summary = json.loads((out / "summary.json").read_text())
    assert list(summary) == ["tasks", "run_id", "status", "agent", "model", "tiers", "tier_separation",
                             "reproduce", "episodes_failed"]  # fmt: skip
    assert "evaluation" not in json.loads((out / "config.json").read_text())  # only a sealed run has one


def test_an_unbounded_standard_error_stays_infinity_in_summary_json(tmp_path: Path) -> None:
    # Kills: dumping the tier figures in pydantic's JSON mode, which turns an infinite error into null.
    bench = BenchConfig.build(tasks="information_integrity/easy*,information_integrity/hard*", agent="random",
                              episodes=1, max_steps=2)  # fmt: skip
    run_bench(bench=bench, out_dir=tmp_path)
    text = (tmp_path / "summary.json").read_text()
    assert "Infinity" in text
    assert RunRecord.load(tmp_path).summary_text() == text


def test_the_database_rows_are_the_records_header_and_summary(played: tuple[RunResult, Path]) -> None:
    result, folder = played
    with sqlite3.connect(folder / "results.sqlite") as con:
        con.row_factory = sqlite3.Row
        (run,) = con.execute("SELECT * FROM runs").fetchall()
        summaries = {r["task_id"]: r for r in con.execute("SELECT * FROM task_summaries").fetchall()}
        episodes = con.execute("SELECT COUNT(*) FROM episodes").fetchone()[0]
    config = json.loads((folder / "run" / "config.json").read_text())
    assert json.loads(run["config_json"]) == config and run["data_mode"] == config["data_mode"]
    assert (run["run_id"], run["status"], run["model"]) == (result.run_id, result.status, "random")
    assert json.loads(run["tasks"]) == [GDPR, INFO] and run["command"] == config["reproduce"]
    assert {t: s["episodes"] for t, s in summaries.items()} == {t: s.episodes for t, s in result.summaries.items()}
    assert episodes == len(result.records) == 4


def test_resume_plays_exactly_the_episodes_that_did_not_finish() -> None:
    # Kills: a resume that drops an episode (a wrong index for a repeat, a failed one kept as done).
    bench = BenchConfig.build(tasks=GDPR, agent="random", seeds=(4, 7, 9), epochs=2)
    planned = plan(bench, select_tasks(GDPR))
    assert [(p.index, p.seed, p.epoch) for p in planned] == [(0, 4, 0), (1, 7, 0), (2, 9, 0), (3, 4, 1),
                                                             (4, 7, 1), (5, 9, 1)]  # fmt: skip
    spec = planned[0].spec
    done = [EpisodeRecord(task_id=spec.id, env=spec.env, tier=spec.tier, index=p.index, seed=p.seed,
                                  epoch=p.epoch, agent="random", threshold=0.5, score=0.5)
            for p in planned]  # fmt: skip
    failed = done[4].model_copy(update={"error": "RuntimeError: boom", "score": None})
    record = RunRecord(episodes=[*done[:2], done[3], failed, done[5]])
    assert [p.key for p in record.missing(planned)] == [(spec.id, 2), (spec.id, 4)]
    assert [r.key for r in record.without_failures().episodes] == [(spec.id, i) for i in (0, 1, 3, 5)]


def test_the_report_pools_the_runs_of_one_label_through_their_records(played: tuple[RunResult, Path]) -> None:
    result, folder = played
    run = load_run(folder / "run")
    assert run.record == result.record and run.summary == json.loads((folder / "run" / "summary.json").read_text())
    [pooled] = merge_by_label([run, load_run(folder / "run")])
    assert len(pooled.records) == 8 and pooled.tasks == [GDPR, INFO] and pooled.label == "random"
    assert merge_records([run.record]) == run.record


def test_the_viewer_serves_the_episode_lines_as_written(played: tuple[RunResult, Path]) -> None:
    from starlette.testclient import TestClient

    from integrity_gym.web.viewer import create_viewer_app

    _, folder = played
    lines = [json.loads(line) for line in (folder / "run" / "episodes.jsonl").read_text().splitlines()]
    with TestClient(create_viewer_app([folder / "run"])) as client:
        assert client.get("/api/episode/0/1").json() == lines[1]
        listed = client.get("/api/runs").json()["runs"][0]
    assert [e["task_id"] for e in listed["episodes"]] == [r["task_id"] for r in lines]


class _Watching:
    """An agent with both optional capabilities: it observes steps and reports each call's cost."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.observed = inner, 0

    def act(self, observation: Any) -> Any:
        return self.inner.act(observation)

    def observe(self, result: Any) -> None:
        self.observed += 1

    def pop_step_record(self) -> dict[str, Any] | None:
        return {"prompt_tokens": 10, "completion_tokens": 2, "latency_s": 0.25}


def test_an_agents_capabilities_are_used_and_plain_agents_play_without_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Kills: an episode that never shows the agent its step results, or drops the model calls' cost.
    real = episode.build_agent
    agents: list[_Watching] = []

    def watching(name: str, env: Any, seed: int, llm: Any = None) -> Any:
        agents.append(_Watching(real(name, env, seed)))
        return agents[-1]

    monkeypatch.setattr(episode, "build_agent", watching)
    bench = BenchConfig.build(tasks=INFO, agent="random", max_steps=3)
    [spec] = select_tasks(INFO)
    record = episode.play_episode(spec, bench, 0, 0)
    assert record.error is None and agents[0].observed == record.steps >= 1
    assert record.usage.llm_calls == record.steps and record.usage.prompt_tokens == 10 * record.steps
    assert all(step.llm is not None for step in record.trajectory)
    plain = EpisodeAgent(agents[0].inner)
    assert plain.step_record() is None
    plain.observe(None)  # type: ignore[arg-type]  # an agent without observe is not called


def test_bench_and_train_options_are_validated_naming_the_option() -> None:
    from integrity_gym.train.grpo import TrainConfig

    with pytest.raises(ValueError, match="episodes"):
        BenchConfig.build(episodes=0)
    with pytest.raises(ValueError, match="steps"):
        TrainConfig.build(steps=0)
