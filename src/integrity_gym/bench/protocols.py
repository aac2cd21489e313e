"""What an episode of the runner needs of its environment and its agent, as types.

``EpisodeEnv`` is the interface the runner plays through: an in-process ``Env`` and a server's
``RemoteEnv`` client both have it. What only some environments or agents can do is a capability
protocol of its own (``Explains``, ``ParsesActions``, ``ObservesSteps``, ``RecordsCalls``);
``EpisodeAgent`` gives every agent the full step interface, doing nothing where it has no such
capability.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from integrity_gym.agents.base import Agent
from integrity_gym.core.registry import TaskSpec
from integrity_gym.core.types import Grade, StepResult


class EpisodeEnv(Protocol):
    """What the runner calls on an environment, local or remote, to play and grade one episode."""

    @property
    def spec(self) -> TaskSpec:
        """The task being played."""
        ...

    @property
    def done(self) -> bool:
        """True once the episode has ended."""
        ...

    def reset(self, *, seed: int | None = None, options: Mapping[str, Any] | None = None) -> Any:
        """Start the episode on item ``seed``; its first observation."""
        ...

    def step(self, action: Any) -> StepResult[Any]:
        """Apply one action (a malformed one is rejected in ``info['error']``)."""
        ...

    def grade(self) -> Grade:
        """Grade the finished episode."""
        ...

    def close(self) -> None:
        """Release the environment (twice is harmless)."""
        ...


@runtime_checkable
class Explains(Protocol):
    """An environment that explains a finished episode's grade in words (in-process ones do)."""

    def explain(self) -> str:
        """Why the episode graded as it did."""
        ...


@runtime_checkable
class ParsesActions(Protocol):
    """An environment that reads an action into its own action type (in-process ones do)."""

    def parse_action(self, action: Any) -> Any:
        """The action as the environment's action model."""
        ...


@runtime_checkable
class ObservesSteps(Protocol):
    """An agent that wants to see each step's result (why an action was rejected, say)."""

    def observe(self, result: Any) -> None:
        """Take in the result of the agent's last action."""
        ...


@runtime_checkable
class RecordsCalls(Protocol):
    """An agent that reports what each action cost (the llm agent's model calls)."""

    def pop_step_record(self) -> dict[str, Any] | None:
        """The record of the last ``act``'s model call, once."""
        ...


@dataclass(frozen=True)
class EpisodeAgent:
    """An agent with the whole step interface the runner uses, whatever capabilities it has."""

    agent: Agent

    def act(self, observation: Any) -> Any:
        """The agent's next action."""
        return self.agent.act(observation)

    def step_record(self) -> dict[str, Any] | None:
        """What the last action's model call cost, or None for an agent that calls no model."""
        return self.agent.pop_step_record() if isinstance(self.agent, RecordsCalls) else None

    def observe(self, result: StepResult[Any]) -> None:
        """Show the step's result to an agent that observes steps."""
        if isinstance(self.agent, ObservesSteps):
            self.agent.observe(result)


__all__ = ["EpisodeAgent", "EpisodeEnv", "Explains", "ObservesSteps", "ParsesActions", "RecordsCalls"]
