"""Everything checked before a run's first episode, and the pieces episodes are built from.

A setup problem (unknown agent, bad ``--config``, a missing extra, a dead ``--server``, a model
endpoint that does not answer) would otherwise fail every episode one by one; ``preflight``
finds it first and raises one ``SetupError`` that says what to do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

import integrity_gym
from integrity_gym.agents.base import Agent, make_agent
from integrity_gym.bench.config import BenchConfig
from integrity_gym.bench.protocols import EpisodeEnv
from integrity_gym.core.registry import TaskSpec, get_spec, list_tasks, make

if TYPE_CHECKING:
    from integrity_gym.agents.llm import LLMSettings
    from integrity_gym.core.env import Env


class SetupError(ValueError):
    """The run cannot start: a check before the first episode failed (the message says what to do)."""


def build_agent(name: str, env: EpisodeEnv, seed: int, llm_settings: LLMSettings | None = None) -> Agent:
    """The agent ``name`` for ``env``; ``llm`` takes resolved settings so all episodes share them."""
    if name == "llm":
        from integrity_gym.agents.llm import LLMAgent

        return LLMAgent(env, seed, settings=llm_settings)
    # ``make_agent`` types its env as an in-process Env; its agents read the spec (the oracle also
    # the state), which a server's RemoteEnv offers the same way.
    return make_agent(name, cast("Env[Any, Any, Any]", env), seed=seed)


def make_env(spec: TaskSpec, config: BenchConfig) -> EpisodeEnv:
    """The environment an episode of ``spec`` plays: in-process with the run's config, or the server's."""
    if config.server:
        return integrity_gym.make(spec.id, url=config.server)
    partition = {} if config.partition is None else {"partition": config.partition}
    return make(spec.id, **{**partition, **config.env_config})


def reset_options(config: BenchConfig) -> dict[str, Any] | None:
    """Options every reset of the run passes."""
    # In-process the partition is env config; a server's envs only take it as a reset option,
    # and every built-in env already defaults to "eval".
    if config.server and config.partition not in (None, "eval"):
        return {"partition": config.partition}
    return None


def select_tasks(pattern: str) -> list[TaskSpec]:
    """Tasks matching ``pattern`` (comma-separated globs); an id without ``-vN`` means its newest version."""
    chosen: dict[str, TaskSpec] = {}
    for part in (p.strip() for p in pattern.split(",")):
        if not part:
            continue
        found = list_tasks(part)
        if not found and not any(c in part for c in "*?["):
            try:
                found = [get_spec(part)]  # what `igym play` accepts, e.g. information_integrity/easy
            except KeyError:
                found = []
        chosen.update((s.id, s) for s in found)
    if not chosen:
        raise SetupError(f"no task matches {pattern!r}; `igym list` shows every task")
    return list(chosen.values())


def preflight(config: BenchConfig, specs: Sequence[TaskSpec], llm_settings: LLMSettings | None = None) -> None:
    """Check, before any episode, everything that would make every episode fail.

    The server answers ``/health``; every selected environment builds with the config and resets
    on the first seed (a sealed run builds it in-process instead: the server refuses such
    resets); the agent builds for it (unknown names, a missing ``llm`` extra); the model endpoint
    answers. Raises ``SetupError`` with one message naming the problem and the fix.
    """
    import httpx

    if config.server:
        try:
            httpx.get(config.server.rstrip("/") + "/health", timeout=10).raise_for_status()
        except httpx.HTTPError as exc:
            raise SetupError(
                f"the server {config.server} does not answer /health ({type(exc).__name__}: {exc}); "
                "start it with `igym serve` or fix --server"
            ) from exc
    if config.epochs > 1 and llm_settings is not None and llm_settings.temperature == 0:
        raise SetupError(
            f"--epochs {config.epochs} at TEMPERATURE=0 would replay the same replies {config.epochs} times "
            "(greedy decoding ignores the sampling seed): set TEMPERATURE above 0 for pass@k, or use --epochs 1"
        )
    checked: set[str] = set()
    for spec in specs:
        if spec.env in checked:
            continue
        checked.add(spec.env)
        env: EpisodeEnv | None = None
        try:
            try:
                if config.sealed:  # the server starts episodes from its handles only: build the agent locally
                    env = make(spec.id)
                else:
                    env = make_env(spec, config)
                    env.reset(seed=config.seed_list()[0], options=reset_options(config))
            except Exception as exc:
                raise SetupError(
                    f"{spec.id} cannot start: {type(exc).__name__}: {exc}"
                    + ("; fix --config or choose other --tasks" if config.env_config else "")
                ) from exc
            try:
                build_agent(config.agent, env, 0, llm_settings)
            except ImportError as exc:
                raise SetupError(str(exc)) from exc
            except Exception as exc:
                hint = "; to evaluate a model, use --model NAME" if "unknown agent" in str(exc) else ""
                raise SetupError(f"agent {config.agent!r} cannot play {spec.id}: {exc}{hint}") from exc
        finally:
            if env is not None:
                env.close()
    if config.agent == "llm" and llm_settings is not None:
        _check_endpoint(llm_settings)


def _check_endpoint(settings: LLMSettings) -> None:
    """The model endpoint answers at all, and does not refuse the key (GET /models)."""
    import httpx

    url = settings.api_base_url.rstrip("/") + "/models"
    headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
    try:
        response = httpx.get(url, headers=headers, timeout=min(30.0, settings.timeout_s))
    except httpx.HTTPError as exc:
        raise SetupError(
            f"the model endpoint {settings.api_base_url} cannot be reached ({type(exc).__name__}: {exc}); "
            "check --base-url (API_BASE_URL), or use --local-llm"
        ) from exc
    if response.status_code in (401, 403):
        raise SetupError(
            f"the model endpoint {settings.api_base_url} refused the key ({response.status_code}); "
            "set HF_TOKEN or OPENAI_API_KEY"
        )
