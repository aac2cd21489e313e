"""``igym train``: GRPO on a task; ``igym sft``: a supervised warm start before it (the train extra)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from integrity_gym.cli.root import console, fail


def train(
    task: Annotated[str, typer.Option(help="A task id, single- or multi-step.")] = "selective_verification/text-v3",
    model: Annotated[str, typer.Option(help="'smollm2' (the bundled GGUF), a local folder or a hub id.")] = "smollm2",
    steps: Annotated[int, typer.Option(help="Optimizer steps.")] = 20,
    prompts: Annotated[int, typer.Option(help="Train items per step.")] = 2,
    generations: Annotated[int, typer.Option(help="Completions per item (the GRPO group).")] = 8,
    max_new_tokens: Annotated[int, typer.Option(help="Completion length limit.")] = 48,
    lr: Annotated[float, typer.Option(help="Learning rate.")] = 1e-5,
    lora_r: Annotated[int | None, typer.Option(help="LoRA rank (default: full fine-tune).")] = None,
    prefill: Annotated[
        str | None, typer.Option(help="Start of every reply ('' for none), in training and eval (default: the task's).")
    ] = None,
    max_turns: Annotated[
        int | None, typer.Option(help="Turn cap of a multi-step episode, in training and eval (default: the task's).")
    ] = None,
    seed: Annotated[int, typer.Option(help="First train seed.")] = 0,
    eval_episodes: Annotated[int, typer.Option(help="Eval-partition items before and after (0: none).")] = 50,
    bf16: Annotated[
        bool | None,
        typer.Option(help="bf16 autocast, float32 weights (default: only where the hardware computes bf16 natively)."),
    ] = None,
    out: Annotated[Path, typer.Option(help="Folder for the model, the logs and the eval runs.")] = Path(
        "outputs/train"
    ),
    db: Annotated[Path, typer.Option(help="Results database of the eval runs.")] = Path("outputs/results.sqlite"),
) -> None:
    """Train a model with GRPO on a task, single- or multi-step (needs the train extra; docs/training.md)."""
    from integrity_gym.train.grpo import TrainConfig
    from integrity_gym.train.grpo import train as run_training

    try:
        config = TrainConfig.build(
            task=task, model=model, steps=steps, prompts_per_step=prompts, generations=generations,
            max_new_tokens=max_new_tokens, learning_rate=lr, lora_r=lora_r, seed=seed, eval_episodes=eval_episodes,
            max_turns=max_turns, **({} if prefill is None else {"prefill": prefill or None}),
            **({} if bf16 is None else {"bf16": bf16}),
        )  # fmt: skip
        result = run_training(config, out, db_path=db)
    except (ValueError, ImportError, FileNotFoundError) as exc:
        raise fail(str(exc)) from exc
    _print_evals(result.before, result.after)
    console.print(f"model saved in {result.model_dir}; per-step log {result.log_path}")
    try:
        from integrity_gym.report.curves import draw_training

        console.print(f"training curves: {draw_training(out, out / 'training.png')}")
    except ImportError as exc:
        console.print(f"no training curves ({exc})")


def sft(
    task: Annotated[str, typer.Option(help="A task id.")] = "information_integrity/easy-v3",
    model: Annotated[str, typer.Option(help="'smollm2' (the bundled GGUF), a local folder or a hub id.")] = "smollm2",
    agent: Annotated[str, typer.Option(help="The agent whose transcripts are learned.")] = "oracle",
    episodes: Annotated[int, typer.Option(help="Train-partition items the agent plays.")] = 32,
    epochs: Annotated[int, typer.Option(help="Passes over the transcripts.")] = 1,
    lr: Annotated[float, typer.Option(help="Learning rate.")] = 5e-5,
    prefill: Annotated[
        str | None, typer.Option(help="Start of every reply in eval ('' for none; default: the task's).")
    ] = None,
    max_turns: Annotated[int | None, typer.Option(help="Turn cap of an eval episode (default: the task's).")] = None,
    max_new_tokens: Annotated[int, typer.Option(help="Reply length limit in eval.")] = 64,
    seed: Annotated[int, typer.Option(help="First train seed.")] = 0,
    eval_episodes: Annotated[int, typer.Option(help="Eval-partition items before and after (0: none).")] = 10,
    bf16: Annotated[
        bool | None,
        typer.Option(help="bf16 autocast, float32 weights (default: only where the hardware computes bf16 natively)."),
    ] = None,
    out: Annotated[Path, typer.Option(help="Folder for the model, the log and the eval runs.")] = Path("outputs/sft"),
    db: Annotated[Path, typer.Option(help="Results database of the eval runs.")] = Path("outputs/results.sqlite"),
) -> None:
    """Fine-tune on an agent's transcripts before GRPO; then `igym train --model OUT/model` (docs/training.md)."""
    from integrity_gym.train.sft import SFTConfig, warm_start

    try:
        config = SFTConfig.build(
            task=task, model=model, agent=agent, episodes=episodes, epochs=epochs, learning_rate=lr, seed=seed,
            max_turns=max_turns, max_new_tokens=max_new_tokens, eval_episodes=eval_episodes,
            **({} if prefill is None else {"prefill": prefill or None}), **({} if bf16 is None else {"bf16": bf16}),
        )  # fmt: skip
        result = warm_start(config, out, db_path=db)
    except (ValueError, ImportError, FileNotFoundError) as exc:
        raise fail(str(exc)) from exc
    shown = result.transcripts
    console.print(
        f"learned {shown['episodes']} {shown['agent']} transcripts (mean grade {shown['mean_grade']:.3f}, "
        f"{shown['turns']} turns, {shown['trained_tokens']} of {shown['tokens']} tokens trained on)"
    )
    _print_evals(result.before, result.after)
    console.print(f"model saved in {result.model_dir}; continue with: igym train --model {result.model_dir}")


def _print_evals(*stages: dict[str, Any] | None) -> None:
    for stage in stages:
        if stage:
            low, high = stage["score_ci95"] or (None, None)
            console.print(
                f"{stage['label']}: mean score {stage['mean_score']:.3f} (95% CI {low}, {high}) over "
                f"{stage['episodes']} eval items; malformed {stage['malformed_rate']:.2f}, abstain "
                f"{stage['abstain_rate']:.2f}"
            )
