"""Shared test helpers."""

from __future__ import annotations

import os

import pytest

REQUIRE_SERVICES = os.environ.get("IGYM_REQUIRE_SERVICES") == "1"


def require_service(available: bool, what: str) -> None:
    """Skip a test whose real service is missing here; in CI (IGYM_REQUIRE_SERVICES=1) fail instead."""
    if available:
        return
    if REQUIRE_SERVICES:
        pytest.fail(f"{what} is required (IGYM_REQUIRE_SERVICES=1) but not available")
    pytest.skip(f"{what} is not available")
