"""Reading a JSON object out of a model's reply, repairing the usual near-misses.

Shared by the llm agent and by environments that accept raw model text. Strict JSON first.
Otherwise, in order: the object inside a code fence or surrounded by prose, then repairs of that
object — single quotes, unquoted keys, trailing commas, Python literals (True/False/None), a
missing closing brace. Keys are matched case-insensitively by the caller. Whether a repair was
needed is reported, so a run can count replies that only parsed after one.
"""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)
_UNQUOTED_KEY = re.compile(r"([{,]\s*)([A-Za-z_][A-Za-z0-9_]*)\s*:")
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_PY_LITERALS = ((r"\bTrue\b", "true"), (r"\bFalse\b", "false"), (r"\bNone\b", "null"))


class ReplyParseError(ValueError):
    """No JSON object could be read from the reply, even after repair."""


def _loads_object(text: str) -> dict[str, Any] | None:
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def first_object(text: str) -> str | None:
    """The first balanced ``{...}`` in ``text`` (quotes respected); an unclosed one is closed."""
    start = text.find("{")
    if start < 0:
        return None
    depth, quote, escaped = 0, "", False
    for i in range(start, len(text)):
        ch = text[i]
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    # Cut off (max_tokens reached, say): close what is open.
    return text[start:] + (quote or "") + "}" * depth


def repair(obj: str) -> str:
    """Apply the near-JSON repairs to one object's text."""
    fixed = obj
    if "'" in fixed and '"' not in fixed:
        fixed = fixed.replace("'", '"')
    for pattern, value in _PY_LITERALS:
        fixed = re.sub(pattern, value, fixed)
    fixed = _UNQUOTED_KEY.sub(r'\1"\2":', fixed)
    return _TRAILING_COMMA.sub(r"\1", fixed)


def parse_reply(text: str) -> tuple[dict[str, Any], bool]:
    """Return ``(object, repaired)`` read from a reply; raise ``ReplyParseError`` if there is none."""
    stripped = text.strip()
    data = _loads_object(stripped)
    if data is not None:
        return data, False
    candidates = [m.group(1) for m in _FENCE.finditer(stripped)] + [stripped]
    for candidate in candidates:
        obj = first_object(candidate)
        if obj is None:
            continue
        for attempt in (obj, repair(obj)):
            data = _loads_object(attempt)
            if data is not None:
                return data, True
    shown = stripped[:80] + ("..." if len(stripped) > 80 else "")
    raise ReplyParseError(f"no JSON object in the reply {shown!r}")


def lower_keys(data: dict[str, Any]) -> dict[str, Any]:
    """The object with keys stripped and lower-cased (``Action_Type`` → ``action_type``)."""
    return {str(k).strip().lower(): v for k, v in data.items()}
