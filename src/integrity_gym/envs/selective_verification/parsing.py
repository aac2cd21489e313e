"""Reading a model's answer: strict JSON first, then a few repairs of near-JSON.

Repairs (each marks the answer ``needed_repair``): a code fence or prose around the object,
extra fields (ignored), single quotes, unquoted keys, trailing commas, keys or verdicts in another
case or inflection (``supported``, ``Refutes``), a confidence given as a string or a percentage
(``"80%"``, a whole ``80``), and as a last resort ``verdict: X`` / ``confidence: Y`` pairs
anywhere in the text. A reply that states a verdict more than once (several JSON objects, a
repeated key, a list of answers, a verdict in capitals in the prose, or an echo of the answer
format with its three options) is malformed even when one of them would be right: one reply,
one verdict, or stuffing every verdict in would let the reader pick the winner. Anything else
unreadable is malformed too; the caller pays it 0, which is never more than the lowest answer
reward.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from integrity_gym.core.replies import ReplyParseError, parse_reply
from integrity_gym.envs.selective_verification.models import VERDICTS

_VERDICT_FORMS = {
    "SUPPORTED": "SUPPORTED", "SUPPORTS": "SUPPORTED", "SUPPORT": "SUPPORTED",
    "REFUTED": "REFUTED", "REFUTES": "REFUTED", "REFUTE": "REFUTED",
    "ABSTAIN": "ABSTAIN", "ABSTAINS": "ABSTAIN", "ABSTAINED": "ABSTAIN",
}  # fmt: skip
_LOOSE_VERDICT = re.compile(r"verdict\W{0,4}([A-Za-z]+)", re.I)
#: A verdict written in capitals anywhere in the reply, e.g. in an echo of the answer format.
_CAPITAL_VERDICT = re.compile(rf"(?<![A-Za-z])({'|'.join(sorted(_VERDICT_FORMS, key=len, reverse=True))})(?![A-Za-z])")
_LOOSE_CONF = re.compile(r"confidence\W{0,4}(-?[0-9]*\.?[0-9]+)\s*(%?)", re.I)


class AnswerParseError(ValueError):
    """The answer could not be read, even after repair."""


@dataclass(frozen=True)
class ParsedAnswer:
    """A verdict and confidence read from an answer, and whether repair was needed."""

    verdict: str
    confidence: float | None
    needed_repair: bool


def _confidence(value: Any) -> tuple[float | None, bool]:
    """Return (confidence in [0, 1], repaired?) or raise for a value that is not one."""
    repaired = False
    if isinstance(value, str):
        text = value.strip()
        percent = text.endswith("%")
        try:
            number = float(text.rstrip("%").strip())
        except ValueError as exc:
            raise AnswerParseError(f"confidence {value!r} is not a number") from exc
        value, repaired = (number / 100.0 if percent else number), True
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise AnswerParseError(f"confidence must be a number in [0, 1], got {value!r}")
    number = float(value)
    if 1.0 < number <= 100.0 and number == int(number):
        number, repaired = number / 100.0, True  # a whole percentage written as a number
    if not 0.0 <= number <= 1.0:
        raise AnswerParseError(f"confidence {value!r} is outside [0, 1]")
    return number, repaired


def from_mapping(data: Any, repaired: bool = False) -> ParsedAnswer:
    """Read a parsed JSON object (or mapping) into a verdict and confidence."""
    if not isinstance(data, dict):
        raise AnswerParseError(f"the answer must be a JSON object, not {type(data).__name__}")
    lowered = {str(k).strip().lower(): v for k, v in data.items()}
    repaired = repaired or any(str(k) != str(k).strip().lower() for k in data)
    # Extra fields (a "reasoning" string, say) are ignored, and the answer counts as repaired.
    repaired = repaired or bool(set(lowered) - {"verdict", "confidence"})
    if "verdict" not in lowered:
        raise AnswerParseError("the answer has no 'verdict' (SUPPORTED, REFUTED or ABSTAIN)")
    raw_verdict = lowered["verdict"]
    if not isinstance(raw_verdict, str) or raw_verdict.strip().upper() not in _VERDICT_FORMS:
        raise AnswerParseError(f"verdict {raw_verdict!r} is not one of {', '.join(VERDICTS)}")
    verdict = _VERDICT_FORMS[raw_verdict.strip().upper()]
    repaired = repaired or raw_verdict != verdict
    confidence: float | None = None
    if verdict != "ABSTAIN":
        if lowered.get("confidence") is None:
            raise AnswerParseError(f"a {verdict} verdict needs a confidence in [0, 1]")
        confidence, fixed = _confidence(lowered["confidence"])
        repaired = repaired or fixed
    return ParsedAnswer(verdict, confidence, repaired)


def parse_answer(text: str) -> ParsedAnswer:
    """Parse a model's raw answer text; raise ``AnswerParseError`` saying why it is unreadable."""
    # Where a verdict is stated: after the word "verdict" in any case, or in capitals anywhere.
    found = {m.start(1): m.group(1) for m in _LOOSE_VERDICT.finditer(text) if m.group(1).upper() in _VERDICT_FORMS}
    found.update({m.start(): m.group() for m in _CAPITAL_VERDICT.finditer(text)})
    stated = [found[k] for k in sorted(found)]
    if len(stated) > 1:
        raise AnswerParseError(
            f"the answer states {len(stated)} verdicts ({', '.join(stated)}); "
            "give exactly one JSON object with one verdict"
        )
    try:
        data, repaired = parse_reply(text)
    except ReplyParseError:
        pass
    else:
        return from_mapping(data, repaired=repaired)
    stripped = text.strip()
    verdict = _LOOSE_VERDICT.search(stripped)
    if verdict and verdict.group(1).upper() in _VERDICT_FORMS:
        conf = _LOOSE_CONF.search(stripped)
        mapping: dict[str, Any] = {"verdict": verdict.group(1)}
        if conf:
            mapping["confidence"] = conf.group(1) + conf.group(2)
        return from_mapping(mapping, repaired=True)
    raise AnswerParseError('the answer is not a JSON object like {"verdict": "SUPPORTED", "confidence": 0.9}')
