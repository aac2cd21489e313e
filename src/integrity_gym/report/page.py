"""``igym report``'s HTML page: one self-contained file (PNGs inlined), the PNG files beside it.

``write_report`` writes the title and note, a training section per training folder (what was
trained, the eval table before and after, the curves), the side-by-side table when there are
several runs (or the red team's references), one table per run, then the figures.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from integrity_gym.bench.runs import RunData
from integrity_gym.bench.summary import separation_text, usage_text
from integrity_gym.report.cells import fmt, skill_cell
from integrity_gym.report.curves import draw_training
from integrity_gym.report.figures import draw_figures, in_page_order
from integrity_gym.report.inputs import References, label_runs, task_order
from integrity_gym.report.training import CAPTION, COLUMNS, Training, stage_cells


def _base64(png: Path) -> str:
    return base64.b64encode(png.read_bytes()).decode("ascii")


def _cut_cell(summary: dict[str, Any]) -> str:
    """Episodes the step cap stopped: a cut-off is not a failure of the task, and must not read as one."""
    cut = int(summary.get("truncated") or 0)
    return f"<b class='no'>{cut} of {summary.get('episodes', 0)}</b>" if cut else "0"


def _run_table(run: RunData) -> str:
    rows = []
    for task_id in run.tasks:
        s = run.summary["tasks"][task_id]
        metrics = {k: v for k, v in (s.get("metrics") or {}).items() if not k.endswith(("_ci_low", "_ci_high"))}
        shown = ", ".join(f"{k}={fmt(v)}" for k, v in list(metrics.items())[:8])
        reached = s.get("mean_score") is not None and s["mean_score"] >= s.get("threshold", 2)
        rows.append(
            "<tr>" + "".join(f"<td>{c}</td>" for c in (
                html.escape(task_id), s.get("tier", ""), s.get("episodes", 0), s.get("failed", 0),
                f"<b class='{'ok' if reached else 'no'}'>{fmt(s.get('mean_score'))}</b> ± {fmt(s.get('std_score'))}",
                fmt(s.get("threshold"), ".2f"), fmt(s.get("success_rate"), ".0%"), fmt(s.get("mean_return"), "+.3f"),
                fmt(s.get("mean_steps"), ".1f"), _cut_cell(s), html.escape(usage_text(s) or "–"),
                html.escape(skill_cell(s)), f"<small>{html.escape(shown)}</small>",
            )) + "</tr>"
        )  # fmt: skip
    head = "".join(f"<th>{h}</th>" for h in ("task", "tier", "n", "failed", "grade ± sd", "threshold", "success",
                                               "return", "steps", "cut by the step cap", "model use",
                                               "skill [95%]", "env metrics"))  # fmt: skip
    sep = run.summary.get("tier_separation", {})
    checks = []
    for env, v in sep.items():
        text = separation_text(v) if "pairs" in v else ", ".join(f"{t} {m:.3f}" for t, m in v.get("means", {}).items())
        checks.append(f"<li>{html.escape(env)}: {html.escape(text)}</li>")
    replay = html.escape(str(run.summary.get("reproduce") or run.config.get("reproduce") or ""))
    return (
        f"<h3>{html.escape(run.label)} <small>{html.escape(run.run_id)} · {run.summary.get('status', '?')} · "
        f"{html.escape(str(run.config.get('created_at', '')))}</small></h3>"
        f"<table><tr>{head}</tr>{''.join(rows)}</table>"
        f"<ul class='checks'>{''.join(checks)}</ul><p>Reproduce: <code>{replay}</code></p>"
    )


def _comparison_table(runs: Sequence[RunData], references: References | None = None) -> str:
    """Tasks down, runs across: mean grade ± sd, green when it reaches the threshold.

    With ``references``, two more columns: the trivial floor and the best degenerate agent.
    """
    label_runs(runs)
    extra = ("trivial floor", "best degenerate agent") if references else ()
    head = "<tr><th>task</th><th>threshold</th>" + "".join(
        f"<th>{html.escape(name)}</th>" for name in [*(r.display for r in runs), *extra]
    ) + "</tr>"  # fmt: skip
    rows = []
    for task_id in task_order(runs):
        threshold = next((t for r in runs if (t := r.threshold(task_id)) is not None), None)
        cells = []
        for run in runs:
            s = run.summary.get("tasks", {}).get(task_id)
            if not s or s.get("mean_score") is None:
                cells.append("<td>–</td>")
                continue
            ok = threshold is not None and s["mean_score"] >= threshold
            skill = skill_cell(s)
            cells.append(f"<td><b class='{'ok' if ok else 'no'}'>{s['mean_score']:.3f}</b> ± {fmt(s.get('std_score'))}"
                         f" <small>n={s['episodes']}</small>"
                         + (f"<br><small>{html.escape(skill)}</small>" if skill else "") + "</td>")  # fmt: skip
        if references:
            cells += [
                f"<td>{html.escape(ref.cell()) if ref else '–'}</td>" for ref in references.get(task_id, (None, None))
            ]
        rows.append(f"<tr><td>{html.escape(task_id)}</td><td>{fmt(threshold, '.2f')}</td>{''.join(cells)}</tr>")
    return f"<h2>Side by side</h2><table>{head}{''.join(rows)}</table>"


_CSS = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1200px;color:#222;padding:0 1em}
table{border-collapse:collapse;margin:.5em 0;font-size:13px}td,th{border:1px solid #ccc;padding:3px 7px;
text-align:left;vertical-align:top}th{background:#f3f3f3}.ok{color:#17803d}.no{color:#b42318}
img{max-width:100%;border:1px solid #eee}figure{margin:1.5em 0}figcaption{color:#555;font-size:13px}
code{font-size:12px;word-break:break-all;background:#f6f6f6;padding:1px 3px}small{color:#666}"""


def training_html(training: Training, png: Path) -> str:
    """The HTML section of one training folder, its curves drawn into ``png`` and inlined."""
    draw_training(training.path, png)
    head = "".join(f"<th>{c}</th>" for c in COLUMNS)
    rows = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in stage_cells(stage, s)) + "</tr>"
        for stage, s in training.stages()
    )
    table = f"<table><tr>{head}</tr>{rows}</table>" if rows else "<p>No eval before/after (--eval-episodes 0).</p>"
    return (
        f"<h2>Training: {html.escape(training.path.name)}</h2><p>{html.escape(training.describe())}</p>"
        f"<h3>Eval partition, before and after</h3>{table}"
        f"<figure><h3>Training curves</h3><img alt='training curves' src='data:image/png;base64,{_base64(png)}'>"
        f"<figcaption>{html.escape(CAPTION)}</figcaption></figure>"
    )


def write_report(
    runs: Sequence[RunData],
    out_dir: Path,
    *,
    title: str = "integrity-gym report",
    chosen: dict[str, int] | None = None,
    note: str | None = None,
    references: References | None = None,
    trainings: Sequence[Training] = (),
) -> Path:
    """Write ``out_dir/report.html`` (images inlined) and the PNGs beside it; return the HTML path.

    Each of ``trainings`` adds its section (curves, before/after eval) after the note.
    """
    if not runs and not trainings:
        raise ValueError("a report needs at least one run folder")
    out_dir.mkdir(parents=True, exist_ok=True)
    figures = draw_figures(runs, out_dir, chosen, references) if runs else {}
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1>",
        f"<p>{len(runs)} run(s); generated {datetime.now(UTC).isoformat(timespec='seconds')}.</p>",
    ]
    if note:
        parts.append(f"<p>{html.escape(note)}</p>")
    parts += [training_html(t, out_dir / f"training-{i}.png") for i, t in enumerate(trainings, 1)]
    if len(runs) > 1 or references:
        parts.append(_comparison_table(runs, references))
    if runs:
        parts.append("<h2>Runs</h2>")
    parts += [_run_table(run) for run in runs]
    for heading, caption, png in in_page_order(figures, runs):
        parts.append(
            f"<figure><h2>{heading}</h2><img alt='{heading}' src='data:image/png;base64,{_base64(png)}'>"
            f"<figcaption>{html.escape(caption)}</figcaption></figure>"
        )
    parts.append("</body></html>")
    path = out_dir / "report.html"
    path.write_text("\n".join(parts))
    return path
