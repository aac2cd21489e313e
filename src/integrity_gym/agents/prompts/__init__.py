"""Prompt adapters: how the ``llm`` agent shows an observation to a model and reads its answer.

Each environment has one adapter (``agents/prompts/<env>.py`` exporting ``ADAPTER``). An adapter
writes the system and user messages, gives a *flat* JSON schema for ``response_format`` (every
property required, ``additionalProperties: false``, so small models and strict endpoints cope),
and turns the decoded object into the environment's action mapping. Environments without an
adapter get ``GenericAdapter``, built from the action model's own JSON schema.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from integrity_gym.core.registry import TaskSpec

UserContent = str | list[dict[str, Any]]


def text_of(content: UserContent) -> str:
    """The text parts of a message's content, joined (the content itself when it is text)."""
    if isinstance(content, str):
        return content
    return "\n".join(str(part.get("text", "")) for part in content if part.get("type") == "text")


class ActionReadError(ValueError):
    """A decoded reply that is not an action of the environment; the message says why."""


class PromptAdapter(Protocol):
    """What the ``llm`` agent needs to know about one environment."""

    def system(self, spec: TaskSpec, observation: Any) -> str:
        """The instructions: the task, the actions, how they are scored."""
        ...

    def user(self, observation: Any, feedback: str | None) -> UserContent:
        """The current observation as a message (text, or OpenAI content parts with an image)."""
        ...

    def text_only(self, observation: Any) -> str | None:
        """The message to use when the endpoint cannot take images (``None``: no image involved)."""
        ...

    def schema(self, observation: Any) -> dict[str, Any]:
        """A flat JSON schema of the reply for ``response_format``."""
        ...

    def to_action(self, data: dict[str, Any], observation: Any) -> Any:
        """Turn a decoded reply into an action (mapping, model or text); raise ``ActionReadError``."""
        ...


def strict_object(properties: dict[str, Any]) -> dict[str, Any]:
    """A JSON-schema object with every property required and no others allowed."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def dump_observation(observation: Any) -> dict[str, Any]:
    """A JSON-ready dict of an observation (pydantic model or mapping)."""
    if hasattr(observation, "model_dump"):
        data: dict[str, Any] = observation.model_dump(mode="json")
        return data
    return dict(observation)


class GenericAdapter:
    """Fallback for environments without their own adapter: the action schema and raw observation."""

    def __init__(self, spec: TaskSpec) -> None:
        cls = spec.env_class()
        self._help = cls.action_help
        self._schema = _closed(cls.action_type.model_json_schema())

    def system(self, spec: TaskSpec, observation: Any) -> str:
        """Task description, the action help and the reply format."""
        return (
            f"You are an agent in the environment {spec.env}, task {spec.id}: {spec.description}\n"
            f"{self._help}\nReply with exactly one JSON object, the next action, and nothing else."
        )

    def user(self, observation: Any, feedback: str | None) -> UserContent:
        """The observation as JSON, with the last error if there was one."""
        text = "Observation:\n" + json.dumps(dump_observation(observation), indent=1)
        return text + (f"\n\nYour last action was rejected: {feedback}" if feedback else "")

    def text_only(self, observation: Any) -> str | None:
        """No image handling in the generic adapter."""
        return None

    def schema(self, observation: Any) -> dict[str, Any]:
        """The action model's schema, closed to unknown properties."""
        schema: dict[str, Any] = self._schema
        return schema

    def to_action(self, data: dict[str, Any], observation: Any) -> Any:
        """The decoded object is the action."""
        return data


def _closed(schema: Any) -> Any:
    """Copy of ``schema`` with ``additionalProperties: false`` on every object."""
    if isinstance(schema, list):
        return [_closed(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _closed(v) for k, v in schema.items()}
    if out.get("type") == "object" or "properties" in out:
        out["additionalProperties"] = False
    return out


def get_adapter(spec: TaskSpec) -> PromptAdapter:
    """The adapter of ``spec``'s environment (``EnvExtras.prompt``), else ``GenericAdapter``."""
    module = spec.env_class().extras.module("prompt")
    if module is None:
        return GenericAdapter(spec)
    adapter: PromptAdapter = module.make_adapter(spec)
    return adapter
