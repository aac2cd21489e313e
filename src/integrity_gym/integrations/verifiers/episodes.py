"""Playing a registered task from a model's replies: the part of the tasksets verifiers never sees.

The environment is the run's user. ``EnvEpisode`` resets it, words each observation as the
``llm`` agent would (``integrity_gym.agents.prompts``: the same system prompt, user message and
reading of replies), steps it with each reply and grades it. Nothing here imports verifiers, so
the same code plays an episode in-process, in a test, or inside a verifiers rollout.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from integrity_gym.agents.llm import read_action
from integrity_gym.agents.prompts import PromptAdapter, UserContent, get_adapter, text_of
from integrity_gym.core.registry import get_spec, make
from integrity_gym.core.types import Grade, StepResult

#: Longest feedback (why the last reply was rejected) shown to the model on the next turn.
FEEDBACK_LIMIT = 300


def read_reply(adapter: PromptAdapter, text: str, observation: Any) -> tuple[Any, str | None]:
    """Turn a reply into what the environment is stepped with, as the ``llm`` agent does.

    Returns ``(action, error)``: the adapter's action when the reply parses (the raw text for
    adapters that let the environment parse, such as selective verification's), else the raw
    text and why it could not be read; the environment then rejects it with its own message and
    penalty. It is the ``llm`` agent's own reader (``read_action``) without the parse status.
    """
    action, _parse, error = read_action(adapter, text, observation)
    return action, error


class EnvEpisode:
    """One episode of ``task_id``, reset with ``seed`` and ``options``, played reply by reply.

    ``config`` overrides the task's defaults (``integrity_gym.make``). With ``images=False`` a
    picture is left out of the user message and the model is told it cannot see it (what the
    ``llm`` agent does for text-only endpoints).
    """

    def __init__(
        self,
        task_id: str,
        *,
        seed: int,
        config: Mapping[str, Any] | None = None,
        options: Mapping[str, Any] | None = None,
        images: bool = True,
    ) -> None:
        self.spec = get_spec(task_id)
        self.env = make(task_id, **dict(config or {}))
        self.observation: Any = self.env.reset(seed=seed, options=dict(options) if options else None)
        self.adapter = get_adapter(self.spec)
        self.images = images
        self.steps = 0
        self.reward_sum = 0.0
        self.unreadable = 0
        self.last_info: dict[str, Any] = {}
        self._feedback: str | None = None

    @property
    def done(self) -> bool:
        """Whether the environment has ended the episode."""
        return bool(self.env.done)

    def system_prompt(self) -> str:
        """The instructions the ``llm`` agent gives for this task."""
        return self.adapter.system(self.spec, self.observation)

    def user_message(self) -> UserContent:
        """The current observation as a user message, with why the last reply was rejected."""
        content = self.adapter.user(self.observation, self._feedback)
        if not self.images and not isinstance(content, str):
            return self.adapter.text_only(self.observation) or text_of(content)
        return content

    def step(self, reply: str) -> StepResult[Any]:
        """Step the environment with the model's ``reply``; return its step result."""
        action, error = read_reply(self.adapter, reply, self.observation)
        result: StepResult[Any] = self.env.step(action)
        self.observation = result.observation
        self.steps += 1
        self.reward_sum += result.reward
        self.unreadable += error is not None
        self.last_info = dict(result.info)
        # Our own reading error says more than the environment's rejection of the raw reply.
        why = error or result.info.get("error")
        self._feedback = str(why)[:FEEDBACK_LIMIT] if why else None
        return result

    def grade(self) -> Grade:
        """The environment's own grade of the episode so far."""
        grade: Grade = self.env.grade()
        return grade

    def metrics(self) -> dict[str, float]:
        """Per-episode figures: steps, summed step reward, unreadable replies, success, the grade's breakdown."""
        grade = self.grade()
        figures = {
            "steps": float(self.steps),
            "step_reward_sum": self.reward_sum,
            "unreadable_replies": float(self.unreadable),
            "finished": float(self.done),
            "success": float(grade.success),
        }
        figures.update({f"grade_{name}": float(value) for name, value in grade.breakdown.items()})
        return figures

    def close(self) -> None:
        """Release the environment."""
        self.env.close()
