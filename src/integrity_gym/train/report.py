"""The training section of ``igym report``: an ``igym train --out`` folder's curves and before/after eval.

``load_training(folder)`` reads ``train_summary.json`` and ``train_log.jsonl``. ``training_html``
and ``training_markdown`` write the section: what was trained, the eval table before and after
training (n, mean grade with its 95% interval, malformed and abstain rates, the turn cap) and the
curves that ``curves.draw_training`` draws. The eval runs themselves are ordinary run folders
(``eval-before/``, ``eval-after/``): ``bench.report.load_inputs`` adds them to the report's runs.
"""

from __future__ import annotations

import base64
import html
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from integrity_gym.train.curves import draw_training, graded_episodes, read_log
from integrity_gym.train.layout import EVAL_DIRS, LOG_NAME, SUMMARY_NAME

CAPTION = (
    "Per GRPO step: the mean train reward (for a multi-step task, the episode's grade) with a rolling mean "
    "and, where the task has one, the always-abstain floor; reward_gain over that floor; the share of "
    "malformed and abstaining replies; and the eval partition's mean grade before and after training with "
    "95% intervals."
)
COLUMNS = ("stage", "model", "n", "mean grade", "95% CI", "malformed", "abstain", "turn cap", "run")


def is_training(folder: Path) -> bool:
    """Whether ``folder`` was written by ``igym train --out`` (it holds the per-step log)."""
    return (folder / LOG_NAME).is_file()


@dataclass(frozen=True)
class Training:
    """One training folder, loaded."""

    path: Path
    summary: dict[str, Any]
    steps: list[dict[str, Any]]

    @property
    def config(self) -> dict[str, Any]:
        """The run's ``TrainConfig`` as saved (empty while the run has not finished)."""
        config: dict[str, Any] = self.summary.get("config") or {}
        return config

    def eval_runs(self) -> list[Path]:
        """The eval run folders present, before then after."""
        return [self.path / name for name in EVAL_DIRS.values() if (self.path / name / "summary.json").is_file()]

    def stages(self) -> list[tuple[str, dict[str, Any]]]:
        """``(stage, eval figures)`` for before and after, as far as they exist."""
        return [(stage, self.summary[stage]) for stage in EVAL_DIRS if self.summary.get(stage)]

    def describe(self) -> str:
        """One line on what was trained."""
        c = self.config
        if not c:
            return f"{len(self.steps)} step(s) logged; no train_summary.json yet (the run did not finish)."
        cap = f", at most {c['max_turns']} turns" if c.get("max_turns") else ""
        return (
            f"{c['task']}, model {c['model']}: {len(self.steps)} GRPO step(s) of {c['prompts_per_step']} train "
            f"item(s) x {c['generations']} {'episodes' if self.multi_step else 'completions'}{cap}, "
            f"{c['max_new_tokens']} new tokens per reply, lr {c['learning_rate']:g}, "
            f"{'LoRA r=' + str(c['lora_r']) if c.get('lora_r') else 'full fine-tune'}, prefill {c.get('prefill')!r}; "
            f"train reward: {'the episode grade' if self.multi_step else 'the environment reward'}."
        )

    @property
    def multi_step(self) -> bool:
        """Whether the steps were whole episodes (the log says which reward it holds)."""
        return graded_episodes(self.steps)


def load_training(folder: str | Path) -> Training:
    """Load an ``igym train --out`` folder."""
    path = Path(folder)
    summary_path = path / SUMMARY_NAME
    try:
        summary = json.loads(summary_path.read_text()) if summary_path.is_file() else {}
    except ValueError as exc:
        raise ValueError(f"{summary_path} is not JSON ({exc})") from exc
    return Training(path, summary, read_log(path))


def stage_cells(stage: str, s: dict[str, Any]) -> list[str]:
    """The table cells of one eval stage, in ``COLUMNS`` order (plain text)."""
    low, high = s.get("score_ci95") or (None, None)
    interval = "–" if low is None or high is None else f"{low:.3f}–{high:.3f}"
    cap = s.get("max_turns")
    return [
        stage, str(s.get("label", "")), str(s.get("episodes", 0)), f"{s['mean_score']:.3f}", interval,
        f"{s['malformed_rate']:.2f}", f"{s['abstain_rate']:.2f}", "–" if cap is None else str(cap),
        str(s.get("run_id", "")),
    ]  # fmt: skip


def training_html(training: Training, png: Path) -> str:
    """The HTML section of one training folder, its curves drawn into ``png`` and inlined."""
    draw_training(training.path, png)
    head = "".join(f"<th>{c}</th>" for c in COLUMNS)
    rows = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in stage_cells(stage, s)) + "</tr>"
        for stage, s in training.stages()
    )
    table = f"<table><tr>{head}</tr>{rows}</table>" if rows else "<p>No eval before/after (--eval-episodes 0).</p>"
    data = base64.b64encode(png.read_bytes()).decode("ascii")
    return (
        f"<h2>Training: {html.escape(training.path.name)}</h2><p>{html.escape(training.describe())}</p>"
        f"<h3>Eval partition, before and after</h3>{table}"
        f"<figure><h3>Training curves</h3><img alt='training curves' src='data:image/png;base64,{data}'>"
        f"<figcaption>{html.escape(CAPTION)}</figcaption></figure>"
    )


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
