"""``igym report --markdown``: the results as a Markdown section (``make results``), PNGs in a folder.

``write_markdown`` writes a training section per training folder, then ``results_markdown``: one
row per task and one column per agent/model, what the cells mean, one line per run and the
figures; with ``--readme`` the same results also fill the README's results block (``splice_readme``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path

from integrity_gym.bench.runs import RunData
from integrity_gym.core.registry import get_spec
from integrity_gym.report.cells import fmt, skill_cell
from integrity_gym.report.curves import draw_training
from integrity_gym.report.figures import draw_figures, in_page_order
from integrity_gym.report.inputs import References, task_order
from integrity_gym.report.training import CAPTION, COLUMNS, Training, stage_cells


def results_markdown(
    runs: Sequence[RunData], figures: dict[str, Path], relative_to: Path, references: References | None = None
) -> str:
    """A Markdown results section: one row per task, one column per agent/model, then the figures.

    Runs of one model over different tasks fill one column; a task played by several runs of the
    same model shows the mean of their means and the run-to-run standard deviation. With
    ``references`` (the red team), the trivial floor and the best degenerate agent stand beside them.
    """
    redteam_doc = Path(os.path.relpath(Path("docs/redteam.md").resolve(), relative_to.resolve())).as_posix()
    lines = [*_results_table(runs, references), "", *_results_notes(runs, references, redteam_doc), ""]
    for heading, caption, png in in_page_order(figures, runs):
        rel = Path(_relpath(png, relative_to))
        lines += [f"**{heading}.** {caption}", "", f"![{heading}]({rel.as_posix()})", ""]
    return "\n".join(lines)


def _results_table(runs: Sequence[RunData], references: References | None) -> list[str]:
    """The results table's lines: one row per task, one column per agent/model (and the red team's two)."""
    tasks = task_order(runs)
    labels = list(dict.fromkeys(r.label for r in runs))
    extra = ["trivial floor", "best degenerate agent"] if references else []
    header = "| task | tier | floor | ceiling | threshold | " + " | ".join([*labels, *extra]) + " |"
    lines = [header, "|" + "---|" * (5 + len(labels) + len(extra))]
    for task_id in tasks:
        entry = next(r.summary["tasks"][task_id] for r in runs if task_id in r.summary.get("tasks", {}))
        cells = []
        for label in labels:
            found = [
                s for r in runs if r.label == label
                and (s := r.summary.get("tasks", {}).get(task_id)) and s.get("mean_score") is not None
            ]  # fmt: skip
            if not found:
                cells.append("–")
            elif len(found) == 1:
                s = found[0]
                rate = "" if s.get("success_rate") is None else f"{fmt(s['success_rate'], '.0%')}, "
                if s.get("truncated"):
                    rate += f"{s['truncated']} cut by the step cap, "
                skill = skill_cell(s)
                cells.append(f"{s['mean_score']:.3f} ± {fmt(s.get('std_score'))} ({rate}n={s['episodes']})"
                             + (f"; {skill}" if skill else ""))  # fmt: skip
            else:
                means = [float(s["mean_score"]) for s in found]
                mean = sum(means) / len(means)
                sd = math.sqrt(sum((m - mean) ** 2 for m in means) / (len(means) - 1))
                cells.append(f"{mean:.3f} ± {sd:.3f} across {len(found)} runs")
        if references:
            cells += [ref.cell() if ref else "–" for ref in references.get(task_id, (None, None))]
        floor, ceiling = _bounds(task_id)
        lines.append(f"| `{task_id}` | {entry.get('tier', '')} | {fmt(floor, '.3f')} | {fmt(ceiling, '.3f')} | "
                     f"{fmt(entry.get('threshold'), '.2f')} | " + " | ".join(cells) + " |")  # fmt: skip
    return lines


def _results_notes(runs: Sequence[RunData], references: References | None, redteam_doc: str) -> list[str]:
    """What the table's columns and cells mean, then one line per run: its episodes, items and replay command.

    ``redteam_doc`` is the red-team page's path relative to the Markdown file (``docs/redteam.md`` is
    made beside ``docs/results.md`` by ``make results``, run from the checkout's root).
    """
    lines = [
        "Floor: the best mean grade of a trivial agent (doing nothing, a constant answer, answering blind); "
        "ceiling: the best an honest agent can reach (the oracle, or on selective verification's text task the "
        "exact posterior's expected grade); threshold = floor + 2/3 × (ceiling − floor), to two decimals, the "
        "one rule every task follows (`integrity_gym.core.registry.threshold_between`; both bounds measured over "
        "eval seeds 0-99 by `agents/redteam/bounds.py` and checked by the tests). "
        "Cells: mean grade ± standard deviation over episodes (success rate against the threshold, episodes). "
        "Selective verification has no per-episode success: its threshold applies to the task's mean grade; its "
        "cells add skill over always abstaining [95% bootstrap interval] and the blind baseline's skill "
        "(claim text only) on the same items."
    ]
    if references:
        lines.append(
            f"Red team (`igym redteam`, [docs/redteam.md]({redteam_doc})): *trivial floor* is the best of doing "
            "nothing, always abstaining and answering blind; *best degenerate agent* the best of every attack that "
            "tries to score without doing the task (mean grade, successes/episodes, which attack); the red team "
            "plays under an eval secret, on other items than the floor column's, so the two floors differ by "
            "sampling alone."
        )
    for run in runs:
        n = {t: s.get("episodes") for t, s in run.summary.get("tasks", {}).items()}
        per_task = sorted(set(n.values()))
        items = (
            f"items drawn for this run by a sealed server and graded when it closed (`{run.data_mode}`)"
            if run.sealed
            else f"items `{run.data_mode}`"
        )
        lines.append(f"- **{run.label}**: {', '.join(map(str, per_task))} episode(s) per task; {items}; "
                     f"reproduce with `{run.summary.get('reproduce', '')}`")  # fmt: skip
    return lines


def _bounds(task_id: str) -> tuple[float | None, float | None]:
    """The registered task's floor and ceiling (None for a task this install does not know)."""
    try:
        spec = get_spec(task_id)
    except KeyError:
        return None, None
    return spec.floor, spec.ceiling


def _relpath(path: Path, start: Path) -> str:
    return os.path.relpath(path.resolve(), start.resolve())


def training_markdown(training: Training, png: Path, link: str) -> str:
    """The Markdown section of one training folder, its curves drawn into ``png``, linked as ``link``."""
    draw_training(training.path, png)
    lines = [f"## Training: {training.path.name}", "", training.describe(), ""]
    stages = training.stages()
    if stages:
        lines += ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
        lines += ["| " + " | ".join(stage_cells(stage, s)) + " |" for stage, s in stages]
        lines.append("")
    lines += [f"**Training curves.** {CAPTION}", "", f"![training curves]({link})", ""]
    return "\n".join(lines)


def write_markdown(
    runs: Sequence[RunData],
    markdown_path: Path,
    assets_dir: Path,
    chosen: dict[str, int] | None = None,
    note: str | None = None,
    readme: Path | None = None,
    references: References | None = None,
    trainings: Sequence[Training] = (),
) -> Path:
    """Write the results section to ``markdown_path`` with its PNGs in ``assets_dir``.

    With ``readme``, the same section (links relative to it) also replaces the text between the
    README's ``<!-- results:start -->`` and ``<!-- results:end -->`` markers. Each of ``trainings``
    adds its section (curves, before/after eval) to ``markdown_path`` before the results, as in the HTML.
    """
    if not runs and not trainings:
        raise ValueError("a report needs at least one run folder")
    assets_dir.mkdir(parents=True, exist_ok=True)
    figures = draw_figures(runs, assets_dir, chosen, references) if runs else {}
    intro = "<!-- generated by `make results` (igym report --markdown); do not edit by hand -->\n# Results\n\n"
    lead = note + "\n\n" if note else ""
    results = results_markdown(runs, figures, markdown_path.parent, references) + "\n" if runs else ""
    pngs = [assets_dir / f"training-{i}.png" for i in range(1, len(trainings) + 1)]
    sections = [
        training_markdown(t, png, Path(_relpath(png, markdown_path.parent)).as_posix())
        for t, png in zip(trainings, pngs, strict=True)
    ]
    markdown_path.parent.mkdir(parents=True, exist_ok=True)
    markdown_path.write_text(intro + lead + "".join(section + "\n" for section in sections) + results)
    if readme is not None:
        splice_readme(readme, lead + results_markdown(runs, figures, readme.parent, references))
    return markdown_path


README_START, README_END = "<!-- results:start -->", "<!-- results:end -->"


def splice_readme(readme: Path, section: str) -> None:
    """Replace the text between the README's results markers with ``section``."""
    text = readme.read_text(encoding="utf-8")
    start, end = text.find(README_START), text.find(README_END)
    if start < 0 or end < start:
        raise ValueError(f"{readme} has no {README_START} ... {README_END} block to fill")
    note = "<!-- generated by `make results`; do not edit by hand -->\n"
    filled = text[: start + len(README_START)] + "\n" + note + section.strip() + "\n" + text[end:]
    readme.write_text(filled, encoding="utf-8")
