"""The ``[START]`` / ``[STEP]`` / ``[END]`` run-log lines, and a parser for them.

One episode is a block::

    [START] task=pii_redaction/gdpr_contract_easy-v4 env=pii_redaction model=heuristic episode=0 seed=0
    [STEP] step=1 action=REDACT(59,69,EMAIL) reward=0.860 done=false error=null
    [END] success=true steps=4 score=0.736 return=2.940 rewards=0.860,0.850,0.730,0.500

Values are ``key=value`` with no spaces; a value that would contain spaces, quotes or ``=`` is
written as a JSON string, so every line parses back exactly (``parse_line``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from integrity_gym.bench.records import EpisodeRecord

_PAIR = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S*)')
_PLAIN = re.compile(r'^[^\s"=]+$')
KINDS = ("START", "STEP", "END")


def _value(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.3f}"
    text = str(value)
    return text if _PLAIN.match(text) else json.dumps(text, ensure_ascii=False)


def format_line(kind: str, fields: Mapping[str, Any]) -> str:
    """One log line ``[KIND] k=v ...`` (floats with three decimals, None as null)."""
    if kind not in KINDS:
        raise ValueError(f"log line kind must be one of {', '.join(KINDS)}, not {kind!r}")
    return f"[{kind}] " + " ".join(f"{k}={_value(v)}" for k, v in fields.items())


def start_line(task: str, env: str, model: str, episode: int, seed: int) -> str:
    """The line that opens an episode."""
    return format_line("START", {"task": task, "env": env, "model": model, "episode": episode, "seed": seed})


def step_line(step: int, action: str, reward: float, done: bool, error: str | None) -> str:
    """One step: the action as text, its reward, whether it ended the episode, the rejection if any."""
    shown = action if len(action) <= 200 else action[:197] + "..."
    error_text = None if error is None else (error if len(error) <= 300 else error[:297] + "...")
    return format_line("STEP", {"step": step, "action": shown, "reward": reward, "done": done, "error": error_text})


def end_line(
    success: bool | None, steps: int, score: float | None, total: float, rewards: Iterable[float], error: str | None
) -> str:
    """The line that closes an episode (``error`` set when the episode failed)."""
    fields: dict[str, Any] = {
        "success": success,
        "steps": steps,
        "score": score,
        "return": total,
        "rewards": ",".join(f"{r:.3f}" for r in rewards) or "-",
    }
    if error is not None:
        fields["error"] = error if len(error) <= 300 else error[:297] + "..."
    return format_line("END", fields)


def parse_line(line: str) -> tuple[str, dict[str, str | None]]:
    """Split a log line into its kind and raw field values (JSON strings decoded, null → None)."""
    match = re.match(r"^\[(START|STEP|END)\]\s+(.*)$", line.rstrip("\n"))
    if not match:
        raise ValueError(f"not a run-log line: {line[:80]!r}")
    fields: dict[str, str | None] = {}
    for key, raw in _PAIR.findall(match.group(2)):
        fields[key] = None if raw == "null" else (json.loads(raw) if raw.startswith('"') else raw)
    return match.group(1), fields


def episode_block(record: EpisodeRecord, model: str) -> list[str]:
    """Every log line of one recorded episode (a line of ``episodes.jsonl``)."""
    lines = [start_line(record.task_id, record.env, model, record.index, record.seed)]
    for step in record.trajectory:
        lines.append(step_line(step.step, step.action_text, step.reward, step.done, step.error))
    rewards = [step.reward for step in record.trajectory]
    lines.append(end_line(record.success, record.steps, record.score, record.total_return, rewards, record.error))
    return lines
