"""Session limits on a real server: capacity, the idle reaper, vanished clients, per-session locks."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from websockets.sync.client import connect

from integrity_gym.client import RemoteEnv, RetryPolicy, ServerCapacityError, SessionLostError
from tests.server.episodes import SPECS
from tests.server.servers import ServerProcess, running_server

MINIMAL = "minimal/count-v0"


def wait_until(condition: Callable[[], bool], timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def sessions(server: ServerProcess) -> int:
    return int(server.health()["sessions"])  # type: ignore[arg-type]


def ws_url(server: ServerProcess) -> str:
    return server.url.replace("http://", "ws://") + "/minimal/ws"


def test_capacity_is_enforced_with_a_clear_error_and_freed_by_close() -> None:
    with running_server(["--max-sessions", "3"]) as srv, httpx.Client(base_url=srv.url, trust_env=False) as http:
        ids = [http.post("/minimal/reset", json={"seed": i}).json()["session_id"] for i in range(3)]
        full = http.post("/minimal/reset", json={})
        assert full.status_code == 503 and full.headers["retry-after"]
        body = full.json()
        assert body["code"] == "CAPACITY_REACHED" and "3 of 3" in body["detail"]
        # The WebSocket path shares the limit: OpenEnv's error frame, then close code 1013.
        ws = connect(ws_url(srv), proxy=None).__enter__()
        reply = json.loads(ws.recv(timeout=10))
        assert reply["type"] == "error" and reply["data"]["code"] == "CAPACITY_REACHED"
        ws.close()
        assert ws.close_code == 1013 or ws.protocol.close_rcvd is not None
        # The clients try again (three attempts) after the wait the server asks for, then give up.
        waits: dict[str, list[float]] = {"ws": [], "http": []}
        for transport, recorded in waits.items():
            policy = RetryPolicy(sleep=recorded.append)
            with (
                RemoteEnv(srv.url, MINIMAL, spec=SPECS[MINIMAL], transport=transport, retries=policy) as env,
                pytest.raises(ServerCapacityError, match="sessions"),
            ):
                env.reset()
        assert waits["http"] == [1.0, 1.0]  # Retry-After: 1
        assert len(waits["ws"]) == 2  # the error frame has no Retry-After: back-off
        assert http.delete(f"/minimal/session/{ids[0]}").status_code == 200
        assert http.post("/minimal/reset", json={}).status_code == 200


@pytest.fixture(scope="module")
def short_ttl() -> Iterator[ServerProcess]:
    """A server whose sessions expire after 1 s idle, with room for 4."""
    with running_server(["--max-sessions", "4", "--session-ttl", "1"]) as srv:
        yield srv


def test_reaper_frees_the_slots_of_clients_that_vanish(short_ttl: ServerProcess) -> None:
    """Abandoned HTTP sessions and silent WebSockets are reaped after the idle time-to-live."""
    srv = short_ttl
    assert wait_until(lambda: sessions(srv) == 0)
    with httpx.Client(base_url=srv.url, trust_env=False) as http:
        abandoned = [http.post("/minimal/reset", json={}).json()["session_id"] for _ in range(2)]
        silent = connect(ws_url(srv), proxy=None).__enter__()  # connects, resets, then never speaks again
        silent.send(json.dumps({"type": "reset", "data": {}}))
        assert json.loads(silent.recv(timeout=10))["type"] == "observation"
        # A client that keeps stepping within the TTL is never reaped.
        with RemoteEnv(srv.url, MINIMAL, spec=SPECS[MINIMAL]) as active:
            active.reset(seed=1)
            assert sessions(srv) == 4
            assert http.post("/minimal/reset", json={}).status_code == 503
            deadline = time.monotonic() + 2.5
            while time.monotonic() < deadline:
                active.step({"kind": "ADD", "amount": 1})
                time.sleep(0.2)
            assert wait_until(lambda: sessions(srv) == 1)
            active.step({"kind": "ADD", "amount": 1})
        # The silent WebSocket was told why, then closed.
        reply = json.loads(silent.recv(timeout=5))
        assert reply["data"]["code"] == "SESSION_ERROR" and "idle" in reply["data"]["message"]
        silent.close()
        for session_id in abandoned:
            gone = http.post("/minimal/step", json={"session_id": session_id, "action": {"kind": "FINISH"}})
            assert gone.status_code == 404 and gone.json()["code"] == "SESSION_NOT_FOUND"
        assert wait_until(lambda: sessions(srv) == 0)
        assert http.post("/minimal/reset", json={}).status_code == 200


def test_a_killed_websocket_client_frees_its_slot_at_once(server: ServerProcess) -> None:
    before = sessions(server)
    script = (
        "import json, os, signal, sys\n"
        "from websockets.sync.client import connect\n"
        "ws = connect(sys.argv[1], proxy=None).__enter__()\n"
        "ws.send(json.dumps({'type': 'reset', 'data': {}})); ws.recv(timeout=10)\n"
        "print('ready', flush=True)\n"
        "sys.stdin.readline()\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script, ws_url(server)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None and child.stdin is not None
    assert child.stdout.readline().strip() == "ready"
    assert wait_until(lambda: sessions(server) >= before + 1)
    child.stdin.write("go\n")
    child.stdin.flush()
    child.wait(timeout=10)
    # The server's TTL is 600 s: only noticing the dropped connection can free the slot this fast.
    assert wait_until(lambda: sessions(server) <= before, timeout=10)


def test_websocket_client_reports_a_reaped_session_and_reconnects_on_reset(short_ttl: ServerProcess) -> None:
    srv = short_ttl
    assert wait_until(lambda: sessions(srv) == 0)
    with RemoteEnv(srv.url, MINIMAL, spec=SPECS[MINIMAL]) as env:
        env.reset(seed=2)
        time.sleep(2.0)
        with pytest.raises(SessionLostError, match="closed after 1s idle"):
            env.step({"kind": "ADD", "amount": 1})
        # reset is always safe to retry: it opens a new connection and a new episode.
        assert env.reset(seed=2).step_count == 0
        assert env.step({"kind": "ADD", "amount": 1}).observation.step_count == 1
    with RemoteEnv(srv.url, MINIMAL, spec=SPECS[MINIMAL], transport="http") as env:
        env.reset(seed=2)
        time.sleep(2.0)
        with pytest.raises(SessionLostError, match="expired after its idle time-to-live"):
            env.step({"kind": "ADD", "amount": 1})
        assert env.reset(seed=2).step_count == 0


def test_concurrent_steps_on_one_session_are_serialized(server: ServerProcess) -> None:
    n = 24
    with httpx.Client(base_url=server.url, trust_env=False) as http:
        session = http.post("/minimal/reset", json={"seed": 5}).json()["session_id"]

        def step(amount: int) -> dict[str, object]:
            with httpx.Client(base_url=server.url, trust_env=False) as own:
                reply: dict[str, object] = own.post(
                    "/minimal/step", json={"session_id": session, "action": {"kind": "ADD", "amount": amount % 7}}
                ).json()
                return reply

        with ThreadPoolExecutor(max_workers=16) as pool:
            replies = list(pool.map(step, range(n)))
        counts = sorted(r["observation"]["step_count"] for r in replies)  # type: ignore[index]
        assert counts == list(range(1, n + 1))
        scenario = http.get(f"/minimal/scenario/{session}").json()
        assert scenario["step_count"] == n
        assert scenario["observation"]["total"] == sum(i % 7 for i in range(n))
