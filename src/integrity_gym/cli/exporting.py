"""``igym export``: a task's items as prompts, or as an agent's chat transcripts, for SFT and offline RL."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from integrity_gym.cli.root import console, fail

if TYPE_CHECKING:
    from integrity_gym.bench.export import ExportFormat, ExportPartition


def export(
    task: Annotated[str, typer.Argument(help="Task id or glob, e.g. pii_redaction/gdpr_contract_easy (`igym list`).")],
    partition: Annotated[str, typer.Option(help="Items from: train or eval (required: say which).")],
    fmt: Annotated[str, typer.Option("--format", help="jsonl, or parquet (the data extra: pyarrow).")] = "jsonl",
    trajectories: Annotated[
        str | None,
        typer.Option(help="Play every item with this agent (oracle, heuristic, random, ...) and write transcripts."),
    ] = None,
    episodes: Annotated[int, typer.Option(min=1, help="Items per task.")] = 5,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the first item; item i uses seed + i.")] = 0,
    seeds: Annotated[str | None, typer.Option(help="Explicit comma-separated item seeds (overrides).")] = None,
    images: Annotated[
        bool, typer.Option(help="Keep pictures in the messages (--no-images: the text-only message).")
    ] = True,
    out: Annotated[
        Path | None, typer.Option(help="File to write (default outputs/export/<task>-<partition>.<format>).")
    ] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace the file already at --out.")] = False,
) -> None:
    """Write a task's items as the llm agent's prompts (ids, seeds, public metadata), or transcripts.

    Prompts are the first turn's messages exactly as `--agent llm` sends them. With --trajectories
    AGENT every item is played by AGENT through the llm agent's interface: each turn's messages,
    the action written as the reply the llm agent is asked for, and the episode's grade. The same
    options write the same bytes. Exit status 2 when nothing could be exported.
    """
    from integrity_gym.bench.export import ExportError
    from integrity_gym.bench.export import export as run_export

    try:
        seed_list = [int(s) for s in seeds.split(",") if s.strip()] if seeds else None
    except ValueError:
        raise fail(f"--seeds takes comma-separated whole numbers, got {seeds!r}") from None
    if partition not in ("train", "eval"):
        raise fail(f"--partition must be train or eval, not {partition!r}")
    if fmt not in ("jsonl", "parquet"):
        raise fail(f"--format must be jsonl or parquet, not {fmt!r}")
    try:
        result = run_export(task, cast("ExportPartition", partition), cast("ExportFormat", fmt), out=out,
                            agent=trajectories, episodes=episodes, seed=seed, seeds=seed_list, images=images,
                            overwrite=overwrite)  # fmt: skip
    except ExportError as exc:
        raise fail(str(exc)) from exc
    table = Table(title="transcripts" if trajectories else "prompts", box=box.SIMPLE_HEAD, pad_edge=False,
                  padding=(0, 1), collapse_padding=True, title_justify="left")  # fmt: skip
    table.add_column("task", no_wrap=True)
    columns = ["n", "seeds"] + (["grade", "success", "turns", "altered"] if trajectories else [])
    for name in columns:
        table.add_column(name, justify="right")
    for task_id, rows in result.per_task().items():
        cells = [str(len(rows)), f"{rows[0]['seed']}..{rows[-1]['seed']}"]
        if trajectories:
            grades = [r["grade"] for r in rows]
            cells += [f"{sum(g['score'] for g in grades) / len(grades):.3f}",
                      f"{sum(bool(g['success']) for g in grades) / len(grades):.0%}",
                      str(sum(r["steps"] for r in rows)), str(sum(r["rewritten_turns"] for r in rows))]  # fmt: skip
        table.add_row(escape(task_id), *cells)
    console.print(table)
    if trajectories and partition == "eval":
        console.print("[yellow]note: eval transcripts carry the answers (the actions that scored, the grade's "
                      "breakdown): keep them out of any training set[/yellow]", highlight=False)  # fmt: skip
    kind = f"{trajectories} transcripts" if trajectories else "prompts"
    console.print(f"wrote {len(result.rows)} {kind} ({partition} partition) to {escape(str(result.path))} "
                  f"in {result.seconds:.2f} s", highlight=False)  # fmt: skip


__all__ = ["export"]
