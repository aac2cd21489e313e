"""The report's figures: which there are, each drawn once for the HTML page and the Markdown section.

``FIGURES`` lists them in page order, ``(key, heading, caption)``; ``draw_figures`` draws those the
runs hold (``plots``) and ``in_page_order`` hands them to a page with their captions.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from integrity_gym.bench.runs import RunData
from integrity_gym.report import plots
from integrity_gym.report.inputs import References, label_runs, merge_by_label

FIGURES = (
    ("grades", "Grade by task", "Mean grade of each task per run; whiskers are 95% intervals over episodes, "
     "dashed red ticks the task's success threshold."),
    ("skill", "Selective verification: skill", "Skill over always abstaining per task and run: (mean grade - "
     "abstain reward) / (1 - abstain reward); whiskers are 95% bootstrap intervals over episodes. Dotted at 0, "
     "always abstaining; dashed red, the task's threshold skill; black diamonds, the blind baseline (claim text "
     "only) on the same items."),
    ("radar", "Grade dimensions", "Mean of each grade dimension where higher is better, per environment; one "
     "polygon per run. Selective verification has no such dimension besides its grade (stated confidence and "
     "coverage are not scores): see its skill figure."),
    ("traces", "Step-reward traces", "One episode per task and run, the one with the run's median grade "
     "unless chosen with --trace: dots are step rewards, lines the running return."),
    ("variance", "Mean vs variance", ""),
    ("reliability", "Reliability diagram", "Selective verification, answered items: accuracy against stated "
     "confidence in ten bins (numbers are items per bin)."),
    ("risk_coverage", "Risk-coverage", "Selective verification: error rate among the k most confident answers "
     "against the share answered; dotted, the blind baseline that sees only the claim's text."),
    ("abstain_by_threshold", "Abstention against the stated threshold", "Selective verification's threshold "
     "tasks: share of ABSTAIN replies against the risk threshold t each item states, in nine bins of t; dashed, "
     "the Bayes policy (on text it abstains exactly when the claim's known probability is below t; pictures "
     "decide every claim, so there it never abstains)."),
)  # fmt: skip


def draw_figures(
    runs: Sequence[RunData],
    out_dir: Path,
    chosen: dict[str, int] | None = None,
    references: References | None = None,
) -> dict[str, Path]:
    """Draw every figure the runs support into ``out_dir``; return {figure key: PNG path}.

    Runs of the same agent/model are pooled into one colour, except in the variance figure,
    which compares them.
    """
    label_runs(runs)
    models = merge_by_label(runs)
    out: dict[str, Path | None] = {
        "grades": plots.grades_by_task(models, out_dir / "grades.png", references),
        "skill": plots.selective_skill(models, out_dir / "skill.png"),
        "radar": plots.radar(models, out_dir / "radar.png"),
        "traces": plots.reward_traces(models, out_dir / "traces.png", chosen),
    }
    out["variance"], _ = plots.mean_vs_variance(runs, out_dir / "variance.png")
    out["reliability"] = plots.reliability(models, out_dir / "reliability.png")
    out["risk_coverage"] = plots.risk_coverage(models, out_dir / "risk_coverage.png")
    out["abstain_by_threshold"] = plots.abstain_by_threshold(models, out_dir / "abstain_by_threshold.png")
    return {k: v for k, v in out.items() if v is not None}


def _variance_caption(runs: Sequence[RunData]) -> str:
    """The variance figure's caption: what its spread is, across runs of one model or within one run."""
    pairs = [(r.label, t) for r in runs for t in r.tasks if r.scores(t)]
    if any(pairs.count(p) > 1 for p in pairs):
        return ("Each point is a task of one model: the mean of its runs' mean grades against their run-to-run "
                "standard deviation.")  # fmt: skip
    return ("Only one run per model: each point is a task of one run, mean grade against the episode-to-episode "
            "standard deviation. Pass several runs of the same model to see run-to-run variance.")  # fmt: skip


def in_page_order(figures: dict[str, Path], runs: Sequence[RunData]) -> list[tuple[str, str, Path]]:
    """``(heading, caption, PNG)`` of each figure drawn, in ``FIGURES`` order; the variance caption fits the runs."""
    return [
        (heading, _variance_caption(runs) if key == "variance" else caption, figures[key])
        for key, heading, caption in FIGURES
        if key in figures
    ]
