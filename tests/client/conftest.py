"""Fixtures: one real server process per test session (per xdist worker), with the admin token."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.server.servers import ServerProcess, start_server


@pytest.fixture(scope="session")
def server() -> Iterator[ServerProcess]:
    """A server serving every registered task, full state unlocked by ``ADMIN_TOKEN``."""
    proc = start_server()
    yield proc
    proc.stop()
