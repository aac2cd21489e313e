"""Commands on tasks: ``igym list``, ``igym play`` (an episode by hand) and ``igym collect`` (a scenario draft)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from integrity_gym.cli.root import console, fail
from integrity_gym.core.env import EpisodeFinishedError
from integrity_gym.core.registry import list_tasks, make


def list_command(pattern: Annotated[str, typer.Argument(help="Glob over task ids.")] = "*") -> None:
    """List registered tasks, one table per environment: tier, success threshold, step limit, description."""
    from integrity_gym.bench.display import tasks_tables

    for table in tasks_tables(list_tasks(pattern)):
        console.print(table)


HELP_WORDS = frozenset({"help", "?", "h"})
QUIT_WORDS = frozenset({"quit", "exit", "q"})
PLAY_KEYS = "(type an action; help or ? shows this again; quit ends the episode and shows the grade)"


def play(
    task: Annotated[str, typer.Argument(help="Task id, e.g. pii_redaction/gdpr_contract_easy-v4.")],
    seed: Annotated[int, typer.Option(help="Episode seed.")] = 0,
    scenario: Annotated[
        Path | None,
        typer.Option(help="Play this scenario file instead (information_integrity: e.g. an `igym collect` draft)."),
    ] = None,
) -> None:
    """Play one episode by hand: see the observation, type actions, read rewards and the grade."""
    try:
        env = make(task)
        env.reset(seed=seed, options=None if scenario is None else {"scenario_file": str(scenario)})
    except (KeyError, ValueError) as exc:
        raise fail(str(exc.args[0] if exc.args else exc)) from exc
    console.print(f"[bold]{env.spec.id}[/bold]: {escape(env.spec.description)}")
    console.print(env.action_help, markup=False, highlight=False)
    if env.play_help:
        console.print(env.play_help, markup=False, highlight=False)
    console.print(PLAY_KEYS, highlight=False)
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
        if line.lower() in QUIT_WORDS:
            break
        if line.lower() in HELP_WORDS:  # a request for help is never played as an action
            console.print(env.action_help, markup=False, highlight=False)
            console.print(PLAY_KEYS, highlight=False)
            continue
        try:
            result = env.step(type(env).typed_action(line))
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
    env.close()  # e.g. removes the pictures it saved for the terminal


def collect(
    claim: Annotated[str, typer.Argument(help="The claim to research, in quotes.")],
    corpus: Annotated[Path, typer.Option(help="Folder of *.jsonl documents (url, title, text, date).")],
    out: Annotated[Path | None, typer.Option(help="Write the scenario JSON here instead of printing it.")] = None,
    limit: Annotated[int, typer.Option(min=2, help="Sources to retrieve.")] = 6,
    harm: Annotated[str, typer.Option(help="Harm level of the topic: low, medium or high.")] = "medium",
    domains: Annotated[Path | None, typer.Option(help="Domain reliability YAML (default: the built-in table).")] = None,
) -> None:
    """Build an information_integrity scenario draft for CLAIM from a local corpus, for human review."""
    from integrity_gym.envs.information_integrity.collector import (
        DataCollector,
        DomainReliability,
        LocalCorpusBackend,
        write_scenario,
    )

    if harm not in ("low", "medium", "high"):
        raise fail(f"--harm must be low, medium or high, not {harm!r}")
    try:
        table = DomainReliability.from_yaml(domains) if domains else None
        backend = LocalCorpusBackend(corpus)
        scenario = DataCollector(backend, table).build_scenario(claim, limit=limit, harm=harm)  # type: ignore[arg-type]
    except ValueError as exc:
        raise fail(str(exc)) from exc
    if out is None:
        console.print_json(scenario.model_dump_json())
    else:
        write_scenario(scenario, out)
        console.print(f"wrote {out}: {len(scenario.sources)} sources, derived label {scenario.label} (review it)")
