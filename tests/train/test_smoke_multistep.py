"""Multi-step GRPO smoke run: 1 step x 2 episodes x 2 turns x 16 tokens on information_integrity (train extra).

It proves the rollout recipe runs end to end, not that it learns: nothing here asserts that reward improves.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from integrity_gym import make
from integrity_gym.agents.llm import read_action
from integrity_gym.agents.prompts import get_adapter
from integrity_gym.core.registry import get_spec
from integrity_gym.train.grpo import TrainConfig, item_id, train

from .conftest import require_training

TASK = "information_integrity/easy-v3"


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_training()
    out = tmp_path_factory.mktemp("train-multistep")
    config = TrainConfig(
        task=TASK, steps=1, prompts_per_step=1, generations=2, max_new_tokens=16, max_turns=2, eval_episodes=1
    )
    train(config, out / "run", db_path=out / "results.sqlite")
    return out / "run"


def test_it_played_train_items_and_logged_the_grade_the_env_gives_for_the_logged_replies(smoke: Path) -> None:
    (line,) = [json.loads(x) for x in (smoke / "train_log.jsonl").read_text().splitlines()]
    assert line["n"] == 2 and line["reward"] == "grade" and len(line["episodes"]) == 2
    adapter = get_adapter(get_spec(TASK))
    train_env, eval_env = make(TASK, partition="train"), make(TASK, partition="eval")
    for episode, reward in zip(line["episodes"], line["rewards"], strict=True):
        seed = episode["seed"]
        train_id = item_id(train_env, train_env.reset(seed=seed), seed)
        assert episode["item_id"] == train_id != item_id(eval_env, eval_env.reset(seed=seed), seed)
        assert 1 <= episode["turns"] == len(episode["replies"]) <= 2 and episode["model_tokens"] > 0
        # Replayed in-process, the logged replies earn the logged grade (the reward) and return.
        obs, total = train_env.reset(seed=seed), 0.0
        for raw in episode["replies"]:
            assert raw.startswith('{"type": "')
            result = train_env.step(read_action(adapter, raw, obs)[0])
            obs, total = result.observation, total + result.reward
        assert train_env.grade().score == episode["grade"] == reward and total == episode["return"]


def test_a_loadable_model_is_saved_and_the_evals_keep_the_turn_cap(smoke: Path) -> None:
    transformers = pytest.importorskip("transformers")
    model = transformers.AutoModelForCausalLM.from_pretrained(smoke / "model")
    tokenizer = transformers.AutoTokenizer.from_pretrained(smoke / "model")
    ids = tokenizer("Hello", return_tensors="pt")
    assert model.generate(**ids, max_new_tokens=2, do_sample=False).shape[1] == ids["input_ids"].shape[1] + 2
    summary = json.loads((smoke / "train_summary.json").read_text())
    for stage in ("before", "after"):
        run = Path(summary[stage]["out_dir"])
        config = json.loads((run / "config.json").read_text())
        assert config["bench"]["max_steps"] == 2 and config["bench"]["partition"] == "eval"
        episodes = [json.loads(x) for x in (run / "episodes.jsonl").read_text().splitlines()]
        assert len(episodes) == 1 and episodes[0]["steps"] <= 2
