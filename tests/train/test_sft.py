"""The supervised warm start (``igym sft``): oracle transcripts as the tokens GRPO and evaluation use.

Needs the train extra and the SmolLM2 weights; skipped without them unless IGYM_REQUIRE_SERVICES=1.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from integrity_gym.agents.llm import prompt_messages
from integrity_gym.train.model import load_tokenizer, render
from integrity_gym.train.sft import SFTConfig, sequence, transcripts, warm_start

from .conftest import require_training

TASK = "information_integrity/easy-v3"
PREFILL = '{"type": "'


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    require_training()
    from integrity_gym.train.model import load_tokenizer

    return load_tokenizer()


def test_a_transcript_is_trained_on_its_replies_only_in_the_context_evaluation_sends(tokenizer: Any) -> None:
    # Kills: a mask over the prompt or the observations, a reply without its end-of-turn token, the prefill
    # trained on (evaluation writes it, the model does not), turns whose context differs from evaluation's.
    (row,) = transcripts(SFTConfig(task=TASK, episodes=1, seed=4))
    assert row["grade"]["score"] == 1.0 and row["steps"] >= 4
    data = sequence(tokenizer, row["messages"], PREFILL)
    ids, mask = data["input_ids"], data["assistant_masks"]
    assert len(ids) == len(mask)
    replies = [m["content"] for m in row["messages"] if m["role"] == "assistant"]
    trained = [t for t, m in zip(ids, mask, strict=True) if m]
    expected = [
        t
        for r in replies
        for t in [*tokenizer(r[len(PREFILL) :], add_special_tokens=False)["input_ids"], tokenizer.eos_token_id]
    ]
    assert trained == expected
    # The whole sequence is the chat template's rendering of the conversation; the context of each reply is
    # exactly the tokens of what the llm agent sends at that turn in conversation mode.
    assert tokenizer.decode(ids, skip_special_tokens=False) + "\n" == tokenizer.apply_chat_template(
        row["messages"], tokenize=False
    )
    system, turns = row["messages"][0]["content"], row["messages"][1:]
    starts = [i for i in range(len(mask)) if mask[i] and (i == 0 or not mask[i - 1])]
    assert len(starts) == len(replies)
    for k, start in enumerate(starts):
        sent = prompt_messages(system, turns[2 * k]["content"], PREFILL, turns[: 2 * k])
        assert ids[:start] == tokenizer(render(tokenizer, sent), add_special_tokens=False)["input_ids"]


def test_a_reply_that_does_not_start_with_the_prefill_is_refused(tokenizer: Any) -> None:
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
                {"role": "assistant", "content": "ALLOW"}]  # fmt: skip
    with pytest.raises(ValueError, match="does not start with the prefill"):
        sequence(tokenizer, messages, PREFILL)


def test_a_warm_start_trains_saves_and_evaluates_before_and_after(tmp_path: Path) -> None:
    require_training()
    config = SFTConfig(task=TASK, episodes=2, eval_episodes=1, max_turns=2, max_new_tokens=16, bf16=False)
    result = warm_start(config, tmp_path / "sft", db_path=tmp_path / "results.sqlite")
    summary = json.loads((tmp_path / "sft" / "sft_summary.json").read_text())
    assert summary["transcripts"]["episodes"] == 2 and summary["transcripts"]["mean_grade"] == 1.0
    assert 0 < summary["transcripts"]["trained_tokens"] < summary["transcripts"]["tokens"]
    assert result.before and result.after and result.before["episodes"] == result.after["episodes"] == 1
    assert result.before["max_turns"] == 2 and (result.model_dir / "config.json").is_file()
    log = [json.loads(x) for x in (tmp_path / "sft" / "trainer_log.jsonl").read_text().splitlines()]
    assert any("loss" in entry for entry in log)
    # The saved model reads its own training replies better than the model it started from. Kills: a model
    # saved that is not the one trained, and training that does not take (our autocast around the Trainer's
    # own bf16 once left the saved model reading these replies worse than before).
    import transformers

    from integrity_gym.train.model import load_model

    tokenizer = load_tokenizer()
    data = sequence(tokenizer, transcripts(config)[0]["messages"], PREFILL)
    trained = transformers.AutoModelForCausalLM.from_pretrained(result.model_dir)
    assert _reply_accuracy(trained, data) > _reply_accuracy(load_model()[0], data) + 0.03


def _reply_accuracy(model: Any, data: dict[str, list[int]]) -> float:
    """The share of reply tokens the model predicts greedily from the tokens before them (teacher forcing)."""
    import torch

    ids, mask = data["input_ids"], data["assistant_masks"]
    model.eval()
    with torch.no_grad():
        predicted = model(input_ids=torch.tensor([ids])).logits[0].argmax(-1).tolist()
    hits = [predicted[i - 1] == ids[i] for i in range(1, len(ids)) if mask[i]]
    return sum(hits) / len(hits)
