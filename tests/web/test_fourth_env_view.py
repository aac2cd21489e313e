"""The fourth environment's page view, from its own folder, drawn in a real browser by the run viewer."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn

from integrity_gym.bench.runner import BenchConfig, run_bench
from integrity_gym.web.viewer import create_viewer_app
from tests.digits.env import SPEC
from tests.test_fourth_env import toy_registered  # noqa: F401  (the fixture)
from tests.web.conftest import Watched


@pytest.fixture
def toy_viewer(toy_registered: None, tmp_path: Path) -> Iterator[str]:  # noqa: F811
    """``igym view`` of a heuristic run on the toy task, served in this process (where the toy is registered)."""
    run_bench(bench=BenchConfig.build(tasks=SPEC.id, agent="heuristic", episodes=2), out_dir=tmp_path / "run")
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(create_viewer_app([tmp_path / "run"]), log_level="warning"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    while not server.started:
        thread.join(0.05)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/"
    server.should_exit = True
    thread.join(10)


def test_the_viewer_draws_the_toy_with_its_own_view(toy_viewer: str, open_page: object) -> None:
    # Kills: a view table in render.js (the toy's observations would show as a JSON tree).
    watched: Watched = open_page()  # type: ignore[operator]
    page = watched.page
    page.goto(toy_viewer)
    page.wait_for_selector("body[data-ready]")
    page.locator("#episodes tbody tr").first.click()
    page.wait_for_selector(".run-col")
    assert page.locator("[data-digit]").count() == 0  # step 0: nothing revealed
    for k in range(1, 4):  # each look reveals one more digit
        page.keyboard.press("ArrowRight")
        page.wait_for_selector(f"[data-digit]:nth-child({k})")
    assert page.locator("[data-digit]").count() == 3
    assert page.locator(".run-col pre.json").count() == 0
    watched.assert_clean()
