"""``igym rescore``: re-grade a stored run with the current code, without calling the agent again."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from integrity_gym.cli.root import console, fail

if TYPE_CHECKING:
    from integrity_gym.bench.rescore import Regrade, RescoreReport


def rescore(
    run: Annotated[Path, typer.Argument(help="Run folder written by `igym bench` (outputs/<run-id>).")],
    preset: Annotated[
        str | None,
        typer.Option(help="Re-grade under this reward/grade preset of the environments (e.g. reference)."),
    ] = None,
    check: Annotated[
        bool, typer.Option("--check", help="Exit 1 when a grade moved or an episode could not be re-graded.")
    ] = False,
    json_output: Annotated[bool, typer.Option("--json", help="Print the result as JSON instead of tables.")] = False,
    write: Annotated[
        bool, typer.Option("--write", help="Write the re-graded episodes to a new file beside episodes.jsonl.")
    ] = False,
    out: Annotated[
        Path | None, typer.Option(help="With --write: the file to write (default RUN/episodes.rescored.jsonl).")
    ] = None,
) -> None:
    """Re-grade every stored episode by replaying its actions: list the grades that moved.

    Each finished episode's environment is rebuilt as the run built it, reset with its seed and
    stepped with the stored actions; the new grade is compared bit for bit with the stored one. The
    run folder is never changed (--write writes a new file). Exit status: 0 when the run was
    re-graded (with --check: only when every grade is identical and every episode could be
    replayed, else 1); 2 when the folder is not a run this igym can re-grade.
    """
    from integrity_gym.bench.rescore import RescoreError, rescore_run, rescored_path, write_rescored

    try:
        report = rescore_run(run, preset=preset)
        written = write_rescored(report, out or rescored_path(run, preset)) if write else None
    except RescoreError as exc:
        raise fail(str(exc)) from exc
    if json_output:
        payload = {**report.to_json(), "written": None if written is None else str(written)}
        sys.stdout.write(json.dumps(payload, indent=1) + "\n")
    else:
        print_report(report)
        if written is not None:
            console.print(f"wrote {escape(str(written))}", highlight=False)
    if check and not report.all_identical:
        raise typer.Exit(code=1)


def _score(stored: float | None, new: float) -> str:
    if stored is None:
        return f"- → {new:.3f}"
    if f"{stored:.3f}" == f"{new:.3f}":  # a move below the third decimal: show every digit
        return f"{stored!r} → {new!r}"
    return f"{stored:.3f} → {new:.3f}"


def _yes(value: bool | None) -> str:
    return "-" if value is None else "yes" if value else "no"


def _changed(r: Regrade) -> str:
    names = list(r.breakdown_moved)
    text = ", ".join(names[:2]) + (f" +{len(names) - 2}" if len(names) > 2 else "")
    if r.stored_success != r.new_success and not names:
        text = "success"
    if not names and r.stored_success == r.new_success and r.stored_score == r.new_score:
        text = "threshold"  # the only field of the grade left to move
    return text + (" [yellow](replay diverged)[/yellow]" if r.diverged else "")


def moved_tables(report: RescoreReport) -> list[Table]:
    """One table per environment of the episodes whose grade moved: stored → new score and success."""
    by_env: dict[str, list[Regrade]] = {}
    for r in report.moved:
        by_env.setdefault(r.task_id.split("/")[0], []).append(r)
    tables = []
    for env, rows in by_env.items():
        # As `igym bench` draws its tables: no outer box, one space between columns, 80 columns wide.
        table = Table(title=f"{env}: grades that moved", box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1),
                      collapse_padding=True, title_justify="left")  # fmt: skip
        table.add_column("task", no_wrap=True)
        for name in ("#", "seed", "score", "success"):
            table.add_column(name, justify="right")
        table.add_column("moved")
        for r in rows:
            table.add_row(escape(r.task_id.split("/", 1)[-1]), str(r.index), str(r.seed),
                          _score(r.stored_score, r.new_score),
                          f"{_yes(r.stored_success)} → {_yes(r.new_success)}", _changed(r))  # fmt: skip
        tables.append(table)
    return tables


def print_report(report: RescoreReport) -> None:
    """The tables of moved grades, then the counts and the speed."""
    preset = f" under preset {report.preset}" if report.preset else ""
    console.print(f"[bold]rescore {escape(report.run_id)}[/bold]{escape(preset)}", highlight=False)
    for note in report.notes:
        console.print(f"note: {escape(note)}", highlight=False)
    for task_id, keys in report.spec_changed.items():
        console.print(f"[yellow]{escape(task_id)}: its spec changed since the run ({escape(', '.join(keys))})"
                      "[/yellow]", highlight=False)  # fmt: skip
    for table in moved_tables(report):
        console.print(table)
    moved = len(report.moved)
    colour = "red" if moved else "green"
    console.print(f"[{colour}]{report.identical} identical, {moved} moved[/{colour}] of {len(report.regrades)} "
                  f"re-graded episodes", highlight=False)  # fmt: skip
    only_diverged = [r for r in report.diverged if not r.moved]
    for r in only_diverged:
        console.print(f"[yellow]{escape(r.task_id)} #{r.index}: same grade, but {escape(r.diverged or '')}[/yellow]",
                      highlight=False)  # fmt: skip
    if report.returns_moved:
        console.print(f"{report.returns_moved} episode(s) whose return moved", highlight=False)
    for n in report.not_rescorable:
        console.print(f"[red]not re-graded: {escape(n.task_id)}, {n.episodes} episode(s): {escape(n.reason)}[/red]",
                      highlight=False)  # fmt: skip
    skipped = [(report.failed, "failed when played (not graded)"), (report.missing, "missing (never finished)"),
               (report.unreadable, "unreadable line(s) in episodes.jsonl")]  # fmt: skip
    for count, what in skipped:
        if count:
            console.print(f"skipped {count} episode(s) {what}" if "line" not in what else f"skipped {count} {what}",
                          highlight=False)  # fmt: skip
    console.print(f"{report.episodes_per_second:.1f} episodes/s ({len(report.regrades)} in {report.seconds:.2f} s, "
                  f"after {report.setup_seconds:.2f} s building the environments)", highlight=False)  # fmt: skip


__all__ = ["moved_tables", "print_report", "rescore"]
