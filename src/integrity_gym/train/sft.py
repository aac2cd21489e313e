"""Supervised warm start (``igym sft``): fine-tune on an agent's transcripts, then GRPO from there.

A 135M model writes no readable action on a multi-step task (every turn malformed), so GRPO gets
no signal from it. The usual remedy is to fine-tune first on demonstrations. ``warm_start`` does
that in one process:

1. play train-partition items with a demonstrating agent (the oracle by default) through the
   ``llm`` agent's interface (``bench.export.transcript_row``: the agent's own prompts, each action
   written as the reply the agent asks for);
2. turn every transcript into the token sequence multi-step GRPO trains on: its conversation is
   replayed through the rollout's own ``EpisodeRecorder`` in conversation mode, so the tokens,
   the chat template's turn boundaries and the prefill are those of ``igym train`` and of the
   evaluation, and the loss mask is 1 on exactly the replies' tokens (their end-of-turn included);
3. evaluate on the eval partition before and after TRL's ``SFTTrainer`` (the ``evaluate`` of
   ``igym train``: the ``llm`` agent, the benchmark runner, the results database), and save the
   model, which ``igym train --model <out>/model`` continues from.
"""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from integrity_gym.core.env import validate_config
from integrity_gym.core.registry import get_spec
from integrity_gym.report.training import EVAL_DIRS
from integrity_gym.train.grpo import TrainConfig, evaluate, native_bf16, with_task_prefill
from integrity_gym.train.model import BUNDLED, load_model, model_label, require_train_extra, save_model

SUMMARY_NAME = "sft_summary.json"


class SFTConfig(BaseModel):
    """Everything one warm start depends on; saved in ``sft_summary.json``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task: str = Field("information_integrity/easy-v3", description="A task id.")
    model: str = Field(BUNDLED, description="'smollm2' (bundled GGUF), a local folder or a hub id.")
    agent: str = Field("oracle", description="The agent whose transcripts are learned (oracle, heuristic, ...).")
    episodes: int = Field(32, ge=1, description="Train-partition items played by the agent.")
    seed: int = Field(0, ge=0, description="First train seed.")
    epochs: int = Field(1, ge=1, description="Passes over the transcripts.")
    learning_rate: float = Field(5e-5, gt=0, description="AdamW learning rate.")
    prefill: str | None = Field(None, description="Start of every reply in eval (default: the task's PREFILL).")
    max_turns: int | None = Field(None, ge=1, description="Turn cap of an eval episode (None: the task's own).")
    max_new_tokens: int = Field(64, ge=1, description="Reply length limit in eval.")
    eval_episodes: int = Field(10, ge=0, description="Eval-partition items before and after (0: no eval).")
    eval_seed: int = Field(0, ge=0, description="First eval seed.")
    bf16: bool = Field(default_factory=lambda: native_bf16(), description="bf16 autocast (float32 weights).")

    @model_validator(mode="before")
    @classmethod
    def _task_prefill(cls, values: Any) -> Any:
        return with_task_prefill(values, cls.model_fields["task"].default)

    @classmethod
    def build(cls, **values: Any) -> SFTConfig:
        """Validate: a ``ValueError`` naming the offending option."""
        config: SFTConfig = validate_config(cls, values)
        return config

    def eval_config(self) -> TrainConfig:
        """The evaluation's settings, as ``igym train`` evaluates."""
        return TrainConfig.build(
            task=self.task, model=self.model, prefill=self.prefill, max_turns=self.max_turns,
            max_new_tokens=self.max_new_tokens, eval_episodes=self.eval_episodes, eval_seed=self.eval_seed,
            bf16=self.bf16,
        )  # fmt: skip


@dataclass
class SFTResult:
    """What ``warm_start`` returns: where things went, the transcripts' figures and the before/after eval."""

    out_dir: Path
    model_dir: Path
    transcripts: dict[str, Any]
    before: dict[str, Any] | None
    after: dict[str, Any] | None


def sequence(tokenizer: Any, messages: list[dict[str, Any]], prefill: str | None) -> dict[str, list[int]]:
    """One transcript's conversation as training tokens: ``input_ids`` and ``assistant_masks`` (1 on replies).

    The conversation is replayed through the multi-step rollout's recorder, each request as the
    ``llm`` agent sends it in conversation mode, each reply "sampled" as the transcript's own.
    """
    from integrity_gym.agents.llm import prompt_messages
    from integrity_gym.train.rollout import EpisodeRecorder

    recorder = EpisodeRecorder(tokenizer, prefill)
    replies: list[list[int]] = []

    def generate(ids: list[int]) -> list[int]:
        return replies.pop(0)

    recorder.generate = generate
    system, turns = messages[0]["content"], messages[1:]
    with recorder.recording() as episode:
        for k in range(0, len(turns) - 1, 2):
            user, reply = turns[k]["content"], turns[k + 1]["content"]
            if prefill and not reply.startswith(prefill):
                raise ValueError(f"a transcript reply does not start with the prefill {prefill!r}: {reply[:60]!r}")
            rest = reply[len(prefill or "") :]
            replies.append([*tokenizer(rest, add_special_tokens=False)["input_ids"], tokenizer.eos_token_id])
            history = turns[:k]
            recorder.complete({"messages": prompt_messages(system, user, prefill, history)})
    return {
        "input_ids": episode.prompt_ids + episode.completion_ids,
        "assistant_masks": [0] * len(episode.prompt_ids) + episode.env_mask,
    }


def transcripts(config: SFTConfig) -> list[dict[str, Any]]:
    """The agent's transcripts of the train items (``igym export --trajectories``' rows)."""
    from integrity_gym.bench.export import export_rows, plan_items

    items = plan_items(config.task, episodes=config.episodes, seed=config.seed)
    return list(export_rows(items, "train", agent=config.agent, images=False))


def warm_start(config: SFTConfig, out_dir: Path, *, db_path: Path | None = None) -> SFTResult:
    """Run the whole recipe (see the module docstring) into ``out_dir``."""
    get_spec(config.task)  # an unknown task fails before the model loads
    require_train_extra()
    datasets, trl = importlib.import_module("datasets"), importlib.import_module("trl")
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = transcripts(config)
    model, tokenizer = load_model(config.model)
    data = [sequence(tokenizer, row["messages"], config.prefill) for row in rows]
    grades = [row["grade"]["score"] for row in rows]
    shown = {
        "agent": config.agent, "episodes": len(rows), "mean_grade": sum(grades) / len(grades),
        "turns": sum(row["steps"] for row in rows), "tokens": sum(len(d["input_ids"]) for d in data),
        "trained_tokens": sum(sum(d["assistant_masks"]) for d in data),
    }  # fmt: skip
    label = model_label(config.model)
    evaluation = config.eval_config()
    before = after = None
    if config.eval_episodes:
        before = evaluate(model, tokenizer, evaluation, f"{label}-before", out_dir / EVAL_DIRS["before"], db_path)
    cpu = not importlib.import_module("torch").cuda.is_available()
    args = trl.SFTConfig(
        output_dir=str(out_dir / "trainer"), num_train_epochs=config.epochs, learning_rate=config.learning_rate,
        per_device_train_batch_size=1, seed=config.seed, use_cpu=cpu, bf16=config.bf16,
        max_length=None, logging_steps=1, save_strategy="no", report_to="none", disable_tqdm=True,
    )  # fmt: skip
    trainer = trl.SFTTrainer(
        model=model, args=args, processing_class=tokenizer, train_dataset=datasets.Dataset.from_list(data)
    )
    # bf16 is the Trainer's own (its autocast around each forward). Our bf16_autocast around train() on top
    # of it stalled learning here (loss 1.09 -> 0.94 in three steps instead of 1.09 -> 0.45; the saved model
    # then read its own training replies worse than before), and SFT generates nothing outside the Trainer.
    model.train()
    trainer.train()
    model_dir = save_model(trainer.model, tokenizer, out_dir / "model")
    if config.eval_episodes:
        after = evaluate(trainer.model, tokenizer, evaluation, f"{label}-sft", out_dir / EVAL_DIRS["after"], db_path)
    (out_dir / "trainer_log.jsonl").write_text("".join(json.dumps(e) + "\n" for e in trainer.state.log_history))
    summary = {"config": config.model_dump(mode="json"), "transcripts": shown, "before": before, "after": after,
               "model_dir": str(model_dir)}  # fmt: skip
    (out_dir / SUMMARY_NAME).write_text(json.dumps(summary, indent=2) + "\n")
    return SFTResult(out_dir, model_dir, shown, before, after)
