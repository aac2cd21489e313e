"""igym export: prompts exactly as the llm agent sends them, and agents' episodes as transcripts that the llm
agent's own reader plays back into the same episode."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import typer
from typer.testing import CliRunner

import integrity_gym
from integrity_gym.agents.llm import LLMAgent, LLMSettings, prompt_messages, read_action
from integrity_gym.agents.prompts import get_adapter
from integrity_gym.bench.export import (
    ExportError,
    export,
    export_rows,
    plan_items,
    prompt_row,
    transcript_row,
)
from integrity_gym.bench.protocols import EpisodeAgent
from integrity_gym.bench.setup import build_agent
from integrity_gym.cli.exporting import export as export_command
from integrity_gym.core.checker import FORBIDDEN_OBSERVATION_KEYS, _find_key
from tests.agents.openai_stub import completion, openai_stub

GDPR = "pii_redaction/gdpr_contract_easy-v4"
INFO = "information_integrity/easy-v3"
SELECTIVE = "selective_verification/balanced-v3"
ONE_PER_ENV = [GDPR, INFO, SELECTIVE]
TASK_IDS = [spec.id for spec in integrity_gym.list_tasks()]


def cli(*args: str) -> Any:
    app = typer.Typer()
    app.command()(export_command)
    app.command("unused")(lambda: None)  # two commands: Typer keeps the command's name as a sub-command
    return CliRunner().invoke(app, ["export", *args], env={"COLUMNS": "80"})


def llm_episode(task_id: str, partition: str, seed: int, replies: list[str]) -> tuple[list[Any], Any]:
    """The llm agent plays ``task_id`` against a scripted endpoint; the messages it sent and the grade."""
    with openai_stub([completion(r) for r in replies]) as (url, stub):
        env = integrity_gym.make(task_id, partition=partition)
        settings = LLMSettings(api_base_url=url, api_key="k", model_name="stub", retries=0, timeout_s=10)
        agent = EpisodeAgent(LLMAgent(env, seed, settings=settings))
        obs = env.reset(seed=seed)
        while not env.done:
            result = env.step(agent.act(obs))
            agent.observe(result)
            obs = result.observation
        return [request["messages"] for request in stub.requests], env.grade()


@pytest.mark.parametrize("task_id", ONE_PER_ENV)
@pytest.mark.parametrize("partition", ["train", "eval"])
def test_exported_prompts_are_the_messages_the_llm_agent_sends(task_id: str, partition: str) -> None:
    """Kills: a prompt re-worded or re-assembled here, the item of another seed or partition, a missing system
    message, ids or seeds that do not name the item."""
    items = plan_items(task_id, episodes=2, seed=3)
    rows = list(export_rows(items, partition))  # type: ignore[arg-type]
    assert [(r["task_id"], r["partition"], r["index"], r["seed"]) for r in rows] == [
        (task_id, partition, 0, 3), (task_id, partition, 1, 4)]  # fmt: skip
    spec = integrity_gym.get_spec(task_id)
    adapter = get_adapter(spec)
    for row in rows:
        env = integrity_gym.make(task_id, partition=partition)
        obs = env.reset(seed=row["seed"])
        assert row["messages"] == prompt_messages(adapter.system(spec, obs), adapter.user(obs, None))
    # What the llm agent really puts on the wire for that item's first turn.
    sent, _ = llm_episode(task_id, partition, rows[0]["seed"], ['{"unreadable": true}'] * 100)
    assert sent[0] == rows[0]["messages"]


@pytest.mark.parametrize(
    ("task_id", "agent", "seeds"),
    [(GDPR, "heuristic", [0]), (GDPR, "random", [1]), (INFO, "oracle", [0]), (INFO, "heuristic", [2]),
     (SELECTIVE, "heuristic", [0, 1])],
)  # fmt: skip
def test_a_transcript_played_back_by_the_llm_agent_is_the_same_episode(
    task_id: str, agent: str, seeds: list[int]
) -> None:
    """Kills: a reply written in another format than the llm agent reads (offsets instead of a quote, a confidence
    left out, a target the schema refuses), turn messages that drift from what the agent is sent (the feedback
    after a rejected action), a grade that is not the transcript's own."""
    for row in export_rows(plan_items(task_id, seeds=seeds), "train", agent=agent):
        replies = [t["reply"] for t in row["turns"]]
        sent, grade = llm_episode(task_id, "train", row["seed"], replies)
        assert sent == [t["messages"] for t in row["turns"]]
        assert grade.model_dump(mode="json") == row["grade"]
        assert row["done"] and row["steps"] == len(replies)
        assert row["messages"][0]["role"] == "system" and row["messages"][-1] == {
            "role": "assistant", "content": replies[-1]}  # fmt: skip
        # Each reply reads back as the action the agent chose.
        env = integrity_gym.make(task_id, partition="train")
        player = EpisodeAgent(build_agent(agent, env, row["seed"]))
        adapter = get_adapter(env.spec)
        obs = env.reset(seed=row["seed"])
        for reply in replies:
            chosen = player.act(obs)
            jsonschema.validate(json.loads(reply), adapter.schema(obs))  # the reply the agent is asked for
            read, _parse, error = read_action(adapter, reply, obs)
            assert error is None
            assert env.parse_action(read) == env.parse_action(chosen)
            result = env.step(read)
            player.observe(result)
            obs = result.observation
        assert row["rewritten_turns"] == 0


class Scripted:
    """An agent that plays a fixed list of actions (the last one again once the list runs out)."""

    def __init__(self, actions: list[dict[str, Any]]) -> None:
        self.actions = actions

    def act(self, observation: Any) -> Any:
        return self.actions.pop(0) if len(self.actions) > 1 else self.actions[0]


def test_rejections_reach_the_next_turn_and_unreadable_replies_are_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Kills: turns that never show the rejection feedback the llm agent shows the model (the environment's, and
    the reader's own for a reply it cannot read), and an action played otherwise than chosen left uncounted."""
    redact = {"action_type": "REDACT", "start": 0, "end": 11, "label": "NAME"}
    again = {**redact, "end": 12}  # quotable ("[REDACTED]█R"), and the environment's duplicate (IoU 11/12)
    outside = {"action_type": "REDACT", "start": 10**6, "end": 10**6 + 5, "label": "NAME"}  # cannot be quoted
    script = [redact, again, outside, {"action_type": "FINISH"}]
    monkeypatch.setattr("integrity_gym.bench.export.build_agent", lambda name, env, seed: Scripted(list(script)))
    (row,) = export_rows(plan_items(GDPR, seeds=[0]), "train", agent="scripted")
    errors = [t["error"] for t in row["turns"]]
    assert errors[0] is None and "repeats an earlier redaction" in errors[1] and errors[2] and errors[3] is None
    users = [t["messages"][1]["content"] for t in row["turns"]]
    assert "Your last action was rejected: REDACT(0,12) repeats" in users[2]
    assert "Your last action was rejected: REDACT needs the text to hide" in users[3]  # the reader's own words
    assert row["rewritten_turns"] == 1
    sent, grade = llm_episode(GDPR, "train", 0, [t["reply"] for t in row["turns"]])
    assert sent == [t["messages"] for t in row["turns"]] and grade.model_dump(mode="json") == row["grade"]


def hidden_strings(state: Any, seen: str) -> set[str]:
    """Long strings of the full state (ground truth included) that the first observation does not show."""
    out: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, str) and len(value) >= 24 and value not in seen:
            out.add(value)

    walk(state)
    return out


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_exports_carry_no_ground_truth(task_id: str) -> None:
    """Kills: metadata taken from the state (labels, gold spans, fact-check verdicts) instead of the observation,
    and a prompt that shows what the observation hides."""
    for partition in ("train", "eval"):
        for row in export_rows(plan_items(task_id, episodes=2), partition):  # type: ignore[arg-type]
            assert _find_key(row, FORBIDDEN_OBSERVATION_KEYS) is None
            env = integrity_gym.make(task_id, partition=partition)
            obs = env.reset(seed=row["seed"]).model_dump(mode="json")
            assert all(obs[k] == v for k, v in row["metadata"].items())  # metadata is the observation's own
            hidden = hidden_strings(env.state().model_dump(mode="json"), json.dumps(obs, ensure_ascii=False))
            text = json.dumps(row["messages"], ensure_ascii=False)
            assert not [h for h in hidden if h in text], "a prompt shows a string the observation hides"
    (transcript,) = export_rows(plan_items(task_id, episodes=1), "train", agent="random")
    assert _find_key({k: transcript[k] for k in ("messages", "turns", "metadata")}, FORBIDDEN_OBSERVATION_KEYS) is None


def test_the_same_seed_exports_byte_identical_files(tmp_path: Path) -> None:
    """Kills: anything run-dependent in a row (time, a random id, set order) or an unseeded agent."""
    pattern = f"{GDPR},{SELECTIVE}"
    texts = []
    for name in ("a", "b"):
        for agent in (None, "heuristic"):
            result = export(pattern, "train", out=tmp_path / f"{name}-{agent}.jsonl", agent=agent, episodes=2, seed=5)
            texts.append(result.path.read_bytes())
    assert texts[0] == texts[2] and texts[1] == texts[3]
    other = export(pattern, "train", out=tmp_path / "other.jsonl", episodes=2, seed=6).path.read_bytes()
    assert other != texts[0]


@pytest.mark.parametrize("task_id", ONE_PER_ENV)
def test_train_and_eval_partitions_are_disjoint(task_id: str) -> None:
    """Kills: an export that ignores --partition (both files the same items)."""
    rows = {p: list(export_rows(plan_items(task_id, episodes=8), p)) for p in ("train", "eval")}  # type: ignore[arg-type]
    ids = {p: {r["item_id"] for r in rs} for p, rs in rows.items()}
    assert len(ids["train"]) == len(ids["eval"]) == 8 and not ids["train"] & ids["eval"]
    users = {p: {json.dumps(r["messages"][1]) for r in rs} for p, rs in rows.items()}
    assert not users["train"] & users["eval"]


def test_parquet_without_pyarrow_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Kills: an ImportError traceback, or a file half written before the missing writer is noticed."""
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(ExportError, match=r"integrity-gym\[data\]"):
        export(GDPR, "train", "parquet", out=tmp_path / "x.parquet", episodes=1)
    result = cli(GDPR, "--partition", "train", "--format", "parquet", "--out", str(tmp_path / "y.parquet"))
    assert result.exit_code == 2 and "integrity-gym[data]" in " ".join(result.output.split())
    assert not list(tmp_path.iterdir())


def test_parquet_holds_the_same_rows(tmp_path: Path) -> None:
    """Kills: a parquet file that drops or retypes columns (an image message, the nested turns)."""
    pq = pytest.importorskip("pyarrow.parquet")
    pattern = f"{SELECTIVE},{GDPR}"
    first = export(pattern, "train", "parquet", out=tmp_path / "a.parquet", agent="heuristic", episodes=2, seed=1)
    again = export(pattern, "train", "parquet", out=tmp_path / "b.parquet", agent="heuristic", episodes=2, seed=1)
    assert first.path.read_bytes() == again.path.read_bytes()
    back = pq.read_table(first.path).to_pylist()
    assert [r["item_id"] for r in back] == [r["item_id"] for r in first.rows]
    for read, row in zip(back, first.rows, strict=True):
        contents = [c if isinstance(c, str) else json.dumps(c) for c in (m["content"] for m in row["messages"])]
        assert [m["content"] for m in read["messages"]] == contents
        assert read["grade"]["score"] == row["grade"]["score"] and read["turns"][0]["reply"] == row["turns"][0]["reply"]


def test_the_command_writes_reports_and_refuses_what_it_cannot_do(tmp_path: Path) -> None:
    """Kills: a silent overwrite, a default partition (train/eval must be chosen), the llm agent played blind."""
    out = tmp_path / "gdpr.jsonl"
    result = cli(GDPR, "--partition", "train", "--trajectories", "oracle", "--episodes", "2", "--out", str(out))
    assert result.exit_code == 0, result.output
    # rich wraps long paths anywhere: compare without any whitespace
    assert "".join(f"wrote 2 oracle transcripts (train partition) to {out}".split()) in "".join(result.output.split())
    assert [json.loads(line)["grade"]["score"] for line in out.read_text().splitlines()] == [1.0, 1.0]
    again = cli(GDPR, "--partition", "train", "--out", str(out))
    assert again.exit_code == 2 and "already exists" in again.output
    assert cli(GDPR, "--out", str(tmp_path / "p.jsonl")).exit_code == 2  # --partition is required
    refused = cli(GDPR, "--partition", "eval", "--trajectories", "llm", "--out", str(tmp_path / "l.jsonl"))
    assert refused.exit_code == 2 and "igym bench --model" in " ".join(refused.output.split())
    unknown = cli("no_such/task", "--partition", "train", "--out", str(tmp_path / "u.jsonl"))
    assert unknown.exit_code == 2 and "no task matches" in unknown.output
    warned = cli(INFO, "--partition", "eval", "--trajectories", "heuristic", "--out", str(tmp_path / "e.jsonl"))
    assert warned.exit_code == 0 and "keep them out of any training set" in " ".join(warned.output.split())


def test_prompt_and_transcript_rows_share_the_item_head() -> None:
    """Kills: transcripts of another item than the prompt row of the same index and seed."""
    (item,) = plan_items(INFO, seeds=[7])
    prompt, transcript = prompt_row(item, "eval"), transcript_row(item, "eval", "heuristic")
    head = ("task_id", "env", "tier", "partition", "index", "seed", "item_id", "metadata")
    assert {k: prompt[k] for k in head} == {k: transcript[k] for k in head}
    assert transcript["turns"][0]["messages"] == prompt["messages"]
