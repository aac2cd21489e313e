"""Shared by the training tests."""

from __future__ import annotations

import importlib.util

from integrity_gym.bench.local_llm import model_path
from tests.conftest import require_service


def require_training() -> None:
    """Skip (or fail, where services are required) without the train extra and the SmolLM2 weights."""
    extra = all(importlib.util.find_spec(m) is not None for m in ("torch", "transformers", "trl", "gguf"))
    require_service(extra and model_path() is not None, "the train extra and the SmolLM2 weights")
