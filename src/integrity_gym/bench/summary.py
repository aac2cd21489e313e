"""A run's figures: per-task summaries, per-tier tables, tier separation (``summary.json``'s content).

``summarize_records`` turns one task's episode records into its ``TaskSummary`` (mean grade with
a 95% interval, success rate, pass@k over epochs, the environment's own dataset metrics);
``tier_table`` and ``tier_separation`` compare the difficulty tiers; ``summary_lines`` is the
plain-text summary that ends ``run.log``.
"""

from __future__ import annotations

import itertools
import json
import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from scipy.stats import t as student_t

from integrity_gym.bench.records import EpisodeRecord, TaskSummary
from integrity_gym.core.registry import TaskSpec, get_spec
from integrity_gym.core.types import Grade


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one item: chance that k of its n plays, drawn without replacement, hold a success."""
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def summarize_records(spec: TaskSpec, records: Sequence[EpisodeRecord]) -> TaskSummary:
    """Aggregate one task's episode records, with the environment's own dataset metrics.

    A failing ``summarize`` does not lose the run: it is recorded in ``summary_error`` and the
    run's status becomes ``failed``.
    """
    done = [r for r in records if not r.error and r.score is not None]
    scores = [float(r.score) for r in done if r.score is not None]
    n = len(done)
    mean = _mean(scores)
    std = math.sqrt(math.fsum((s - mean) ** 2 for s in scores) / (n - 1)) if mean is not None and n > 1 else None
    ci = mean_interval(scores)
    grades = [Grade.model_validate(r.grade) for r in done]
    env_class = spec.env_class()
    summary_error = None
    try:
        metrics = env_class.summarize(grades) if grades else {}
    except Exception as exc:  # recorded, and the run is marked failed
        metrics = {}
        summary_error = f"{type(exc).__name__}: {exc}"
    epochs = max((r.epoch for r in records), default=0) + 1
    by_item: dict[int, list[EpisodeRecord]] = {}
    for r in done:
        by_item.setdefault(r.seed, []).append(r)
    pass_k = None
    item_sd = None
    if epochs > 1 and by_item:
        if env_class.episode_success:
            pass_k = {
                str(k): math.fsum(pass_at_k(len(v), sum(bool(r.success) for r in v), k) for v in by_item.values())
                / len(by_item)
                for k in range(1, epochs + 1)
                if all(len(v) >= k for v in by_item.values())
            }
        sds = [statistics.stdev(float(r.score or 0.0) for r in v) for v in by_item.values() if len(v) > 1]
        item_sd = _mean(sds)

    def usage_mean(key: str) -> float | None:
        return _mean([float(v) for r in done if (v := getattr(r.usage, key)) is not None])

    return TaskSummary(
        episodes=n,
        mean_score=mean,
        success_rate=_mean([float(bool(r.success)) for r in done]) if env_class.episode_success else None,
        mean_return=_mean([r.total_return for r in done]),
        metrics=metrics,
        tier=spec.tier,
        threshold=spec.success_threshold,
        failed=len(records) - n,
        std_score=std,
        score_ci95=ci,
        mean_steps=_mean([float(r.steps) for r in done]),
        truncated=sum(r.truncated for r in done),
        mean_prompt_tokens=usage_mean("prompt_tokens"),
        mean_completion_tokens=usage_mean("completion_tokens"),
        mean_latency_s=usage_mean("latency_s"),
        epochs=epochs,
        pass_at_k=pass_k,
        item_sd=item_sd,
        summary_error=summary_error,
    )


TIER_ORDER = ("easy", "medium", "hard")


def tier_table(summaries: Mapping[str, TaskSummary]) -> dict[str, dict[str, Any]]:
    """Per tier over every task: tasks, episodes, mean grade and success rate (episode-weighted)."""
    out: dict[str, dict[str, Any]] = {}
    for tier in [*TIER_ORDER, *sorted({s.tier for s in summaries.values()} - set(TIER_ORDER))]:
        rows = [s for s in summaries.values() if s.tier == tier and s.episodes]
        if not rows:
            continue
        n = sum(s.episodes for s in rows)
        # Tasks without per-episode success (success_rate None) count for nothing in the tier's rate.
        rates = [(s.success_rate, s.episodes) for s in rows if s.success_rate is not None]
        out[tier] = {
            "tasks": len(rows),
            "episodes": n,
            "mean_score": math.fsum((s.mean_score or 0.0) * s.episodes for s in rows) / n,
            "success_rate": math.fsum(r * k for r, k in rates) / sum(k for _, k in rates) if rates else None,
            "mean_return": math.fsum((s.mean_return or 0.0) * s.episodes for s in rows) / n,
        }
    return out


def _separation_figure(task_id: str, s: TaskSummary) -> tuple[str, float, float] | None:
    """The figure a task's tier is judged on, its value and standard error (inf without an interval)."""
    metric = get_spec(task_id).env_class().separation_metric()
    if metric == "mean_score":
        if s.mean_score is None:
            return None
        se = s.std_score / math.sqrt(s.episodes) if s.std_score is not None and s.episodes > 1 else math.inf
        return metric, s.mean_score, se
    value, low, high = (s.metrics.get(k) for k in (metric, f"{metric}_ci_low", f"{metric}_ci_high"))
    if value is None:
        return None
    se = (high - low) / (2 * 1.959964) if low is not None and high is not None else math.inf
    return metric, float(value), se


def tier_separation(summaries: Mapping[str, TaskSummary]) -> dict[str, dict[str, Any]]:
    """Per environment: whether the tiers are ordered easy > medium > hard beyond noise.

    Each environment names the figure to compare (``Env.separation_metric``: the mean grade, or
    e.g. selective verification's skill over abstaining). Per tier the figure is averaged over its
    tasks (episode-weighted) with its standard error; neighbouring tiers are *separated* when the
    difference exceeds 1.96 combined standard errors, *ordered, not significant* when it is
    positive but smaller, and *reversed* otherwise. ``ok`` is true when every pair is separated
    (None with fewer than two tiers).
    """
    by_env: dict[str, dict[str, list[tuple[int, float, float]]]] = {}
    metric_of: dict[str, str] = {}
    for task_id, s in summaries.items():
        figure = _separation_figure(task_id, s) if s.tier in TIER_ORDER else None
        if figure is not None:
            env = task_id.split("/")[0]
            metric_of[env] = figure[0]
            by_env.setdefault(env, {}).setdefault(s.tier, []).append((s.episodes, figure[1], figure[2]))
    out: dict[str, dict[str, Any]] = {}
    for env, tiers in sorted(by_env.items()):
        means: dict[str, float] = {}
        errors: dict[str, float] = {}
        for tier in TIER_ORDER:
            if rows := tiers.get(tier):
                total = sum(n for n, _, _ in rows)
                means[tier] = math.fsum(n * v for n, v, _ in rows) / total
                errors[tier] = math.sqrt(math.fsum((n * se / total) ** 2 for n, _, se in rows))
        pairs = []
        for hi, lo in itertools.pairwise(means):
            diff = means[hi] - means[lo]
            combined = math.hypot(errors[hi], errors[lo])
            z = diff / combined if combined > 0 else math.inf
            verdict = "separated" if z > 1.959964 else "ordered, not significant" if diff > 0 else "reversed"
            pairs.append({"higher": hi, "lower": lo, "difference": diff, "z": z, "verdict": verdict})
        ok = all(p["verdict"] == "separated" for p in pairs) if pairs else None
        out[env] = {"metric": metric_of[env], "means": means, "errors": errors, "pairs": pairs, "ok": ok}
    return out


def usage_text(summary: Mapping[str, Any]) -> str:
    """Mean tokens and model latency per episode of a task summary (``''`` for a run without a model)."""
    parts = []
    prompt, completion = summary.get("mean_prompt_tokens"), summary.get("mean_completion_tokens")
    if prompt is not None:
        parts.append(f"{prompt:.0f} prompt + {0 if completion is None else completion:.0f} completion tokens/episode")
    if summary.get("mean_latency_s") is not None:
        parts.append(f"model latency {summary['mean_latency_s']:.1f} s/episode")
    return "; ".join(parts)


def mean_interval(scores: Sequence[float]) -> tuple[float, float] | None:
    """The 95% Student-t interval of the mean grade, clipped to [0, 1]; None with fewer than two scores.

    The one interval of a task's mean: ``summary.json``'s ``score_ci95`` and the report's whiskers.
    """
    n = len(scores)
    if n < 2:
        return None
    mean = math.fsum(scores) / n
    std = math.sqrt(math.fsum((s - mean) ** 2 for s in scores) / (n - 1))
    half = float(student_t.ppf(0.975, n - 1)) * std / math.sqrt(n)
    return max(0.0, mean - half), min(1.0, mean + half)


def separation_text(sep: Mapping[str, Any]) -> str:
    """One line: the figure per tier (± standard error) and each neighbouring pair's verdict."""
    figures = ", ".join(
        f"{t} {m:.3f}" + (f" ± {e:.3f}" if math.isfinite(e := sep["errors"][t]) else "")
        for t, m in sep["means"].items()
    )
    verdicts = "; ".join(f"{p['higher']} > {p['lower']}: {p['verdict']}" for p in sep["pairs"]) or "one tier only"
    return f"{sep['metric']}: {figures} ({verdicts})"


def summary_lines(
    summaries: Mapping[str, TaskSummary],
    tiers: Mapping[str, Mapping[str, Any]],
    separation: Mapping[str, Mapping[str, Any]],
    status: str,
    replay: str,
) -> list[str]:
    """The plain-text summary that ends ``run.log``."""

    def f(value: float | None, spec: str = ".4f") -> str:
        return "n/a" if value is None else format(value, spec)

    lines = [""]
    for task_id, s in summaries.items():
        if s.summary_error:
            lines.append(f"task={task_id} summary_error={json.dumps(s.summary_error)}")
        lines.append(
            f"task={task_id} tier={s.tier} n={s.episodes} failed={s.failed} avg_score={f(s.mean_score)} "
            f"threshold={s.threshold:.2f} success_rate={f(s.success_rate)} avg_return={f(s.mean_return)}"
        )
    for tier, t in tiers.items():
        lines.append(
            f"difficulty={tier} avg_score={t['mean_score']:.4f} success_rate={f(t['success_rate'])} "
            f"avg_return={t['mean_return']:.4f} n={t['episodes']}"
        )
    for env, sep in separation.items():
        lines.append(f"tier_separation env={env} {separation_text(sep)}")
    lines.append(f"status={status}")
    lines.append(f"reproduce: {replay}")
    return lines
