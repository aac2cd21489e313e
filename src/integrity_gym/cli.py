"""The ``igym`` command line."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from integrity_gym.core.env import EpisodeFinishedError
from integrity_gym.core.registry import get_spec, list_tasks, make

app = typer.Typer(help="integrity-gym: information-integrity environments for LLM agents.", no_args_is_help=True)
console = Console()


def _fail(message: str) -> typer.Exit:
    console.print(f"[red]error:[/red] {message}")
    return typer.Exit(code=2)


@app.command("list")
def list_command(pattern: Annotated[str, typer.Argument(help="Glob over task ids.")] = "*") -> None:
    """List registered tasks with their success thresholds and step limits."""
    table = Table("task", "tier", "threshold", "max steps", "description")
    for spec in list_tasks(pattern):
        table.add_row(spec.id, spec.tier, f"{spec.success_threshold:.2f}", str(spec.max_steps), spec.description)
    console.print(table)


@app.command()
def play(
    task: Annotated[str, typer.Argument(help="Task id, e.g. pii_redaction/gdpr_contract_easy-v0.")],
    seed: Annotated[int, typer.Option(help="Episode seed.")] = 0,
) -> None:
    """Play one episode by hand: see the observation, type actions, read rewards and the grade."""
    try:
        env = make(task)
    except (KeyError, ValueError) as exc:
        raise _fail(str(exc.args[0] if exc.args else exc)) from exc
    env.reset(seed=seed)
    console.print(f"[bold]{env.spec.id}[/bold]: {env.spec.description}")
    console.print(env.action_help)
    total = 0.0
    while not env.done:
        console.print(env.render(), markup=False, highlight=False)
        try:
            line = input("action> ").strip()
        except EOFError:
            console.print("\n(end of input: stopping)")
            break
        if not line:
            continue
        if line in {"quit", "exit"}:
            break
        try:
            result = env.step(line)
        except EpisodeFinishedError as exc:
            console.print(str(exc))
            break
        total += result.reward
        if result.info.get("error"):
            console.print(f"[red]rejected:[/red] {result.info['error']}")
        parts = ", ".join(f"{k}={v:+.3f}" for k, v in result.info.get("reward_breakdown", {}).items() if v)
        console.print(f"reward {result.reward:+.3f} (return {total:+.3f})" + (f": {parts}" if parts else ""))
    grade = env.grade()
    console.print(f"[bold]grade[/bold] {grade.score:.3f} (threshold {grade.threshold:.2f}, success={grade.success})")
    console.print(env.explain(), markup=False, highlight=False)


@app.command()
def bench(
    tasks: Annotated[str, typer.Option(help="Glob (or comma-separated globs) over task ids.")] = "*",
    agent: Annotated[str, typer.Option(help="Agent: heuristic, random, oracle, noop.")] = "heuristic",
    episodes: Annotated[int, typer.Option(min=1, help="Episodes per task.")] = 5,
    seed: Annotated[int, typer.Option(help="Seed of the first episode; episode i uses seed + i.")] = 0,
    out: Annotated[Path, typer.Option(help="Output folder for summary.json.")] = Path("outputs/bench"),
) -> None:
    """Run an agent over tasks, print a table and write OUT/summary.json."""
    from integrity_gym.bench.runner import run_bench

    try:
        summaries = run_bench(tasks, agent, episodes=episodes, seed=seed, out_dir=out)
    except ValueError as exc:
        raise _fail(str(exc)) from exc
    table = Table("task", "episodes", "mean score", "threshold", "success rate", "mean return", "metrics")
    for task_id, s in summaries.items():
        metrics = ", ".join(f"{k}={'n/a' if v is None else f'{v:.3f}'}" for k, v in s.metrics.items())
        table.add_row(
            task_id,
            str(s.episodes),
            f"{s.mean_score:.3f}",
            f"{get_spec(task_id).success_threshold:.2f}",
            f"{s.success_rate:.0%}",
            f"{s.mean_return:+.3f}",
            metrics,
        )
    console.print(table)
    console.print(f"wrote {out / 'summary.json'}")


@app.command()
def collect(
    claim: Annotated[str, typer.Argument(help="The claim to research, in quotes.")],
    corpus: Annotated[Path, typer.Option(help="Folder of *.jsonl documents (url, title, text, date).")],
    out: Annotated[Path | None, typer.Option(help="Write the scenario JSON here instead of printing it.")] = None,
    limit: Annotated[int, typer.Option(min=2, help="Sources to retrieve.")] = 6,
    harm: Annotated[str, typer.Option(help="Harm level of the topic: low, medium or high.")] = "medium",
) -> None:
    """Build an information_integrity scenario draft for CLAIM from a local corpus, for human review."""
    from integrity_gym.envs.information_integrity.collector import DataCollector, LocalCorpusBackend, write_scenario

    if harm not in ("low", "medium", "high"):
        raise _fail(f"--harm must be low, medium or high, not {harm!r}")
    try:
        backend = LocalCorpusBackend(corpus)
        scenario = DataCollector(backend).build_scenario(claim, limit=limit, harm=harm)  # type: ignore[arg-type]
    except ValueError as exc:
        raise _fail(str(exc)) from exc
    if out is None:
        console.print_json(scenario.model_dump_json())
    else:
        write_scenario(scenario, out)
        console.print(f"wrote {out}: {len(scenario.sources)} sources, derived label {scenario.label} (review it)")


def main() -> None:
    """Entry point for ``python -m integrity_gym``."""
    app()
