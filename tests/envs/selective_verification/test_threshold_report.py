"""The report draws each run's abstain rate against the stated threshold beside the Bayes curve."""

from __future__ import annotations

from pathlib import Path

import pytest

from integrity_gym.bench.runner import BenchConfig, run_bench
from integrity_gym.bench.runs import load_run
from integrity_gym.report import plots
from integrity_gym.report.figures import draw_figures, in_page_order

pytest.importorskip("matplotlib")


def _run(root: Path, tasks: str, agent: str, episodes: int) -> Path:
    bench = BenchConfig.build(tasks=tasks, agent=agent, episodes=episodes, seed=0, keep_observations=False,
                              concurrency=1)  # fmt: skip
    run_bench(bench=bench, out_dir=root / agent)
    return root / agent


def test_abstention_against_the_threshold_is_drawn_for_threshold_tasks_only(tmp_path: Path) -> None:
    posterior = load_run(_run(tmp_path, "selective_verification/threshold_text*", "posterior", 30))
    blind = load_run(_run(tmp_path, "selective_verification/threshold_text*,selective_verification/text*", "blind", 12))
    figures = draw_figures([posterior, blind], tmp_path / "fig")
    png = figures["abstain_by_threshold"]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    headings = [h for h, _, _ in in_page_order(figures, [posterior, blind])]
    assert headings[-1] == "Abstention against the stated threshold"
    # The posterior's curve is the Bayes curve: per bin, its abstain rate equals the Bayes policy's.
    rows = plots._threshold_rows(posterior, "selective_verification/threshold_text-v1")
    assert len(rows) == 30 and plots._by_bin(rows, "abstained") == plots._by_bin(rows, "bayes_abstains")
    # A run without a threshold task draws no such figure (the flat tasks state no threshold t).
    flat = load_run(_run(tmp_path / "flat", "selective_verification/text*", "heuristic", 3))
    assert plots.abstain_by_threshold([flat], tmp_path / "none.png") is None
