"""The ``igym`` command line."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Column, Table

from integrity_gym.core.env import EpisodeFinishedError
from integrity_gym.core.registry import list_tasks, make

app = typer.Typer(help="integrity-gym: information-integrity environments for LLM agents.", no_args_is_help=True)


def _flag_shows_no_type() -> None:
    """A flag takes no value, so help must not print one: Typer 0.2x shows ``<bool>`` beside every flag."""
    from typer.core import TyperOption

    shown = getattr(TyperOption, "display_type_rich", None)
    if shown is not None:
        TyperOption.display_type_rich = lambda self, ctx: None if self.is_flag else shown(self, ctx)  # type: ignore[method-assign]


_flag_shows_no_type()
# Rich's own width: the terminal's, or COLUMNS, or 80 when piped; every table is built to fit 80.
console = Console()


def _fail(message: str) -> typer.Exit:
    # Escaped: an install hint such as integrity-gym[report] is not rich markup.
    console.print(f"[red]error:[/red] {escape(message)}", highlight=False)
    return typer.Exit(code=2)


def _show_version(value: bool) -> None:
    if value:
        from integrity_gym import __version__

        console.print(f"integrity-gym {__version__}", highlight=False)
        raise typer.Exit


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_show_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """integrity-gym: information-integrity environments for LLM agents."""


@app.command("list")
def list_command(pattern: Annotated[str, typer.Argument(help="Glob over task ids.")] = "*") -> None:
    """List registered tasks, one table per environment: tier, success threshold, step limit, description."""
    from integrity_gym.bench.display import tasks_tables

    for table in tasks_tables(list_tasks(pattern)):
        console.print(table)


HELP_WORDS = frozenset({"help", "?", "h"})
QUIT_WORDS = frozenset({"quit", "exit", "q"})
PLAY_KEYS = "(type an action; help or ? shows this again; quit ends the episode and shows the grade)"


@app.command()
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
        raise _fail(str(exc.args[0] if exc.args else exc)) from exc
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


@app.command()
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
    import contextlib
    import json

    from integrity_gym.bench.display import LiveProgress, print_summary
    from integrity_gym.bench.runner import BenchConfig, resume_bench, run_bench
    from integrity_gym.core.seeding import data_mode

    if echo not in ("none", "end", "all"):
        raise _fail(f"--echo must be none, end or all, not {echo!r}")
    env_config = {}
    for item in config or []:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise _fail(f"--config takes KEY=VALUE, got {item!r}")
        try:
            env_config[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            env_config[key.strip()] = raw
    try:
        seed_list = tuple(int(s) for s in seeds.split(",") if s.strip()) if seeds else None
    except ValueError:
        raise _fail(f"--seeds takes comma-separated whole numbers, got {seeds!r}") from None
    given: dict[str, Any] = {"model_name": model, "api_base_url": base_url, "temperature": temperature}
    llm_options = {k: v for k, v in given.items() if v is not None}
    resumed_llm = _resumed_llm(resume) if resume is not None else None
    if resume is not None:
        agent = "llm" if resumed_llm is not None else "(resumed)"
        local_llm = bool((resumed_llm or {}).get("local_llm"))
    agent = agent or ("llm" if llm_options or local_llm else "heuristic")
    if llm_options and agent != "llm":
        raise _fail(f"--model, --base-url and --temperature are for --agent llm, not {agent!r}")
    stack = contextlib.ExitStack()
    with stack:
        llm_settings = None
        try:
            if local_llm:
                from integrity_gym.bench.local_llm import MODEL_NAME, local_llm_server

                base = stack.enter_context(local_llm_server())
                llm_options.update(model_name=MODEL_NAME, api_base_url=base)
                # A 135M model on two shared cores: patient requests, short replies.
                os.environ.setdefault("REQUEST_TIMEOUT_S", "300")
                os.environ.setdefault("LLM_MAX_TOKENS", "200")
            if agent == "llm":
                from integrity_gym.agents.llm import LLMSettings

                # A resumed run keeps its recorded settings; a new address (--local-llm, --base-url) wins.
                recorded = {k: v for k, v in (resumed_llm or {}).items() if k != "local_llm"}
                llm_settings = LLMSettings.from_env(None, **{**recorded, **llm_options})
            database = None if no_db else db
            command = " ".join(["igym", *sys.argv[1:]])
            if resume is not None:
                with LiveProgress(console, echo=echo, model="") as live:  # type: ignore[arg-type]
                    result = resume_bench(resume, db_path=database, llm_settings=llm_settings, progress=live)
            else:
                options = BenchConfig.build(
                    tasks=",".join(tasks or ["*"]), agent=agent, seed=seed, seeds=seed_list,
                    episodes=len(seed_list) if seed_list else episodes, epochs=epochs,
                    partition=None if partition == "default" else partition, max_steps=max_steps, server=server,
                    sealed=sealed, concurrency=concurrency, env_config=env_config,
                    keep_observations=not no_observations, local_llm=local_llm, max_failures=max_failures,
                )  # fmt: skip
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
                    result = run_bench(bench=options, out_dir=out, db_path=database, llm_settings=llm_settings,
                                       progress=live, command=command, overwrite=overwrite)  # fmt: skip
        except (ValueError, RuntimeError, ImportError) as exc:
            raise _fail(str(exc)) from exc
    print_summary(console, result)
    if not no_db:
        console.print(f"recorded run {result.run_id} in {db}", highlight=False)
    if result.status == "interrupted":
        raise typer.Exit(code=130)
    if result.status != "complete":
        raise typer.Exit(code=1)


def _resumed_llm(folder: Path) -> dict[str, Any] | None:
    """The recorded llm settings of the run to resume (with ``local_llm``), or None for other agents."""
    import json

    try:
        bench = json.loads((folder / "config.json").read_text())["bench"]
    except (OSError, ValueError, KeyError):
        return None  # resume_bench explains what is wrong with the folder
    if bench.get("agent") != "llm":
        return None
    return {**(bench.get("llm") or {}), "local_llm": bool(bench.get("local_llm"))}


@app.command()
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

    taken = [p for p in (out / "report.html", markdown) if p is not None and p.exists()]
    if taken and not overwrite:
        raise _fail(f"{taken[0]} already exists; pass --overwrite to replace it, or choose another --out/--markdown")
    try:
        loaded, trainings = load_inputs(runs)
        chosen = parse_trace_choices(trace or [])
        references = load_redteam(redteam) if redteam is not None else None
        page = write_report(
            loaded, out, title=title, chosen=chosen, note=note, references=references, trainings=trainings
        )
        console.print(f"wrote {page} and its PNGs in {out}/")
        if markdown is not None:
            folder = assets or markdown.parent / markdown.stem
            written = write_markdown(loaded, markdown, folder, chosen, note, readme, references, trainings)
            console.print(f"wrote {written} (figures in {folder}/)" + (f" and {readme}" if readme else ""))
    except (ValueError, ImportError) as exc:
        raise _fail(str(exc)) from exc


@app.command()
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
    import json

    from rich import box

    from integrity_gym.agents.redteam import bar_for, redteam_json, redteam_markdown, run_redteam
    from integrity_gym.agents.redteam.audit import audit_markdown, passes, run_audit
    from integrity_gym.agents.redteam.learned import overlap_for
    from integrity_gym.bench.display import short_task
    from integrity_gym.core.seeding import data_mode

    specs = list_tasks(tasks)
    if not specs:
        raise _fail(f"no task matches {tasks!r}; see `igym list`")
    for env in dict.fromkeys(spec.env for spec in specs):
        if bar_for(env).episodes > episodes:
            console.print(f"{env}: every attack is judged on at least {bar_for(env).episodes} episodes "
                          f"(--episodes {episodes} raised; see its bar in docs/redteam.md)")  # fmt: skip
    with console.status("red team") as status:
        try:
            results = run_redteam(
                tasks, episodes=episodes, seed=seed, learned=learned, train_episodes=train_episodes,
                on_result=lambda r: status.update(f"red team: {r.task_id} {r.attack} {r.mean:.3f}"),
            )  # fmt: skip
        except ImportError as exc:
            raise _fail(str(exc)) from exc
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
    if data_mode() == "public":
        console.print("public mode: the replay attack (wins by design without a secret) is not played; "
                      "set IGYM_EVAL_SECRET to play it")  # fmt: skip
    probes = []
    if server_probes:
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
    audits = run_audit(tasks, episodes=audit_episodes, seed=seed, presidio=presidio) if audit else []
    if audits:
        summary = Table(
            Column("task", no_wrap=True), "preset", Column("policies", justify="right"),
            Column("Spearman", justify="right"), Column("inversions", justify="right"), "oracle on top",
        )  # fmt: skip
        for a in audits:
            summary.add_row(a.task_id, a.preset, str(len(a.results)), f"{a.spearman:.3f}", str(len(a.inversions)),
                            "yes" if a.oracle_on_top else "no")  # fmt: skip
        console.print(summary)
    if markdown is not None:
        markdown.parent.mkdir(parents=True, exist_ok=True)
        overlaps = [o for spec in specs for o in overlap_for(spec)] if learned else []
        text = redteam_markdown(results, episodes=episodes, seed=seed, overlaps=overlaps)
        if probes:
            from integrity_gym.agents.redteam.server_probes import probes_markdown

            text += "\n" + probes_markdown(probes)
        if audits:
            text += "\n" + audit_markdown(audits, episodes=audit_episodes, seed=seed)
        markdown.write_text(text)
        console.print(f"wrote {markdown}")
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(redteam_json(results), indent=1) + "\n")
        console.print(f"wrote {json_out}")
    if audit_json is not None:
        from integrity_gym.agents.redteam.audit import audit_json as audit_rows

        audit_json.parent.mkdir(parents=True, exist_ok=True)
        audit_json.write_text(json.dumps(audit_rows(audits), indent=1) + "\n")
        console.print(f"wrote {audit_json}")
    broken = [r for r in results if not r.held] + [p for p in probes if not p.held]
    misranked = [a for a in audits if a.preset == "default" and not passes(a)]
    if broken:
        console.print(f"[red]{len(broken)} attack(s) scored above their bar[/red]")
    if misranked:
        console.print(f"[red]{len(misranked)} task(s) whose default return does not rank as the grade[/red]")
    if broken or misranked:
        raise typer.Exit(code=1)


@app.command()
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
        raise _fail(f"{db} does not exist; `igym bench` records runs there (or pass --db)")
    try:
        with ResultsDB(db) as results:
            rows = [r for r in results.task_summaries() if fnmatch.fnmatchcase(r["task_id"], tasks)]
            recorded = [run for run in results.runs() if any(r["run_id"] == run["run_id"] for r in rows)][:last]
    except ValueError as exc:
        raise _fail(str(exc)) from exc
    for table in runs_tables(recorded, rows, width=console.width):
        console.print(table)


@app.command()
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
        raise _fail(f"--harm must be low, medium or high, not {harm!r}")
    try:
        table = DomainReliability.from_yaml(domains) if domains else None
        backend = LocalCorpusBackend(corpus)
        scenario = DataCollector(backend, table).build_scenario(claim, limit=limit, harm=harm)  # type: ignore[arg-type]
    except ValueError as exc:
        raise _fail(str(exc)) from exc
    if out is None:
        console.print_json(scenario.model_dump_json())
    else:
        write_scenario(scenario, out)
        console.print(f"wrote {out}: {len(scenario.sources)} sources, derived label {scenario.label} (review it)")


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port (0 picks a free one).")] = 8000,
    workers: Annotated[int, typer.Option(min=1, help="Worker processes (more than 1 needs --sessions redis://).")] = 1,
    sessions: Annotated[str, typer.Option(help="Session store: memory, or redis://host:port/db to share.")] = "memory",
    max_sessions: Annotated[int, typer.Option(min=1, help="Most sessions open at once.")] = 1024,
    session_ttl: Annotated[float, typer.Option(min=0.01, help="Idle seconds before a session is reaped.")] = 600.0,
    tasks: Annotated[str, typer.Option(help="Glob over task ids to serve.")] = "*",
    corpus: Annotated[
        Path | None, typer.Option(help="Folder of *.jsonl documents that POST /information_integrity/collect searches.")
    ] = None,
    root: Annotated[
        str | None, typer.Option(help="Also serve this environment at / (/ws, /reset ...), as an OpenEnv Space does.")
    ] = None,
    profile: Annotated[
        str | None,
        typer.Option(
            help="Speak a seed client's dialect at /: seed001 (pii_redaction) or seed000 (information_integrity)."
        ),
    ] = None,
    sealed: Annotated[
        bool,
        typer.Option(
            "--sealed",
            help="Sealed evaluations (also IGYM_SEALED=1; needs IGYM_EVAL_SECRET): episodes only from POST "
            "/evaluations, no item ids, grades at the evaluation's close.",
        ),
    ] = False,
    evaluation_ttl: Annotated[
        float, typer.Option(min=1.0, help="Seconds an evaluation and its results are kept (sealed).")
    ] = 86400.0,
    max_evaluations: Annotated[int, typer.Option(min=1, help="Most evaluations open at once (sealed).")] = 64,
) -> None:
    """Serve every environment over OpenEnv's WebSocket protocol and stateful HTTP (docs at /docs)."""
    if corpus is not None:
        if not corpus.is_dir():
            raise _fail(f"--corpus {corpus} is not a folder")
        os.environ["IGYM_CORPUS_DIR"] = str(corpus.resolve())  # read by the collect hook, in every worker
    try:
        from integrity_gym.server import ServerConfig
        from integrity_gym.server import serve as run_server
        from integrity_gym.server.security import admin_token_from_env
    except ImportError as exc:
        raise _fail(f"the server needs the 'server' extra: pip install 'integrity-gym[server]' ({exc})") from exc
    try:
        config = ServerConfig(
            sessions=sessions,
            max_sessions=max_sessions,
            session_ttl_s=session_ttl,
            tasks=tasks,
            admin_token=admin_token_from_env(),
            root=root,
            profile=profile,
            sealed=sealed or os.environ.get("IGYM_SEALED", "").strip().lower() in ("1", "true", "yes", "on"),
            evaluation_ttl_s=evaluation_ttl,
            max_evaluations=max_evaluations,
        )
        config.root_env()
        shown = host if host not in ("0.0.0.0", "::") else "127.0.0.1"
        base = f"http://{shown}:{port}" if port else "the address uvicorn prints below"
        console.print(f"playground: {base}/web/   API docs: {base}/docs" if port else
                      f"playground at /web/ and API docs at /docs of {base}", highlight=False)  # fmt: skip
        run_server(host=host, port=port, workers=workers, config=config)
    except ValueError as exc:
        raise _fail(str(exc)) from exc


@app.command()
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
        raise _fail(f"the viewer needs the 'server' extra: pip install 'integrity-gym[server]' ({exc})") from exc
    try:
        serve_viewer(runs, host=host, port=port, db=db, open_browser=open_browser)
    except ValueError as exc:
        raise _fail(str(exc)) from exc


@app.command()
def train(
    task: Annotated[str, typer.Option(help="A task id, single- or multi-step.")] = "selective_verification/text-v3",
    model: Annotated[str, typer.Option(help="'smollm2' (the bundled GGUF), a local folder or a hub id.")] = "smollm2",
    steps: Annotated[int, typer.Option(help="Optimizer steps.")] = 20,
    prompts: Annotated[int, typer.Option(help="Train items per step.")] = 2,
    generations: Annotated[int, typer.Option(help="Completions per item (the GRPO group).")] = 8,
    max_new_tokens: Annotated[int, typer.Option(help="Completion length limit.")] = 48,
    lr: Annotated[float, typer.Option(help="Learning rate.")] = 1e-5,
    lora_r: Annotated[int | None, typer.Option(help="LoRA rank (default: full fine-tune).")] = None,
    prefill: Annotated[
        str | None, typer.Option(help="Start of every reply ('' for none), in training and eval (default: the task's).")
    ] = None,
    max_turns: Annotated[
        int | None, typer.Option(help="Turn cap of a multi-step episode, in training and eval (default: the task's).")
    ] = None,
    seed: Annotated[int, typer.Option(help="First train seed.")] = 0,
    eval_episodes: Annotated[int, typer.Option(help="Eval-partition items before and after (0: none).")] = 50,
    bf16: Annotated[bool, typer.Option(help="bf16 autocast (float32 weights).")] = True,
    out: Annotated[Path, typer.Option(help="Folder for the model, the logs and the eval runs.")] = Path(
        "outputs/train"
    ),
    db: Annotated[Path, typer.Option(help="Results database of the eval runs.")] = Path("outputs/results.sqlite"),
) -> None:
    """Train a model with GRPO on a task, single- or multi-step (needs the train extra; docs/training.md)."""
    from integrity_gym.train.grpo import TrainConfig
    from integrity_gym.train.grpo import train as run_training

    try:
        config = TrainConfig.build(
            task=task, model=model, steps=steps, prompts_per_step=prompts, generations=generations,
            max_new_tokens=max_new_tokens, learning_rate=lr, lora_r=lora_r, seed=seed, eval_episodes=eval_episodes,
            bf16=bf16, max_turns=max_turns, **({} if prefill is None else {"prefill": prefill or None}),
        )  # fmt: skip
        result = run_training(config, out, db_path=db)
    except (ValueError, ImportError, FileNotFoundError) as exc:
        raise _fail(str(exc)) from exc
    for stage in (result.before, result.after):
        if stage:
            low, high = stage["score_ci95"] or (None, None)
            console.print(
                f"{stage['label']}: mean score {stage['mean_score']:.3f} (95% CI {low}, {high}) over "
                f"{stage['episodes']} eval items; malformed {stage['malformed_rate']:.2f}, abstain "
                f"{stage['abstain_rate']:.2f}"
            )
    console.print(f"model saved in {result.model_dir}; per-step log {result.log_path}")
    try:
        from integrity_gym.report.curves import draw_training

        console.print(f"training curves: {draw_training(out, out / 'training.png')}")
    except ImportError as exc:
        console.print(f"no training curves ({exc})")


def main() -> None:
    """Entry point for ``python -m integrity_gym``."""
    app()
