from __future__ import annotations

import base64
import re
import subprocess
import sys
from io import BytesIO
from pathlib import Path

import pytest
from PIL import Image

import integrity_gym
from integrity_gym.bench.runner import BenchConfig, run_bench
from integrity_gym.bench.runs import load_run
from integrity_gym.report import plots
from integrity_gym.report.inputs import parse_trace_choices
from integrity_gym.report.markdown import write_markdown
from integrity_gym.report.page import write_report

TASKS = "pii_redaction/gdpr*,information_integrity/easy*,selective_verification/text*"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("runs")
    folders = []
    for name, agent, seed in (("h1", "heuristic", 0), ("h2", "heuristic", 50), ("r", "random", 0)):
        bench = BenchConfig.build(tasks=TASKS, agent=agent, episodes=4, seed=seed, max_steps=25,
                                  keep_observations=False, concurrency=2)  # fmt: skip
        run_bench(bench=bench, out_dir=root / name)
        folders.append(root / name)
    return folders


def test_the_html_report_is_self_contained_with_every_figure(runs: list[Path], tmp_path: Path) -> None:
    loaded = [load_run(p) for p in runs]
    page = write_report(loaded, tmp_path, title="Test report", chosen={"pii_redaction/gdpr_contract_easy-v4": 1})
    text = page.read_text()
    images = re.findall(r"src='data:image/png;base64,([^']+)'", text)
    headings = re.findall(r"<figure><h2>([^<]+)</h2>", text)
    assert headings == ["Grade by task", "Selective verification: skill", "Grade dimensions", "Step-reward traces",
                        "Mean vs variance", "Reliability diagram", "Risk-coverage"]  # fmt: skip
    for data in images:
        with Image.open(BytesIO(base64.b64decode(data))) as image:
            assert image.format == "PNG" and image.width > 300 and image.height > 200
    for name in ("grades", "skill", "radar", "traces", "variance", "reliability", "risk_coverage"):
        assert (tmp_path / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "src='http" not in text and "<link" not in text  # nothing fetched from elsewhere
    # One table per run, side by side in the page, with thresholds, and the replay command.
    assert text.count("<table>") == 4 and "<h2>Side by side</h2>" in text
    for run in loaded:
        assert run.run_id in text and "Reproduce: <code>igym bench" in text
    assert "run-to-run" in text  # two heuristic runs of the same tasks


def test_chosen_trace_and_bad_choices(runs: list[Path]) -> None:
    run = load_run(runs[0])
    assert run.pick("pii_redaction/gdpr_contract_easy-v4", 1)["index"] == 1
    # By default the trace is the run's median episode, not its best (a random agent's best looks good).
    median = run.pick("pii_redaction/gdpr_contract_easy-v4")
    scores = sorted(run.scores("pii_redaction/gdpr_contract_easy-v4"))
    assert median["score"] == scores[(len(scores) - 1) // 2]
    assert parse_trace_choices(["a/b-v0:3"]) == {"a/b-v0": 3}
    with pytest.raises(ValueError, match="TASK_ID:EPISODE_INDEX"):
        parse_trace_choices(["a/b-v0"])
    with pytest.raises(ValueError, match=r"no summary\.json"):
        load_run(runs[0].parent)


def test_markdown_results_section(runs: list[Path], tmp_path: Path) -> None:
    md = write_markdown([load_run(p) for p in runs], tmp_path / "docs" / "results.md", tmp_path / "docs" / "results",
                        note="A note.")  # fmt: skip
    text = md.read_text()
    assert "| task | tier | floor | ceiling | threshold | heuristic | random |" in text
    # Each task's row states the floor, ceiling and threshold its spec registers.
    specs = [s for s in integrity_gym.list_tasks() if f"`{s.id}`" in text]
    assert len(specs) == 3
    for spec in specs:
        (row,) = [line for line in text.splitlines() if line.startswith(f"| `{spec.id}` |")]
        bounds = f"| {spec.floor:.3f} | {spec.ceiling:.3f} | {spec.success_threshold:.2f} |"
        assert f"| {spec.tier} {bounds}" in row, row
    assert "`information_integrity/easy-v3`" in text and "threshold = floor + 2/3" in text
    assert "A note." in text
    # The two heuristic runs share a column: the mean of their means and the run-to-run spread.
    assert text.count("across 2 runs") == 3 and "n=4)" in text
    for link in re.findall(r"!\[[^\]]+\]\(([^)]+)\)", text):
        assert not link.startswith("/") and (md.parent / link).is_file()


def test_report_command(runs: list[Path], tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "integrity_gym", "report", *map(str, runs[:2]), "--out", str(tmp_path / "rep")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "rep" / "report.html").is_file()
    # A second report into the same folder is refused unless asked for, and then replaces it.
    again = [sys.executable, "-m", "integrity_gym", "report", *map(str, runs[:1]), "--out", str(tmp_path / "rep")]
    refused = subprocess.run(again, capture_output=True, text=True, timeout=300)
    assert refused.returncode == 2 and "already exists; pass --overwrite" in " ".join(refused.stdout.split())
    before = (tmp_path / "rep" / "report.html").read_text()
    replaced = subprocess.run([*again, "--overwrite"], capture_output=True, text=True, timeout=300)
    assert replaced.returncode == 0 and (tmp_path / "rep" / "report.html").read_text() != before
    # A folder that is no run is the error reported, even into an --out that already holds a report.
    not_a_run = [sys.executable, "-m", "integrity_gym", "report", str(tmp_path), "--out", str(tmp_path / "rep")]
    bad = subprocess.run(not_a_run, capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "no summary.json" in bad.stdout


SELECTIVE = "selective_verification/text-v3"


def expected_skill_cell(run_folder: Path) -> str:
    m = load_run(run_folder).summary["tasks"][SELECTIVE]["metrics"]
    assert m["skill_ci_low"] < m["skill_ci_high"]  # four episodes: a real interval
    interval = f"[{m['skill_ci_low']:.3f}, {m['skill_ci_high']:.3f}]"
    return f"skill {m['skill']:.3f} {interval}; blind_skill {m['blind_skill']:.3f}"


def test_selective_tables_carry_skill_with_its_interval_and_the_blind_skill(runs: list[Path], tmp_path: Path) -> None:
    loaded = [load_run(p) for p in runs]
    page = write_report(loaded, tmp_path / "html").read_text()
    md = write_markdown(loaded[2:], tmp_path / "results.md", tmp_path / "assets").read_text()
    for folder in runs:
        cell = expected_skill_cell(folder)
        # Each run's own table, and the side-by-side table, once each.
        assert page.count(cell) == 2, cell
    (row,) = [line for line in md.splitlines() if line.startswith(f"| `{SELECTIVE}`")]
    assert expected_skill_cell(runs[2]) in row and "n=4" in row
    # Tasks of other environments have no skill.
    (pii,) = [line for line in md.splitlines() if line.startswith("| `pii_redaction/")]
    assert "skill" not in pii


def test_the_skill_figure_needs_selective_tasks_and_draws_one_point_per_task_and_run(
    runs: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded = [load_run(p) for p in runs]
    drawn: list[tuple[float, float | None]] = []
    lines: list[float] = []
    notes: list[str] = []
    import matplotlib.axes

    original_errorbar, original_axhline = matplotlib.axes.Axes.errorbar, matplotlib.axes.Axes.axhline
    original_annotate = matplotlib.axes.Axes.annotate

    def annotate(self, text, *args, **kwargs):  # type: ignore[no-untyped-def]
        notes.append(text)
        return original_annotate(self, text, *args, **kwargs)

    def errorbar(self, x, y, yerr=None, **kwargs):  # type: ignore[no-untyped-def]
        drawn.append((float(y[0]), None if yerr is None else float(yerr[0][0] + yerr[1][0])))
        return original_errorbar(self, x, y, yerr=yerr, **kwargs)

    def axhline(self, y=0, *args, **kwargs):  # type: ignore[no-untyped-def]
        lines.append(float(y))
        return original_axhline(self, y, *args, **kwargs)

    monkeypatch.setattr(matplotlib.axes.Axes, "errorbar", errorbar)
    monkeypatch.setattr(matplotlib.axes.Axes, "axhline", axhline)
    monkeypatch.setattr(matplotlib.axes.Axes, "annotate", annotate)
    path = plots.selective_skill(loaded, tmp_path / "skill.png")
    assert path is not None and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    expected = []
    for run in loaded:
        m = run.summary["tasks"][SELECTIVE]["metrics"]
        expected.append((m["skill"], m["skill_ci_high"] - m["skill_ci_low"]))
    assert drawn == [pytest.approx(e) for e in expected] and lines == [0.0]
    assert all(f"n={run.summary['tasks'][SELECTIVE]['episodes']}" in notes for run in loaded)
    without = [run for run in loaded if SELECTIVE in run.summary["tasks"]]
    for run in without:
        run.summary["tasks"] = {k: v for k, v in run.summary["tasks"].items() if not k.startswith("selective")}
    assert plots.selective_skill(without, tmp_path / "none.png") is None


def test_the_radar_has_no_selective_axis_that_is_not_a_score(runs: list[Path]) -> None:
    loaded = [load_run(p) for p in runs]
    # Stated confidence, coverage and correctness among all items rise by answering everything
    # at confidence 1, which the grade punishes: they are not axes, and nothing else is left.
    assert plots.dimensions(loaded, "selective_verification") == []
    assert len(plots.dimensions(loaded, "pii_redaction")) >= 3


def test_grade_whiskers_are_the_summary_t_interval_not_a_normal_one(runs: list[Path]) -> None:
    # Drawn with 1.96 they were 2.2x too narrow at n = 3 (6.5x at n = 2) against summary.json's interval.
    low, high = plots.whiskers([0.5, 0.6, 0.7])
    assert low == pytest.approx(0.24841, abs=1e-5) and high == pytest.approx(0.24841, abs=1e-5)
    assert plots.whiskers([0.7]) == (0.0, 0.0)
    run = load_run(runs[0])
    for task_id in run.tasks:
        scores = run.scores(task_id)
        if len(scores) > 1:
            mean = sum(scores) / len(scores)
            low, high = plots.whiskers(scores)
            ci = run.summary["tasks"][task_id]["score_ci95"]
            assert (mean - low, mean + high) == pytest.approx(tuple(ci), abs=1e-9)
