"""``igym redteam``: degenerate, learned and probing attacks on every task, and the return-vs-grade audit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich import box
from rich.table import Column, Table

from integrity_gym.cli.root import console, fail
from integrity_gym.core.registry import TaskSpec, list_tasks

if TYPE_CHECKING:
    from integrity_gym.agents.redteam import AttackResult
    from integrity_gym.agents.redteam.audit import TaskAudit
    from integrity_gym.agents.redteam.server_probes import ProbeRow


def redteam(
    tasks: Annotated[str, typer.Option(help="Glob (or comma-separated globs) over task ids.")] = "*",
    episodes: Annotated[int, typer.Option(min=1, help="Eval episodes per task and attack.")] = 50,
    seed: Annotated[int, typer.Option(help="First seed.")] = 0,
    markdown: Annotated[Path | None, typer.Option(help="Also write the table as Markdown here.")] = None,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Also write the results as JSON (for `igym report --redteam`).")
    ] = None,
    audit: Annotated[
        bool, typer.Option(help="Also run the return-vs-grade audit (every preset): does the return rank as the grade?")
    ] = True,
    audit_episodes: Annotated[int, typer.Option(min=2, help="Eval episodes per policy in the audit.")] = 20,
    presidio: Annotated[bool, typer.Option(help="Add the presidio agent to the audit's pii panels.")] = False,
    audit_json: Annotated[Path | None, typer.Option(help="Also write the audit as JSON here.")] = None,
    learned: Annotated[
        bool,
        typer.Option(
            help="Also fit each environment's learned attacks on the train partition and play them "
            "(scikit-learn: the learned extra)."
        ),
    ] = False,
    train_episodes: Annotated[
        int | None,
        typer.Option(
            min=1, help="Training items each learned attack is fitted on [default: the environment's, 300 or 1000]."
        ),
    ] = None,
    server_probes: Annotated[
        bool,
        typer.Option(
            help="Also play the probes of the evaluator against a real sealed server (and an unsealed control) "
            "that this command starts."
        ),
    ] = False,
) -> None:
    """Play every degenerate agent on every task and show that none scores (exit 1 if one does).

    With ``--learned`` also fit models on the train partition (and memory agents on the eval
    episodes played in order) and hold them to the same bar.

    With ``--audit`` (the default) also play a panel of policies under every reward preset and
    check that the return ranks them as the grade does (exit 1 if a default preset does not).
    """
    from integrity_gym.agents.redteam import redteam_json, run_redteam
    from integrity_gym.agents.redteam.audit import run_audit
    from integrity_gym.core.seeding import data_mode

    specs = list_tasks(tasks)
    if not specs:
        raise fail(f"no task matches {tasks!r}; see `igym list`")
    _note_raised_bars(specs, episodes)
    with console.status("red team") as status:
        try:
            results = run_redteam(
                tasks, episodes=episodes, seed=seed, learned=learned, train_episodes=train_episodes,
                on_result=lambda r: status.update(f"red team: {r.task_id} {r.attack} {r.mean:.3f}"),
            )  # fmt: skip
        except ImportError as exc:
            raise fail(str(exc)) from exc
    _print_attacks(specs, results)
    if data_mode() == "public":
        console.print("public mode: the replay attack (wins by design without a secret) is not played; "
                      "set IGYM_EVAL_SECRET to play it")  # fmt: skip
    probes = _play_server_probes() if server_probes else []
    audits = run_audit(tasks, episodes=audit_episodes, seed=seed, presidio=presidio) if audit else []
    if audits:
        _print_audits(audits)
    if markdown is not None:
        _write_markdown(markdown, specs, results, probes, audits, episodes, audit_episodes, seed, learned)
    if json_out is not None:
        _write_json(json_out, redteam_json(results))
    if audit_json is not None:
        from integrity_gym.agents.redteam.audit import audit_json as audit_rows

        _write_json(audit_json, audit_rows(audits))
    _judge(results, probes, audits)


def _note_raised_bars(specs: list[TaskSpec], episodes: int) -> None:
    """Say which tasks judge every attack on more episodes than ``--episodes``, fewest first."""
    from integrity_gym.agents.redteam import bar_for

    raised: dict[int, list[str]] = {}
    for spec in specs:
        count = bar_for(spec.env).episodes_for(spec)
        if count > episodes:
            raised.setdefault(count, []).append(spec.id)
    for count, ids in sorted(raised.items()):
        console.print(f"{', '.join(ids)}: every attack is judged on at least {count} episodes "
                      f"(--episodes {episodes} raised; see the bars in docs/redteam.md)")  # fmt: skip


def _print_attacks(specs: list[TaskSpec], results: list[AttackResult]) -> None:
    """One table per environment: every attack's mean against its limit, and whether the bar held."""
    from integrity_gym.bench.display import short_task

    for env in dict.fromkeys(spec.env for spec in specs):
        table = Table(
            Column("task", no_wrap=True), Column("attack", no_wrap=True), Column("mean", justify="right", min_width=5),
            Column("limit", justify="right", min_width=5), Column("won", justify="right", min_width=4), "held",
            title=env, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 0),
            collapse_padding=True, show_edge=False,
        )  # fmt: skip
        for r in results:
            if r.task_id.split("/")[0] == env:
                mark = "[green]yes[/green]" if r.held else "[red]NO[/red]"
                table.add_row(short_task(r.task_id), r.attack, f"{r.mean:.3f}", f"{r.limit:.3f}",
                              f"{r.successes}/{r.episodes}", mark)  # fmt: skip
        console.print(table)


def _play_server_probes() -> list[ProbeRow]:
    """Play the probes of the evaluator against a sealed server started here, and show their table."""
    from integrity_gym.agents.redteam.server_probes import run_server_probes

    with console.status("probes of the evaluator: starting a sealed server"):
        probes = run_server_probes()
    listing = Table("probe", "sealed: learned", "probed", "not probed", "unsealed", "held",
                    title="probes of a sealed server", title_justify="left", box=box.SIMPLE_HEAD)  # fmt: skip
    for p in probes:
        held = "[green]yes[/green]" if p.held else "[red]NO[/red]"
        listing.add_row(p.probe, f"{p.sealed_successes}/{p.episodes}", f"{p.probed:.3f}", f"{p.unprobed:.3f}",
                        f"{p.open_successes}/{p.episodes}", held)  # fmt: skip
    console.print(listing)
    return probes


def _print_audits(audits: list[TaskAudit]) -> None:
    """The audit's summary: per task and preset, how the return ranks the policies against the grade."""
    summary = Table(
        Column("task", no_wrap=True), "preset", Column("policies", justify="right"),
        Column("Spearman", justify="right"), Column("inversions", justify="right"), "oracle on top",
    )  # fmt: skip
    for a in audits:
        summary.add_row(a.task_id, a.preset, str(len(a.results)), f"{a.spearman:.3f}", str(len(a.inversions)),
                        "yes" if a.oracle_on_top else "no")  # fmt: skip
    console.print(summary)


def _write_markdown(
    path: Path,
    specs: list[TaskSpec],
    results: list[AttackResult],
    probes: list[ProbeRow],
    audits: list[TaskAudit],
    episodes: int,
    audit_episodes: int,
    seed: int,
    learned: bool,
) -> None:
    """The red team's tables as Markdown (with the train/eval overlaps, probes and audit played)."""
    from integrity_gym.agents.redteam import redteam_markdown
    from integrity_gym.agents.redteam.audit import audit_markdown
    from integrity_gym.agents.redteam.learned import overlap_for

    path.parent.mkdir(parents=True, exist_ok=True)
    overlaps = [o for spec in specs for o in overlap_for(spec)] if learned else []
    text = redteam_markdown(results, episodes=episodes, seed=seed, overlaps=overlaps)
    if probes:
        from integrity_gym.agents.redteam.server_probes import probes_markdown

        text += "\n" + probes_markdown(probes)
    if audits:
        text += "\n" + audit_markdown(audits, episodes=audit_episodes, seed=seed)
    path.write_text(text)
    console.print(f"wrote {path}")


def _write_json(path: Path, rows: Any) -> None:
    """Write ``rows`` to ``path`` as JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rows, indent=1) + "\n")
    console.print(f"wrote {path}")


def _judge(results: list[AttackResult], probes: list[ProbeRow], audits: list[TaskAudit]) -> None:
    """Exit 1 if an attack or probe scored above its bar, or a default preset's return misranks the grade."""
    from integrity_gym.agents.redteam.audit import passes

    broken = [r for r in results if not r.held] + [p for p in probes if not p.held]
    misranked = [a for a in audits if a.preset == "default" and not passes(a)]
    if broken:
        console.print(f"[red]{len(broken)} attack(s) scored above their bar[/red]")
    if misranked:
        console.print(f"[red]{len(misranked)} task(s) whose default return does not rank as the grade[/red]")
    if broken or misranked:
        raise typer.Exit(code=1)
