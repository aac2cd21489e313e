"""Table cells that the HTML page and the Markdown section print alike."""

from __future__ import annotations

import math
from typing import Any


def fmt(value: Any, spec: str = ".3f") -> str:
    """``value`` in ``spec``, or 'n/a' when there is none (None or NaN)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return format(value, spec)


def skill_cell(summary: dict[str, Any]) -> str:
    """``skill [lo, hi]; blind b`` of a selective-verification task summary, or '' for other tasks."""
    metrics = summary.get("metrics") or {}
    if metrics.get("skill") is None:
        return ""
    low, high = metrics.get("skill_ci_low"), metrics.get("skill_ci_high")
    interval = "" if low is None or high is None else f" [{low:.3f}, {high:.3f}]"
    blind = metrics.get("blind_skill")
    return f"skill {metrics['skill']:.3f}{interval}" + ("" if blind is None else f"; blind_skill {blind:.3f}")
