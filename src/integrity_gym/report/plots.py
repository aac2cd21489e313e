"""The report's figures, drawn with matplotlib (the ``report`` extra) into PNG files.

Every figure function takes loaded runs (``bench.runs.RunData``) and returns the PNG path it
wrote, or ``None`` when the runs hold nothing to draw (e.g. no selective-verification episodes).
``pyplot()`` and ``save()`` are the two steps every figure of the report shares, the training
curves (``curves``) included: matplotlib's pyplot on the file-only backend, and one PNG written
the same way (dpi, tight box, no software stamp) then closed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from integrity_gym.bench.summary import mean_interval
from integrity_gym.core.registry import env_extras
from integrity_gym.report.inputs import task_order

if TYPE_CHECKING:
    from integrity_gym.bench.runs import RunData
    from integrity_gym.report.inputs import References

#: Breakdown keys that describe an item or a setting, or where lower is better: never a radar axis.
_NOT_DIMENSIONS = ("leak", "error", "malformed", "repair", "abstain", "claim_true", "blind", "q_star", "threshold",
                   "brier", "probability", "premature", "false_", "reward", "over_redacted")  # fmt: skip


def _not_dimensions(env: str) -> tuple[str, ...]:
    """Breakdown keys of ``env`` that are not scores: the generic ones and its ``EnvExtras.not_dimensions``."""
    try:
        return (*_NOT_DIMENSIONS, *env_extras(env).not_dimensions)
    except KeyError:
        return _NOT_DIMENSIONS


def whiskers(scores: Sequence[float]) -> tuple[float, float]:
    """Below and above the mean: the same 95% t-interval as ``summary.json``'s ``score_ci95``."""
    interval = mean_interval(scores)
    if interval is None:
        return 0.0, 0.0
    mean = math.fsum(scores) / len(scores)
    return mean - interval[0], interval[1] - mean


def pyplot() -> Any:
    """The pyplot module on the Agg backend (files only, no window); an ImportError names the extra."""
    try:
        import matplotlib
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError("reports need matplotlib: pip install 'integrity-gym[report]'") from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(fig: Any, path: Path) -> Path:
    """Write ``fig`` to the PNG ``path`` (its folder made if need be), close it and return ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight", metadata={"Software": None})
    pyplot().close(fig)
    return path


def _colors(n: int) -> list[Any]:
    cmap = pyplot().get_cmap("tab10")
    return [cmap(i % 10) for i in range(n)]


def _short(task_id: str) -> str:
    env, _, name = task_id.partition("/")
    return f"{env.split('_')[0]}/{name}"


def grades_by_task(runs: Sequence[RunData], path: Path, references: References | None = None) -> Path | None:
    """Grouped bars: mean grade per task and run, 95% interval whiskers, threshold ticks.

    With ``references`` (the red team), a grey tick marks each task's trivial floor and a black
    cross its best degenerate agent.
    """
    tasks = task_order(runs)
    if not tasks:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(tasks) + 2), 4.2))
    width = 0.8 / len(runs)
    x = np.arange(len(tasks))
    for k, (run, color) in enumerate(zip(runs, _colors(len(runs)), strict=True)):
        means, lows, highs = [], [], []
        for task_id in tasks:
            scores = run.scores(task_id)
            mean = float(np.mean(scores)) if scores else math.nan
            low, high = whiskers(scores)
            means.append(mean)
            lows.append(low)
            highs.append(high)
        ax.bar(x + (k - (len(runs) - 1) / 2) * width, means, width, yerr=[lows, highs], capsize=3,
               color=color, label=run.display, alpha=0.9)  # fmt: skip
    for i, task_id in enumerate(tasks):
        threshold = next((r.threshold(task_id) for r in runs if r.threshold(task_id) is not None), None)
        if threshold is not None:
            ax.hlines(threshold, i - 0.45, i + 0.45, colors="crimson", linestyles="--", linewidth=1.5,
                      label="success threshold" if i == 0 else None)  # fmt: skip
        floor, best = (references or {}).get(task_id, (None, None))
        if floor is not None:
            ax.hlines(floor.mean, i - 0.45, i + 0.45, colors="dimgray", linestyles=":", linewidth=1.5,
                      label="trivial floor" if i == 0 else None)  # fmt: skip
        if best is not None:
            ax.plot([i], [best.mean], marker="x", color="black", markersize=8, linestyle="none",
                    label="best degenerate agent" if i == 0 else None)  # fmt: skip
    ax.set_xticks(x, [_short(t) for t in tasks], rotation=30, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("mean grade (95% interval)")
    ax.set_title("Grade by task")
    ax.legend(fontsize=8, loc="upper right", bbox_to_anchor=(1.0, -0.35), ncol=min(4, len(runs) + 1))
    ax.grid(axis="y", alpha=0.3)
    return save(fig, path)


def selective_skill(runs: Sequence[RunData], path: Path) -> Path | None:
    """Selective verification: skill over always abstaining per task and run, with 95% whiskers.

    Skill 0 (a line) is the always-abstain floor; a dashed tick per task marks its threshold skill
    and a black diamond the blind baseline's skill (the claim text alone) on the same items.
    """
    tasks = [t for t in task_order(runs) if any(selective_figures(r, t) for r in runs)]
    if not tasks:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(tasks) + 2), 4.2))
    width = 0.8 / len(runs)
    x = np.arange(len(tasks))
    lowest = 0.0  # the y axis reaches below 0 when a point, interval or blind marker does
    for k, (run, color) in enumerate(zip(runs, _colors(len(runs)), strict=True)):
        offset = (k - (len(runs) - 1) / 2) * width
        for i, task_id in enumerate(tasks):
            fig_ = selective_figures(run, task_id)
            if fig_ is None:
                continue
            point, low, high = fig_["skill"], fig_["skill_ci_low"], fig_["skill_ci_high"]
            yerr = None if low is None or high is None else [[point - low], [high - point]]
            # Every point carries the run's label; the legend below keeps one entry per label.
            ax.errorbar([i + offset], [point], yerr=yerr, fmt="o", color=color, capsize=3, markersize=6,
                        label=run.display)  # fmt: skip
            ax.annotate(f"n={fig_['episodes']}", (i + offset, point if low is None else low), fontsize=6,
                        xytext=(0, -9), textcoords="offset points", ha="center", color=color)  # fmt: skip
            lowest = min(lowest, point if low is None else low)
            blind = fig_.get("blind_skill")
            if blind is not None:
                ax.plot([i + offset], [blind], marker="D", color="black", markersize=5, linestyle="none",
                        label="blind baseline (claim text only)" if k == 0 and i == 0 else None)  # fmt: skip
                lowest = min(lowest, blind)
    for i, task_id in enumerate(tasks):
        bar = next((f["threshold_skill"] for r in runs if (f := selective_figures(r, task_id))
                    and f.get("threshold_skill") is not None), None)  # fmt: skip
        if bar is not None:
            ax.hlines(bar, i - 0.45, i + 0.45, colors="crimson", linestyles="--", linewidth=1.5,
                      label="threshold skill" if i == 0 else None)  # fmt: skip
    ax.axhline(0.0, color="dimgray", linestyle=":", linewidth=1.4, label="always abstain (skill 0)")
    ax.set_xticks(x, [_short(t) for t in tasks], rotation=30, ha="right")
    ax.set_ylim(min(-0.1, lowest - 0.08), 1.05)
    ax.set_ylabel("skill over always abstaining (95% interval)")
    ax.set_title("Selective verification: skill = (mean grade - abstain reward) / (1 - abstain reward)", fontsize=9)
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))
    ax.legend(unique.values(), unique.keys(), fontsize=8, loc="upper right", bbox_to_anchor=(1.0, -0.35),
              ncol=min(3, len(unique)))  # fmt: skip
    ax.grid(axis="y", alpha=0.3)
    return save(fig, path)


def selective_figures(run: RunData, task_id: str) -> dict[str, Any] | None:
    """A task's skill figures from the run's summary (``skill``, its interval, n, ...), or None."""
    entry = run.summary.get("tasks", {}).get(task_id) or {}
    metrics = entry.get("metrics") or {}
    if metrics.get("skill") is None:
        return None
    keys = ("skill", "skill_ci_low", "skill_ci_high", "blind_skill", "threshold_skill", "abstain_reward")
    return {**{k: metrics.get(k) for k in keys}, "episodes": entry.get("episodes")}


def dimensions(runs: Sequence[RunData], env: str) -> list[str]:
    """Radar axes of ``env``: breakdown values in [0, 1] where higher is better and that vary."""
    values: dict[str, list[float]] = {}
    for run in runs:
        for record in run.completed(env=env):
            for key, value in record["grade"]["breakdown"].items():
                values.setdefault(key, []).append(float(value))
    keys = [
        k for k, v in values.items()
        if not any(w in k for w in _not_dimensions(env))
        and min(v) >= 0.0 and max(v) <= 1.0
    ]  # fmt: skip
    varying = [k for k in keys if max(values[k]) - min(values[k]) > 1e-12]
    return (varying if len(varying) >= 3 else keys)[:8]


def radar(runs: Sequence[RunData], path: Path) -> Path | None:
    """One polar chart per environment; one polygon per run: the mean of each grade dimension."""
    envs = [e for e in dict.fromkeys(t.split("/")[0] for t in task_order(runs)) if len(dimensions(runs, e)) >= 3]
    if not envs:
        return None
    plt = pyplot()
    fig, axes = plt.subplots(1, len(envs), figsize=(4.6 * len(envs), 4.6), subplot_kw={"projection": "polar"})
    axes = np.atleast_1d(axes)
    for ax, env in zip(axes, envs, strict=True):
        dims = dimensions(runs, env)
        angles = np.linspace(0, 2 * np.pi, len(dims), endpoint=False).tolist()
        for run, color in zip(runs, _colors(len(runs)), strict=True):
            records = run.completed(env=env)
            if not records:
                continue
            means = [float(np.mean([r["grade"]["breakdown"].get(d, 0.0) for r in records])) for d in dims]
            ax.plot([*angles, angles[0]], [*means, means[0]], color=color, linewidth=1.8, label=run.display)
            ax.fill([*angles, angles[0]], [*means, means[0]], color=color, alpha=0.12)
        ax.set_xticks(angles, [d.replace("_", "\n") for d in dims], fontsize=8)
        ax.tick_params(axis="x", pad=10)
        ax.set_ylim(0, 1)
        ax.set_yticks([0.25, 0.5, 0.75, 1.0], ["", "0.5", "", "1"], fontsize=7)
        ax.set_title(env, pad=18)
    # One legend for the figure: a run may appear in some environments only.
    handles: dict[str, Any] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    axes[-1].legend(handles.values(), handles.keys(), fontsize=8, loc="upper left", bbox_to_anchor=(1.05, 1.1))
    fig.subplots_adjust(wspace=0.55)
    return save(fig, path)


def reward_traces(runs: Sequence[RunData], path: Path, chosen: dict[str, int] | None = None) -> Path | None:
    """Cumulative return by step of one episode per task and run (the median-graded, unless ``chosen``)."""
    tasks = [t for t in task_order(runs) if any(len(r.trace(t, (chosen or {}).get(t))) > 1 for r in runs)]
    if not tasks:
        return None
    plt = pyplot()
    cols = min(3, len(tasks))
    rows = math.ceil(len(tasks) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.4 * cols, 3.0 * rows), squeeze=False)
    for ax, task_id in zip(axes.flat, tasks, strict=False):
        for run, color in zip(runs, _colors(len(runs)), strict=True):
            record = run.pick(task_id, (chosen or {}).get(task_id))
            if record is None:
                continue
            rewards = [s["reward"] for s in record["trajectory"]]
            steps = np.arange(1, len(rewards) + 1)
            ax.plot(steps, np.cumsum(rewards), color=color, linewidth=1.6,
                    label=f"{run.display} (ep {record['index']}, grade {record['score']:.2f})")  # fmt: skip
            ax.scatter(steps, rewards, color=color, s=9, alpha=0.55)
        ax.axhline(0, color="grey", linewidth=0.6)
        ax.set_title(_short(task_id), fontsize=9)
        ax.set_xlabel("step", fontsize=8)
        ax.xaxis.set_major_locator(plt.MaxNLocator(integer=True))  # steps are whole numbers
        ax.legend(fontsize=6, loc="best")
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(tasks) :]:
        ax.set_visible(False)
    fig.suptitle("Step rewards (dots) and running return (lines)", fontsize=10)
    fig.tight_layout()
    return save(fig, path)


def mean_vs_variance(runs: Sequence[RunData], path: Path) -> tuple[Path | None, str]:
    """Mean grade against its spread, per task: across runs of one model when there are several."""
    groups: dict[str, list[RunData]] = {}
    for run in runs:
        groups.setdefault(run.label, []).append(run)
    # (model, task) pairs played by two runs or more.
    repeated = {
        (label, task_id): means
        for label, group in groups.items()
        for task_id in task_order(group)
        if len(means := [float(np.mean(s)) for r in group if (s := r.scores(task_id))]) > 1
    }
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    if repeated:
        kind = "run-to-run standard deviation of the task's mean grade"
        labels = list(dict.fromkeys(label for label, _ in repeated))
        colors = dict(zip(labels, _colors(len(labels)), strict=True))
        for (label, task_id), means in repeated.items():
            x, y = float(np.mean(means)), float(np.std(means, ddof=1))
            ax.scatter(x, y, color=colors[label], s=36)
            ax.annotate(_short(task_id), (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
        for label in labels:
            ax.scatter([], [], color=colors[label], label=f"{label} ({len(groups[label])} runs)")
    else:
        kind = "episode-to-episode standard deviation (only one run per model)"
        markers = dict(zip(dict.fromkeys(t.split("/")[0] for t in task_order(runs)), "os^Dv<>", strict=False))
        for run, color in zip(runs, _colors(len(runs)), strict=True):
            for task_id in run.tasks:
                scores = run.scores(task_id)
                if len(scores) > 1:
                    marker = markers.get(task_id.split("/")[0], "o")
                    x, y = float(np.mean(scores)), float(np.std(scores, ddof=1))
                    ax.scatter(x, y, color=color, marker=marker, s=40, alpha=0.8)
                    ax.annotate(_short(task_id), (x, y), fontsize=6, xytext=(3, 3), textcoords="offset points")
            ax.scatter([], [], color=color, label=run.display)
        for env, marker in markers.items():
            ax.scatter([], [], color="grey", marker=marker, label=env)
    ax.set_title(f"Mean vs variance: {kind}", fontsize=9)
    ax.set_xlim(-0.02, 1.02)
    ax.set_xlabel("mean grade")
    ax.set_ylabel("standard deviation")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return save(fig, path), kind


def _selective(run: RunData) -> list[dict[str, float]]:
    need = ("answered", "correct", "confidence")
    return [r["grade"]["breakdown"] for r in run.completed() if all(k in r["grade"]["breakdown"] for k in need)]


def reliability(runs: Sequence[RunData], path: Path, bins: int = 10) -> Path | None:
    """Reliability diagram of answered selective-verification items: accuracy by confidence bin."""
    data = [(run, rows) for run in runs if (rows := [b for b in _selective(run) if b["answered"] >= 0.5])]
    if not data:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.2, 5.0))
    ax.plot([0, 1], [0, 1], color="grey", linestyle="--", linewidth=1, label="perfect calibration")
    edges = np.linspace(0, 1, bins + 1)
    palette = _colors(len(runs))
    for run, rows in data:
        color = palette[list(runs).index(run)]
        conf = np.array([b["confidence"] for b in rows])
        correct = np.array([b["correct"] for b in rows])
        which = np.clip(np.digitize(conf, edges[1:-1]), 0, bins - 1)
        xs, ys, ns = [], [], []
        for b in range(bins):
            mask = which == b
            if mask.any():
                xs.append(conf[mask].mean())
                ys.append(correct[mask].mean())
                ns.append(int(mask.sum()))
        ax.plot(xs, ys, marker="o", color=color, label=f"{run.display} (n={len(rows)})")
        for x, y, n in zip(xs, ys, ns, strict=True):
            ax.annotate(str(n), (x, y), fontsize=6, xytext=(2, -8), textcoords="offset points", color=color)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("stated confidence")
    ax.set_ylabel("accuracy")
    ax.set_title("Reliability (selective verification, answered items)", fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(alpha=0.3)
    return save(fig, path)


def _risk_coverage(confidence: np.ndarray, correct: np.ndarray, answered: np.ndarray) -> tuple[Any, Any]:
    """Coverage and risk when answering the k most confident items, k = 1..answered."""
    order = np.argsort(-np.where(answered, confidence, -1.0), kind="stable")
    n_answered = int(answered.sum())
    picked = correct[order][:n_answered]
    k = np.arange(1, n_answered + 1)
    return k / len(confidence), np.cumsum(1.0 - picked) / k


def risk_coverage(runs: Sequence[RunData], path: Path) -> Path | None:
    """Risk-coverage curves of selective verification, with the blind (claim-text-only) baseline."""
    data = [(run, rows) for run in runs if (rows := _selective(run))]
    if not data:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.6, 4.4))
    palette = _colors(len(runs))
    for run, rows in data:
        color = palette[list(runs).index(run)]
        answered = np.array([b["answered"] >= 0.5 for b in rows])
        if answered.any():
            cov, risk = _risk_coverage(np.array([b["confidence"] for b in rows]),
                                       np.array([b["correct"] for b in rows]), answered)  # fmt: skip
            ax.plot(cov, risk, color=color, linewidth=1.8, label=f"{run.display}")
        if all("blind_probability" in b and "blind_correct" in b for b in rows):
            p = np.array([b["blind_probability"] for b in rows])
            cov, risk = _risk_coverage(np.maximum(p, 1 - p), np.array([b["blind_correct"] for b in rows]),
                                       np.ones(len(rows), dtype=bool))  # fmt: skip
            ax.plot(cov, risk, color=color, linestyle=":", linewidth=1.4, label=f"blind baseline ({run.display} items)")
    ax.set_xlim(0, 1.0)
    ax.set_ylim(0, 1.0)
    ax.set_xlabel("coverage (share of items answered)")
    ax.set_ylabel("risk (error rate among answered)")
    ax.set_title("Risk-coverage (selective verification)", fontsize=10)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    return save(fig, path)


def _threshold_rows(run: RunData, task_id: str) -> list[dict[str, float]]:
    """Grade breakdowns of a run's episodes of ``task_id`` that state a risk threshold (threshold tasks)."""
    rows = [r["grade"]["breakdown"] for r in run.completed(task_id=task_id)]
    return [b for b in rows if "risk_threshold" in b and "risk_bin" in b]


def _by_bin(rows: Sequence[dict[str, float]], key: str) -> tuple[list[float], list[float]]:
    """Per threshold bin (``risk_bin``): the mean stated threshold and the mean of ``key``."""
    bins = sorted({int(r["risk_bin"]) for r in rows})
    xs = [float(np.mean([r["risk_threshold"] for r in rows if int(r["risk_bin"]) == b])) for b in bins]
    ys = [float(np.mean([r[key] for r in rows if int(r["risk_bin"]) == b])) for b in bins]
    return xs, ys


def abstain_by_threshold(runs: Sequence[RunData], path: Path) -> Path | None:
    """Selective verification's threshold tasks: abstain rate against the stated threshold t, per run.

    Beside it the Bayes policy's curve where the claim's probability is known (text: abstain exactly
    when the likelier verdict's probability is below t); on pictures, which decide every claim, the
    Bayes policy never abstains.
    """
    tasks = [t for t in task_order(runs) if any(_threshold_rows(r, t) for r in runs)]
    if not tasks:
        return None
    plt = pyplot()
    fig, axes = plt.subplots(1, len(tasks), figsize=(4.4 * len(tasks) + 0.4, 3.9), squeeze=False)
    palette = _colors(len(runs))
    for ax, task_id in zip(axes[0], tasks, strict=True):
        known: list[dict[str, float]] = []
        for run, color in zip(runs, palette, strict=True):
            rows = _threshold_rows(run, task_id)
            if rows:
                ax.plot(*_by_bin(rows, "abstained"), marker="o", color=color, label=f"{run.display} (n={len(rows)})")
                known += [r for r in rows if "bayes_abstains" in r]
        if known:
            ax.plot(*_by_bin(known, "bayes_abstains"), color="black", linestyle="--", label="Bayes policy")
        else:
            ax.axhline(0.0, color="black", linestyle="--", linewidth=1, label="Bayes policy (never abstains)")
        ax.set_xlim(0.48, 0.97)
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel("stated risk threshold t")
        ax.set_ylabel("abstain rate")
        ax.set_title(_short(task_id), fontsize=9)
        ax.legend(fontsize=7, loc="upper left")
        ax.grid(alpha=0.3)
    return save(fig, path)
