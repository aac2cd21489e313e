"""The report shows the red team beside the runs: the trivial floor and the best degenerate agent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from integrity_gym.bench.runner import BenchConfig, run_bench
from integrity_gym.bench.runs import load_run
from integrity_gym.cli import app
from integrity_gym.report.inputs import load_redteam
from integrity_gym.report.markdown import write_markdown

TASK = "information_integrity/easy-v3"


def test_markdown_and_figure_carry_floor_and_best_attack(tmp_path: Path) -> None:
    run_bench(bench=BenchConfig.build(tasks=TASK, agent="heuristic", episodes=2), out_dir=tmp_path / "run")
    rows = [
        {"task_id": TASK, "attack": "do_nothing", "mean": 0.08, "successes": 0, "episodes": 20, "floor": True},
        {"task_id": TASK, "attack": "stuffer", "mean": 0.31, "successes": 1, "episodes": 20, "floor": False},
        {"task_id": TASK, "attack": "constant", "mean": 0.12, "successes": 0, "episodes": 20, "floor": False},
    ]
    (tmp_path / "redteam.json").write_text(json.dumps(rows))
    references = load_redteam(tmp_path / "redteam.json")
    floor, best = references[TASK]
    assert floor is not None and (floor.attack, best.attack) == ("do_nothing", "stuffer")
    page = write_markdown(
        [load_run(tmp_path / "run")], tmp_path / "results.md", tmp_path / "fig", references=references
    )
    text = page.read_text()
    assert "| trivial floor | best degenerate agent |" in text
    assert "0.080 (0/20, do_nothing) | 0.310 (1/20, stuffer) |" in text
    assert (tmp_path / "fig" / "grades.png").is_file()


def test_redteam_json_feeds_the_report_command(tmp_path: Path) -> None:
    runner = CliRunner()
    made = runner.invoke(app, ["redteam", "--tasks", TASK, "--episodes", "2", "--no-audit",
                               "--json", str(tmp_path / "rt.json")])  # fmt: skip
    assert made.exit_code == 0, made.stdout
    assert {row["task_id"] for row in json.loads((tmp_path / "rt.json").read_text())} == {TASK}
    run_bench(bench=BenchConfig.build(tasks=TASK, agent="heuristic", episodes=2), out_dir=tmp_path / "run")
    result = runner.invoke(app, ["report", str(tmp_path / "run"), "--out", str(tmp_path / "rep"),
                                 "--redteam", str(tmp_path / "rt.json")])  # fmt: skip
    assert result.exit_code == 0, result.stdout
    assert "best degenerate agent" in (tmp_path / "rep" / "report.html").read_text()


def test_a_file_that_is_not_redteam_output_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text('{"not": "a list"}')
    with pytest.raises(ValueError, match="not `igym redteam --json` output"):
        load_redteam(tmp_path / "x.json")
