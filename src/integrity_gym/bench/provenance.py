"""What a run records about itself: its id, the command that replays it and the environment it ran in.

``new_header`` builds a run's ``RunHeader`` (``config.json``): the resolved configuration, the seeds,
the environment variables that configure it (never a secret), the reproduce command, versions
and how its items were derived.
"""

from __future__ import annotations

import json
import os
import platform
import secrets
import shlex
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from integrity_gym.bench.config import BenchConfig
from integrity_gym.bench.record import RunHeader, SealedReference
from integrity_gym.core.registry import TaskSpec
from integrity_gym.core.seeding import data_mode

if TYPE_CHECKING:
    from integrity_gym.agents.llm import LLMSettings
    from integrity_gym.client.evaluation import SealedEvaluation

_SECRET_WORDS = ("TOKEN", "KEY", "SECRET", "PASSWORD")


def env_variables(specs: Sequence[TaskSpec]) -> dict[str, str]:
    """Environment variables that configure the selected environments (e.g. PII_WINDOW_SIZE)."""
    prefixes = {p for s in specs for p in (s.env.upper() + "_", s.env.split("_")[0].upper() + "_")}
    return {
        k: v
        for k, v in sorted(os.environ.items())
        if any(k.startswith(p) for p in prefixes) and not any(w in k for w in _SECRET_WORDS)
    }


def _config_options(config: BenchConfig) -> list[str]:
    """The options of ``reproduce_command`` after the tasks and agent, up to ``--concurrency``."""
    parts = []
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
    return [*parts, "--concurrency", str(config.concurrency)]


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
    parts += ["--agent", config.agent, *_config_options(config)]
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


def _run_env_vars(bench: BenchConfig, specs: Sequence[TaskSpec], llm_settings: LLMSettings | None) -> dict[str, str]:
    """The environment variables the reproduce command sets: the model's, then the environments'."""
    env_vars = env_variables(specs)
    if llm_settings is None:
        return env_vars
    llm_vars = llm_settings.as_env_vars()
    if bench.local_llm:  # --local-llm picks the address and the model itself
        llm_vars = {k: v for k, v in llm_vars.items() if k not in ("API_BASE_URL", "MODEL_NAME")}
    return {**llm_vars, **env_vars}


def new_header(
    bench: BenchConfig,
    specs: Sequence[TaskSpec],
    llm_settings: LLMSettings | None,
    out_dir: Path | None,
    *,
    overwrite: bool,
    command: str | None,
    evaluation: SealedEvaluation | None,
) -> RunHeader:
    """A new run's header (its ``config.json``)."""
    from integrity_gym import __version__

    env_vars = _run_env_vars(bench, specs, llm_settings)
    return RunHeader(
        run_id=new_run_id(bench.agent, bench.model_name), bench=bench,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        tasks=[s.model_dump(mode="json") for s in specs], seeds=bench.seed_list(), environment=env_vars,
        reproduce=reproduce_command(bench, specs, env_vars, out_dir, overwrite=overwrite), invoked_as=command,
        python=platform.python_version(), igym_version=__version__,
        data_mode=evaluation.sealed_mode if evaluation else run_data_mode(bench),
        evaluation=SealedReference(id=evaluation.evaluation_id, server=evaluation.url) if evaluation else None,
    )  # fmt: skip
