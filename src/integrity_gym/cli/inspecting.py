"""``igym inspect-log``: a stored ``igym bench`` run as inspect_ai logs, for ``inspect view`` and its analysis."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from integrity_gym.cli.root import console, fail


def inspect_log(
    run: Annotated[Path, typer.Argument(help="Run folder written by `igym bench` (outputs/<run-id>).")],
    out: Annotated[Path | None, typer.Option(help="Folder to write the logs to (default RUN/inspect).")] = None,
) -> None:
    """Write a stored run as inspect_ai logs: one .eval log per task, one sample per episode.

    Each sample holds the episode's messages (the model's replies where the run stored them, the
    actions otherwise) and its grade as the score, with success, threshold and the breakdown as
    metadata. Open them with `inspect view --log-dir DIR`; `inspect_ai.analysis.samples_df(DIR)`
    reads one row per episode. Needs the inspect extra. Exit status 2 when nothing could be written.
    """
    try:
        from integrity_gym.integrations.inspect.logs import InspectLogError, write_run_logs
    except ImportError as exc:
        raise fail(f"igym inspect-log needs inspect_ai: pip install 'integrity-gym[inspect]' ({exc})") from exc
    try:
        written = write_run_logs(run, out)
    except InspectLogError as exc:
        raise fail(str(exc)) from exc
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1), collapse_padding=True)
    table.add_column("task", no_wrap=True)
    for name in ("samples", "grade", "success"):
        table.add_column(name, justify="right")
    for exported in written:
        log = exported.log
        metrics = log.results.scores[0].metrics if log.results and log.results.scores else {}
        cells = [f"{metrics[k].value:.3f}" if k in metrics else "-" for k in ("mean", "success_rate")]
        if not (log.eval.metadata or {}).get("per_episode_success", True):
            cells[1] = "n/a"  # success is judged on the task's mean grade, never per episode
        table.add_row(escape(log.eval.task), str(len(log.samples or [])), *cells)
    console.print(table)
    folder = escape(str(written[0].path.parent))
    console.print(f"wrote {len(written)} inspect log(s) to {folder}", highlight=False)
    console.print(f"open them with: inspect view --log-dir {folder}", highlight=False)


__all__ = ["inspect_log"]
