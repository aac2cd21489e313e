"""Play one episode: build its environment and agent, step until done, grade, record everything.

``play_episode`` returns the episode's ``EpisodeRecord`` (one line of ``episodes.jsonl``). An
exception inside the episode is caught and recorded in ``error``; ``RunInterrupted`` is raised
when the run is being stopped between steps.
"""

from __future__ import annotations

import json
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from integrity_gym.bench.config import BenchConfig
from integrity_gym.bench.protocols import EpisodeAgent, EpisodeEnv, Explains, ParsesActions
from integrity_gym.bench.records import EpisodeRecord, StepRecord, Usage
from integrity_gym.bench.setup import build_agent, make_env, reset_options
from integrity_gym.core.registry import TaskSpec
from integrity_gym.core.seeding import derive_seed
from integrity_gym.core.types import Grade, StepResult

if TYPE_CHECKING:
    from integrity_gym.agents.llm import LLMSettings


class RunInterrupted(Exception):
    """Raised inside an episode when the run is being stopped (Ctrl-C)."""


def jsonable(value: Any) -> Any:
    """A model as the JSON a run stores (``None`` fields left out); anything else as it is."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    return value


def _action_text(env: EpisodeEnv, action: Any) -> str:
    if isinstance(action, BaseModel):
        return str(action)
    if isinstance(action, str):
        return "RAW:" + action.strip()
    try:
        return str(env.parse_action(action)) if isinstance(env, ParsesActions) else json.dumps(action)
    except Exception:
        return json.dumps(action, sort_keys=True, default=str)


def explanation(env: EpisodeEnv) -> str | None:
    """The finished episode explained by its environment; None where it cannot say (a remote env)."""
    if not isinstance(env, Explains):
        return None
    try:
        return env.explain()
    except Exception:  # an explanation must never cost the episode its record
        return None


def _reset(env: EpisodeEnv, config: BenchConfig, seed: int, handle: str | None) -> Any:
    """The episode's first observation: item ``seed``, or a sealed evaluation's ``handle`` (a server's env)."""
    if handle is None:
        return env.reset(seed=seed, options=reset_options(config))
    from integrity_gym.client.client import RemoteEnv

    if not isinstance(env, RemoteEnv):
        raise TypeError("a sealed episode is played against a server (--server)")
    return env.reset(handle=handle)


@dataclass
class _Usage:
    """The model use of an episode, summed over its steps."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float | None = None
    llm_calls: int = 0

    def add(self, call: dict[str, Any]) -> None:
        self.llm_calls += 1
        if call.get("prompt_tokens") is not None:
            self.prompt_tokens = (self.prompt_tokens or 0) + int(call["prompt_tokens"])
        if call.get("completion_tokens") is not None:
            self.completion_tokens = (self.completion_tokens or 0) + int(call["completion_tokens"])
        if call.get("latency_s") is not None:
            self.latency_s = (self.latency_s or 0) + float(call["latency_s"])

    def record(self) -> Usage:
        latency = None if self.latency_s is None else round(self.latency_s, 4)
        return Usage(prompt_tokens=self.prompt_tokens, completion_tokens=self.completion_tokens,
                     latency_s=latency, llm_calls=self.llm_calls)  # fmt: skip


@dataclass
class _Play:
    """What an episode gathers while it is played."""

    trajectory: list[StepRecord] = field(default_factory=list)
    usage: _Usage = field(default_factory=_Usage)
    reset_observation: Any = None
    total: float = 0.0
    truncated: bool = False

    def add_step(self, env: EpisodeEnv, config: BenchConfig, action: Any, result: StepResult[Any],
                 call: dict[str, Any] | None) -> None:  # fmt: skip
        self.total += result.reward
        if call is not None:
            self.usage.add(call)
        keep = config.keep_observations
        self.trajectory.append(
            StepRecord(
                step=len(self.trajectory) + 1, action=jsonable(action), action_text=_action_text(env, action),
                reward=result.reward, reward_breakdown=result.info.get("reward_breakdown", {}), done=result.done,
                error=result.info.get("error"), observation=jsonable(result.observation) if keep else None, llm=call,
            )
        )  # fmt: skip


def _agent_for(
    config: BenchConfig, env: EpisodeEnv, seed: int, epoch: int, llm_settings: LLMSettings | None
) -> EpisodeAgent:
    if epoch and llm_settings is not None and llm_settings.seed is not None:
        # Each repeat samples afresh: the same sampling seed would make every epoch identical.
        llm_settings = llm_settings.model_copy(update={"seed": llm_settings.seed + epoch})
    # A repeat plays the same item with an agent seeded afresh (epoch 0 keeps the item's seed, so
    # a one-epoch run is unchanged): otherwise a seeded agent replays the first epoch exactly.
    agent_seed = seed if epoch == 0 else derive_seed("bench/agent", seed, epoch) % 2**31
    return EpisodeAgent(build_agent(config.agent, env, agent_seed, llm_settings))


def _step_until_done(
    env: EpisodeEnv, agent: EpisodeAgent, obs: Any, config: BenchConfig, play: _Play, stop: threading.Event | None
) -> None:
    cap = config.step_cap()
    while not env.done:
        if stop is not None and stop.is_set():
            raise RunInterrupted
        if len(play.trajectory) >= cap:
            play.truncated = True
            return
        action = agent.act(obs)
        call = agent.step_record()
        result = env.step(action)
        agent.observe(result)
        obs = result.observation
        play.add_step(env, config, action, result, call)


def graded(env: EpisodeEnv) -> dict[str, Any]:
    """The finished episode's grade as a run record stores it: score, success, threshold, grade, explanation."""
    grade: Grade = env.grade()
    return {"score": grade.score, "success": grade.success, "threshold": grade.threshold,
            "grade": grade.model_dump(mode="json"), "explanation": explanation(env)}  # fmt: skip


def play_episode(
    spec: TaskSpec,
    config: BenchConfig,
    index: int,
    seed: int,
    *,
    epoch: int = 0,
    llm_settings: LLMSettings | None = None,
    stop: threading.Event | None = None,
    handle: str | None = None,
) -> EpisodeRecord:
    """Play one episode and return its full record (a line of ``episodes.jsonl``).

    An exception inside the episode is caught and recorded in ``error``; ``RunInterrupted`` is
    raised when ``stop`` is set between steps. With ``handle`` the episode is one of a sealed
    evaluation: it starts from the handle, and its grade comes when the evaluation closes.
    """
    started = time.perf_counter()
    outcome: dict[str, Any] = {}
    play = _Play()
    env: EpisodeEnv | None = None
    try:
        env = make_env(spec, config)
        agent = _agent_for(config, env, seed, epoch, llm_settings)
        obs = _reset(env, config, seed, handle)
        if config.keep_observations:
            play.reset_observation = jsonable(obs)
        _step_until_done(env, agent, obs, config, play, stop)
        if handle is None:  # a sealed episode's grade is released with the whole evaluation
            outcome = graded(env)
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
    return EpisodeRecord(
        task_id=spec.id, env=spec.env, tier=spec.tier, index=index, seed=seed, epoch=epoch, agent=config.agent,
        threshold=outcome.pop("threshold", spec.success_threshold), total_return=play.total,
        steps=len(play.trajectory), truncated=play.truncated, usage=play.usage.record(),
        reset_observation=play.reset_observation, trajectory=play.trajectory,
        wall_s=round(time.perf_counter() - started, 4), **outcome,
    )  # fmt: skip


__all__ = ["RunInterrupted", "play_episode"]
