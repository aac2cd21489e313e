"""What ``igym bench`` shows while and after it runs: progress bars, log lines, summary tables."""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from integrity_gym.bench import logs
from integrity_gym.bench.records import EpisodeRecord, TaskSummary
from integrity_gym.bench.runner import RunResult
from integrity_gym.bench.summary import separation_text, usage_text
from integrity_gym.core.registry import TaskSpec, list_tasks

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
        self._task_failed: dict[str, int] = {}
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
            self._bars[spec.id] = self._progress.add_task(f"  {short_task(spec.id)}", total=per_task)

    def _count_text(self) -> str:
        failed = f", [red]{self.failed} failed[/red]" if self.failed else ""
        return f"[bold]episodes[/bold] {self.done}/{self.total} done{failed}"

    def _episode(self, record: EpisodeRecord) -> None:
        self.done += 1
        self.failed += bool(record.error)
        self._progress.advance(self._bars[record.task_id])
        if self._overall is not None:
            self._progress.update(self._overall, advance=1, description=self._count_text())
        if self.echo == "none":
            if not self.console.is_terminal:  # no bars in a pipe or a CI log: one line per finished task
                task = self._progress.tasks[self._bars[record.task_id]]
                self._task_failed[record.task_id] = self._task_failed.get(record.task_id, 0) + bool(record.error)
                if task.completed == task.total:
                    failed = self._task_failed[record.task_id]
                    self.console.print(
                        f"{record.task_id}: {int(task.completed)} episodes done"
                        + (f", {failed} failed" if failed else "") + f" ({self.done}/{self.total} in all)",
                        markup=False, highlight=False,
                    )  # fmt: skip
            return
        lines = logs.episode_block(record, self.model)
        shown = lines if self.echo == "all" else lines[-1:]
        if self.echo == "end":
            shown = [f"{lines[-1]} task={record.task_id} episode={record.index}"]
        for line in shown:
            self._progress.console.print(line, markup=False, highlight=False, overflow="fold")


def _f(value: float | None, spec: str = ".3f") -> str:
    return "n/a" if value is None else format(value, spec)


def _metrics_text(metrics: dict[str, float | None], limit: int = 6) -> str:
    shown = [(k, v) for k, v in metrics.items() if not k.endswith(("_ci_low", "_ci_high")) and k != "episodes"]
    return ", ".join(f"{k}={_f(v)}" for k, v in shown[:limit]) + (" ..." if len(shown) > limit else "")


def short_task(task_id: str) -> str:
    """A task id without its environment prefix (tables group tasks by environment)."""
    return task_id.split("/", 1)[-1]


def shell_lines(command: str, width: int = 78) -> list[str]:
    """A long shell command broken with backslashes into lines of at most ``width`` characters.

    An option stays on the line of its value; quoted values stay whole.
    """
    units: list[str] = []
    for word in shlex.split(command, posix=False):
        if units and units[-1].startswith("--") and " " not in units[-1] and not word.startswith("--"):
            units[-1] += " " + word
        else:
            units.append(word)
    lines: list[str] = []
    current = ""
    for unit in units:
        if current and len(current) + 1 + len(unit) > width - 2:
            lines.append(current + " \\")
            current = "  " + unit
        else:
            current = f"{current} {unit}" if current else unit
    lines.append(current)
    return lines


def _table(title: str, *columns: str) -> Table:
    # No outer box and one space between columns: the widest table fits 80 columns.
    table = Table(
        title=title, box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1), collapse_padding=True, title_justify="left"
    )
    for i, column in enumerate(columns):
        table.add_column(column, justify="left" if i == 0 else "right", no_wrap=i == 0)
    return table


def print_summary(console: Console, result: RunResult) -> None:
    """Per-environment task tables, the per-tier table, the separation check, the replay command.

    Every table fits an 80-column terminal: the environment is the table's title, so the task
    column holds only the task's own name; the environment's own metrics follow each table.
    """
    by_env: dict[str, list[tuple[str, TaskSummary]]] = {}
    for task_id, s in result.summaries.items():
        by_env.setdefault(task_id.split("/")[0], []).append((task_id, s))
    console.print(f"[bold]run {escape(result.run_id)}[/bold] ({result.status})")
    epochs = result.config.epochs
    for env, rows in by_env.items():
        extra = "pass@k" if epochs > 1 else "return"
        table = _table(env, "task", "n", "fail", "grade", "sd", "thr", "success", extra, "steps")
        for task_id, s in rows:
            grade = _f(s.mean_score)
            reached = s.mean_score is not None and s.mean_score >= s.threshold
            if epochs > 1:
                last = s.pass_at_k or {}
                extra_cell = f"{last[str(epochs)]:.0%}" if str(epochs) in last else "n/a"
            else:
                extra_cell = _f(s.mean_return, "+.2f")
            table.add_row(
                short_task(task_id), str(s.episodes), f"[red]{s.failed}[/red]" if s.failed else "0",
                f"[green]{grade}[/green]" if reached else grade, _f(s.std_score), f"{s.threshold:.2f}",
                "n/a" if s.success_rate is None else f"{s.success_rate:.0%}", extra_cell, _f(s.mean_steps, ".1f"),
            )  # fmt: skip
        console.print(table)
        for task_id, s in rows:
            if s.truncated:
                console.print(f"  [yellow]{short_task(task_id)}: {s.truncated} of {s.episodes} episode(s) cut by the "
                              "step cap (--max-steps): graded on what was done by then[/yellow]")  # fmt: skip
            usage = usage_text(s.model_dump())
            if usage:
                console.print(f"  {short_task(task_id)}: {escape(usage)}")
            if s.metrics:
                console.print(f"  {short_task(task_id)}: {escape(_metrics_text(s.metrics))}", overflow="fold")
            if s.summary_error:
                console.print(f"  [red]{short_task(task_id)}: summarize failed: {escape(s.summary_error)}[/red]")
    if epochs > 1 and result.summaries and all(s.item_sd == 0 for s in result.summaries.values()):
        console.print(
            f"[yellow]no item's grade varied across the {epochs} epochs: this agent plays an item the same way "
            "whatever its seed, so pass@k is pass@1 at k times the cost; repeat a sampling agent (an llm at "
            "TEMPERATURE above 0, random)[/yellow]"
        )
    if result.tiers:
        tiers = _table("by tier", "tier", "tasks", "episodes", "mean grade", "success", "mean return")
        for tier, t in result.tiers.items():
            tiers.add_row(tier, str(t["tasks"]), str(t["episodes"]), f"{t['mean_score']:.3f}",
                          _f(t["success_rate"], ".0%"), f"{t['mean_return']:+.3f}")  # fmt: skip
        console.print(tiers)
    for env, sep in result.separation.items():
        colour = {True: "green", False: "yellow"}.get(sep["ok"], "default")
        console.print(f"{env}: [{colour}]{escape(separation_text(sep))}[/{colour}]")
    if result.resumed:
        console.print(f"resumed: {result.resumed} episode(s) kept from before, the rest played now")
    if result.failed:
        allowed = result.config.max_failures
        console.print(
            f"[red]{result.failed} episode(s) failed[/red] ({allowed} allowed by --max-failures); their errors are "
            f"in {escape(str(result.out_dir / 'episodes.jsonl'))}; `igym bench --resume {escape(str(result.out_dir))}`"
            " plays them again"
        )
    if result.status == "interrupted":
        console.print(
            "[yellow]interrupted: the summary covers the episodes that finished[/yellow]; "
            f"`igym bench --resume {escape(str(result.out_dir))}` plays the rest"
        )
    console.print(f"wrote {escape(str(result.out_dir))}/ (run.log, episodes.jsonl, summary.json, config.json)")
    console.print("reproduce with:")
    for line in shell_lines(result.command):
        console.print(line, markup=False, highlight=False, overflow="ignore", crop=False)


def runs_tables(
    runs: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]], width: int = 80
) -> list[Table | Text]:
    """``igym runs``: the runs, numbered; then per environment, grade per task and run number.

    Each run shows its full id and folder, its episodes per task (x epochs) and its status (and
    "sealed" for a sealed evaluation).

    The grade tables hold as many run columns as ``width`` allows (newest first) and say so when
    they leave runs out, so no id or task name is ever cut.
    """
    listing = _table("runs, newest first", "#", "run / folder", "agent / model", "episodes", "status")
    for column in listing.columns[1:]:
        column.justify = "left"
    listing.columns[1].overflow = listing.columns[2].overflow = "fold"
    listing.columns[2].no_wrap = False
    for number, run in enumerate(runs, 1):
        who = run["agent"] if run["model"] == run["agent"] else f"{run['agent']} / {run['model']}"
        bench = _config(run).get("bench", {})
        episodes, epochs = bench.get("episodes"), int(bench.get("epochs") or 1)
        count = "?" if episodes is None else f"{episodes}" + (f"x{epochs}" if epochs > 1 else "")
        mode = str(run.get("data_mode") or "public")
        status = run["status"] + ("\nsealed" if mode.startswith("sealed:") else "")
        place = Text(run["run_id"])
        place.append("\n" + str(run.get("out_dir") or ""), style="dim")
        listing.add_row(str(number), place, who, count, status)
    tables: list[Table | Text] = [listing]
    by_env: dict[str, list[str]] = {}
    for r in rows:
        env, _, _ = r["task_id"].partition("/")
        if r["task_id"] not in by_env.setdefault(env, []):
            by_env[env].append(r["task_id"])
    cell = {(r["run_id"], r["task_id"]): r for r in rows}
    order = {spec.id: i for i, spec in enumerate(list_tasks())}  # registry order: easy, medium, hard
    if by_env:
        tables.append(Text("mean grade per task; columns are the run numbers above"))
    for env, task_ids in by_env.items():
        task_ids.sort(key=lambda t: (order.get(t, len(order)), t))
        name_width = max(len(short_task(t)) for t in task_ids)
        fits = max(1, (width - name_width - 2) // 7)  # a grade is 5 characters and 2 spaces; 2 at the edges
        shown = list(enumerate(runs, 1))[:fits]
        title = env + (f" (runs 1-{fits} of {len(runs)})" if len(runs) > fits else "")
        table = _table(title, "task", *(f"#{n}" for n, _ in shown))
        for task_id in task_ids:
            values = []
            for _, run in shown:
                c = cell.get((run["run_id"], task_id))
                values.append("-" if c is None or c["mean_score"] is None else f"{c['mean_score']:.3f}")
            if any(v != "-" for v in values):  # a task none of the shown runs played is left out
                table.add_row(short_task(task_id), *values)
        tables.append(table)
    return tables


def _config(run: Mapping[str, Any]) -> dict[str, Any]:
    try:
        config: dict[str, Any] = json.loads(run.get("config_json") or "{}")
    except ValueError:
        return {}
    return config


def tasks_tables(specs: Sequence[TaskSpec]) -> list[Table]:
    """``igym list``: a table per environment; the description wraps in what 80 columns leave."""
    by_env: dict[str, list[TaskSpec]] = {}
    for spec in specs:
        by_env.setdefault(spec.env, []).append(spec)
    tables = []
    for env, rows in by_env.items():
        table = _table(env, "task", "tier", "thr", "steps", "description")
        table.columns[1].justify = table.columns[4].justify = "left"
        for spec in rows:
            steps = f"{spec.max_steps}+" if spec.budget else str(spec.max_steps)
            table.add_row(short_task(spec.id), spec.tier, f"{spec.success_threshold:.2f}", steps, spec.description)
        if rows[0].budget:  # the tasks of an environment count their budget alike
            table.caption = f"N+ steps: N {rows[0].budget}\n"
            table.caption_justify = "left"
        tables.append(table)
    return tables
