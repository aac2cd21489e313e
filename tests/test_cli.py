from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import integrity_gym

IGYM = [sys.executable, "-m", "integrity_gym"]


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*IGYM, *args], input=stdin, capture_output=True, text=True, timeout=300)


def test_list_shows_every_task_with_threshold_and_step_budget() -> None:
    out = run("list").stdout
    lines = out.splitlines()
    flat = " ".join(out.split())
    for spec in integrity_gym.list_tasks():  # a table per environment, titled with its name
        assert spec.env in out and f" {spec.id.split('/', 1)[1]} " in out
        # The task's row: name, tier, its success threshold and its step budget, marked + where it grows
        # (pii: the moves across the document come on top; an information_integrity item may need more).
        (row,) = [line for line in lines if line.startswith(f" {spec.id.split('/', 1)[1]} ")]
        steps = f"{spec.max_steps}+" if spec.budget else str(spec.max_steps)
        assert row.split()[1:4] == [spec.tier, f"{spec.success_threshold:.2f}", steps], row
        if spec.budget:
            assert f"N+ steps: N {spec.budget}" in flat
    assert {s.env for s in integrity_gym.list_tasks() if s.budget} == {"pii_redaction", "information_integrity"}


def test_the_stated_budget_is_the_episodes_budget() -> None:
    # Kills: a budget text that no longer says what the env allows (the pii moves on top of the decisions).
    for task in ("pii_redaction/gdpr_contract_easy", "information_integrity/hard", "selective_verification/random"):
        env = integrity_gym.make(task)
        obs = env.reset(seed=3)
        spec = env.spec
        if spec.env == "pii_redaction":
            assert obs.steps_left > spec.max_steps and "NEXT_CHUNK moves" in spec.budget_text
        elif spec.env == "information_integrity":
            assert obs.steps_left >= spec.max_steps and spec.budget_text.startswith(f"{spec.max_steps} steps, or")
        else:
            assert spec.budget_text == "1 step" and spec.budget is None


def test_bench_writes_the_summary_contract(tmp_path: Path) -> None:
    result = run(
        "bench",
        "--tasks",
        "pii_redaction/*",
        "--agent",
        "oracle",
        "--episodes",
        "2",
        "--seed",
        "3",
        "--out",
        str(tmp_path),
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    tasks = summary["tasks"]
    assert set(tasks) == {s.id for s in integrity_gym.list_tasks("pii_redaction/*")}
    for entry in tasks.values():
        assert entry["episodes"] == 2
        assert entry["mean_score"] == 1.0 and entry["success_rate"] == 1.0
        assert isinstance(entry["mean_return"], float)
    assert "gdpr_contract_easy" in result.stdout


def test_bench_with_no_matching_task_fails_clearly(tmp_path: Path) -> None:
    result = run("bench", "--tasks", "nothing/*", "--out", str(tmp_path))
    assert result.returncode == 2 and "no task matches" in result.stdout


def test_play_takes_typed_actions_and_shows_rewards_and_grade() -> None:
    result = run("play", "pii_redaction/gdpr_contract_easy-v4", stdin="REDACT 0 4 NAME\nbogus\nNEXT_CHUNK\nFINISH\n")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "      0 | " in out  # the window is shown with absolute offsets
    assert "rejected:" in out and "reward" in out
    threshold = integrity_gym.get_spec("pii_redaction/gdpr_contract_easy-v4").success_threshold
    assert "grade" in out and f"threshold {threshold:.2f}," in out


def test_play_an_unknown_task_is_a_clear_error() -> None:
    result = run("play", "pii_redaction/nope-v1")
    assert result.returncode == 2 and "unknown task" in result.stdout
