"""What ``igym report`` reads, and how it groups the runs for its tables and figures.

``load_inputs`` turns the command's arguments into run folders (``bench.runs.RunData``) and training
folders (``training.Training``, whose eval runs join the runs); ``load_redteam`` reads
``igym redteam --json`` output as per-task ``References``; ``parse_trace_choices`` reads ``--trace``.
``label_runs`` names runs that share a label apart, ``merge_by_label`` pools them by agent/model and
``task_order`` lists their tasks as first played.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from integrity_gym.bench.record import merge_records
from integrity_gym.bench.runs import RunData, load_run
from integrity_gym.report.training import Training, is_training, load_training


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
    groups: dict[str, list[RunData]] = {}
    for run in runs:
        groups.setdefault(run.label, []).append(run)
    return [RunData(group[0].path, merge_records([r.record for r in group]), label) for label, group in groups.items()]


def task_order(runs: Sequence[RunData]) -> list[str]:
    """Every task of the runs, in first-seen order."""
    seen: dict[str, None] = {}
    for run in runs:
        for task_id in run.tasks:
            seen.setdefault(task_id, None)
    return list(seen)
