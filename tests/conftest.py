"""Shared test helpers, and a clean environment for every test."""

from __future__ import annotations

import os
from collections.abc import Iterable

import pytest

REQUIRE_SERVICES = os.environ.get("IGYM_REQUIRE_SERVICES") == "1"

#: Variables the project reads (the llm agent's settings, the server's IGYM_* settings,
#: PII_WINDOW_SIZE, the eval secret): a user's shell must not change what a test sees.
_PROJECT_PREFIXES = ("IGYM_", "PII_", "LLM_", "OPENAI_")
_PROJECT_NAMES = frozenset(
    {
        "API_BASE_URL",
        "MODEL_NAME",
        "HF_TOKEN",
        "TEMPERATURE",
        "REQUEST_TIMEOUT_S",
        "INFERENCE_MAX_STEPS",
        "RETRY_ON_TRANSIENT_ERRORS",
    }
)


def project_variables(names: Iterable[str]) -> list[str]:
    """The names among ``names`` that the project reads."""
    return [name for name in names if name.startswith(_PROJECT_PREFIXES) or name in _PROJECT_NAMES]


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in project_variables(list(os.environ)):
        monkeypatch.delenv(name)


def require_service(available: bool, what: str) -> None:
    """Skip a test whose real service is missing here; in CI (IGYM_REQUIRE_SERVICES=1) fail instead."""
    if available:
        return
    if REQUIRE_SERVICES:
        pytest.fail(f"{what} is required (IGYM_REQUIRE_SERVICES=1) but not available")
    pytest.skip(f"{what} is not available")
