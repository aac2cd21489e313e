"""How the eval runs of igym train and igym sft name the model they evaluate (no torch needed)."""

from __future__ import annotations

from integrity_gym.train.model import BUNDLED, model_label


def test_a_saved_model_is_named_by_its_run_folder() -> None:
    # Kills: every model that igym sft or igym train saved labelled "model" in the results and figures.
    assert model_label(BUNDLED) == "SmolLM2-135M-Instruct"
    assert model_label("outputs/sft-threshold/model") == "sft-threshold"
    assert model_label("Qwen/Qwen2.5-3B-Instruct") == "Qwen2.5-3B-Instruct"
    assert model_label("model") == "model"
