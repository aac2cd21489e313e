"""The reply an adapter asks a model for, written from an action: the inverse of ``to_action``.

``write_reply(adapter, action, observation)`` gives the JSON object an adapter's schema describes
for a typed action (a mapping of the environment's action model): what a model should have
answered for the ``llm`` agent to play that action. An adapter with a ``reply(action,
observation)`` method of its own writes its replies itself; the built-in adapters' writers are
here until they move into their adapters; an environment without either gets its action's own
JSON, which ``GenericAdapter`` reads as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from integrity_gym.agents.prompts import PromptAdapter
from integrity_gym.agents.prompts.information_integrity import IntegrityAdapter
from integrity_gym.agents.prompts.pii_redaction import PiiAdapter
from integrity_gym.agents.prompts.selective_verification import SelectiveAdapter

Writer = Callable[[Mapping[str, Any], Any], dict[str, Any]]


def pii_reply(action: Mapping[str, Any], observation: Any) -> dict[str, Any]:
    """``{action_type, text, label}``: the span quoted from the window, as the pii prompt asks.

    The ignored fields of a move hold what the prompt says to send ("" and "NAME"). A span that
    reaches outside the window is quoted as far as the window shows it (it cannot be read back).
    """
    kind = action["action_type"]
    if kind != "REDACT":
        return {"action_type": kind, "text": "", "label": "NAME"}
    at = observation.cursor_position
    start, end = max(0, action["start"] - at), max(0, action["end"] - at)
    return {"action_type": kind, "text": observation.visible_text[start:end], "label": action["label"]}


def integrity_reply(action: Mapping[str, Any], observation: Any) -> dict[str, Any]:
    """``{type, target, decision, reasoning}``; the ignored fields hold values the schema allows."""
    ids = [c.id for c in observation.claims] + [s.id for s in observation.available_sources]
    target = action.get("claim_id") or action.get("source_id") or (ids[0] if ids else "")
    return {"type": action["type"], "target": target, "decision": action.get("decision") or "allow",
            "reasoning": action.get("reasoning") or ""}  # fmt: skip


def selective_reply(action: Mapping[str, Any], observation: Any) -> dict[str, Any]:
    """``{verdict, confidence}``; an abstention's confidence is ignored: 1.0, as for an answer that omits it."""
    confidence = action.get("confidence")
    return {"verdict": action["verdict"], "confidence": 1.0 if confidence is None else confidence}


#: The built-in adapters' writers, by adapter class.
WRITERS: dict[type, Writer] = {
    PiiAdapter: pii_reply,
    IntegrityAdapter: integrity_reply,
    SelectiveAdapter: selective_reply,
}


def write_reply(adapter: PromptAdapter, action: Mapping[str, Any], observation: Any) -> dict[str, Any]:
    """The reply ``adapter`` asks for, for the typed ``action`` (its JSON mapping) at ``observation``."""
    own = getattr(adapter, "reply", None)
    if callable(own):
        written: dict[str, Any] = own(action, observation)
        return written
    writer = WRITERS.get(type(adapter))
    return dict(action) if writer is None else writer(action, observation)


__all__ = ["WRITERS", "integrity_reply", "pii_reply", "selective_reply", "write_reply"]
