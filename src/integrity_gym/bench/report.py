"""``igym report RUN...``: one self-contained HTML page (PNGs inlined) and the PNG files.

A run is a folder written by ``igym bench`` (``summary.json``, ``episodes.jsonl``,
``config.json``). Several runs are shown side by side: one table per run and one colour per run
in every figure. ``write_markdown`` writes the same results as a Markdown section for the README
(``make results``). A folder written by ``igym train --out`` adds its eval runs (before and after
training) to the runs and a training section (``train.report``: curves, before/after table).
"""

from __future__ import annotations

import base64
import html
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from integrity_gym.bench import plots
from integrity_gym.bench.summary import separation_text, usage_text
from integrity_gym.train.report import Training, is_training, load_training, training_html, training_markdown

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
)  # fmt: skip


@dataclass
class RunData:
    """One run folder, loaded."""

    path: Path
    summary: dict[str, Any]
    config: dict[str, Any]
    records: list[dict[str, Any]] = field(default_factory=list)
    #: Legend name; ``label`` plus the run id's tail when several runs share a label.
    display: str = ""

    @property
    def run_id(self) -> str:
        """The run's id."""
        return str(self.summary.get("run_id") or self.config.get("run_id") or self.path.name)

    @property
    def data_mode(self) -> str:
        """How the run's items were derived: public, secret:<fingerprint> or sealed:<fingerprint>."""
        return str(self.config.get("data_mode") or "public")

    @property
    def sealed(self) -> bool:
        """Played as a sealed evaluation: the server drew the items and graded them at the end."""
        return self.data_mode.startswith("sealed:")

    @property
    def label(self) -> str:
        """Agent (and model) of the run, marked when sealed: what legends show."""
        agent = str(self.summary.get("agent") or self.config.get("bench", {}).get("agent") or "?")
        model = self.summary.get("model")
        name = agent if not model or model == agent else f"{agent}: {str(model).rsplit('/', 1)[-1]}"
        return f"{name} [sealed]" if self.sealed else name

    @property
    def tasks(self) -> list[str]:
        """Task ids of the run, in the order the run played them."""
        summarized = self.summary.get("tasks", {})
        ordered = [t["id"] for t in self.config.get("tasks", []) if t.get("id") in summarized]
        return ordered + [t for t in summarized if t not in ordered]

    def threshold(self, task_id: str) -> float | None:
        """Success threshold of a task, from the summary."""
        entry = self.summary.get("tasks", {}).get(task_id)
        return None if not entry or "threshold" not in entry else float(entry["threshold"])

    def completed(self, *, env: str | None = None, task_id: str | None = None) -> list[dict[str, Any]]:
        """Episodes that finished (no error), optionally of one env or task."""
        return [
            r for r in self.records
            if not r.get("error") and r.get("grade") and (env is None or r["env"] == env)
            and (task_id is None or r["task_id"] == task_id)
        ]  # fmt: skip

    def scores(self, task_id: str) -> list[float]:
        """Grades of a task's finished episodes."""
        return [float(r["score"]) for r in self.completed(task_id=task_id)]

    def pick(self, task_id: str, index: int | None = None) -> dict[str, Any] | None:
        """Episode ``index`` of a task, or its median-graded episode (the lower median, lowest index on ties).

        The median, not the best: a trace stands for the run, and the best episode of a random
        agent looks like a good agent's.
        """
        records = self.completed(task_id=task_id)
        if index is not None:
            return next((r for r in records if r["index"] == index), None)
        if not records:
            return None
        ranked = sorted(records, key=lambda r: (r["score"], r["index"]))
        return ranked[(len(ranked) - 1) // 2]

    def trace(self, task_id: str, index: int | None = None) -> list[float]:
        """Step rewards of the picked episode."""
        record = self.pick(task_id, index)
        return [] if record is None else [s["reward"] for s in record["trajectory"]]


def load_run(path: str | Path) -> RunData:
    """Load a run folder (or the path of its summary.json)."""
    folder = Path(path)
    if folder.is_file():
        folder = folder.parent
    summary_path = folder / "summary.json"
    if not summary_path.is_file():
        raise ValueError(f"{folder} is not a run folder: it has no summary.json (run `igym bench` first)")
    summary = json.loads(summary_path.read_text())
    config_path = folder / "config.json"
    config = json.loads(config_path.read_text()) if config_path.is_file() else {}
    records = []
    episodes = folder / "episodes.jsonl"
    if episodes.is_file():
        records = [json.loads(line) for line in episodes.read_text().splitlines() if line.strip()]
    run = RunData(folder, summary, config, records)
    run.display = run.label
    return run


def load_inputs(paths: Sequence[str | Path]) -> tuple[list[RunData], list[Training]]:
    """The runs and training folders of ``igym report``'s arguments, in order.

    A training folder (``igym train --out``) brings its eval runs (before, after) along.
    """
    runs: list[RunData] = []
    trainings: list[Training] = []
    for path in paths:
        folder = Path(path)
        if is_training(folder):
            training = load_training(folder)
            trainings.append(training)
            runs += [load_run(run) for run in training.eval_runs()]
        else:
            runs.append(load_run(folder))
    return runs, trainings


@dataclass(frozen=True)
class Reference:
    """A degenerate agent's result on a task (from ``igym redteam --json``), shown beside the runs."""

    attack: str
    mean: float
    successes: int
    episodes: int

    def cell(self) -> str:
        """Markdown cell: mean, successes and which attack."""
        return f"{self.mean:.3f} ({self.successes}/{self.episodes}, {self.attack})"


#: Per task: the best trivial floor (do nothing, abstain, blind) and the best degenerate agent.
References = dict[str, tuple[Reference | None, Reference]]


def load_redteam(path: str | Path) -> References:
    """Read ``igym redteam --json`` output: per task, the best floor attack and the best attack."""
    try:
        rows = json.loads(Path(path).read_text())
        by_task: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            by_task.setdefault(str(row["task_id"]), []).append(row)

        def ref(row: dict[str, Any]) -> Reference:
            return Reference(str(row["attack"]), float(row["mean"]), int(row["successes"]), int(row["episodes"]))

        out: References = {}
        for task_id, found in by_task.items():
            floors = [r for r in found if r.get("floor")]
            best_floor = ref(max(floors, key=lambda r: r["mean"])) if floors else None
            out[task_id] = (best_floor, ref(max(found, key=lambda r: r["mean"])))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path} is not `igym redteam --json` output ({exc})") from exc
    return out


def label_runs(runs: Sequence[RunData]) -> None:
    """Give runs that share a label distinct legend names (the run id's random tail)."""
    labels = [r.label for r in runs]
    for run in runs:
        run.display = run.label if labels.count(run.label) == 1 else f"{run.label} [{run.run_id[-4:]}]"


def parse_trace_choices(values: Sequence[str]) -> dict[str, int]:
    """``TASK:INDEX`` strings → {task_id: episode index}."""
    out: dict[str, int] = {}
    for value in values:
        task, sep, index = value.rpartition(":")
        if not sep or not task or not index.isdigit():
            raise ValueError(f"--trace takes TASK_ID:EPISODE_INDEX, e.g. pii_redaction/gdpr_contract_easy-v4:2; "
                             f"got {value!r}")  # fmt: skip
        out[task] = int(index)
    return out


def merge_by_label(runs: Sequence[RunData]) -> list[RunData]:
    """One pooled run per agent/model: its runs' tasks and episodes together (figures compare models)."""
    merged: dict[str, RunData] = {}
    for run in runs:
        into = merged.get(run.label)
        if into is None:
            summary = {**run.summary, "tasks": dict(run.summary.get("tasks", {}))}
            config = {**run.config, "tasks": list(run.config.get("tasks", []))}
            into = RunData(run.path, summary, config, list(run.records), run.label)
            merged[run.label] = into
            continue
        for task_id in run.tasks:
            into.summary["tasks"].setdefault(task_id, run.summary["tasks"][task_id])
        known = {t.get("id") for t in into.config["tasks"]}
        into.config["tasks"] += [t for t in run.config.get("tasks", []) if t.get("id") not in known]
        into.records += run.records
    return list(merged.values())


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
    return {k: v for k, v in out.items() if v is not None}


def _f(value: Any, spec: str = ".3f") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return format(value, spec)


def _variance_caption(runs: Sequence[RunData]) -> str:
    pairs = [(r.label, t) for r in runs for t in r.tasks if r.scores(t)]
    if any(pairs.count(p) > 1 for p in pairs):
        return ("Each point is a task of one model: the mean of its runs' mean grades against their run-to-run "
                "standard deviation.")  # fmt: skip
    return ("Only one run per model: each point is a task of one run, mean grade against the episode-to-episode "
            "standard deviation. Pass several runs of the same model to see run-to-run variance.")  # fmt: skip


def skill_cell(summary: dict[str, Any]) -> str:
    """``skill [lo, hi]; blind b`` of a selective-verification task summary, or '' for other tasks."""
    metrics = summary.get("metrics") or {}
    if metrics.get("skill") is None:
        return ""
    low, high = metrics.get("skill_ci_low"), metrics.get("skill_ci_high")
    interval = "" if low is None or high is None else f" [{low:.3f}, {high:.3f}]"
    blind = metrics.get("blind_skill")
    return f"skill {metrics['skill']:.3f}{interval}" + ("" if blind is None else f"; blind_skill {blind:.3f}")


def _cut_cell(summary: dict[str, Any]) -> str:
    """Episodes the step cap stopped: a cut-off is not a failure of the task, and must not read as one."""
    cut = int(summary.get("truncated") or 0)
    return f"<b class='no'>{cut} of {summary.get('episodes', 0)}</b>" if cut else "0"


def _run_table(run: RunData) -> str:
    rows = []
    for task_id in run.tasks:
        s = run.summary["tasks"][task_id]
        metrics = {k: v for k, v in (s.get("metrics") or {}).items() if not k.endswith(("_ci_low", "_ci_high"))}
        shown = ", ".join(f"{k}={_f(v)}" for k, v in list(metrics.items())[:8])
        reached = s.get("mean_score") is not None and s["mean_score"] >= s.get("threshold", 2)
        rows.append(
            "<tr>" + "".join(f"<td>{c}</td>" for c in (
                html.escape(task_id), s.get("tier", ""), s.get("episodes", 0), s.get("failed", 0),
                f"<b class='{'ok' if reached else 'no'}'>{_f(s.get('mean_score'))}</b> ± {_f(s.get('std_score'))}",
                _f(s.get("threshold"), ".2f"), _f(s.get("success_rate"), ".0%"), _f(s.get("mean_return"), "+.3f"),
                _f(s.get("mean_steps"), ".1f"), _cut_cell(s), html.escape(usage_text(s) or "–"),
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
    for task_id in plots.task_order(runs):
        threshold = next((t for r in runs if (t := r.threshold(task_id)) is not None), None)
        cells = []
        for run in runs:
            s = run.summary.get("tasks", {}).get(task_id)
            if not s or s.get("mean_score") is None:
                cells.append("<td>–</td>")
                continue
            ok = threshold is not None and s["mean_score"] >= threshold
            skill = skill_cell(s)
            cells.append(f"<td><b class='{'ok' if ok else 'no'}'>{s['mean_score']:.3f}</b> ± {_f(s.get('std_score'))}"
                         f" <small>n={s['episodes']}</small>"
                         + (f"<br><small>{html.escape(skill)}</small>" if skill else "") + "</td>")  # fmt: skip
        if references:
            cells += [
                f"<td>{html.escape(ref.cell()) if ref else '–'}</td>" for ref in references.get(task_id, (None, None))
            ]
        rows.append(f"<tr><td>{html.escape(task_id)}</td><td>{_f(threshold, '.2f')}</td>{''.join(cells)}</tr>")
    return f"<h2>Side by side</h2><table>{head}{''.join(rows)}</table>"


_CSS = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1200px;color:#222;padding:0 1em}
table{border-collapse:collapse;margin:.5em 0;font-size:13px}td,th{border:1px solid #ccc;padding:3px 7px;
text-align:left;vertical-align:top}th{background:#f3f3f3}.ok{color:#17803d}.no{color:#b42318}
img{max-width:100%;border:1px solid #eee}figure{margin:1.5em 0}figcaption{color:#555;font-size:13px}
code{font-size:12px;word-break:break-all;background:#f6f6f6;padding:1px 3px}small{color:#666}"""


def _bounds(task_id: str) -> tuple[float | None, float | None]:
    """The registered task's floor and ceiling (None for a task this install does not know)."""
    from integrity_gym.core.registry import get_spec

    try:
        spec = get_spec(task_id)
    except KeyError:
        return None, None
    return spec.floor, spec.ceiling


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
    for key, heading, caption in FIGURES:
        if key not in figures:
            continue
        data = base64.b64encode(figures[key].read_bytes()).decode("ascii")
        text = _variance_caption(runs) if key == "variance" else caption
        parts.append(
            f"<figure><h2>{heading}</h2><img alt='{heading}' src='data:image/png;base64,{data}'>"
            f"<figcaption>{html.escape(text)}</figcaption></figure>"
        )
    parts.append("</body></html>")
    path = out_dir / "report.html"
    path.write_text("\n".join(parts))
    return path


def results_markdown(
    runs: Sequence[RunData], figures: dict[str, Path], relative_to: Path, references: References | None = None
) -> str:
    """A Markdown results section: one row per task, one column per agent/model, then the figures.

    Runs of one model over different tasks fill one column; a task played by several runs of the
    same model shows the mean of their means and the run-to-run standard deviation. With
    ``references`` (the red team), the trivial floor and the best degenerate agent stand beside them.
    """
    tasks = plots.task_order(runs)
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
                rate = "" if s.get("success_rate") is None else f"{_f(s['success_rate'], '.0%')}, "
                if s.get("truncated"):
                    rate += f"{s['truncated']} cut by the step cap, "
                skill = skill_cell(s)
                cells.append(f"{s['mean_score']:.3f} ± {_f(s.get('std_score'))} ({rate}n={s['episodes']})"
                             + (f"; {skill}" if skill else ""))  # fmt: skip
            else:
                means = [float(s["mean_score"]) for s in found]
                mean = sum(means) / len(means)
                sd = math.sqrt(sum((m - mean) ** 2 for m in means) / (len(means) - 1))
                cells.append(f"{mean:.3f} ± {sd:.3f} across {len(found)} runs")
        if references:
            cells += [ref.cell() if ref else "–" for ref in references.get(task_id, (None, None))]
        floor, ceiling = _bounds(task_id)
        lines.append(f"| `{task_id}` | {entry.get('tier', '')} | {_f(floor, '.3f')} | {_f(ceiling, '.3f')} | "
                     f"{_f(entry.get('threshold'), '.2f')} | " + " | ".join(cells) + " |")  # fmt: skip
    lines.append("")
    lines.append(
        "Floor: the best mean grade of a trivial agent (doing nothing, a constant answer, answering blind); "
        "ceiling: the best an honest agent can reach (the oracle, or on selective verification's text task the "
        "exact posterior's expected grade); threshold = floor + 2/3 × (ceiling − floor), to two decimals, the "
        "one rule every task follows (`integrity_gym.core.registry.threshold_between`; both bounds measured over "
        "eval seeds 0-99 by `agents/redteam/bounds.py` and checked by the tests). "
        "Cells: mean grade ± standard deviation over episodes (success rate against the threshold, episodes). "
        "Selective verification has no per-episode success: its threshold applies to the task's mean grade; its "
        "cells add skill over always abstaining [95% bootstrap interval] and the blind baseline's skill "
        "(claim text only) on the same items."
    )
    if references:
        lines.append(
            "Red team (`igym redteam`, [docs/redteam.md](docs/redteam.md)): *trivial floor* is the best of doing "
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
    lines.append("")
    for key, heading, caption in FIGURES:
        if key in figures:
            rel = Path(_relpath(figures[key], relative_to))
            text = _variance_caption(runs) if key == "variance" else caption
            lines += [f"**{heading}.** {text}", "", f"![{heading}]({rel.as_posix()})", ""]
    return "\n".join(lines)


def _relpath(path: Path, start: Path) -> str:
    import os

    return os.path.relpath(path.resolve(), start.resolve())


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
