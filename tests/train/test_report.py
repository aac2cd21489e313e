"""``igym report`` on a training folder: the curves and the before/after eval table (no torch needed).

The folder is fabricated but valid: its per-step log is written by the training's own ``StepLog``,
its eval runs are real ``igym bench`` runs (heuristic before, random after) and its summary holds
their figures as ``igym train`` records them.
"""

from __future__ import annotations

import base64
import json
import re
from io import BytesIO
from pathlib import Path

import pytest
from PIL import Image
from typer.testing import CliRunner

from integrity_gym.bench.runner import BenchConfig, run_bench
from integrity_gym.bench.runs import load_run
from integrity_gym.cli import app
from integrity_gym.report.inputs import load_inputs
from integrity_gym.report.markdown import write_markdown
from integrity_gym.report.page import write_report
from integrity_gym.report.training import EVAL_DIRS, LOG_NAME, SUMMARY_NAME, stage_cells
from integrity_gym.train.grpo import StepLog, TrainConfig

TASK = "selective_verification/text-v3"


def _stage(run: Path, agent: str) -> dict[str, object]:
    s = json.loads((run / "summary.json").read_text())
    task = s["tasks"][TASK]
    return {"label": agent, "run_id": s["run_id"], "out_dir": str(run), "episodes": task["episodes"],
            "mean_score": task["mean_score"], "score_ci95": task["score_ci95"], "malformed_rate": 0.25,
            "abstain_rate": 0.5, "max_turns": None}  # fmt: skip


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("train") / "grpo3"
    folder.mkdir()
    log = StepLog(folder / LOG_NAME)
    for step in range(3):
        log.write([0.0, 0.8, 0.8, 0.2 * step], (2, 1 + step, 4), [0.8] * 4, ["a", "b"], [2 * step, 2 * step + 1], "x")
    stages = {}
    for stage, agent in (("before", "heuristic"), ("after", "random")):
        bench = BenchConfig.build(tasks=TASK, agent=agent, episodes=3, partition="eval", keep_observations=False)
        run_bench(bench=bench, out_dir=folder / EVAL_DIRS[stage])
        stages[stage] = _stage(folder / EVAL_DIRS[stage], agent)
    config = TrainConfig(task=TASK, steps=3).model_dump(mode="json")
    (folder / SUMMARY_NAME).write_text(json.dumps({"config": config, **stages, "model_dir": str(folder / "model")}))
    return folder


def _pngs(text: str, alt: str) -> list[Image.Image]:
    found = re.findall(rf"<img alt='{alt}' src='data:image/png;base64,([^']+)'>", text)
    return [Image.open(BytesIO(base64.b64decode(data))) for data in found]


def test_the_html_report_of_a_training_folder_has_its_curves_and_before_after_rows(
    trained: Path, tmp_path: Path
) -> None:
    runs, trainings = load_inputs([trained])
    assert [r.path for r in runs] == [trained / "eval-before", trained / "eval-after"] and len(trainings) == 1
    text = write_report(runs, tmp_path, trainings=trainings).read_text()
    (image,) = _pngs(text, "training curves")
    assert image.format == "PNG" and image.width > 600 and (tmp_path / "training-1.png").is_file()
    assert "<h2>Training: grpo3</h2>" in text and "3 GRPO step(s)" in text
    summary = json.loads((trained / SUMMARY_NAME).read_text())
    for stage in ("before", "after"):
        s = summary[stage]
        low, high = s["score_ci95"]
        row = f"<tr><td>{stage}</td><td>{s['label']}</td><td>3</td><td>{s['mean_score']:.3f}</td>"
        assert row + f"<td>{low:.3f}–{high:.3f}</td><td>0.25</td><td>0.50</td>" in text
        assert s["run_id"] in text  # and the eval run itself is in the report's runs
    assert text.index("<tr><td>before</td>") < text.index("<tr><td>after</td>")
    assert "<h2>Side by side</h2>" in text  # the two eval runs compared like any runs


def test_the_markdown_section_and_the_report_command(trained: Path, tmp_path: Path) -> None:
    runs, trainings = load_inputs([trained])
    md = write_markdown(runs, tmp_path / "docs" / "train.md", tmp_path / "docs" / "img", trainings=trainings)
    text = md.read_text()
    summary = json.loads((trained / SUMMARY_NAME).read_text())
    for stage in ("before", "after"):
        assert "| " + " | ".join(stage_cells(stage, summary[stage])) + " |" in text
        assert f"| {stage} | {summary[stage]['label']} | 3 | " in text
    (link,) = re.findall(r"!\[training curves\]\(([^)]+)\)", text)
    assert (md.parent / link).is_file() and link == "img/training-1.png"
    result = CliRunner().invoke(app, ["report", str(trained), "--out", str(tmp_path / "rep")])
    assert result.exit_code == 0, result.output
    assert len(_pngs((tmp_path / "rep" / "report.html").read_text(), "training curves")) == 1


def test_a_multi_step_training_without_eval_still_reports_and_a_bench_run_is_unaffected(
    trained: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "ms"
    folder.mkdir()
    episode = {"seed": 0, "grade": 0.5, "return": 0.2, "turns": 2}
    StepLog(folder / LOG_NAME).write([0.5, 0.0], (1, 0, 4), [], ["s0"], [0, 0], "{", reward="grade", episodes=[episode])
    config = TrainConfig(task="information_integrity/easy-v3", steps=1, eval_episodes=0, max_turns=2)
    (folder / SUMMARY_NAME).write_text(json.dumps({"config": config.model_dump(mode="json"), "before": None}))
    runs, trainings = load_inputs([folder])
    assert runs == [] and trainings[0].multi_step
    text = write_report(runs, tmp_path / "html", trainings=trainings).read_text()
    assert "No eval before/after" in text and "at most 2 turns" in text and "the episode grade" in text
    assert len(_pngs(text, "training curves")) == 1
    # A bench run folder is a plain run: no training section, the same figures as before.
    bench_runs, none = load_inputs([trained / "eval-before"])
    assert none == [] and bench_runs[0].run_id == load_run(trained / "eval-before").run_id
    plain = write_report(bench_runs, tmp_path / "plain").read_text()
    direct = write_report([load_run(trained / "eval-before")], tmp_path / "direct").read_text()
    assert "Training" not in plain and not (tmp_path / "plain" / "training-1.png").exists()

    def skeleton(page: str) -> str:
        return re.sub(r"generated [^<]+|base64,[^']+", "", page)

    assert skeleton(plain) == skeleton(direct) and "<figure><h2>Grade by task</h2>" in plain
    with pytest.raises(ValueError, match="at least one run folder"):
        write_report([], tmp_path / "none")


def test_the_eval_panels_always_abstain_line_is_the_eval_items_own() -> None:
    # Kills: the eval panel's line drawn at the first train step's floor, which on a threshold task is train
    # item 0's own t (0.78 in the 20-step run of docs/training.md, where always abstaining scored 0.755 on eval).
    from integrity_gym.report.curves import eval_floor

    threshold = [("before", {"metrics": {"abstain_reward": 0.755}}), ("after", {"metrics": {"abstain_reward": 0.755}})]
    assert eval_floor(threshold, [0.78, 0.64, 0.91]) == 0.755
    flat = [("before", {"mean_score": 0.5})]  # a stage recorded without metrics, as before issue 28
    assert eval_floor(flat, [0.8, 0.8]) == 0.8
    assert eval_floor(flat, [0.78, 0.64]) is None and eval_floor([], []) is None
