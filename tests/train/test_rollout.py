"""The multi-step rollout without training: scripted replies through the real runner, agent and tokenizer.

A scripted sampler stands in for the model, so what is checked is the rollout itself: the agent's
own wording of each observation, the environment's grade and return, and one token sequence per
episode whose mask is 1 exactly on the sampled tokens. Needs transformers and the SmolLM2 weights
(the tokenizer); skipped without them unless IGYM_REQUIRE_SERVICES=1.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from integrity_gym import make
from integrity_gym.agents.llm import LLMSettings, prompt_messages, read_action
from integrity_gym.agents.prompts import get_adapter
from integrity_gym.bench.local_llm import model_path
from integrity_gym.bench.runner import BenchConfig, play_episode
from integrity_gym.core.registry import get_spec
from integrity_gym.train.grpo import TrainConfig
from integrity_gym.train.model import render
from integrity_gym.train.rollout import EpisodeRollout
from tests.agents.openai_stub import completion, openai_stub
from tests.conftest import require_service

TASK = "information_integrity/easy-v3"
PREFILL = '{"type": "'
#: Continuations after the prefill: a check, an unreadable reply cut off without an end-of-turn token
#: (so the environment's tokens must close the turn), a second check, and a decision.
SCRIPT = [
    ('verify_claim", "target": "claim_1"}', True),
    ("nothing useful", False),
    ('check_source", "target": "src_1"}', True),
    ('decide", "decision": "allow", "reasoning": "claim_1 is true."}', True),
]


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    require_service(
        importlib.util.find_spec("transformers") is not None and model_path() is not None,
        "transformers and the SmolLM2 weights",
    )
    from integrity_gym.train.model import load_tokenizer

    return load_tokenizer()


def _rollout(tokenizer: Any, tmp_path: Path, max_turns: int) -> tuple[EpisodeRollout, list[list[int]], list[list[int]]]:
    """A rollout whose sampler replays ``SCRIPT``; with the sampled tokens and the sequences sampled from."""
    config = TrainConfig(task=TASK, max_turns=max_turns, max_new_tokens=16)
    sampled: list[list[int]] = []
    seen: list[list[int]] = []
    script = list(SCRIPT)

    def generate(ids: list[int]) -> list[int]:
        text, closed = script.pop(0)
        out = tokenizer(text, add_special_tokens=False)["input_ids"] + ([tokenizer.eos_token_id] if closed else [])
        seen.append(list(ids))
        sampled.append(out)
        return list(out)

    class Scripted(EpisodeRollout):
        def sampler(self, trainer: Any) -> Any:
            assert trainer == "the trainer"
            return generate

    rollout = Scripted(config, tokenizer, tmp_path / "log.jsonl", "scripted")
    rollout.recorder.generate = generate
    return rollout, sampled, seen


def test_an_episode_is_one_sequence_masked_to_the_sampled_tokens(tokenizer: Any, tmp_path: Path) -> None:
    rollout, sampled, _ = _rollout(tokenizer, tmp_path, max_turns=6)
    assert rollout.config.prefill == PREFILL  # the task's default
    rollout.rows(range(3, 4))
    with rollout.serving():
        entry, tokens = rollout.play(3)
    assert entry["turns"] == 4 and not entry["truncated"] and len(sampled) == 4
    assert entry["replies"] == [PREFILL + text for text, _ in SCRIPT]
    assert entry["malformed_turns"] == 1 and entry["item_id"] == "gen_easy_train_3"
    # Trained on: exactly the sampled tokens, in order; everything else is the environment's.
    mine = [t for t, m in zip(tokens.completion_ids, tokens.env_mask, strict=True) if m]
    assert mine == [t for out in sampled for t in out] and entry["model_tokens"] == len(mine)
    assert entry["env_tokens"] == tokens.env_mask.count(0) > 0 and entry["prompt_tokens"] == len(tokens.prompt_ids)
    # The sequence is the chat template's rendering of the conversation, turn for turn.
    conversation = tokens.conversation
    assert [m["role"] for m in conversation] == ["system"] + ["user", "assistant"] * 4
    assert [m["content"] for m in conversation[2::2]] == entry["replies"]
    whole = tokenizer.decode(tokens.prompt_ids + tokens.completion_ids, skip_special_tokens=False)
    assert render(tokenizer, [*conversation[:2], {"role": "assistant", "content": PREFILL}]) == tokenizer.decode(
        tokens.prompt_ids, skip_special_tokens=False
    )
    assert whole + "\n" == tokenizer.apply_chat_template(conversation, tokenize=False)


def test_the_observations_are_the_llm_agents_own_and_the_reward_is_the_envs_grade(
    tokenizer: Any, tmp_path: Path
) -> None:
    rollout, _, seen = _rollout(tokenizer, tmp_path, max_turns=6)
    rollout.rows(range(3, 4))
    with rollout.serving():
        entry, tokens = rollout.play(3)
    # The llm agent in conversation mode, played by the runner against a stub giving the same replies (the
    # continuations alone, as llama.cpp answers), sends these conversations.
    settings = LLMSettings.from_env({"LLM_PREFILL": PREFILL, "LLM_IMAGES": "0", "LLM_CONVERSATION": "1"}, retries=0)
    with openai_stub([completion(text) for text, _ in SCRIPT]) as (url, stub):
        bench = BenchConfig.build(tasks=TASK, agent="llm", seeds=(3,), partition="train", max_steps=6)
        record = play_episode(
            get_spec(TASK), bench, 0, 3, llm_settings=settings.model_copy(update={"api_base_url": url})
        )
    sent = [r["messages"] for r in stub.requests]
    assert sent[-1][:-1] == tokens.conversation[:-1] and sent[-1][-1] == {"role": "assistant", "content": PREFILL}
    # The tokens each sampling step saw are the tokens of the conversation the evaluation sends at that turn.
    assert len(seen) == len(sent) == 4
    for ids, messages in zip(seen, sent, strict=True):
        assert ids == tokenizer(render(tokenizer, messages), add_special_tokens=False)["input_ids"]
    users = [m["content"] for m in tokens.conversation if m["role"] == "user"]
    assert "rejected" in users[2] and "rejected" not in users[1]  # the unreadable reply's error is shown next
    assert record.score == entry["grade"] and record.total_return == entry["return"]
    # Replayed in-process, step by step, the replies earn the logged grade and return.
    assert _replay(entry["replies"], 3) == (entry["grade"], entry["return"], True)


def test_an_agent_that_sends_observations_alone_is_refused(tokenizer: Any, tmp_path: Path) -> None:
    rollout, _, _ = _rollout(tokenizer, tmp_path, max_turns=6)
    system, user = "rules", "first observation"
    with rollout.recorder.recording():
        rollout.recorder.complete({"messages": prompt_messages(system, user, PREFILL)})
        with pytest.raises(ValueError, match="not the one the rollout recorded"):
            rollout.recorder.complete({"messages": prompt_messages(system, "second observation", PREFILL)})


def _replay(replies: list[str], seed: int) -> tuple[float, float, bool]:
    """Grade, return and done of ``replies`` stepped in-process, read as the agent reads them."""
    env, adapter = make(TASK, partition="train"), get_adapter(get_spec(TASK))
    obs, total = env.reset(seed=seed), 0.0
    for raw in replies:
        result = env.step(read_action(adapter, raw, obs)[0])
        obs, total = result.observation, total + result.reward
    return env.grade().score, total, env.done


def test_trl_gets_one_row_per_prompt_capped_at_max_turns_and_the_reward_is_the_logged_grade(
    tokenizer: Any, tmp_path: Path
) -> None:
    rollout, sampled, _ = _rollout(tokenizer, tmp_path, max_turns=2)
    (row,) = rollout.rows(range(3, 4))
    with rollout.serving():
        out = rollout([row["prompt"]], "the trainer")
    assert set(out) == {"prompt_ids", "completion_ids", "env_mask", "episode", "logprobs"} and out["logprobs"] is None
    (entry,) = out["episode"]
    assert entry["turns"] == 2 and entry["truncated"] and len(sampled) == 2
    assert len(out["completion_ids"][0]) == len(out["env_mask"][0]) and sum(out["env_mask"][0]) == len(
        sampled[0]
    ) + len(sampled[1])
    grade, total, done = _replay(entry["replies"], 3)
    assert (grade, total, done) == (entry["grade"], entry["return"], False)
    rewards = rollout.reward([row["prompt"]], ["ignored"], episode=out["episode"], seed=[3])
    line = json.loads((tmp_path / "log.jsonl").read_text())
    assert rewards == line["rewards"] == [grade] and line["returns"] == [total] and line["reward"] == "grade"
    assert line["malformed_rate"] == 0.5 and line["item_ids"] == ["gen_easy_train_3"] and line["seeds"] == [3]
    assert line["episodes"] == out["episode"] and line["abstain_floor"] is None and line["reward_gain"] is None


def test_a_prompt_that_is_not_a_training_row_is_refused(tokenizer: Any, tmp_path: Path) -> None:
    rollout, _, _ = _rollout(tokenizer, tmp_path, max_turns=2)
    rollout.rows(range(3, 4))
    with pytest.raises(ValueError, match="not one of its training rows"), rollout.serving():
        rollout(["some other prompt"], "the trainer")
