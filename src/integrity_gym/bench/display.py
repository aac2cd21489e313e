"""What ``igym bench`` shows while and after it runs: progress bars, log lines, summary tables."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from integrity_gym.bench import logs
from integrity_gym.bench.runner import RunResult, separation_text
from integrity_gym.core.registry import TaskSpec

Echo = Literal["none", "end", "all"]


class LiveProgress:
    """A progress bar per task and a live count of finished and failed episodes.

    On a terminal the bars redraw in place; elsewhere (CI logs, pipes) nothing is redrawn and
    only the echoed log lines are printed. ``echo`` chooses the log lines shown: none, the
    ``[END]`` line of each episode, or every line.
    """

    def __init__(self, console: Console, *, echo: Echo = "end", model: str = "") -> None:
        self.console = console
        self.echo = echo
        self.model = model
        self.done = 0
        self.failed = 0
        self.total = 0
        self._bars: dict[str, TaskID] = {}
        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            disable=not console.is_terminal,
        )
        self._overall: TaskID | None = None

    def __enter__(self) -> LiveProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def __call__(self, event: str, *args: Any) -> None:
        """The runner's progress hook."""
        if event == "start":
            total, specs = args
            self._start(total, specs)
        elif event == "episode":
            self._episode(args[0])

    def _start(self, total: int, specs: Sequence[TaskSpec]) -> None:
        self.total = total
        per_task = total // max(1, len(specs))
        self._overall = self._progress.add_task(self._count_text(), total=total)
        for spec in specs:
            self._bars[spec.id] = self._progress.add_task(f"  {spec.id}", total=per_task)

    def _count_text(self) -> str:
        failed = f", [red]{self.failed} failed[/red]" if self.failed else ""
        return f"[bold]episodes[/bold] {self.done}/{self.total} done{failed}"

    def _episode(self, record: dict[str, Any]) -> None:
        self.done += 1
        self.failed += bool(record.get("error"))
        self._progress.advance(self._bars[record["task_id"]])
        if self._overall is not None:
            self._progress.update(self._overall, advance=1, description=self._count_text())
        if self.echo == "none":
            return
        lines = logs.episode_block(record, self.model)
        shown = lines if self.echo == "all" else lines[-1:]
        if self.echo == "end":
            shown = [f"{lines[-1]} task={record['task_id']} episode={record['index']}"]
        for line in shown:
            self._progress.console.print(line, markup=False, highlight=False, soft_wrap=True)


def _f(value: float | None, spec: str = ".3f") -> str:
    return "n/a" if value is None else format(value, spec)


def _metrics_text(metrics: dict[str, float | None], limit: int = 6) -> str:
    shown = [(k, v) for k, v in metrics.items() if not k.endswith(("_ci_low", "_ci_high")) and k != "episodes"]
    return ", ".join(f"{k}={_f(v)}" for k, v in shown[:limit]) + (" ..." if len(shown) > limit else "")


def print_summary(console: Console, result: RunResult) -> None:
    """The per-task table, the per-tier table, the tier-separation check and the replay command."""
    table = Table(title=f"run {result.run_id} ({result.status})")
    for column in ("task", "tier", "n", "failed", "mean grade ± sd", "threshold", "success", "mean return",
                   "steps", "env metrics"):  # fmt: skip
        table.add_column(column, overflow="fold")
    for task_id, s in result.summaries.items():
        grade = _f(s.mean_score) + ("" if s.std_score is None else f" ± {s.std_score:.3f}")
        reached = s.mean_score is not None and s.mean_score >= s.threshold
        table.add_row(
            task_id, s.tier, str(s.episodes), f"[red]{s.failed}[/red]" if s.failed else "0",
            f"[green]{grade}[/green]" if reached else grade, f"{s.threshold:.2f}",
            "n/a" if s.success_rate is None else f"{s.success_rate:.0%}", _f(s.mean_return, "+.3f"),
            _f(s.mean_steps, ".1f"), _metrics_text(s.metrics),
        )  # fmt: skip
    console.print(table)
    if result.tiers:
        tiers = Table("tier", "tasks", "episodes", "mean grade", "success", "mean return", title="by tier")
        for tier, t in result.tiers.items():
            tiers.add_row(tier, str(t["tasks"]), str(t["episodes"]), f"{t['mean_score']:.3f}",
                          _f(t["success_rate"], ".0%"), f"{t['mean_return']:+.3f}")  # fmt: skip
        console.print(tiers)
    for env, sep in result.separation.items():
        colour = {True: "green", False: "yellow"}.get(sep["ok"], "default")
        console.print(f"{env}: [{colour}]{escape(separation_text(sep))}[/{colour}]")
    failed = sum(s.failed for s in result.summaries.values())
    if failed:
        console.print(f"[red]{failed} episode(s) failed[/red]; their errors are in {result.out_dir / 'episodes.jsonl'}")
    if result.status == "interrupted":
        console.print("[yellow]interrupted: the summary covers the episodes that finished[/yellow]")
    console.print(f"wrote {result.out_dir}/ (run.log, episodes.jsonl, summary.json, config.json)")
    console.print("reproduce with:")
    console.print(result.command, markup=False, highlight=False, soft_wrap=True)
