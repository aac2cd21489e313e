"""GRPO smoke run: 2 steps x 4 completions x 16 tokens on the bundled SmolLM2 (needs the train extra).

It proves the recipe runs end to end, not that it learns: nothing here asserts that reward improves.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from integrity_gym import make
from integrity_gym.bench.results import ResultsDB
from integrity_gym.train.grpo import DEFAULT_PREFILL, TrainConfig, train

from .conftest import require_training

TASK = "selective_verification/text-v3"


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_training()
    out = tmp_path_factory.mktemp("train")
    config = TrainConfig(task=TASK, steps=2, prompts_per_step=1, generations=4, max_new_tokens=16, eval_episodes=1)
    train(config, out / "run", db_path=out / "results.sqlite")
    return out


def test_it_trained_on_train_partition_items_with_the_envs_own_rewards(smoke: Path) -> None:
    out = smoke
    lines = [json.loads(x) for x in (out / "run" / "train_log.jsonl").read_text().splitlines()]
    assert [x["step"] for x in lines] == [1, 2] and all(x["n"] == 4 and len(x["rewards"]) == 4 for x in lines)
    train_env, eval_env = make(TASK, partition="train"), make(TASK, partition="eval")
    for line in lines:
        (seed,) = line["seeds"]
        obs = train_env.reset(seed=seed)
        assert line["item_ids"] == [obs.item_id] != [eval_env.reset(seed=seed).item_id]
        # The logged reward is what the environment pays for the logged completion.
        assert line["sample"].startswith(DEFAULT_PREFILL)
        assert train_env.step(line["sample"]).reward == line["rewards"][0]


def test_a_loadable_model_is_saved_and_both_evals_are_in_the_results_database(smoke: Path) -> None:
    out = smoke
    transformers = pytest.importorskip("transformers")
    model = transformers.AutoModelForCausalLM.from_pretrained(out / "run" / "model")
    tokenizer = transformers.AutoTokenizer.from_pretrained(out / "run" / "model")
    assert getattr(model.config, "quantization_config", None) is None  # a plain model, trainable again
    ids = tokenizer("Hello", return_tensors="pt")
    assert model.generate(**ids, max_new_tokens=2, do_sample=False).shape[1] == ids["input_ids"].shape[1] + 2
    with ResultsDB(out / "results.sqlite") as db:
        runs = db.runs()
        assert sorted(r["model"] for r in runs) == ["SmolLM2-135M-Instruct-before", "SmolLM2-135M-Instruct-grpo"]
        for run in runs:
            config = json.loads(run["config_json"])
            assert config["bench"]["partition"] == "eval" and config["bench"]["llm"]["prefill"] == DEFAULT_PREFILL
    summary = json.loads((out / "run" / "train_summary.json").read_text())
    assert summary["before"]["episodes"] == summary["after"]["episodes"] == 1
