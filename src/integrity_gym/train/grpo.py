"""GRPO on the environments: their own reward or grade on the train partition, eval before/after.

``train(TrainConfig(...))`` (``igym train``) does, in one process:

1. load the model (``model.load_model``) and build one prompt per train-partition item exactly as
   the ``llm`` agent would (adapter system and user messages, the prefill as the reply's start);
2. evaluate it on the eval partition with the benchmark runner and the ``llm`` agent, through
   an in-memory endpoint (``endpoint.serve_model``): the run lands in the results database;
3. train with TRL's ``GRPOTrainer``. A single-step task: each completion is scored by resetting
   the environment on its item's seed and stepping it with the prefill plus the completion
   (``read_action``, the agent's own reading). A multi-step task: TRL's ``rollout_func`` plays
   whole episodes with the benchmark runner (``rollout.EpisodeRollout``) and the reward is each
   episode's grade. Every step's rewards, malformed and abstain rates and the gain over always
   abstaining go to ``train_log.jsonl``;
4. save the model (and the LoRA adapter, with ``lora_r``) and evaluate it again.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import json
import re
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from integrity_gym.agents.llm import LLMSettings, prompt_messages, read_action
from integrity_gym.agents.prompts import get_adapter, text_of
from integrity_gym.core.env import validate_config
from integrity_gym.core.registry import get_spec, make
from integrity_gym.report.training import EVAL_DIRS, LOG_NAME, SUMMARY_NAME
from integrity_gym.train.model import BUNDLED, load_model, model_label, render, require_train_extra, save_model

#: The default task's reply start (its prompt module's ``PREFILL``).
DEFAULT_PREFILL = '{"verdict": "'


def default_prefill(task: str) -> str | None:
    """The reply's start for ``task`` without ``--prefill``: its environment's ``PREFILL`` (None: none)."""
    try:
        spec = get_spec(task)
    except KeyError:  # the task field's own check names it
        return None
    prefill: str | None = getattr(spec.env_class().extras.module("prompt"), "PREFILL", None)
    return prefill


def with_task_prefill(values: Any, default_task: str) -> Any:
    """A config's raw ``values`` with its task's prefill when they name none (an explicit None means none)."""
    if isinstance(values, dict) and "prefill" not in values:
        return {**values, "prefill": default_prefill(str(values.get("task") or default_task))}
    return values


def native_bf16(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether this machine computes bf16 natively: a CUDA device that does, or a CPU with AVX512-BF16 or AMX.

    The CPU's flags are read from Linux's ``cpuinfo`` (False elsewhere). Other CPUs emulate bf16,
    slower than float32 (docs/training.md has the measurement).
    """
    if importlib.util.find_spec("torch") is not None:
        torch = importlib.import_module("torch")
        if torch.cuda.is_available():
            return bool(torch.cuda.is_bf16_supported())
    try:
        flags = cpuinfo.read_text()
    except OSError:
        return False
    return re.search(r"\b(avx512_bf16|amx_bf16)\b", flags) is not None


class TrainConfig(BaseModel):
    """Everything one training run depends on; saved in ``train_summary.json``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task: str = Field("selective_verification/text-v3", description="A task id, single- or multi-step.")
    model: str = Field(BUNDLED, description="'smollm2' (bundled GGUF), a local folder or a hub id.")
    steps: int = Field(20, ge=1, description="Optimizer steps.")
    prompts_per_step: int = Field(2, ge=1, description="Train items per step.")
    generations: int = Field(8, ge=2, description="Completions per item (the GRPO group).")
    max_new_tokens: int = Field(48, ge=1, description="Completion length limit.")
    learning_rate: float = Field(1e-5, gt=0, description="AdamW learning rate.")
    temperature: float = Field(1.0, gt=0, description="Sampling temperature of the rollouts.")
    lora_r: int | None = Field(None, ge=1, description="LoRA rank (None: full fine-tune).")
    prefill: str | None = Field(
        DEFAULT_PREFILL,
        description="Start of every reply, in training and in eval (default: the task's prompt PREFILL).",
    )
    max_turns: int | None = Field(
        None, ge=1, description="Turn cap of a multi-step episode, in training and eval (None: the task's own)."
    )
    seed: int = Field(0, ge=0, description="First train seed (step k plays seeds seed + k*prompts ...).")
    eval_episodes: int = Field(50, ge=0, description="Eval-partition items before and after (0: no eval).")
    eval_seed: int = Field(0, ge=0, description="First eval seed.")
    bf16: bool = Field(
        default_factory=lambda: native_bf16(),
        description="bf16 autocast for GRPO's generation and training, float32 weights (default: native_bf16()).",
    )

    @model_validator(mode="before")
    @classmethod
    def _task_prefill(cls, values: Any) -> Any:
        return with_task_prefill(values, cls.model_fields["task"].default)

    @classmethod
    def build(cls, **values: Any) -> TrainConfig:
        """Validate: a ``ValueError`` naming the offending option (``core.env.validate_config``)."""
        config: TrainConfig = validate_config(cls, values)
        return config


@dataclass
class TrainResult:
    """What ``train`` returns: where things went and the before/after eval."""

    out_dir: Path
    model_dir: Path
    log_path: Path
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    steps: list[dict[str, Any]] = field(default_factory=list)


def _user_text(adapter: Any, observation: Any) -> str:
    # A text-only model gets the adapter's own text-only message (what the agent sends with LLM_IMAGES=0).
    user = adapter.user(observation, None)
    return user if isinstance(user, str) else (adapter.text_only(observation) or text_of(user))


def item_id(env: Any, observation: Any, seed: int) -> str:
    """The id of the item ``env`` was just reset on: the observation's, else the scenario's or document's."""
    found = getattr(observation, "item_id", None)
    if found is None:
        state = env.state()
        found = getattr(getattr(state, "scenario", None) or getattr(state, "document", None), "id", None)
    return str(seed if found is None else found)


def first_prompt(env: Any, spec: Any, adapter: Any, seed: int) -> dict[str, Any]:
    """The training row of train seed ``seed``: its first prompt's messages and what identifies the item."""
    obs = env.reset(seed=seed)
    return {
        "seed": seed,
        "item_id": item_id(env, obs, seed),
        "messages": (adapter.system(spec, obs), _user_text(adapter, obs)),
    }


def rendered_row(row: dict[str, Any], tokenizer: Any, prefill: str | None) -> dict[str, Any]:
    """``first_prompt``'s row as TRL trains on it: its messages rendered with the prefill into ``prompt``."""
    system, user = row["messages"]
    rest = {k: v for k, v in row.items() if k != "messages"}
    return {**rest, "prompt": render(tokenizer, prompt_messages(system, user, prefill))}


class StepLog:
    """``train_log.jsonl``: one line per GRPO step, written by the single-step reward and the rollout alike."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.step = 0
        self.started = time.perf_counter()

    def write(
        self,
        rewards: list[float],
        replies: tuple[int, int, int],
        floors: list[float],
        item_ids: list[str],
        seeds: list[int],
        sample: str,
        **extra: Any,
    ) -> dict[str, Any]:
        """Append the step's line and return it.

        ``rewards``: one per completion or episode; ``replies``: how many replies were malformed, how
        many abstained, and how many there were (one per completion, one per turn of an episode).
        """
        floor = statistics.fmean(floors) if floors else None
        mean = statistics.fmean(rewards)
        self.step += 1
        line = {
            "step": self.step,
            "n": len(rewards),
            "reward_mean": mean,
            "reward_std": statistics.pstdev(rewards),
            "malformed_rate": replies[0] / max(1, replies[2]),
            "abstain_rate": replies[1] / max(1, replies[2]),
            "abstain_floor": floor,
            "reward_gain": None if floor is None else mean - floor,
            "partition": "train",
            "item_ids": sorted(set(item_ids)),
            "seeds": sorted(set(seeds)),
            "rewards": rewards,
            "sample": sample,
            **extra,
            "elapsed_s": round(time.perf_counter() - self.started, 1),
        }
        with self.path.open("a") as fh:
            fh.write(json.dumps(line) + "\n")
        return line


class EnvReward:
    """The reward function TRL calls: the environment's reward of prefill + completion, logged per step."""

    def __init__(self, config: TrainConfig, log_path: Path) -> None:
        self.config = config
        self.spec = get_spec(config.task)
        self.env = make(config.task, partition="train")
        self.adapter = get_adapter(self.spec)
        self.log = StepLog(log_path)
        self.__name__ = "env_reward"  # TRL names the reward column after it

    def prompt(self, seed: int) -> dict[str, Any]:
        """The training row of train seed ``seed``: the rendered prompt and what identifies the item."""
        return first_prompt(self.env, self.spec, self.adapter, seed)

    def score(self, seed: int, completion: str) -> tuple[float, bool, bool, float | None, str]:
        """``(reward, malformed, abstained, abstain floor, item id)`` of one completion."""
        obs = self.env.reset(seed=seed)
        item = item_id(self.env, obs, seed)
        action, parse, _ = read_action(self.adapter, (self.config.prefill or "") + completion, obs)
        result = self.env.step(action)
        breakdown = result.info.get("reward_breakdown") or {}
        # An environment that parses the raw reply itself (send_raw) has the last word on what is malformed.
        env_says = result.info.get("malformed")
        malformed = bool(env_says) if env_says is not None else parse == "malformed" or "malformed" in breakdown
        floor = getattr(obs, "abstain_reward", None)
        return float(result.reward), malformed, "abstain" in breakdown, floor, item

    def __call__(self, prompts: list[Any], completions: list[Any], seed: list[int], **_: Any) -> list[float]:
        """Score every completion of one generation batch and append the step's line to the log."""
        # Prompts are plain text (rendered with the prefill), so TRL hands back plain-text completions.
        rows = [self.score(int(s), str(c)) for s, c in zip(seed, completions, strict=True)]
        rewards = [r[0] for r in rows]
        self.log.write(
            rewards, (sum(r[1] for r in rows), sum(r[2] for r in rows), len(rows)),
            [r[3] for r in rows if r[3] is not None], [r[4] for r in rows],
            [int(s) for s in seed], (self.config.prefill or "") + str(completions[0]),
        )  # fmt: skip
        return rewards


def _device() -> str:
    return "cuda" if importlib.import_module("torch").cuda.is_available() else "cpu"


@contextlib.contextmanager
def bf16_autocast(enabled: bool) -> Iterator[None]:
    """bf16 autocast on the training device when ``enabled`` (autocast is per thread: enter it in each)."""
    # TRL generates outside the Trainer's own mixed-precision context: one autocast covers both.
    if not enabled:
        yield
        return
    torch = importlib.import_module("torch")
    with torch.autocast(_device(), dtype=torch.bfloat16):
        yield


def reply_flags(step: Any) -> tuple[bool, bool]:
    """``(malformed, abstained)`` of one played step (a runner ``StepRecord``).

    Malformed: the environment's breakdown says so, or neither the ``llm`` agent nor the environment
    could read the reply (environments without a "malformed" reward, like information_integrity, only
    reject it). A reply the agent could not parse but the environment read with a repair (a truncated
    ``ABSTAIN"``) is an answer, not malformed.
    """
    breakdown = step.reward_breakdown or {}
    unread = (step.llm or {}).get("parse") == "malformed" and step.error is not None
    return "malformed" in breakdown or unread, "abstain" in breakdown


def evaluate(
    model: Any, tokenizer: Any, config: TrainConfig, label: str, out_dir: Path, db_path: Path | None
) -> dict[str, Any]:
    """Play ``eval_episodes`` eval-partition items with the ``llm`` agent on ``model``; the run's figures."""
    from integrity_gym.bench.runner import BenchConfig, run_bench
    from integrity_gym.train.endpoint import serve_model

    model.eval()
    with serve_model(model, tokenizer, label) as url:
        settings = LLMSettings(
            api_base_url=url, model_name=label, temperature=0.0, max_tokens=config.max_new_tokens,
            prefill=config.prefill, response_format="none", images=False, timeout_s=600.0, retries=0,
            conversation=get_spec(config.task).max_steps != 1,  # as the rollout trains a multi-step task
        )  # fmt: skip
        bench = BenchConfig.build(
            tasks=config.task,
            agent="llm",
            episodes=config.eval_episodes,
            seed=config.eval_seed,
            partition="eval",
            max_steps=config.max_turns,
        )
        result = run_bench(bench=bench, out_dir=out_dir, db_path=db_path, llm_settings=settings, overwrite=True)
    summary = result.summaries[config.task]
    flags = [reply_flags(s) for r in result.records for s in r.trajectory]
    n = len(flags) or 1
    return {
        "label": label,
        "run_id": result.run_id,
        "out_dir": str(result.out_dir),
        "episodes": summary.episodes,
        "mean_score": summary.mean_score,
        "score_ci95": summary.score_ci95,
        "max_turns": config.max_turns,
        "malformed_rate": sum(f[0] for f in flags) / n,
        "abstain_rate": sum(f[1] for f in flags) / n,
        "metrics": summary.metrics,
    }


def grpo_args(config: TrainConfig, out_dir: Path) -> Any:
    """TRL's ``GRPOConfig`` for ``config``: its bf16 is ``config.bf16`` (TRL's own default is on everywhere)."""
    trl = importlib.import_module("trl")
    return trl.GRPOConfig(
        output_dir=str(out_dir / "trainer"), max_steps=config.steps, learning_rate=config.learning_rate,
        per_device_train_batch_size=config.prompts_per_step * config.generations,
        num_generations=config.generations, max_completion_length=config.max_new_tokens,
        temperature=config.temperature, seed=config.seed, shuffle_dataset=False, use_cpu=_device() == "cpu",
        bf16=config.bf16, logging_steps=1, save_strategy="no", report_to="none", disable_tqdm=True,
    )  # fmt: skip


def train(config: TrainConfig, out_dir: Path, *, db_path: Path | None = None) -> TrainResult:
    """Run the whole recipe (see the module docstring) into ``out_dir``."""
    spec = get_spec(config.task)
    multi_step = spec.max_steps != 1
    require_train_extra()
    datasets = importlib.import_module("datasets")
    trl = importlib.import_module("trl")
    out_dir.mkdir(parents=True, exist_ok=True)
    log_path = out_dir / LOG_NAME
    log_path.write_text("")
    model, tokenizer = load_model(config.model)
    model.to(_device())
    label = model_label(config.model)
    seeds = range(config.seed, config.seed + config.steps * config.prompts_per_step)
    serving: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()
    rollout_func = None
    reward_func: Any
    if multi_step:
        from integrity_gym.train.rollout import EpisodeRollout  # it builds on this module

        rollout = EpisodeRollout(config, tokenizer, log_path, label)
        rows, reward_func, rollout_func, serving = rollout.rows(seeds), rollout.reward, rollout, rollout.serving()
    else:
        env_reward = reward_func = EnvReward(config, log_path)
        rows = [rendered_row(env_reward.prompt(seed), tokenizer, config.prefill) for seed in seeds]
    before = None
    if config.eval_episodes:
        before = evaluate(model, tokenizer, config, f"{label}-before", out_dir / EVAL_DIRS["before"], db_path)
    with bf16_autocast(config.bf16), serving:
        model.train()
        peft_config = None
        if config.lora_r is not None:
            peft = importlib.import_module("peft")
            peft_config = peft.LoraConfig(r=config.lora_r, lora_alpha=2 * config.lora_r, target_modules="all-linear")
        trainer = trl.GRPOTrainer(
            model=model, reward_funcs=reward_func, args=grpo_args(config, out_dir), processing_class=tokenizer,
            train_dataset=datasets.Dataset.from_list(rows), peft_config=peft_config, rollout_func=rollout_func,
        )  # fmt: skip
        trainer.train()
    trained = trainer.model
    model_dir = save_model(trained, tokenizer, out_dir / "model")
    if hasattr(trained, "merge_and_unload"):
        trained = trained.merge_and_unload()
    after = None
    if config.eval_episodes:
        after = evaluate(trained, tokenizer, config, f"{label}-grpo", out_dir / EVAL_DIRS["after"], db_path)
    steps = [json.loads(line) for line in log_path.read_text().splitlines() if line.strip()]
    (out_dir / "trainer_log.jsonl").write_text("".join(json.dumps(e) + "\n" for e in trainer.state.log_history))
    summary = {"config": config.model_dump(mode="json"), "before": before, "after": after, "model_dir": str(model_dir)}
    (out_dir / SUMMARY_NAME).write_text(json.dumps(summary, indent=2) + "\n")
    return TrainResult(out_dir, model_dir, log_path, before, after, steps)
