"""Speed of selective_verification: pictures generated per second, metrics over 100,000 items.

Prints one JSON object. Every time is the median of a few repeats measured in this run.
``generate`` covers layout (composition and placement against glyph masks), drawing and PNG
encoding; ``metrics_100k`` covers accuracy, coverage, ECE, Brier, AURC and E-AURC at once, then
smooth ECE and the bootstrap intervals separately; a naive AURC that averages explicit random
tie orders is timed for comparison with the closed form.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np

import timing
from integrity_gym.envs.selective_verification.generator import GeneratedSource, png_bytes
from integrity_gym.envs.selective_verification.metrics import Selective, aurc, smooth_ece
from integrity_gym.envs.selective_verification.scenes import render
from integrity_gym.envs.selective_verification.textgen import TextSource

REPEATS = 3


def median_seconds(fn: Callable[[], Any], repeats: int = REPEATS) -> float:
    return timing.median_seconds(fn, repeats)


def generation(difficulty: str, n: int = 40) -> dict[str, float]:
    def layout() -> None:
        src = GeneratedSource("balanced", "all", seed=11, difficulty=difficulty)  # type: ignore[arg-type]
        for i in range(n):
            src.item(i)

    src = GeneratedSource("balanced", "all", seed=11, difficulty=difficulty)  # type: ignore[arg-type]
    items = [src.item(i) for i in range(n)]

    def draw() -> None:
        for item in items:
            render(item.scene)  # type: ignore[arg-type]

    def full() -> None:
        s = GeneratedSource("balanced", "all", seed=12, difficulty=difficulty)  # type: ignore[arg-type]
        for i in range(n):
            png_bytes(s.item(i))

    t_full = median_seconds(full)
    return {
        "images_per_s": round(n / t_full, 1),
        "layout_ms": round(1000 * median_seconds(layout) / n, 2),
        "draw_ms": round(1000 * median_seconds(draw) / n, 2),
        "png_kb": round(float(np.mean([len(png_bytes(it)) for it in items[:10]])) / 1024, 1),
    }


def naive_aurc(conf: np.ndarray, correct: np.ndarray, orders: int, rng: np.random.Generator) -> float:
    """Average AURC over explicit random tie orders (what a sampling implementation does)."""
    n = conf.size
    values = []
    for _ in range(orders):
        order = np.lexsort((rng.random(n), -conf))
        errs = np.cumsum(1 - correct[order])
        values.append(float(np.mean(errs / np.arange(1, n + 1))))
    return float(np.mean(values))


def metrics(n: int = 100_000) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    conf = np.round(rng.uniform(0.5, 1.0, n), 2)  # two decimals: many ties, as models emit
    correct = (rng.random(n) < conf).astype(float)
    answered = (rng.random(n) < 0.9).astype(float)
    reward = rng.random(n)
    sel = Selective.build(answered, correct, conf, reward)
    t_build = median_seconds(lambda: Selective.build(answered, correct, conf, reward))
    t_metrics = median_seconds(sel.metrics)
    t_smooth = median_seconds(lambda: smooth_ece(conf, correct), repeats=1)
    t_boot = median_seconds(lambda: sel.bootstrap(200), repeats=1)
    t_closed = median_seconds(lambda: aurc(conf, correct))
    orders = 20
    t_naive = median_seconds(lambda: naive_aurc(conf, correct, orders, rng), repeats=1)
    exact = aurc(conf, correct)
    sampled = naive_aurc(conf, correct, orders, rng)
    return {
        "items": n,
        "build_s": round(t_build, 4),
        "metrics_s": round(t_metrics, 4),
        "smooth_ece_s": round(t_smooth, 3),
        "bootstrap_200_s": round(t_boot, 3),
        "aurc_closed_form_s": round(t_closed, 4),
        f"aurc_naive_{orders}_orders_s": round(t_naive, 3),
        "naive_over_closed_form": round(t_naive / t_closed, 1),
        "aurc_naive_minus_exact": float(f"{sampled - (exact or 0.0):.2e}"),
    }


def text_items(n: int = 2000) -> dict[str, float]:
    t = median_seconds(lambda: [TextSource("all", seed=5).item(i) for i in range(n)])
    return {"text_items_per_s": round(n / t, 1)}


def main() -> None:
    out = {
        "generate": {d: generation(d) for d in ("easy", "medium", "hard")},
        "text": text_items(),
        "metrics_100k": metrics(),
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
