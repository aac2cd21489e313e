"""Prompts for pii_redaction: the model quotes the text to redact; the adapter finds its offsets.

Language models are poor at counting characters, and the reference measured exactly that failure
(right entity, wrong offsets). So the reply names the span by copying its characters from the
window and the adapter turns the quote into absolute offsets. What to redact, where a span starts
and ends, and which label it gets are still the model's choice.
"""

from __future__ import annotations

from typing import Any

from integrity_gym.agents.prompts import ActionReadError, UserContent, strict_object
from integrity_gym.core.registry import TaskSpec

LABELS = ("EMAIL", "PHONE", "SSN", "NAME", "ADDRESS", "DOB")
ACTIONS = ("REDACT", "NEXT_CHUNK", "PREV_CHUNK", "SKIP", "FINISH")
MAX_QUOTE = 160

_SYSTEM = """You redact personal data from a long document that you see through a window.
Personal data has six labels: EMAIL, PHONE, SSN, NAME (a person's name), ADDRESS (a postal \
address), DOB (a date of birth). Some of it is written out or disguised, e.g. "jane dot doe at \
example dot com" or "four one five, five five five ...": redact the whole disguised phrase. \
Company names, product codes, hosts and dates that are not birth dates are not personal data.

Each reply is one action, a JSON object {"action_type": ..., "text": ..., "label": ...}:
- REDACT: "text" is the exact characters to hide, copied from the window (one entity per \
action), and "label" its label.
- NEXT_CHUNK: move the window forward by half its width. PREV_CHUNK: move it back. SKIP: stay.
- FINISH: end the episode when the whole document has been read.
For every action except REDACT set "text" to "" and "label" to "NAME"; they are ignored.
Redact everything personal in the window before moving on; moving on while personal data is \
still visible costs reward; redacting what is not personal data costs reward too."""


class PiiAdapter:
    """Shows the window with its position; reads ``{action_type, text, label}``."""

    def system(self, spec: TaskSpec, observation: Any) -> str:
        """The redaction task, the labels and the reply format."""
        return f"{_SYSTEM}\nTask: {spec.description}"

    def user(self, observation: Any, feedback: str | None) -> UserContent:
        """The window text with progress, recent actions and the last error."""
        obs = observation
        start = obs.cursor_position
        end = start + len(obs.visible_text)
        lines = [
            f"Document length {obs.document_length} characters; the window shows characters {start}-{end} "
            f"({obs.progress_pct:.0%} of the document reached). Steps left: {obs.steps_left}.",
            f"Spans redacted so far: {len(obs.redacted_spans)}. Last actions: "
            + (", ".join(obs.previous_actions) or "none"),
        ]
        if feedback:
            lines.append(f"Your last action was rejected: {feedback}")
        lines += ["--- window ---", obs.visible_text, "--- end of window ---", "Reply with the next action."]
        return "\n".join(lines)

    def text_only(self, observation: Any) -> str | None:
        """No images here."""
        return None

    def schema(self, observation: Any) -> dict[str, Any]:
        """Action type, quoted text and label, all required."""
        return strict_object(
            {
                "action_type": {"type": "string", "enum": list(ACTIONS)},
                "text": {"type": "string", "maxLength": MAX_QUOTE},
                "label": {"type": "string", "enum": list(LABELS)},
            }
        )

    def to_action(self, data: dict[str, Any], observation: Any) -> Any:
        """Map the reply to a RedactionAction mapping, locating a quote in the window."""
        kind = str(data.get("action_type") or data.get("action") or "").strip().upper().replace(" ", "_")
        if kind not in ACTIONS:
            raise ActionReadError(f"action_type {data.get('action_type')!r} is not one of {', '.join(ACTIONS)}")
        if kind != "REDACT":
            return {"action_type": kind}
        label = str(data.get("label") or "").strip().upper()
        if label not in LABELS:
            raise ActionReadError(f"label {data.get('label')!r} is not one of {', '.join(LABELS)}")
        if isinstance(data.get("start"), int) and isinstance(data.get("end"), int):
            return {"action_type": kind, "start": data["start"], "end": data["end"], "label": label}
        start, end = locate(str(data.get("text") or ""), observation)
        return {"action_type": kind, "start": start, "end": end, "label": label}


def locate(quote: str, observation: Any) -> tuple[int, int]:
    """Absolute (start, end) of the first occurrence of ``quote`` in the window not yet redacted."""
    quote = quote.strip()
    if not quote:
        raise ActionReadError("REDACT needs the text to hide, copied from the window")
    window: str = observation.visible_text
    done = {tuple(s) for s in observation.redacted_spans}
    for haystack, needle in ((window, quote), (window.lower(), quote.lower())):
        at = haystack.find(needle)
        while at >= 0:
            span = (observation.cursor_position + at, observation.cursor_position + at + len(needle))
            if span not in done:
                return span
            at = haystack.find(needle, at + 1)
    raise ActionReadError(f"the text {quote[:60]!r} does not appear in the window")


#: The reply's start in GRPO training and its eval when no ``--prefill`` is given: the reply format's
#: first key, so the model starts a readable action.
PREFILL = '{"action_type": "'


def make_adapter(spec: TaskSpec) -> PiiAdapter:
    """The pii_redaction adapter."""
    return PiiAdapter()
