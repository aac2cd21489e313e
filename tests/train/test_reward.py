"""The training reward and its per-step log, without torch: the environment's own reward, train items only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from integrity_gym import make
from integrity_gym.train.grpo import DEFAULT_PREFILL, EnvReward, TrainConfig

TASK = "selective_verification/text-v3"


def test_each_completion_is_scored_by_the_env_on_its_train_item_and_the_step_is_logged(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    reward = EnvReward(TrainConfig(task=TASK), log)
    completions = ['ABSTAIN", "confidence": 0.5}', 'SUPPORTED", "confidence": 0.9}', "no idea", 'REFUTED"}']
    rewards = reward(["p"] * 4, completions, seed=[3, 3, 4, 4])
    env = make(TASK, partition="train")
    expected = []
    for seed, text in zip([3, 3, 4, 4], completions, strict=True):
        obs = env.reset(seed=seed)
        expected.append(env.step(DEFAULT_PREFILL + text).reward)
    assert rewards == expected
    assert rewards[0] == obs.abstain_reward == 0.8 and rewards[2] == rewards[3] == 0.0
    line = json.loads(log.read_text())
    assert line["step"] == 1 and line["n"] == 4 and line["rewards"] == rewards
    # "no idea" after the prefix, and an answer without its confidence, are malformed.
    assert line["malformed_rate"] == 0.5 and line["abstain_rate"] == 0.25
    assert line["reward_gain"] == pytest.approx(sum(rewards) / 4 - 0.8)
    train_ids = {make(TASK, partition="train").reset(seed=s).item_id for s in (3, 4)}
    eval_ids = {make(TASK, partition="eval").reset(seed=s).item_id for s in (3, 4)}
    assert set(line["item_ids"]) == train_ids and not train_ids & eval_ids


def test_the_prompt_is_the_llm_agents_own_and_a_second_call_is_the_next_step(tmp_path: Path) -> None:
    reward = EnvReward(TrainConfig(task=TASK), tmp_path / "log.jsonl")
    row = reward.prompt(5)
    obs = make(TASK, partition="train").reset(seed=5)
    system, user = row["messages"]
    assert system == obs.system_prompt and obs.claim in user and row["item_id"] == obs.item_id
    reward(["p"] * 2, ["x", "y"], seed=[5, 5])
    reward(["p"] * 2, ["x", "y"], seed=[6, 6])
    lines = [json.loads(x) for x in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert [x["step"] for x in lines] == [1, 2] and lines[1]["malformed_rate"] == 1.0


def test_bad_options_are_refused_and_the_prefill_defaults_to_the_tasks_reply_start() -> None:
    with pytest.raises(ValueError, match="generations"):
        TrainConfig.build(generations=1)
    with pytest.raises(ValueError, match="max_turns"):
        TrainConfig.build(task="information_integrity/easy-v3", max_turns=0)
    assert TrainConfig().prefill == TrainConfig(task=TASK).prefill == DEFAULT_PREFILL
    assert TrainConfig(task="information_integrity/easy-v3").prefill == '{"type": "'
    assert TrainConfig(task="pii_redaction/gdpr_contract_easy-v4").prefill == '{"action_type": "'
    # An explicit prefill wins, and None means no prefill at all.
    assert TrainConfig(task="information_integrity/easy-v3", prefill=None).prefill is None
    assert TrainConfig(task=TASK, prefill="{").prefill == "{"


def test_a_reply_is_malformed_only_when_nobody_could_read_it() -> None:
    from integrity_gym.bench.records import StepRecord
    from integrity_gym.train.grpo import reply_flags

    def step(breakdown: dict[str, float], parse: str, error: str | None) -> StepRecord:
        return StepRecord(step=1, action="x", action_text="x", reward=0.0, reward_breakdown=breakdown, done=True,
                          error=error, llm={"parse": parse})  # fmt: skip

    # The agent could not parse a truncated 'ABSTAIN"', the environment read it with a repair.
    assert reply_flags(step({"abstain": 0.8}, "malformed", None)) == (False, True)
    assert reply_flags(step({"malformed": 0.0}, "malformed", None)) == (True, False)  # the env says so
    assert reply_flags(step({"invalid_action": -0.05}, "malformed", "cannot read")) == (True, False)  # rejected
    assert reply_flags(step({"answered": 1.0}, "json", None)) == (False, False)
