"""Prompts for selective_verification: the environment's own instructions, then the item.

The system prompt is the one the observation carries (``envs/selective_verification/prompts.py``):
it states the answer format, the scoring rule, the abstention payoff and the threshold q*. On a
threshold task each item states its own risk threshold t, so the user message states it again beside
the claim (a harness that keeps one system prompt for a whole batch, or drops it, still shows t). The
picture goes as an image part; a text-only endpoint is told plainly that it cannot see it.
The reply is passed to the environment as text, so the environment's own parser decides what is
malformed and what needed repair (its metrics count both).
"""

from __future__ import annotations

from typing import Any

from integrity_gym.agents.prompts import ActionReadError, UserContent, strict_object
from integrity_gym.core.registry import TaskSpec

VERDICTS = ("SUPPORTED", "REFUTED", "ABSTAIN")
_NO_IMAGE = (
    "(The picture cannot be shown to you: this endpoint takes text only. Judge the claim as well as "
    "you can without it, and weigh abstaining.)"
)


class SelectiveAdapter:
    """Claim plus picture or passage in; ``{verdict, confidence}`` out."""

    send_raw = True

    def system(self, spec: TaskSpec, observation: Any) -> str:
        """The environment's instructions, scoring rule and threshold included."""
        return str(observation.system_prompt)

    def _text(self, observation: Any) -> str:
        lines = [f"Claim: {observation.claim}"]
        if observation.passage:
            lines.insert(0, f"Passage:\n{observation.passage}")
        if getattr(observation, "scoring_rule", None) == "threshold":
            t = float(observation.threshold)
            lines.append(
                f"Risk threshold: t = {t:.2f}. Answer only if you are more than {t:.0%} sure your verdict is "
                f"correct: right +1, wrong -{t / (1 - t):.4g}, ABSTAIN 0."
            )
        lines.append("Reply with the JSON object only.")
        return "\n".join(lines)

    def user(self, observation: Any, feedback: str | None) -> UserContent:
        """Text items as text; image items as a text part and an image part."""
        text = self._text(observation)
        if observation.image:
            return [
                {"type": "text", "text": text},
                {"type": "image_url", "image_url": {"url": observation.image}},
            ]
        return text

    def text_only(self, observation: Any) -> str | None:
        """The item without its picture, saying so."""
        return f"{_NO_IMAGE}\n{self._text(observation)}" if observation.image else None

    def schema(self, observation: Any) -> dict[str, Any]:
        """Verdict and a confidence in [0, 1]."""
        return strict_object(
            {
                "verdict": {"type": "string", "enum": list(VERDICTS)},
                "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            }
        )

    def to_action(self, data: dict[str, Any], observation: Any) -> Any:
        """Check the reply has a known verdict (the environment does the rest)."""
        verdict = str(data.get("verdict") or "").strip().upper()
        if verdict not in VERDICTS:
            raise ActionReadError(f"verdict {data.get('verdict')!r} is not one of {', '.join(VERDICTS)}")
        return {"verdict": verdict, "confidence": None if verdict == "ABSTAIN" else data.get("confidence")}


#: The reply's start in GRPO training and its eval when no ``--prefill`` is given: the reply format's
#: first key, so the model starts a readable action.
PREFILL = '{"verdict": "'


def make_adapter(spec: TaskSpec) -> SelectiveAdapter:
    """The selective_verification adapter."""
    return SelectiveAdapter()
