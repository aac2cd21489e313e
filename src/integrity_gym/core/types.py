"""Wire types shared by every environment: frozen pydantic models that cross process boundaries."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field


class WireModel(BaseModel):
    """Base of every model that goes over the wire: immutable, and unknown fields are errors."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class Action(WireModel):
    """Base class of every environment's action."""


class Observation(WireModel):
    """Base class of every environment's observation; it never carries ground truth."""

    task_id: str = Field(
        description="Versioned id of the task being played, e.g. 'pii_redaction/gdpr_contract_easy-v4'."
    )
    done: bool = Field(description="True once the episode has ended; further steps are refused.")


class State(WireModel):
    """Base class of every environment's full internal state (ground truth included)."""

    task_id: str = Field(description="Versioned id of the task being played.")
    seed: int | None = Field(description="Seed the episode was reset with, if any.")
    episode_id: str = Field(description="Deterministic id of the episode (derived from task, seed and item).")
    step_count: int = Field(ge=0, description="Steps taken so far, invalid ones included.")
    done: bool = Field(description="True once the episode has ended.")


ObsT = TypeVar("ObsT", bound=Observation)
ActT = TypeVar("ActT", bound=Action)
StateT = TypeVar("StateT", bound=State)


class StepResult(WireModel, Generic[ObsT]):
    """What one step returns: the new observation, the step reward, whether it ended, and details."""

    observation: ObsT = Field(description="Observation after the action.")
    reward: float = Field(description="Total reward of this step (sum of the breakdown in info).")
    done: bool = Field(description="True if this step ended the episode.")
    info: dict[str, Any] = Field(
        default_factory=dict,
        description="Details: 'reward_breakdown' (component name -> value) and 'error' (a message "
        "when the action was rejected, else null).",
    )

    def __iter__(self) -> Iterator[Any]:  # type: ignore[override]
        """Unpack like Gym's 4-tuple: ``observation, reward, done, info = env.step(action)``.

        Pydantic would otherwise yield ``(field, value)`` pairs, and that unpacking would succeed
        silently with ``done == ("done", False)``.
        """
        return iter((self.observation, self.reward, self.done, self.info))


class Grade(WireModel):
    """Final assessment of an episode."""

    score: float = Field(ge=0.0, le=1.0, description="Final score in [0, 1].")
    success: bool = Field(
        description="True when score reaches the task's success threshold (always false where the threshold "
        "applies to the task's mean grade, as in selective verification)."
    )
    threshold: float = Field(ge=0.0, le=1.0, description="The task's success threshold.")
    breakdown: dict[str, float] = Field(description="Per-dimension values behind the score.")
