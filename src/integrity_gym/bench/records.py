"""Typed records that pass from the runner to the log, the run folder, the database and the report.

One ``EpisodeRecord`` is one line of ``episodes.jsonl`` (``model_dump(mode="json")``); its field
names are the JSON keys that ``bench.runs.load_run`` reads. One ``TaskSummary`` is one entry of
``summary.json``'s ``tasks`` and one row of the database's ``task_summaries``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Usage(_Record):
    """What an episode's model calls cost (all None for agents that call no model)."""

    prompt_tokens: int | None = Field(None, description="Prompt tokens summed over the episode's calls.")
    completion_tokens: int | None = Field(None, description="Completion tokens summed over the calls.")
    latency_s: float | None = Field(None, description="Seconds spent waiting for the model.")
    llm_calls: int = Field(0, ge=0, description="Model calls made.")


class StepRecord(_Record):
    """One step of an episode's trajectory."""

    step: int = Field(ge=1, description="1-based step number.")
    action: Any = Field(description="The action as the agent returned it (JSON).")
    action_text: str = Field(description="The action as one line of text (what the log shows).")
    reward: float = Field(description="Reward of the step.")
    reward_breakdown: dict[str, float] = Field(default_factory=dict, description="Reward by component.")
    done: bool = Field(description="True when this step ended the episode.")
    error: str | None = Field(None, description="Why the environment rejected the action, if it did.")
    observation: Any = Field(None, description="Observation after the step (None with --no-observations).")
    llm: dict[str, Any] | None = Field(None, description="The model call behind the action (llm agent).")


class EpisodeRecord(_Record):
    """One played episode: identity, outcome, cost and the whole trajectory."""

    task_id: str = Field(description="Task played.")
    env: str = Field(description="Environment of the task.")
    tier: str = Field(description="Difficulty tier of the task.")
    index: int = Field(ge=0, description="Episode index within the task (epoch * seeds + position).")
    seed: int = Field(
        ge=0, description="Reset seed: which item was played (a sealed run: the position; the server chose the item)."
    )
    epoch: int = Field(0, ge=0, description="Repeat of the same seed (--epochs), from 0.")
    agent: str = Field(description="Agent name.")
    threshold: float = Field(description="Success threshold of the task.")
    score: float | None = Field(None, description="Final grade (None when the episode failed).")
    success: bool | None = Field(None, description="Grade reached the threshold (None when it failed).")
    total_return: float = Field(0.0, description="Sum of the step rewards.")
    steps: int = Field(0, ge=0, description="Steps taken.")
    truncated: bool = Field(False, description="Stopped by the step cap before the episode ended.")
    error: str | None = Field(None, description="Why the episode failed (None when it finished).")
    traceback: str | None = Field(None, description="Where it failed.")
    close_error: str | None = Field(None, description="An error raised while closing the environment.")
    grade: dict[str, Any] | None = Field(None, description="The environment's Grade (JSON).")
    explanation: str | None = Field(None, description="Why the episode graded as it did, in words (env.explain).")
    usage: Usage = Field(default_factory=Usage, description="Model cost of the episode.")
    reset_observation: Any = Field(None, description="First observation (None with --no-observations).")
    trajectory: list[StepRecord] = Field(default_factory=list, description="Every step.")
    wall_s: float = Field(0.0, ge=0, description="Seconds the episode took.")

    @property
    def key(self) -> tuple[str, int]:
        """What identifies the episode within a run (resume plays the keys that are missing)."""
        return self.task_id, self.index


class TaskSummary(_Record):
    """Aggregates over one task's episodes (failed episodes are counted apart, not averaged)."""

    episodes: int = Field(description="Episodes that finished.")
    mean_score: float | None = Field(None, description="Mean grade.")
    success_rate: float | None = Field(None, description="Share of successes (None without per-episode success).")
    mean_return: float | None = Field(None, description="Mean return.")
    metrics: dict[str, float | None] = Field(default_factory=dict, description="The environment's own metrics.")
    tier: str = Field("", description="Difficulty tier.")
    threshold: float = Field(0.0, description="Success threshold.")
    failed: int = Field(0, description="Episodes that failed.")
    std_score: float | None = Field(None, description="Sample standard deviation of the grade.")
    score_ci95: tuple[float, float] | None = Field(None, description="95% t-interval of the mean grade.")
    mean_steps: float | None = Field(None, description="Mean steps per episode.")
    truncated: int = Field(0, description="Episodes stopped by the step cap.")
    mean_prompt_tokens: float | None = Field(None, description="Mean prompt tokens per episode.")
    mean_completion_tokens: float | None = Field(None, description="Mean completion tokens per episode.")
    mean_latency_s: float | None = Field(None, description="Mean model latency per episode.")
    epochs: int = Field(1, ge=1, description="Times each seed was played.")
    pass_at_k: dict[str, float] | None = Field(
        None, description="Unbiased pass@k over items played several times, k = 1..epochs (keys are k)."
    )
    item_sd: float | None = Field(None, description="Mean standard deviation of one item's grade across epochs.")
    summary_error: str | None = Field(None, description="Why the environment's summarize() failed, if it did.")


__all__ = ["EpisodeRecord", "StepRecord", "TaskSummary", "Usage"]
