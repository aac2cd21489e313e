"""Commands on recorded runs: ``igym report`` (HTML and Markdown), ``igym runs`` (compare) and ``igym view``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from integrity_gym.cli.root import console, fail


def report(
    runs: Annotated[
        list[Path],
        typer.Argument(help="Run folders of `igym bench` (several side by side) and/or `igym train --out` folders."),
    ],
    out: Annotated[Path, typer.Option(help="Folder for report.html and the PNGs.")] = Path("outputs/report"),
    title: Annotated[str, typer.Option(help="Title of the page.")] = "integrity-gym report",
    trace: Annotated[
        list[str] | None, typer.Option(help="Episode to trace, TASK_ID:INDEX (default: each task's median-graded).")
    ] = None,
    markdown: Annotated[
        Path | None, typer.Option(help="Also write a Markdown results section here (e.g. docs/results.md).")
    ] = None,
    assets: Annotated[Path | None, typer.Option(help="PNG folder of --markdown (default: beside it).")] = None,
    readme: Annotated[
        Path | None, typer.Option(help="With --markdown: also fill this README's results:start/end block.")
    ] = None,
    note: Annotated[str | None, typer.Option(help="A paragraph shown under the title.")] = None,
    redteam: Annotated[
        Path | None, typer.Option(help="`igym redteam --json` output: show the trivial floor and best attack.")
    ] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace a report (or --markdown file) already there.")] = False,
) -> None:
    """Write a self-contained HTML report with plots (and PNGs) for benchmark runs and training runs."""
    from integrity_gym.report.inputs import load_inputs, load_redteam, parse_trace_choices
    from integrity_gym.report.markdown import write_markdown
    from integrity_gym.report.page import write_report

    try:
        loaded, trainings = load_inputs(runs)
        chosen = parse_trace_choices(trace or [])
        references = load_redteam(redteam) if redteam is not None else None
    except (ValueError, ImportError) as exc:
        raise fail(str(exc)) from exc
    # The inputs first: a mistyped run folder is the error to hear of, whatever the output folder holds.
    taken = [p for p in (out / "report.html", markdown) if p is not None and p.exists()]
    if taken and not overwrite:
        raise fail(f"{taken[0]} already exists; pass --overwrite to replace it, or choose another --out/--markdown")
    try:
        page = write_report(
            loaded, out, title=title, chosen=chosen, note=note, references=references, trainings=trainings
        )
        console.print(f"wrote {page} and its PNGs in {out}/")
        if markdown is not None:
            folder = assets or markdown.parent / markdown.stem
            written = write_markdown(loaded, markdown, folder, chosen, note, readme, references, trainings)
            console.print(f"wrote {written} (figures in {folder}/)" + (f" and {readme}" if readme else ""))
    except (ValueError, ImportError) as exc:
        raise fail(str(exc)) from exc


def runs(
    db: Annotated[Path, typer.Option(help="SQLite results database written by `igym bench`.")] = Path(
        "outputs/results.sqlite"
    ),
    tasks: Annotated[str, typer.Option(help="Glob over task ids to compare.")] = "*",
    last: Annotated[int, typer.Option(min=1, help="Show the newest N runs.")] = 10,
) -> None:
    """Compare recorded runs: a table of runs (numbered), then mean grade per task for each run number."""
    import fnmatch

    from integrity_gym.bench.display import runs_tables
    from integrity_gym.bench.results import ResultsDB

    if not db.is_file():
        raise fail(f"{db} does not exist; `igym bench` records runs there (or pass --db)")
    try:
        with ResultsDB(db) as results:
            rows = [r for r in results.task_summaries() if fnmatch.fnmatchcase(r["task_id"], tasks)]
            recorded = [run for run in results.runs() if any(r["run_id"] == run["run_id"] for r in rows)][:last]
    except ValueError as exc:
        raise fail(str(exc)) from exc
    for table in runs_tables(recorded, rows, width=console.width):
        console.print(table)


def view(
    runs: Annotated[list[Path], typer.Argument(help="One run folder (outputs/<run>), or two to compare side by side.")],
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port (0 picks a free one).")] = 8765,
    db: Annotated[Path, typer.Option(help="Results database (adds each run's status).")] = Path(
        "outputs/results.sqlite"
    ),
    open_browser: Annotated[bool, typer.Option("--open", help="Open the page in the default browser.")] = False,
) -> None:
    """Browse run folders in a local web page: episodes, grades, trajectories, two runs side by side."""
    try:
        from integrity_gym.web.viewer import serve_viewer
    except ImportError as exc:
        raise fail(f"the viewer needs the 'server' extra: pip install 'integrity-gym[server]' ({exc})") from exc
    try:
        serve_viewer(runs, host=host, port=port, db=db, open_browser=open_browser)
    except ValueError as exc:
        raise fail(str(exc)) from exc
