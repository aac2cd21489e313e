from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from integrity_gym.bench import episode, logs
from integrity_gym.bench.records import TaskSummary
from integrity_gym.bench.results import ResultsDB
from integrity_gym.bench.runner import BenchConfig, SetupError, run_bench
from integrity_gym.bench.summary import tier_separation, tier_table


def test_a_run_writes_every_artifact_and_the_database_row(tmp_path: Path) -> None:
    bench = BenchConfig.build(tasks="pii_redaction/gdpr*,information_integrity/*", agent="heuristic", episodes=2,
                              seed=4, concurrency=3)  # fmt: skip
    result = run_bench(bench=bench, out_dir=tmp_path / "run", db_path=tmp_path / "db.sqlite")
    out = tmp_path / "run"
    assert result.status == "complete" and {p.name for p in out.iterdir()} == {
        "run.log", "episodes.jsonl", "summary.json", "config.json"}  # fmt: skip
    records = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert [(r["task_id"], r["index"], r["seed"]) for r in records] == sorted(
        (t, i, 4 + i) for t in result.summaries for i in range(2))  # fmt: skip
    for r in records:
        assert r["error"] is None and r["grade"]["breakdown"] and r["reset_observation"]["task_id"] == r["task_id"]
        assert r["steps"] == len(r["trajectory"]) >= 1
        assert r["total_return"] == pytest.approx(sum(s["reward"] for s in r["trajectory"]))
        for step in r["trajectory"]:
            assert {"action", "action_text", "reward", "reward_breakdown", "done", "error", "observation"} <= set(step)
        assert r["trajectory"][-1]["done"] and r["trajectory"][-1]["observation"]["done"]
    summary = json.loads((out / "summary.json").read_text())
    for task_id, entry in summary["tasks"].items():
        mine = [r for r in records if r["task_id"] == task_id]
        assert entry["episodes"] == 2 and entry["failed"] == 0
        assert entry["mean_score"] == pytest.approx(sum(r["score"] for r in mine) / 2)
        assert entry["success_rate"] == sum(r["success"] for r in mine) / 2
        assert isinstance(entry["mean_return"], float) and isinstance(entry["metrics"], dict)
    # Each environment's tier means are those of its tasks; the heuristic orders
    # information_integrity's tiers easy > medium > hard, and pii_redaction has one tier here.
    tier_of = {"easy-v3": "easy", "medium-v3": "medium", "hard-v3": "hard"}
    ii = {tier_of[t.split("/")[1]]: e["mean_score"] for t, e in summary["tasks"].items() if "integrity" in t}
    assert summary["tier_separation"]["information_integrity"]["means"] == ii
    pii = summary["tasks"]["pii_redaction/gdpr_contract_easy-v4"]["mean_score"]
    assert summary["tier_separation"]["pii_redaction"]["means"] == {"easy": pii}
    assert summary["tier_separation"]["pii_redaction"]["ok"] is None
    assert set(summary["tiers"]) == {"easy", "medium", "hard"}
    config = json.loads((out / "config.json").read_text())
    assert config["seeds"] == [4, 5] and config["reproduce"] == result.command == summary["reproduce"]
    # The log holds one START..END block per episode, then the summary.
    lines = (out / "run.log").read_text().splitlines()
    kinds = [logs.parse_line(line)[0] for line in lines if line.startswith("[")]
    assert kinds.count("START") == kinds.count("END") == len(records)
    assert kinds.count("STEP") == sum(r["steps"] for r in records)
    assert any(line.startswith("tier_separation env=information_integrity") for line in lines)
    with ResultsDB(tmp_path / "db.sqlite") as db:
        (run,) = db.runs()
        assert (run["run_id"], run["status"], run["episodes_done"]) == (result.run_id, "complete", len(records))
        assert len(db.episodes(result.run_id)) == len(records) and len(db.task_summaries(result.run_id)) == 4


class _BreaksOnSeed:
    """Plays like the heuristic, except that it raises on one seed."""

    def __init__(self, inner: Any, seed: int) -> None:
        self.inner, self.seed = inner, seed

    def act(self, observation: Any) -> Any:
        if self.seed == 1:
            raise RuntimeError("agent broke on seed 1")
        return self.inner.act(observation)


def test_a_failing_episode_is_recorded_and_the_run_goes_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = episode.build_agent
    monkeypatch.setattr(
        episode, "build_agent", lambda name, env, seed, llm=None: _BreaksOnSeed(real(name, env, seed), seed)
    )
    bench = BenchConfig.build(tasks="pii_redaction/gdpr*,information_integrity/easy*", agent="heuristic",
                              episodes=2, env_config={}, max_steps=3)  # fmt: skip
    result = run_bench(bench=bench, out_dir=tmp_path)
    failed = [r for r in result.records if r.error]
    assert len(failed) == 2 and all(r.seed == 1 for r in failed)
    assert "agent broke" in failed[0].error and "Traceback" in (failed[0].traceback or "")
    pii = result.summaries["pii_redaction/gdpr_contract_easy-v4"]
    assert pii.episodes == 1 and pii.failed == 1 and pii.truncated == 1 and pii.mean_steps == 3
    # Failures beyond --max-failures (0 by default) fail the run; allowing them completes it.
    assert result.status == "failed" and json.loads((tmp_path / "summary.json").read_text())["status"] == "failed"
    end = (tmp_path / "run.log").read_text().splitlines()
    assert any(line.startswith("[END]") and "agent broke" in line for line in end)
    allowed = run_bench(bench=bench.model_copy(update={"max_failures": 2}), out_dir=tmp_path / "b")
    assert allowed.status == "complete" and allowed.failed == 2
    strict = run_bench(bench=bench.model_copy(update={"max_failures": 1}), out_dir=tmp_path / "c")
    assert strict.status == "failed"


def test_a_failing_summarize_fails_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from integrity_gym.envs.information_integrity.env import InformationIntegrityEnv

    def broken(cls: Any, grades: Any) -> Any:
        raise ZeroDivisionError("metric bug")

    monkeypatch.setattr(InformationIntegrityEnv, "summarize", classmethod(broken))
    result = run_bench(bench=BenchConfig.build(tasks="information_integrity/easy*", episodes=2), out_dir=tmp_path)
    summary = result.summaries["information_integrity/easy-v3"]
    assert result.status == "failed" and summary.summary_error == "ZeroDivisionError: metric bug"
    assert summary.episodes == 2 and summary.mean_score is not None  # the grades themselves are kept


def test_options_are_validated_with_clear_messages() -> None:
    with pytest.raises(ValueError, match="episodes"):
        BenchConfig.build(episodes=0)
    with pytest.raises(ValueError, match="seeds"):
        BenchConfig.build(seeds=(1, 1))
    with pytest.raises(SetupError, match="no task matches"):
        run_bench(bench=BenchConfig.build(tasks="nothing/*"))
    assert BenchConfig.build(seeds=(9, 3)).seed_list() == [9, 3]


def test_tier_separation_and_tier_table() -> None:
    def s(tier: str, score: float, sd: float = 0.1, n: int = 20, **metrics: float) -> TaskSummary:
        return TaskSummary(episodes=n, mean_score=score, success_rate=0.5, mean_return=1.0, tier=tier,
                           std_score=sd, metrics=dict(metrics))  # fmt: skip

    ii = "information_integrity/{}-v3"
    good = {ii.format("easy"): s("easy", 0.9), ii.format("medium"): s("medium", 0.6), ii.format("hard"): s("hard", 0.3),
            "pii_redaction/gdpr_contract_easy-v4": s("easy", 1)}  # fmt: skip
    sep = tier_separation(good)
    assert sep["information_integrity"]["ok"] is True and sep["pii_redaction"]["ok"] is None
    assert sep["information_integrity"]["metric"] == "mean_score"
    assert sep["information_integrity"]["errors"]["easy"] == pytest.approx(0.1 / 20**0.5)
    assert [p["verdict"] for p in sep["information_integrity"]["pairs"]] == ["separated", "separated"]
    # Ordered but within noise: 0.60 vs 0.55 with sd 0.3 over 20 episodes (z ≈ 0.53).
    noisy = {**good, ii.format("hard"): s("hard", 0.55, sd=0.3)}
    pairs = tier_separation(noisy)["information_integrity"]["pairs"]
    assert pairs[1]["verdict"] == "ordered, not significant" and pairs[1]["z"] == pytest.approx(
        0.05 / (0.1**2 / 20 + 0.09 / 20) ** 0.5
    )
    assert tier_separation(noisy)["information_integrity"]["ok"] is False
    reversed_ = tier_separation({**good, ii.format("hard"): s("hard", 0.95)})["information_integrity"]
    assert reversed_["ok"] is False and reversed_["pairs"][1]["verdict"] == "reversed"
    # Selective verification is judged on skill, with the interval its summarize() reports.
    sv = "selective_verification/{}-v3"
    skill = {sv.format("random"): s("easy", 0.5, skill=0.43, skill_ci_low=0.29, skill_ci_high=0.57),
             sv.format("balanced"): s("medium", 0.9, skill=0.27, skill_ci_low=0.15, skill_ci_high=0.39)}  # fmt: skip
    judged = tier_separation(skill)["selective_verification"]
    assert judged["metric"] == "skill" and judged["means"] == {"easy": 0.43, "medium": 0.27}
    assert judged["pairs"][0]["verdict"] == "ordered, not significant"
    table = tier_table(good)
    assert table["easy"]["tasks"] == 2 and table["easy"]["mean_score"] == pytest.approx(0.95)


def test_a_task_without_per_episode_success_reports_no_success_rate(tmp_path: Path) -> None:
    bench = BenchConfig.build(tasks="selective_verification/text*,information_integrity/easy*", agent="heuristic",
                              episodes=2)  # fmt: skip
    result = run_bench(bench=bench, out_dir=tmp_path)
    assert result.summaries["selective_verification/text-v3"].success_rate is None
    assert result.summaries["information_integrity/easy-v3"].success_rate is not None
    assert result.tiers["medium"]["success_rate"] is None and result.tiers["easy"]["success_rate"] is not None
