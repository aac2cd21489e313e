"""Export a task's items as data for supervised fine-tuning and offline RL (``igym export``).

Two kinds of rows, one per item (task, partition, index, seed, as ``igym bench`` numbers them):

* **prompts**: the first turn's chat messages exactly as the ``llm`` agent sends them, the item's id
  and its public metadata (scalar fields of its first observation, which by the environments'
  contract carries no ground truth);
* **transcripts** (``agent`` given): a whole episode played by that agent through the ``llm``
  agent's interface. Each turn is the messages the ``llm`` agent would be sent, and the agent's
  action written as the reply the ``llm`` agent is asked to produce (``render_reply``); the
  environment is stepped with that reply read back by the ``llm`` agent's own reader, so every
  assistant turn parses into the action that was played and the grade is the transcript's own.

The messages are never re-worded here: they come from the prompt adapters through
``integrations.verifiers.episodes.EnvEpisode`` (the same system prompt, user message, text-only
fallback, reading of replies and rejection feedback as ``agents.llm``) and ``agents.llm.prompt_messages``.
"""

from __future__ import annotations

import importlib
import json
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from integrity_gym.agents.llm import prompt_messages
from integrity_gym.agents.prompts import PromptAdapter
from integrity_gym.agents.prompts.replies import write_reply
from integrity_gym.bench.config import BenchConfig
from integrity_gym.bench.protocols import EpisodeAgent
from integrity_gym.bench.setup import build_agent, select_tasks
from integrity_gym.core.env import InvalidActionError
from integrity_gym.core.registry import TaskSpec
from integrity_gym.integrations.verifiers.episodes import EnvEpisode, read_reply

ExportFormat = Literal["jsonl", "parquet"]
ExportPartition = Literal["train", "eval"]
FORMATS: tuple[ExportFormat, ...] = ("jsonl", "parquet")
PARTITIONS: tuple[ExportPartition, ...] = ("train", "eval")
#: The extra that brings the parquet writer (pyarrow).
PARQUET_EXTRA = "data"
#: Longest string of an observation kept as metadata; longer ones are the item's content (in the prompt).
METADATA_CHARS = 120
#: Turns after which an episode that has not ended is cut (no task's budget comes near it).
MAX_TURNS = 10_000
_NOT_METADATA = frozenset({"task_id", "done"})


class ExportError(ValueError):
    """The export cannot be made (an unknown task, the llm agent, a missing extra); the message says why."""


# ---------------------------------------------------------------------------------- replies
def render_reply(env: Any, adapter: PromptAdapter, action: Any, observation: Any) -> str:
    """``action`` as the text the ``llm`` agent is asked to reply with, for ``observation``.

    The action is first read by the environment (a model, a mapping or text), then written in the
    adapter's reply format (``agents.prompts.replies``). An action the environment cannot read is
    written as it is (text, or its JSON), as a model's unreadable reply would be.
    """
    try:
        typed = env.parse_action(action)
    except InvalidActionError:
        return action if isinstance(action, str) else json.dumps(_plain(action), ensure_ascii=False)
    mapping: dict[str, Any] = typed.model_dump(mode="json", exclude_none=True)
    return json.dumps(write_reply(adapter, mapping, observation), ensure_ascii=False)


def _plain(value: Any) -> Any:
    return value.model_dump(mode="json") if isinstance(value, BaseModel) else value


def _same_action(env: Any, played: Any, intended: Any) -> bool:
    """Whether the environment reads ``played`` (the reply read back) as ``intended`` (the agent's action)."""
    try:
        return bool(env.parse_action(played) == env.parse_action(intended))
    except InvalidActionError:
        return bool(_plain(played) == _plain(intended))


# ---------------------------------------------------------------------------------- rows
@dataclass(frozen=True)
class Item:
    """One item to export: its task, its index in the export and the seed it is reset with."""

    spec: TaskSpec
    index: int
    seed: int


def plan_items(pattern: str, *, episodes: int = 5, seed: int = 0, seeds: Sequence[int] | None = None) -> list[Item]:
    """The items of every task matching ``pattern``, numbered as ``igym bench`` numbers its episodes."""
    try:
        bench = BenchConfig.build(tasks=pattern, episodes=len(seeds) if seeds else episodes, seed=seed,
                                  seeds=tuple(seeds) if seeds else None)  # fmt: skip
        specs = select_tasks(bench.tasks)
    except ValueError as exc:
        raise ExportError(str(exc)) from exc
    return [Item(spec, i, s) for spec in specs for i, s in enumerate(bench.seed_list())]


def item_id(env: Any, observation: Any, seed: int) -> str:
    """The id of the item ``env`` was just reset on: the observation's, else its scenario's or document's.

    The same id ``igym train`` logs for an item (``train.grpo.item_id``; bench may not import train).
    Only the id is read from the state, never what it holds.
    """
    found = getattr(observation, "item_id", None)
    if found is None:
        state = env.state()
        found = getattr(getattr(state, "scenario", None) or getattr(state, "document", None), "id", None)
    return str(seed if found is None else found)


def public_metadata(observation: Any) -> dict[str, Any]:
    """The first observation's short scalar fields (sizes, budgets, topic, scoring rule, ...).

    Observations carry no ground truth (``core.checker`` checks every environment), and the item's
    long text is in the prompt already.
    """
    data = observation.model_dump(mode="json") if isinstance(observation, BaseModel) else dict(observation)
    return {
        k: v
        for k, v in data.items()
        if k not in _NOT_METADATA
        and (v is None or isinstance(v, bool | int | float) or (isinstance(v, str) and len(v) <= METADATA_CHARS))
    }


def item_episode(item: Item, partition: ExportPartition, images: bool) -> EnvEpisode:
    """The episode of ``item`` on ``partition``, worded and read as the ``llm`` agent does."""
    # The env as `igym bench --partition` builds it in-process (bench.setup.make_env): partition as config.
    return EnvEpisode(item.spec.id, seed=item.seed, config={"partition": partition}, images=images)


def _head(item: Item, partition: ExportPartition, episode: EnvEpisode) -> dict[str, Any]:
    spec, found = item.spec, item_id(episode.env, episode.observation, item.seed)
    return {"task_id": spec.id, "env": spec.env, "tier": spec.tier, "partition": partition, "index": item.index,
            "seed": item.seed, "item_id": found}  # fmt: skip


def turn_messages(episode: EnvEpisode, prefill: str | None = None) -> list[dict[str, Any]]:
    """The messages the ``llm`` agent sends for the episode's current observation."""
    return prompt_messages(episode.system_prompt(), episode.user_message(), prefill)


def prompt_row(item: Item, partition: ExportPartition, *, images: bool = True) -> dict[str, Any]:
    """One item's first prompt: ids, seed, the first turn's messages and the item's public metadata."""
    episode = item_episode(item, partition, images)
    try:
        return {**_head(item, partition, episode), "messages": turn_messages(episode),
                "metadata": public_metadata(episode.observation)}  # fmt: skip
    finally:
        episode.close()


def transcript_row(item: Item, partition: ExportPartition, agent: str, *, images: bool = True) -> dict[str, Any]:
    """One item played by ``agent`` through the ``llm`` agent's interface, as a chat transcript with its grade.

    ``turns`` holds each turn's prompt exactly as sent and the reply; ``messages`` is the whole
    episode as one conversation (the system prompt once, then user and assistant turns). A turn
    whose reply reads back as another action than the agent chose (a quoted span that also occurs
    earlier in the window) is played as read and counted in ``rewritten_turns``.
    """
    episode = item_episode(item, partition, images)
    try:
        # Seeded as `igym bench` seeds the agent of an item's first epoch.
        player = EpisodeAgent(build_agent(agent, episode.env, item.seed))
        head = {**_head(item, partition, episode), "agent": agent, "metadata": public_metadata(episode.observation)}
        turns: list[dict[str, Any]] = []
        conversation: list[dict[str, Any]] = []
        rewritten = 0
        while not episode.done and len(turns) < MAX_TURNS:
            sent = turn_messages(episode)
            observation = episode.observation
            intended = player.act(observation)
            reply = render_reply(episode.env, episode.adapter, intended, observation)
            played, _error = read_reply(episode.adapter, reply, observation)
            rewritten += not _same_action(episode.env, played, intended)
            result = episode.step(reply)
            player.observe(result)
            if not conversation or sent[0] != conversation[0]:
                conversation.append(sent[0])
            conversation += [*sent[1:], {"role": "assistant", "content": reply}]
            turns.append({"messages": sent, "reply": reply, "reward": result.reward,
                          "error": result.info.get("error")})  # fmt: skip
        grade, done = episode.grade(), episode.done
    finally:
        episode.close()
    return {**head, "messages": conversation, "turns": turns,
            "grade": grade.model_dump(mode="json"), "total_return": sum(t["reward"] for t in turns),
            "steps": len(turns), "done": done, "rewritten_turns": rewritten}  # fmt: skip


def export_rows(
    items: Sequence[Item], partition: ExportPartition, *, agent: str | None = None, images: bool = True
) -> Iterator[dict[str, Any]]:
    """Prompt rows of ``items``, or with ``agent`` their transcripts, in order."""
    if agent == "llm":
        raise ExportError(
            "the llm agent's own episodes come from `igym bench --model NAME` (episodes.jsonl keeps every raw "
            "reply); --trajectories takes an agent that runs here: oracle, heuristic, random, ..."
        )
    if partition not in PARTITIONS:
        raise ExportError(f"--partition must be train or eval, not {partition!r}")
    for item in items:
        yield (
            prompt_row(item, partition, images=images)
            if agent is None
            else transcript_row(item, partition, agent, images=images)
        )


# ---------------------------------------------------------------------------------- files
def jsonl_text(rows: Sequence[Mapping[str, Any]]) -> str:
    """The rows as JSON lines, keys in the order written (the same rows give the same bytes)."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def _parquet_ready(row: Mapping[str, Any]) -> dict[str, Any]:
    """A row Arrow can type: a message whose content is parts (an image) holds their JSON as text."""

    def message(m: Mapping[str, Any]) -> dict[str, Any]:
        content = m["content"]
        return {"role": m["role"], "content": content if isinstance(content, str) else json.dumps(content)}

    out = dict(row)
    if "messages" in out:
        out["messages"] = [message(m) for m in out["messages"]]
    if "turns" in out:
        out["turns"] = [{**t, "messages": [message(m) for m in t["messages"]]} for t in out["turns"]]
    return out


def write_rows(rows: Sequence[Mapping[str, Any]], path: Path, fmt: ExportFormat) -> Path:
    """Write ``rows`` to ``path`` as JSON lines or Parquet (the ``data`` extra: pyarrow)."""
    if fmt not in FORMATS:
        raise ExportError(f"--format must be jsonl or parquet, not {fmt!r}")
    if fmt == "parquet":
        pa, pq = _pyarrow()
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "jsonl":
        path.write_text(jsonl_text(rows))
    else:
        pq.write_table(pa.Table.from_pylist([_parquet_ready(r) for r in rows]), path)
    return path


def _pyarrow() -> tuple[Any, Any]:
    """``pyarrow`` and ``pyarrow.parquet``; an ``ExportError`` naming the extra when they are missing."""
    try:  # imported by name: an optional extra, without type information in a plain install
        return importlib.import_module("pyarrow"), importlib.import_module("pyarrow.parquet")
    except ImportError as exc:
        raise ExportError(
            f"--format parquet needs pyarrow: pip install 'integrity-gym[{PARQUET_EXTRA}]' (or use --format jsonl)"
        ) from exc


@dataclass(frozen=True)
class ExportResult:
    """What ``export`` wrote."""

    path: Path
    rows: list[dict[str, Any]]
    seconds: float

    def per_task(self) -> dict[str, list[dict[str, Any]]]:
        """The rows by task, in order."""
        out: dict[str, list[dict[str, Any]]] = {}
        for row in self.rows:
            out.setdefault(row["task_id"], []).append(row)
        return out


def default_path(pattern: str, partition: str, fmt: str, agent: str | None) -> Path:
    """``outputs/export/<tasks>-<partition>[-<agent>].<fmt>``."""
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in pattern.replace("/", "__"))
    return Path("outputs") / "export" / f"{name}-{partition}{'' if agent is None else '-' + agent}.{fmt}"


def export(
    pattern: str,
    partition: ExportPartition,
    fmt: ExportFormat = "jsonl",
    *,
    out: Path | None = None,
    agent: str | None = None,
    episodes: int = 5,
    seed: int = 0,
    seeds: Sequence[int] | None = None,
    images: bool = True,
    overwrite: bool = False,
) -> ExportResult:
    """Export the items of the tasks matching ``pattern``: prompts, or with ``agent`` transcripts."""
    path = out or default_path(pattern, partition, fmt, agent)
    if path.exists() and not overwrite:
        raise ExportError(f"{path} already exists; pass --overwrite to replace it, or choose another --out")
    if fmt == "parquet":
        _pyarrow()  # before playing anything
    started = time.perf_counter()
    items = plan_items(pattern, episodes=episodes, seed=seed, seeds=seeds)
    try:
        rows = list(export_rows(items, partition, agent=agent, images=images))
    except ValueError as exc:  # an unknown agent, a config the environment refuses
        raise ExportError(str(exc)) from exc
    write_rows(rows, path, fmt)
    return ExportResult(path, rows, time.perf_counter() - started)


__all__ = [
    "FORMATS",
    "PARQUET_EXTRA",
    "PARTITIONS",
    "ExportError",
    "ExportResult",
    "Item",
    "default_path",
    "export",
    "export_rows",
    "item_id",
    "jsonl_text",
    "plan_items",
    "prompt_row",
    "public_metadata",
    "render_reply",
    "transcript_row",
    "turn_messages",
    "write_rows",
]
