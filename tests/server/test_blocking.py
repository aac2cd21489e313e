"""Sessions that wait do not hold each other up: a blocking environment's steps run off the event loop.

A real server (uvicorn, the direct WebSocket protocol and HTTP) serves tests/server/rendezvous.py,
whose steps finish only if ``PARTIES`` of them run at once. Kills: steps run on the event loop
(every meet reports ``met: false``), a blocking environment not found blocking from a call that
held the loop, and a fast environment moved off the loop without cause.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from websockets.sync.client import connect

from tests.server.rendezvous import PARTIES
from tests.server.servers import EXTRA_TASKS, ServerProcess, running_server


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    extra = f"{EXTRA_TASKS},tests.server.rendezvous:TASKS"
    with running_server(["--extra-tasks", extra, "--step-threads", "16"]) as process:
        yield process


def _meet_ws(url: str, env: str) -> bool:
    with connect(url.replace("http", "ws") + f"/{env}/ws", open_timeout=20) as ws:
        ws.send(json.dumps({"type": "reset", "data": {}}))
        json.loads(ws.recv(20))
        ws.send(json.dumps({"type": "step", "data": {"op": "meet"}}))
        reply = json.loads(ws.recv(30))
        return bool(reply["data"]["observation"]["met"])


def _meet_http(url: str, env: str) -> bool:
    with httpx.Client(base_url=url, timeout=30, trust_env=False) as client:
        sid = client.post(f"/{env}/reset", json={}).json()["session_id"]
        step = client.post(f"/{env}/step", json={"session_id": sid, "action": {"op": "meet"}}).json()
        return bool(step["observation"]["met"])


def _together(meet: object, url: str, env: str) -> list[bool]:
    with ThreadPoolExecutor(PARTIES) as pool:
        return list(pool.map(lambda _: meet(url, env), range(PARTIES)))  # type: ignore[operator]


@pytest.mark.parametrize("meet", [_meet_ws, _meet_http], ids=["websocket", "http"])
def test_a_declared_blocking_environment_steps_its_sessions_at_once(server: ServerProcess, meet: object) -> None:
    assert _together(meet, server.url, "declared") == [True] * PARTIES


def test_an_environment_that_holds_the_loop_is_found_blocking(server: ServerProcess) -> None:
    with connect(server.url.replace("http", "ws") + "/undeclared/ws", open_timeout=20) as ws:
        ws.send(json.dumps({"type": "reset", "data": {}}))
        ws.recv(20)
        ws.send(json.dumps({"type": "step", "data": {"op": "stall"}}))  # 0.3 s on the loop: found out
        ws.recv(20)
    assert _together(_meet_ws, server.url, "undeclared") == [True] * PARTIES
    assert any("undeclared: a call took" in line and "worker threads" in line for line in server.log)


def test_a_fast_environment_stays_on_the_loop(server: ServerProcess) -> None:
    # Kills: a threshold so low that microsecond steps count as blocking (each would pay a thread hop).
    with connect(server.url.replace("http", "ws") + "/minimal/ws", open_timeout=20) as ws:
        ws.send(json.dumps({"type": "reset", "data": {}}))
        ws.recv(20)
        for _ in range(50):
            ws.send(json.dumps({"type": "step", "data": {"kind": "ADD", "amount": 1}}))
            ws.recv(20)
    assert not any("minimal: a call took" in line for line in server.log)
