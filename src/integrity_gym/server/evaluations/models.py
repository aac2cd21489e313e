"""The wire models of ``/evaluations``: what ``POST /evaluations`` takes, and what every route answers."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from integrity_gym.core.types import Grade

MAX_EPISODES = 10_000
#: An evaluation id or a handle as the server hands them out: nothing else is looked up in the store.
_TOKEN = re.compile(r"^[A-Za-z0-9_-]{8,128}$")


class EvaluationRequest(BaseModel):
    """Body of ``POST /evaluations``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tasks: list[StrictStr] = Field(
        min_length=1,
        max_length=256,
        description="Task ids (or env/name for the newest version) or globs over this server's task ids.",
    )
    episodes: StrictInt = Field(ge=1, le=MAX_EPISODES, description="Episodes (items) per task.")
    repeat_of: StrictStr | None = Field(
        default=None,
        max_length=128,
        description="An earlier evaluation whose items to reuse, in the same order (same tasks and episodes).",
    )


class HandedOut(BaseModel):
    """One episode of an evaluation."""

    handle: str = Field(description="Start the episode with POST /<env>/reset {'handle': ...}, once.")
    task_id: str = Field(description="Its task.")
    index: int = Field(ge=0, description="Its position among the task's episodes.")


class EvaluationCreated(BaseModel):
    """Reply of ``POST /evaluations``."""

    evaluation_id: str = Field(description="Id of the evaluation: keep it to yourself; give the agent handles.")
    data_mode: str = Field(description="'secret:<fingerprint>' of the server's eval secret.")
    episodes: list[HandedOut] = Field(description="Every episode, task by task, in order.")
    expires_in_s: float = Field(description="Seconds until the evaluation expires unless closed.")


class EpisodeStatus(HandedOut):
    """An episode as ``GET /evaluations/{id}`` shows it."""

    status: Literal["pending", "running", "finished"] = Field(description="Not started, started, or ended.")
    steps: int | None = Field(default=None, description="Admin token only: steps taken, once recorded.")
    grade: Grade | None = Field(default=None, description="Admin token only: the grade, once recorded.")


class EvaluationStatus(BaseModel):
    """Reply of ``GET /evaluations/{id}`` (no grades before the close, except to the admin token)."""

    evaluation_id: str = Field(description="The evaluation.")
    data_mode: str = Field(description="'secret:<fingerprint>' of the server's eval secret.")
    closed: bool = Field(description="True once closed.")
    episodes: list[EpisodeStatus] = Field(description="Every episode, in order.")


class EpisodeResult(HandedOut):
    """One episode's result, released at the close."""

    status: Literal["pending", "running", "finished"] = Field(
        description="pending (never started), running (cut off by the close) or finished."
    )
    steps: int | None = Field(description="Steps taken (null if never started).")
    grade: Grade | None = Field(description="The grade as the episode stood (null if never started).")
    explanation: str | None = Field(description="The environment's explain() of the episode, or null.")


class EvaluationResults(BaseModel):
    """Reply of ``POST /evaluations/{id}/close`` (the same on every later close)."""

    evaluation_id: str = Field(description="The evaluation.")
    data_mode: str = Field(description="'secret:<fingerprint>' of the server's eval secret.")
    closed: bool = Field(description="Always true.")
    episodes: list[EpisodeResult] = Field(description="Every episode's result, in order.")
