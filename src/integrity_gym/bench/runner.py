"""Run agents over tasks and summarise the results."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from integrity_gym.agents.base import make_agent
from integrity_gym.core.registry import TaskSpec, get_spec, list_tasks, make
from integrity_gym.core.types import Grade


@dataclass
class EpisodeResult:
    """One finished episode."""

    task_id: str
    seed: int
    score: float
    success: bool
    total_return: float
    steps: int
    breakdown: dict[str, float] = field(default_factory=dict)


@dataclass
class TaskSummary:
    """Aggregates over one task's episodes."""

    episodes: int
    mean_score: float
    success_rate: float
    mean_return: float
    metrics: dict[str, float | None] = field(default_factory=dict)


def run_episode(spec: TaskSpec, agent_name: str, seed: int, **config: Any) -> tuple[EpisodeResult, Grade]:
    """Play one episode of ``spec`` with agent ``agent_name`` from ``seed``."""
    env = make(spec.id, **config)
    try:
        agent = make_agent(agent_name, env, seed=seed)
        obs = env.reset(seed=seed)
        total, steps = 0.0, 0
        while not env.done:
            result = env.step(agent.act(obs))
            obs, total, steps = result.observation, total + result.reward, steps + 1
        grade = env.grade()
    finally:
        env.close()
    episode = EpisodeResult(
        task_id=spec.id,
        seed=seed,
        score=grade.score,
        success=grade.success,
        total_return=total,
        steps=steps,
        breakdown=dict(grade.breakdown),
    )
    return episode, grade


def summarize(spec: TaskSpec, episodes: Sequence[EpisodeResult], grades: Sequence[Grade]) -> TaskSummary:
    """Aggregate one task's episodes, with the environment's own dataset metrics."""
    n = len(episodes)
    return TaskSummary(
        episodes=n,
        mean_score=math.fsum(e.score for e in episodes) / n,
        success_rate=sum(e.success for e in episodes) / n,
        mean_return=math.fsum(e.total_return for e in episodes) / n,
        metrics=spec.env_class().summarize(grades),
    )


def run_bench(
    pattern: str,
    agent: str,
    *,
    episodes: int,
    seed: int,
    out_dir: Path | None = None,
    config: dict[str, Any] | None = None,
) -> dict[str, TaskSummary]:
    """Run ``episodes`` episodes of every task matching ``pattern`` and write summary.json."""
    specs = list_tasks(pattern)
    if not specs:
        raise ValueError(f"no task matches {pattern!r}; `igym list` shows every task")
    if episodes < 1:
        raise ValueError("episodes must be at least 1")
    summaries: dict[str, TaskSummary] = {}
    for spec in specs:
        results = [run_episode(spec, agent, seed + i, **(config or {})) for i in range(episodes)]
        summaries[spec.id] = summarize(spec, [r for r, _ in results], [g for _, g in results])
    if out_dir is not None:
        write_summary(out_dir, summaries)
    return summaries


def write_summary(out_dir: Path, summaries: dict[str, TaskSummary]) -> Path:
    """Write ``summary.json`` shaped ``{"tasks": {id: {episodes, mean_score, success_rate, mean_return}}}``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "summary.json"
    payload = {"tasks": {task_id: asdict(s) for task_id, s in summaries.items()}}
    path.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")
    return path


__all__ = ["EpisodeResult", "TaskSummary", "get_spec", "run_bench", "run_episode", "summarize", "write_summary"]
