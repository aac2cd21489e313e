"""The rollout's sampler draws the same replies TRL's own generation would (train extra).

The rollout samples from the trainer's model itself (``rollout.sampler``) rather than through a
private TRL method; this pins that it samples exactly as TRL 1.16 does for its own completions: same
settings, same random draws, the reply cut after its first end id. A tiny randomly initialised
model with the bundled tokenizer keeps it fast.
"""

from __future__ import annotations

from typing import Any

import pytest

from integrity_gym.train.rollout import sampler

from .conftest import require_training


@pytest.fixture(scope="module")
def trainer(tmp_path_factory: pytest.TempPathFactory) -> Any:
    require_training()
    import datasets
    import torch
    import transformers
    import trl

    from integrity_gym.train.model import load_tokenizer

    tokenizer = load_tokenizer()
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=1, eos_token_id=tokenizer.eos_token_id,
    )  # fmt: skip
    model = transformers.LlamaForCausalLM(config)
    args = trl.GRPOConfig(
        output_dir=str(tmp_path_factory.mktemp("sampler")), per_device_train_batch_size=2, num_generations=2,
        max_completion_length=24, temperature=1.3, top_p=0.9, top_k=50, use_cpu=True, report_to="none",
    )  # fmt: skip
    rows = datasets.Dataset.from_list([{"prompt": "hello"}])
    return trl.GRPOTrainer(
        model=model, reward_funcs=lambda completions, **_: [0.0] * len(completions), args=args,
        processing_class=tokenizer, train_dataset=rows,
    )  # fmt: skip


@pytest.mark.parametrize("seed", range(4))
def test_the_sampler_draws_what_trls_own_generation_draws(trainer: Any, seed: int) -> None:
    import torch

    ids = trainer.processing_class("Verify claim 1, then decide.", add_special_tokens=False)["input_ids"]
    torch.manual_seed(seed)
    ours = sampler(trainer.model, trainer.args, trainer.processing_class, bf16=False)(ids)
    torch.manual_seed(seed)
    (theirs,), _ = trainer._generate_single_turn([ids], None, {}, 1)
    assert ours == list(theirs) and 1 <= len(ours) <= 24


def test_a_reply_ends_at_its_first_end_id(trainer: Any) -> None:
    import torch

    eos = trainer.processing_class.eos_token_id
    generate = sampler(trainer.model, trainer.args, trainer.processing_class, bf16=False)
    with torch.no_grad():  # make the end id the only likely token: every reply is that id alone
        trainer.model.lm_head.weight[eos] += 1000.0 * trainer.model.lm_head.weight[eos].sign()
        trainer.model.model.norm.weight.fill_(1.0)
    try:
        torch.manual_seed(0)
        assert generate([1, 2, 3]) == [eos]
    finally:
        with torch.no_grad():
            trainer.model.lm_head.weight[eos] -= 1000.0 * trainer.model.lm_head.weight[eos].sign()
