"""Run agents over tasks: episodes in parallel threads, full trajectories, summaries, run folders.

``run_bench`` is the library entry point (``igym bench`` calls it). One run writes, under its
folder: ``run.log`` (``[START]/[STEP]/[END]`` blocks, then the summary), ``episodes.jsonl`` (one
line per episode with the whole trajectory), ``summary.json`` (its figures come from
``bench.summary``) and ``config.json`` (the resolved configuration, the seeds and the command
that reproduces the run). Episodes are also recorded in
the SQLite results database as they finish. Ctrl-C stops the run after the steps in flight and
keeps every finished episode; an episode that raises is recorded with its error and the run
goes on, but the run's status is ``failed`` when more than ``max_failures`` episodes failed.
Everything that would make every episode fail (agent, config, extras, server, model endpoint) is
checked before the first episode (``preflight``). ``resume_bench`` continues an interrupted run
in its own folder, playing only the episodes that are missing or failed.
"""

from __future__ import annotations

import json
import os
import platform
import secrets
import shlex
import signal
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from integrity_gym.bench import logs
from integrity_gym.bench.records import EpisodeRecord, StepRecord, TaskSummary, Usage
from integrity_gym.bench.setup import SetupError, build_agent, make_env, preflight, reset_options, select_tasks
from integrity_gym.bench.summary import (
    summarize_records,
    summary_lines,
    tier_separation,
    tier_table,
    write_summary,
)
from integrity_gym.core.env import describe_validation_error
from integrity_gym.core.registry import TaskSpec, get_spec
from integrity_gym.core.seeding import PartitionChoice, data_mode, derive_seed
from integrity_gym.core.types import Grade

if TYPE_CHECKING:
    from integrity_gym.client.evaluation import SealedEvaluation

_SECRET_WORDS = ("TOKEN", "KEY", "SECRET", "PASSWORD")


class RunInterrupted(Exception):
    """Raised inside an episode when the run is being stopped (Ctrl-C)."""


class BenchConfig(BaseModel):
    """Everything that decides what a run plays; saved as ``config.json`` and replayable."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tasks: str = Field("*", description="Glob (or comma-separated globs) over task ids.")
    agent: str = Field("heuristic", description="Agent name (heuristic, random, oracle, noop, llm, presidio, ...).")
    episodes: int = Field(5, ge=1, le=100_000, description="Episodes per task.")
    epochs: int = Field(1, ge=1, le=1000, description="Times each seed is played (pass@k, per-item variance).")
    max_failures: int = Field(0, ge=0, description="Failed episodes allowed before the run counts as failed.")
    seed: int = Field(0, ge=0, description="Seed of the first episode; episode i uses seed + i.")
    seeds: tuple[int, ...] | None = Field(None, description="Explicit episode seeds (overrides seed/episodes).")
    partition: PartitionChoice | None = Field("eval", description="Partition of generated items (None: env default).")
    max_steps: int | None = Field(None, ge=1, description="Step cap per episode on top of the task's own.")
    server: str | None = Field(None, description="URL of an `igym serve` to play against (None: in-process).")
    sealed: bool = Field(
        False, description="Play a sealed evaluation of the server: it draws the items, grades at the end."
    )
    concurrency: int = Field(1, ge=1, le=512, description="Episodes played at once.")
    env_config: dict[str, Any] = Field(default_factory=dict, description="Config overrides for every env.")
    keep_observations: bool = Field(True, description="Store every observation in episodes.jsonl.")
    llm: dict[str, Any] | None = Field(None, description="Resolved llm agent settings (key excluded).")
    local_llm: bool = Field(False, description="The llm agent played the bundled tiny model (--local-llm).")

    @field_validator("seeds")
    @classmethod
    def _check_seeds(cls, value: tuple[int, ...] | None) -> tuple[int, ...] | None:
        if value is not None and (not value or min(value) < 0 or len(set(value)) != len(value)):
            raise ValueError("seeds must be distinct non-negative integers, at least one")
        return value

    @model_validator(mode="after")
    def _check_sealed(self) -> BenchConfig:
        if self.sealed:
            if not self.server:
                raise ValueError("sealed: a sealed evaluation is played against a server; pass --server URL")
            if self.epochs > 1 or self.seeds is not None:
                raise ValueError("sealed: the server chooses the items and hands each out once: no --epochs or --seeds")
        return self

    def seed_list(self) -> list[int]:
        """The seed of every episode index."""
        return list(self.seeds) if self.seeds is not None else [self.seed + i for i in range(self.episodes)]

    @classmethod
    def build(cls, **values: Any) -> BenchConfig:
        """Validate, turning pydantic's error into a ValueError naming the option."""
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            raise ValueError(f"invalid bench options: {describe_validation_error(exc)}") from exc


# ---------------------------------------------------------------------- one episode
def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    return value


def _action_text(env: Any, action: Any) -> str:
    if isinstance(action, BaseModel):
        return str(action)
    if isinstance(action, str):
        return "RAW:" + action.strip()
    try:
        return str(env.parse_action(action)) if hasattr(env, "parse_action") else json.dumps(action)
    except Exception:
        return json.dumps(action, sort_keys=True, default=str)


def play_episode(
    spec: TaskSpec,
    config: BenchConfig,
    index: int,
    seed: int,
    *,
    epoch: int = 0,
    llm_settings: Any = None,
    stop: threading.Event | None = None,
    handle: str | None = None,
) -> EpisodeRecord:
    """Play one episode and return its full record (a line of ``episodes.jsonl``).

    An exception inside the episode is caught and recorded in ``error``; ``RunInterrupted`` is
    raised when ``stop`` is set between steps. With ``handle`` the episode is one of a sealed
    evaluation: it starts from the handle, and its grade comes when the evaluation closes.
    """
    started = time.perf_counter()
    cap = min(c for c in (config.max_steps, (config.llm or {}).get("max_steps"), 10**9) if c is not None)
    outcome: dict[str, Any] = {}
    trajectory: list[StepRecord] = []
    usage: dict[str, Any] = {"prompt_tokens": None, "completion_tokens": None, "latency_s": None, "llm_calls": 0}
    reset_observation: Any = None
    total = 0.0
    truncated = False
    env: Any = None
    try:
        env = make_env(spec, config)
        options = reset_options(config)
        if epoch and llm_settings is not None and llm_settings.seed is not None:
            # Each repeat samples afresh: the same sampling seed would make every epoch identical.
            llm_settings = llm_settings.model_copy(update={"seed": llm_settings.seed + epoch})
        # A repeat plays the same item with an agent seeded afresh (epoch 0 keeps the item's seed, so
        # a one-epoch run is unchanged): otherwise a seeded agent replays the first epoch exactly.
        agent_seed = seed if epoch == 0 else derive_seed("bench/agent", seed, epoch) % 2**31
        agent = build_agent(config.agent, env, agent_seed, llm_settings)
        obs = env.reset(handle=handle) if handle else env.reset(seed=seed, options=options)
        if config.keep_observations:
            reset_observation = _jsonable(obs)
        while not env.done:
            if stop is not None and stop.is_set():
                raise RunInterrupted
            if len(trajectory) >= cap:
                truncated = True
                break
            action = agent.act(obs)
            call = agent.pop_step_record() if hasattr(agent, "pop_step_record") else None
            result = env.step(action)
            if hasattr(agent, "observe"):
                agent.observe(result)
            obs = result.observation
            total += result.reward
            if call is not None:
                usage["llm_calls"] += 1
                for key in ("prompt_tokens", "completion_tokens", "latency_s"):
                    if call.get(key) is not None:
                        usage[key] = (usage[key] or 0) + call[key]
            trajectory.append(
                StepRecord(
                    step=len(trajectory) + 1,
                    action=_jsonable(action),
                    action_text=_action_text(env, action),
                    reward=result.reward,
                    reward_breakdown=result.info.get("reward_breakdown", {}),
                    done=result.done,
                    error=result.info.get("error"),
                    observation=_jsonable(obs) if config.keep_observations else None,
                    llm=call,
                )
            )
        if handle is None:  # a sealed episode's grade is released with the whole evaluation
            grade: Grade = env.grade()
            outcome = {"score": grade.score, "success": grade.success, "threshold": grade.threshold,
                       "grade": grade.model_dump(mode="json"), "explanation": _explanation(env)}  # fmt: skip
    except RunInterrupted:
        raise
    except Exception as exc:
        outcome = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc(limit=8)}
    finally:
        if env is not None:
            try:
                env.close()
            except Exception as exc:  # closing must not hide the episode's own outcome
                outcome["close_error"] = f"{type(exc).__name__}: {exc}"
    if usage["latency_s"] is not None:
        usage["latency_s"] = round(usage["latency_s"], 4)
    return EpisodeRecord(
        task_id=spec.id, env=spec.env, tier=spec.tier, index=index, seed=seed, epoch=epoch, agent=config.agent,
        threshold=outcome.pop("threshold", spec.success_threshold), total_return=total, steps=len(trajectory),
        truncated=truncated, usage=Usage(**usage), reset_observation=reset_observation, trajectory=trajectory,
        wall_s=round(time.perf_counter() - started, 4), **outcome,
    )  # fmt: skip


def _explanation(env: Any) -> str | None:
    """The finished episode explained by its environment; None where it cannot say (a remote env)."""
    explain = getattr(env, "explain", None)
    if explain is None:
        return None
    try:
        text: str = explain()
    except Exception:  # an explanation must never cost the episode its record
        return None
    return text


# ---------------------------------------------------------------------- a whole run
@dataclass
class RunResult:
    """What ``run_bench`` returns."""

    run_id: str
    out_dir: Path
    config: BenchConfig
    summaries: dict[str, TaskSummary]
    records: list[EpisodeRecord]
    status: str  # "complete", "failed" (too many failed episodes, or a summary failed) or "interrupted"
    command: str
    tiers: dict[str, dict[str, Any]]
    separation: dict[str, dict[str, Any]]
    resumed: int = 0  # episodes kept from an earlier, interrupted invocation

    @property
    def failed(self) -> int:
        """Episodes that failed."""
        return sum(1 for r in self.records if r.error)


#: Called from the main thread: ("start", total, specs) once, then ("episode", record) per episode.
ProgressHook = Callable[..., None]


def env_variables(specs: Sequence[TaskSpec]) -> dict[str, str]:
    """Environment variables that configure the selected environments (e.g. PII_WINDOW_SIZE)."""
    prefixes = {p for s in specs for p in (s.env.upper() + "_", s.env.split("_")[0].upper() + "_")}
    return {
        k: v
        for k, v in sorted(os.environ.items())
        if any(k.startswith(p) for p in prefixes) and not any(w in k for w in _SECRET_WORDS)
    }


def reproduce_command(
    config: BenchConfig,
    specs: Sequence[TaskSpec],
    env_vars: Mapping[str, str],
    out: Path | None = None,
    *,
    overwrite: bool = False,
) -> str:
    """One shell line that plays exactly the same episodes again (into ``out``, when one was chosen).

    A run made with ``--overwrite`` (``make bench``) replays with it too, so its printed command
    runs as it is; without, a replay into the same folder is refused and says how to proceed.
    """
    parts = [f"{k}={shlex.quote(v)}" for k, v in env_vars.items()]
    parts += ["igym", "bench"]
    for spec in specs:  # one option per task, so the printed command breaks between them
        parts += ["--tasks", shlex.quote(spec.id)]
    parts += ["--agent", config.agent]
    if config.seeds is not None:
        parts += ["--seeds", ",".join(map(str, config.seeds))]
    else:
        parts += ["--episodes", str(config.episodes), "--seed", str(config.seed)]
    if config.epochs > 1:
        parts += ["--epochs", str(config.epochs)]
    parts += ["--partition", config.partition or "default"]
    if config.max_steps is not None:
        parts += ["--max-steps", str(config.max_steps)]
    if config.server:
        parts += ["--server", shlex.quote(config.server)]
    if config.sealed:
        parts.append("--sealed")
    for key, value in sorted(config.env_config.items()):
        parts += ["--config", shlex.quote(f"{key}={json.dumps(value)}")]
    if not config.keep_observations:
        parts.append("--no-observations")
    if config.local_llm:
        parts.append("--local-llm")
    if config.max_failures:
        parts += ["--max-failures", str(config.max_failures)]
    parts += ["--concurrency", str(config.concurrency)]
    if out is not None:
        parts += ["--out", shlex.quote(str(out))]
        if overwrite:
            parts.append("--overwrite")
    return " ".join(parts)


def run_data_mode(config: BenchConfig) -> str:
    """How the run's items were derived: ``public``, ``secret:<fingerprint>``, or the server's.

    In-process items follow this process's ``IGYM_EVAL_SECRET``; a server derives its own, and
    says nothing about it to clients.
    """
    return "server (not reported)" if config.server else data_mode()


def new_run_id(agent: str, model: str | None) -> str:
    """A sortable, unique run id: UTC time, agent (and model), four random hex digits."""
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    who = agent if not model else f"{agent}-{model.rsplit('/', 1)[-1]}"
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in who)[:40]
    return f"{stamp}-{safe}-{secrets.token_hex(2)}"


def _prepare_folder(out: Path, *, overwrite: bool, resume: bool) -> None:
    """Create the run folder, refusing to replace an earlier run unless asked to."""
    if out.exists() and not out.is_dir():
        raise SetupError(f"--out {out} is a file, not a folder")
    if not resume and (out / "config.json").exists() and not overwrite:
        raise SetupError(
            f"{out} already holds a run; pass --overwrite to replace it, --resume {out} to finish it, "
            "or choose another --out"
        )
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise SetupError(f"cannot write the run folder {out}: {exc.strerror or exc}; choose another --out") from exc
    if overwrite and not resume:
        for name in ("config.json", "episodes.jsonl", "summary.json", "run.log"):
            (out / name).unlink(missing_ok=True)


def read_episodes(path: Path) -> list[EpisodeRecord]:
    """The records of an ``episodes.jsonl``; a line cut short by a crash is skipped."""
    if not path.is_file():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(EpisodeRecord.model_validate_json(line))
        except ValidationError:
            continue  # the last line of a killed run may be half written
    return out


def _sorted(records: Sequence[EpisodeRecord]) -> list[EpisodeRecord]:
    return sorted(records, key=lambda r: (r.task_id, r.index))


def _open_db(db_path: Path | None) -> Any:
    if db_path is None:
        return None
    from integrity_gym.bench.results import ResultsDB

    try:
        return ResultsDB(db_path)
    except OSError as exc:
        raise SetupError(f"cannot open the results database {db_path}: {exc}; pass another --db or --no-db") from exc


def run_bench(
    pattern: str = "*",
    agent: str = "heuristic",
    *,
    episodes: int = 5,
    seed: int = 0,
    out_dir: Path | None = None,
    config: dict[str, Any] | None = None,
    bench: BenchConfig | None = None,
    db_path: Path | None = None,
    llm_settings: Any = None,
    progress: ProgressHook | None = None,
    stop: threading.Event | None = None,
    command: str | None = None,
    overwrite: bool = False,
    check: bool = True,
) -> RunResult:
    """Play every selected task and write the run folder (and the database row when ``db_path``).

    Either pass ``bench`` or the foundation's arguments (``pattern``, ``agent``, ``episodes``,
    ``seed``, ``config``). Setup is checked before anything is written (``preflight``; ``check``
    turns that off). An existing run in ``out_dir`` is refused unless ``overwrite``. A
    ``KeyboardInterrupt`` stops the run cleanly: the status becomes ``interrupted`` and
    everything finished is written.
    """
    if bench is None:
        bench = BenchConfig.build(tasks=pattern, agent=agent, episodes=episodes, seed=seed, env_config=config or {})
    specs = select_tasks(bench.tasks)
    if bench.agent == "llm" and llm_settings is None:
        from integrity_gym.agents.llm import LLMSettings

        llm_settings = LLMSettings.from_env()
    if llm_settings is not None and bench.llm is None:
        bench = bench.model_copy(update={"llm": llm_settings.public()})
    if check:
        preflight(bench, specs, llm_settings)
    evaluation = _open_evaluation(bench, specs) if bench.sealed else None
    model = (bench.llm or {}).get("model_name")
    run_id = new_run_id(bench.agent, model)
    out = out_dir or Path("outputs") / run_id
    db = _open_db(db_path)  # before the folder: a bad --db leaves nothing behind
    try:
        _prepare_folder(out, overwrite=overwrite, resume=False)
    except SetupError:
        if db is not None:
            db.close()
        raise
    env_vars = env_variables(specs)
    if llm_settings is not None:
        llm_vars = llm_settings.as_env_vars()
        if bench.local_llm:  # --local-llm picks the address and the model itself
            llm_vars = {k: v for k, v in llm_vars.items() if k not in ("API_BASE_URL", "MODEL_NAME")}
        env_vars = {**llm_vars, **env_vars}
    replay = reproduce_command(bench, specs, env_vars, out_dir, overwrite=overwrite)
    resolved = {
        "run_id": run_id, "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "bench": bench.model_dump(mode="json"), "tasks": [s.model_dump(mode="json") for s in specs],
        "seeds": bench.seed_list(), "environment": env_vars, "reproduce": replay, "invoked_as": command,
        "python": platform.python_version(), "igym_version": _version(),
        "data_mode": evaluation.sealed_mode if evaluation else run_data_mode(bench),
    }  # fmt: skip
    if evaluation is not None:
        resolved["evaluation"] = {"id": evaluation.evaluation_id, "server": evaluation.url}
    (out / "config.json").write_text(json.dumps(resolved, indent=2, sort_keys=True) + "\n")
    return _play_run(resolved, bench, specs, out, db, [], llm_settings, progress, stop, evaluation)


def _open_evaluation(bench: BenchConfig, specs: Sequence[TaskSpec]) -> SealedEvaluation:
    """Ask the sealed server for the run's episodes; ``SetupError`` with the server's reason if it refuses."""
    from integrity_gym.client.evaluation import SealedEvaluation

    assert bench.server is not None  # the config's validator requires it
    try:
        evaluation = SealedEvaluation.open(bench.server, [s.id for s in specs], bench.episodes)
    except (ConnectionError, RuntimeError) as exc:
        raise SetupError(f"the server {bench.server} opened no sealed evaluation: {exc}") from exc
    served = {(e.task_id, e.index) for e in evaluation.episodes}
    missing = [(s.id, i) for s in specs for i in range(bench.episodes) if (s.id, i) not in served]
    if missing:
        raise SetupError(f"the sealed evaluation {evaluation.evaluation_id} lacks episodes {missing[:3]}...")
    return evaluation


def _release(records: list[EpisodeRecord], evaluation: SealedEvaluation) -> list[EpisodeRecord]:
    """Close the evaluation and put each episode's released grade and explanation in its record."""
    results = {(r.task_id, r.index): r for r in evaluation.close()}
    out = []
    for record in records:
        result = results.get((record.task_id, record.index))
        if record.error or result is None or result.grade is None:
            out.append(record)
            continue
        grade = Grade.model_validate(result.grade)
        explanation = result.explanation
        if explanation is not None and not isinstance(explanation, str):
            explanation = json.dumps(explanation, indent=1)
        out.append(record.model_copy(update={
            "score": grade.score, "success": grade.success, "threshold": grade.threshold,
            "grade": grade.model_dump(mode="json"), "explanation": explanation,
        }))  # fmt: skip
    return out


def resume_bench(
    out_dir: Path,
    *,
    db_path: Path | None = None,
    llm_settings: Any = None,
    progress: ProgressHook | None = None,
    stop: threading.Event | None = None,
    check: bool = True,
) -> RunResult:
    """Continue the run in ``out_dir`` (interrupted, killed or failed): play what is missing or failed.

    The configuration is the run's own ``config.json``; finished episodes are kept as they are, so
    the resulting ``summary.json`` is the one an uninterrupted run would have written.
    """
    config_path = out_dir / "config.json"
    if not config_path.is_file():
        raise SetupError(f"{out_dir} holds no run to resume (no config.json); start one with `igym bench --out`")
    try:
        resolved = json.loads(config_path.read_text())
        bench = BenchConfig.model_validate(resolved["bench"])
    except (ValueError, KeyError) as exc:
        raise SetupError(f"{config_path} is not a run configuration this igym can resume: {exc}") from exc
    if bench.sealed:
        raise SetupError(
            f"{out_dir} is a sealed evaluation: its handles were handed out once and cannot be played again; "
            "start a new one with `igym bench --server URL --sealed`"
        )
    specs = [get_spec(t["id"]) for t in resolved["tasks"]]
    if bench.agent == "llm" and llm_settings is None:
        from integrity_gym.agents.llm import LLMSettings

        # The run's recorded settings win; the key (never recorded) comes from the environment.
        llm_settings = LLMSettings.from_env(**(bench.llm or {}))
    if check:
        preflight(bench, specs, llm_settings)
    db = _open_db(db_path)
    kept = [r for r in read_episodes(out_dir / "episodes.jsonl") if not r.error]
    return _play_run(resolved, bench, specs, out_dir, db, kept, llm_settings, progress, stop)


def _play_run(
    resolved: dict[str, Any],
    bench: BenchConfig,
    specs: list[TaskSpec],
    out: Path,
    db: Any,
    kept: list[EpisodeRecord],
    llm_settings: Any,
    progress: ProgressHook | None,
    stop: threading.Event | None,
    evaluation: SealedEvaluation | None = None,
) -> RunResult:
    run_id, replay = resolved["run_id"], resolved["reproduce"]
    handles = {(e.task_id, e.index): e.handle for e in evaluation.episodes} if evaluation else {}
    model = (bench.llm or {}).get("model_name")
    model_label = model or bench.agent
    seeds = bench.seed_list()
    done_keys = {r.key for r in kept}
    jobs = [
        (spec, epoch * len(seeds) + i, s, epoch)
        for spec in specs
        for epoch in range(bench.epochs)
        for i, s in enumerate(seeds)
        if (spec.id, epoch * len(seeds) + i) not in done_keys
    ]
    records: list[EpisodeRecord] = list(kept)
    if db is not None:
        db.start_run(run_id, created_at=resolved["created_at"], agent=bench.agent, model=model or bench.agent,
                     tasks=[s.id for s in specs], command=replay, out_dir=str(out), config=resolved)  # fmt: skip
        for record in kept:
            db.add_episode(run_id, record)
    stop = stop or threading.Event()
    status = "complete"
    if progress:
        progress("start", len(jobs) + len(kept), specs)
        for record in kept:
            progress("episode", record)
    episodes_path, log_path = out / "episodes.jsonl", out / "run.log"
    with episodes_path.open("w") as ep_file, log_path.open("w") as log_file:
        for record in kept:
            ep_file.write(record.model_dump_json() + "\n")
        ep_file.flush()
        pool = ThreadPoolExecutor(max_workers=bench.concurrency, thread_name_prefix="igym-episode")
        pending: set[Future[EpisodeRecord]] = set()
        queue = list(reversed(jobs))

        def submit() -> None:
            while queue and len(pending) < bench.concurrency * 2:
                spec, index, s, epoch = queue.pop()
                handle = handles.get((spec.id, index))
                episode = partial(play_episode, epoch=epoch, llm_settings=llm_settings, stop=stop, handle=handle)
                pending.add(pool.submit(episode, spec, bench, index, s))

        def collect(future: Future[EpisodeRecord]) -> None:
            try:
                record = future.result()
            except RunInterrupted:
                return
            records.append(record)
            ep_file.write(record.model_dump_json() + "\n")
            ep_file.flush()
            log_file.write("\n".join(logs.episode_block(record, model_label)) + "\n")
            log_file.flush()
            if db is not None and evaluation is None:  # a sealed episode is recorded once graded
                db.add_episode(run_id, record)
            if progress:
                progress("episode", record)

        # Ctrl-C only sets ``stop``: the main loop notices it between episodes, so a record is
        # never half written (file, log and database always agree). A second Ctrl-C forces out.
        previous = _install_interrupt(stop)
        try:
            submit()
            while pending and not stop.is_set():
                finished, _ = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                for future in finished:
                    pending.discard(future)
                    collect(future)
                if not stop.is_set():
                    submit()
        except KeyboardInterrupt:
            stop.set()
        finally:
            if stop.is_set():
                status = "interrupted"
                queue.clear()
                for future in list(pending):
                    future.cancel()
                # Episodes in flight stop at their next step; keep any that finished meanwhile.
                for future in list(pending):
                    if not future.cancelled():
                        wait([future])
                        collect(future)
            pool.shutdown(wait=False, cancel_futures=True)
            _restore_interrupt(previous)
    if evaluation is not None:
        records = _release(records, evaluation)
        if db is not None:
            for record in records:
                db.add_episode(run_id, record)
    records = _sorted(records)
    # Rewrite in a stable order so two runs of the same command give identical files.
    episodes_path.write_text("".join(r.model_dump_json() + "\n" for r in records))
    by_task = {spec.id: [r for r in records if r.task_id == spec.id] for spec in specs}
    summaries = {spec.id: summarize_records(spec, by_task[spec.id]) for spec in specs if by_task[spec.id]}
    failed = sum(1 for r in records if r.error)
    if status == "complete" and (failed > bench.max_failures or any(s.summary_error for s in summaries.values())):
        status = "failed"
    tiers, separation = tier_table(summaries), tier_separation(summaries)
    extra = {
        "run_id": run_id, "status": status, "agent": bench.agent, "model": model_label, "tiers": tiers,
        "tier_separation": separation, "reproduce": replay, "episodes_failed": failed,
    }  # fmt: skip
    write_summary(out, summaries, extra)
    lines = [line for r in records for line in logs.episode_block(r, model_label)]
    lines += summary_lines(summaries, tiers, separation, status, replay)
    log_path.write_text("\n".join(lines) + "\n")
    if db is not None:
        db.finish_run(run_id, status=status, finished_at=datetime.now(UTC).isoformat(timespec="seconds"),
                      summaries=summaries)  # fmt: skip
        db.close()
    return RunResult(run_id, out, bench, summaries, records, status, replay, tiers, separation, len(kept))


#: What stops a run cleanly: Ctrl-C, and SIGTERM (what ``timeout``, ``docker stop`` and a cluster's
#: pre-emption send). Either sets ``stop``; the run finishes its record and is marked interrupted.
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _install_interrupt(stop: threading.Event) -> Any:
    """Make SIGINT and SIGTERM set ``stop`` (main thread only); return the previous handlers."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum: int, frame: Any) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()

    return {sig: signal.signal(sig, handler) for sig in _STOP_SIGNALS}


def _restore_interrupt(previous: Any) -> None:
    for sig, handler in (previous or {}).items():
        signal.signal(sig, handler)


def _version() -> str:
    from integrity_gym import __version__

    return __version__


__all__ = [
    "BenchConfig",
    "RunInterrupted",
    "RunResult",
    "SetupError",
    "TaskSummary",
    "build_agent",
    "get_spec",
    "play_episode",
    "preflight",
    "resume_bench",
    "run_bench",
    "select_tasks",
    "summarize_records",
    "tier_separation",
    "tier_table",
    "write_summary",
]
