"""Training curves of an ``igym train --out`` folder: per-step reward, malformed and abstain rates, gain.

``draw_training(folder, png)`` reads the folder (``training.load_training``: ``train_log.jsonl``,
one line per GRPO step, and ``train_summary.json``, the before/after eval) and draws four panels:
train reward against the always-abstain floor, ``reward_gain`` over that floor, malformed and
abstain rates, and the eval mean grade before and after with 95% intervals. Needs matplotlib
(the ``report`` extra). ``python -m integrity_gym.report.curves FOLDER PNG`` redraws one.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from integrity_gym.report.plots import pyplot, save
from integrity_gym.report.training import load_training


def _rolling(values: list[float], width: int = 5) -> list[float]:
    out = []
    for i in range(len(values)):
        window = values[max(0, i - width + 1) : i + 1]
        out.append(sum(window) / len(window))
    return out


def draw_training(folder: Path, png: Path) -> Path:
    """Draw the four training panels of ``folder`` into ``png``; return ``png``."""
    training = load_training(folder)
    steps = training.steps
    x = [int(s["step"]) for s in steps]
    n = steps[0]["n"] if steps else 0
    plt = pyplot()
    fig, axes = plt.subplots(2, 2, figsize=(10, 6.5))
    ax = axes[0][0]
    reward = [float(s["reward_mean"]) for s in steps]
    unit = "episodes" if training.multi_step else "completions"
    ax.plot(x, reward, "o", ms=3, alpha=0.5, label=f"mean of {n} {unit}")
    ax.plot(x, _rolling(reward), "-", label="rolling mean (5 steps)")
    floored = [(int(s["step"]), float(s["abstain_floor"])) for s in steps if s.get("abstain_floor") is not None]
    floors = [floor for _, floor in floored]
    if len(set(floors)) > 1:  # threshold tasks: abstaining earns each item's own t
        ax.plot(*zip(*floored, strict=True), ls=":", color="k", label="always abstain (the step's items)")
    elif floors:
        ax.axhline(floors[0], ls=":", color="k", label="always abstain")
    title = "train reward (episode grade)" if training.multi_step else "train reward"
    ax.set(title=title, xlabel="step", ylim=(-0.02, 1.02))
    ax.legend(fontsize=8)
    ax = axes[0][1]
    gain = [s["reward_gain"] for s in steps if s.get("reward_gain") is not None]
    if gain:
        ax.plot(x[: len(gain)], gain, "o", ms=3, alpha=0.5)
        ax.plot(x[: len(gain)], _rolling(gain), "-")
        ax.axhline(0, ls=":", color="k")
    else:
        ax.text(0.5, 0.5, "no always-abstain floor in this task", ha="center", va="center", transform=ax.transAxes)
    ax.set(title="reward_gain over always abstaining", xlabel="step")
    ax = axes[1][0]
    for key, label, color in (("malformed_rate", "malformed", "tab:orange"), ("abstain_rate", "abstain", "tab:red")):
        values = [float(s[key]) for s in steps]
        ax.plot(x, values, "o", ms=3, alpha=0.4, color=color)
        ax.plot(x, _rolling(values), "-", label=label, color=color)
    ax.set(title="share of replies", xlabel="step", ylim=(-0.02, 1.02))
    ax.legend(fontsize=8)
    ax = axes[1][1]
    stages = training.stages()
    for i, (_, s) in enumerate(stages):
        mean = s["mean_score"]
        low, high = s.get("score_ci95") or (mean, mean)
        ax.errorbar([i], [mean], yerr=[[mean - low], [high - mean]], fmt="o", capsize=6)
        ax.annotate(f"{mean:.3f}\nabstain {s['abstain_rate']:.2f}\nmalformed {s['malformed_rate']:.2f}",
                    (i, mean), textcoords="offset points", xytext=(12, -18), fontsize=8)  # fmt: skip
    abstaining = eval_floor(stages, floors)
    if abstaining is not None:
        ax.axhline(abstaining, ls=":", color="k")
    episodes = stages[0][1]["episodes"] if stages else 0
    ax.set(title=f"eval partition, greedy ({episodes} items, 95% CI)", xlim=(-0.5, 1.5), ylim=(-0.02, 1.02))
    ax.set_xticks(range(len(stages)), [name for name, _ in stages])
    fig.tight_layout()
    return save(fig, png)


def eval_floor(stages: list[tuple[str, dict[str, Any]]], floors: list[float]) -> float | None:
    """What always abstaining earns on the eval items, or None.

    The eval runs' own figure where they report one (a threshold task's items each state their own
    t), else the train steps' floor where it is one constant (the flat abstention payoff).
    """
    for _, figures in stages:
        value = (figures.get("metrics") or {}).get("abstain_reward")
        if value is not None:
            return float(value)
    return floors[0] if len(set(floors)) == 1 else None


def main() -> None:
    """``python -m integrity_gym.report.curves FOLDER PNG``."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("folder", type=Path)
    parser.add_argument("png", type=Path)
    args = parser.parse_args()
    print(draw_training(args.folder, args.png))


if __name__ == "__main__":
    main()
