"""An ``igym train --out`` folder, read from its files: what the report's training section shows.

The trainer (``train.grpo``) writes the folder with the names below; this module reads it back as
plain JSON, so that reporting on a training run imports nothing of the training code (nor torch).
``load_training(folder)`` reads ``train_summary.json`` and ``train_log.jsonl``; ``stage_cells``
gives the before/after table's cells, in ``COLUMNS`` order, to the HTML and Markdown sections.
The eval runs themselves are ordinary run folders (``eval-before/``, ``eval-after/``):
``inputs.load_inputs`` adds them to the report's runs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: One JSON line per training step (``train.grpo.StepLog``).
LOG_NAME = "train_log.jsonl"
#: The run's configuration and its before/after evaluation.
SUMMARY_NAME = "train_summary.json"
#: The eval runs' folders inside a training folder, before and after training (``igym bench`` run folders).
EVAL_DIRS = {"before": "eval-before", "after": "eval-after"}

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


def read_log(folder: Path) -> list[dict[str, Any]]:
    """The per-step lines of a training folder, in step order."""
    path = folder / LOG_NAME
    if not path.is_file():
        raise ValueError(f"{folder} holds no {LOG_NAME}: is it an `igym train --out` folder?")
    lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    return sorted(lines, key=lambda x: int(x["step"]))


def graded_episodes(steps: list[dict[str, Any]]) -> bool:
    """Whether the log's rewards are whole episodes' grades (a multi-step task) rather than step rewards."""
    return any(s.get("reward") == "grade" for s in steps)


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
