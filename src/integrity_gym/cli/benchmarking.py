"""``igym bench``: run an agent over tasks, locally or against a server, into a run folder."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from integrity_gym.cli.root import console, fail

if TYPE_CHECKING:
    from integrity_gym.agents.llm import LLMSettings
    from integrity_gym.bench.runner import BenchConfig, RunResult


def bench(
    tasks: Annotated[
        list[str] | None, typer.Option(help="Glob (or comma-separated globs) over task ids; repeatable [default: *].")
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option(
            help="Agent: heuristic, random, oracle, noop, llm, presidio, an env's own or an attack [default: "
            "heuristic, or llm with --model/--base-url]."
        ),
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="Model for --agent llm (overrides MODEL_NAME).")
    ] = None,
    base_url: Annotated[
        str | None, typer.Option(help="OpenAI-compatible endpoint for --agent llm (overrides API_BASE_URL).")
    ] = None,
    temperature: Annotated[
        float | None, typer.Option(min=0.0, max=2.0, help="Sampling temperature (overrides TEMPERATURE).")
    ] = None,
    episodes: Annotated[int, typer.Option(min=1, help="Episodes (items) per task.")] = 5,
    epochs: Annotated[
        int, typer.Option(min=1, help="Play every item this many times: pass@k and per-item spread.")
    ] = 1,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the first episode; episode i uses seed + i.")] = 0,
    seeds: Annotated[str | None, typer.Option(help="Explicit comma-separated episode seeds (overrides).")] = None,
    partition: Annotated[str, typer.Option(help="Items from: eval, train, all, or default (the env's).")] = "eval",
    max_steps: Annotated[int | None, typer.Option(min=1, help="Step cap per episode.")] = None,
    server: Annotated[str | None, typer.Option(help="Play against a running `igym serve` at this URL.")] = None,
    sealed: Annotated[
        bool,
        typer.Option(
            help="Play a sealed evaluation of --server (`igym serve --sealed`): the server draws the items, hands "
            "each out once and releases the grades at the end (docs/evaluation.md)."
        ),
    ] = False,
    concurrency: Annotated[int, typer.Option(min=1, help="Episodes played at once.")] = 1,
    config: Annotated[list[str] | None, typer.Option(help="Env config override KEY=VALUE (JSON value).")] = None,
    max_failures: Annotated[
        int, typer.Option(min=0, help="Failed episodes tolerated before the run fails (exit 1).")
    ] = 0,
    out: Annotated[Path | None, typer.Option(help="Run folder (default outputs/<run-id>).")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace the run already in --out.")] = False,
    resume: Annotated[
        Path | None, typer.Option(help="Finish the run in this folder: play only missing or failed episodes.")
    ] = None,
    db: Annotated[Path, typer.Option(help="SQLite results database.")] = Path("outputs/results.sqlite"),
    no_db: Annotated[bool, typer.Option("--no-db", help="Do not record the run in the database.")] = False,
    echo: Annotated[
        str, typer.Option(help="Log lines echoed: none, end (one per episode), all (run.log has them all).")
    ] = "none",
    no_observations: Annotated[
        bool, typer.Option("--no-observations", help="Leave observations out of episodes.jsonl.")
    ] = False,
    local_llm: Annotated[
        bool, typer.Option("--local-llm", help="Serve the bundled tiny SmolLM2 on 127.0.0.1 for --agent llm.")
    ] = False,
) -> None:
    """Run an agent over tasks: progress, [START]/[STEP]/[END] log, summary tables, a run folder.

    Exit status: 0 when every episode finished (or no more failed than --max-failures), 1 when the
    run failed, 2 when it could not start (nothing is played or written then), 130 when interrupted
    (Ctrl-C, or SIGTERM as `timeout`, `docker stop` and pre-emption send): the run folder is then
    complete up to the last finished episode and `--resume` continues it.
    """
    from integrity_gym.bench.display import print_summary
    from integrity_gym.bench.runner import BenchConfig

    if echo not in ("none", "end", "all"):
        raise fail(f"--echo must be none, end or all, not {echo!r}")
    env_config, seed_list = _env_config(config), _seed_list(seeds)
    given: dict[str, Any] = {"model_name": model, "api_base_url": base_url, "temperature": temperature}
    llm_options = {k: v for k, v in given.items() if v is not None}
    agent, local_llm, resumed_llm = _chosen_agent(agent, local_llm, llm_options, resume)
    with contextlib.ExitStack() as stack:
        try:
            llm_settings = _llm_settings(stack, agent, local_llm, llm_options, resumed_llm)
            database = None if no_db else db
            if resume is not None:
                result = _resume(resume, echo, database, llm_settings)
            else:
                options = BenchConfig.build(
                    tasks=",".join(tasks or ["*"]), agent=agent, seed=seed, seeds=seed_list,
                    episodes=len(seed_list) if seed_list else episodes, epochs=epochs,
                    partition=None if partition == "default" else partition, max_steps=max_steps, server=server,
                    sealed=sealed, concurrency=concurrency, env_config=env_config,
                    keep_observations=not no_observations, local_llm=local_llm, max_failures=max_failures,
                )  # fmt: skip
                result = _run(options, agent, server, echo, out, database, llm_settings, overwrite)
        except (ValueError, RuntimeError, ImportError) as exc:
            raise fail(str(exc)) from exc
    print_summary(console, result)
    if not no_db:
        console.print(f"recorded run {result.run_id} in {db}", highlight=False)
    if result.status == "interrupted":
        raise typer.Exit(code=130)
    if result.status != "complete":
        raise typer.Exit(code=1)


def _env_config(items: list[str] | None) -> dict[str, Any]:
    """The ``--config KEY=VALUE`` overrides, each value read as JSON (else kept as text)."""
    env_config = {}
    for item in items or []:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise fail(f"--config takes KEY=VALUE, got {item!r}")
        try:
            env_config[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            env_config[key.strip()] = raw
    return env_config


def _seed_list(seeds: str | None) -> tuple[int, ...] | None:
    """The explicit ``--seeds``, or None."""
    try:
        return tuple(int(s) for s in seeds.split(",") if s.strip()) if seeds else None
    except ValueError:
        raise fail(f"--seeds takes comma-separated whole numbers, got {seeds!r}") from None


def _chosen_agent(
    agent: str | None, local_llm: bool, llm_options: dict[str, Any], resume: Path | None
) -> tuple[str, bool, dict[str, Any] | None]:
    """The agent to play, whether to serve the bundled llm, and the llm settings of the run to resume."""
    resumed_llm = _resumed_llm(resume) if resume is not None else None
    if resume is not None:
        agent = "llm" if resumed_llm is not None else "(resumed)"
        local_llm = bool((resumed_llm or {}).get("local_llm"))
    agent = agent or ("llm" if llm_options or local_llm else "heuristic")
    if llm_options and agent != "llm":
        raise fail(f"--model, --base-url and --temperature are for --agent llm, not {agent!r}")
    return agent, local_llm, resumed_llm


def _llm_settings(
    stack: contextlib.ExitStack,
    agent: str,
    local_llm: bool,
    llm_options: dict[str, Any],
    resumed_llm: dict[str, Any] | None,
) -> LLMSettings | None:
    """Serve the bundled llm for the run's duration (``stack``) if asked; the llm agent's settings, else None."""
    if local_llm:
        from integrity_gym.bench.local_llm import MODEL_NAME, local_llm_server

        base = stack.enter_context(local_llm_server())
        llm_options = {**llm_options, "model_name": MODEL_NAME, "api_base_url": base}
        # A 135M model on two shared cores: patient requests, short replies.
        os.environ.setdefault("REQUEST_TIMEOUT_S", "300")
        os.environ.setdefault("LLM_MAX_TOKENS", "200")
    if agent != "llm":
        return None
    from integrity_gym.agents.llm import LLMSettings

    # A resumed run keeps its recorded settings; a new address (--local-llm, --base-url) wins.
    recorded = {k: v for k, v in (resumed_llm or {}).items() if k != "local_llm"}
    return LLMSettings.from_env(None, **{**recorded, **llm_options})


def _resume(folder: Path, echo: str, database: Path | None, llm_settings: LLMSettings | None) -> RunResult:
    """Finish the run in ``folder``."""
    from integrity_gym.bench.display import LiveProgress
    from integrity_gym.bench.runner import resume_bench

    with LiveProgress(console, echo=echo, model="") as live:  # type: ignore[arg-type]
        return resume_bench(folder, db_path=database, llm_settings=llm_settings, progress=live)


def _run(
    options: BenchConfig,
    agent: str,
    server: str | None,
    echo: str,
    out: Path | None,
    database: Path | None,
    llm_settings: LLMSettings | None,
    overwrite: bool,
) -> RunResult:
    """Play a new run (a note first when eval items are keyed by a secret this process holds)."""
    from integrity_gym.bench.display import LiveProgress
    from integrity_gym.bench.runner import run_bench
    from integrity_gym.core.seeding import data_mode

    command = " ".join(["igym", *sys.argv[1:]])
    if not server and data_mode() != "public":
        console.print(
            "note: the items are keyed by IGYM_EVAL_SECRET in this process; a Python agent running "
            "here could read the secret and rebuild them, so this holds out only agents that cannot "
            "reach the process (the llm agent behind its endpoint). A held-out evaluation any agent "
            "can take: `igym serve --sealed` and `igym bench --server URL --sealed` "
            "(docs/evaluation.md).",
            highlight=False,
        )
    shown = llm_settings.model_name if llm_settings else agent
    with LiveProgress(console, echo=echo, model=shown) as live:  # type: ignore[arg-type]
        return run_bench(bench=options, out_dir=out, db_path=database, llm_settings=llm_settings,
                         progress=live, command=command, overwrite=overwrite)  # fmt: skip


def _resumed_llm(folder: Path) -> dict[str, Any] | None:
    """The recorded llm settings of the run to resume (with ``local_llm``), or None for other agents."""
    try:
        bench = json.loads((folder / "config.json").read_text())["bench"]
    except (OSError, ValueError, KeyError):
        return None  # resume_bench explains what is wrong with the folder
    if bench.get("agent") != "llm":
        return None
    return {**(bench.get("llm") or {}), "local_llm": bool(bench.get("local_llm"))}
