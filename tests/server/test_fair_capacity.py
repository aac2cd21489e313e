"""Fair capacity against a real server process: quota and rate over HTTP and WebSocket, and timeouts.

Each test names the mutation it kills. Every server here is ``python -m integrity_gym.server`` on
loopback (``igym serve``'s uvicorn settings: its HTTP protocol with the head timeout included).
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from tests.server.servers import ServerProcess, running_server

TOKEN = "client-token-of-a-lab-behind-one-proxy"
RESET = "/minimal/reset"


@pytest.fixture(scope="module")
def quota_server() -> Iterator[ServerProcess]:
    args = ["--max-sessions", "50", "--max-sessions-per-client", "3", "--session-rate", "0", "--client-token", TOKEN]
    with running_server(args) as server:
        yield server


def _reset(server: ServerProcess, token: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.post(server.url + RESET, json={}, headers=headers, timeout=10, trust_env=False)


def _delete(server: ServerProcess, session_id: str) -> None:
    assert httpx.delete(f"{server.url}/minimal/session/{session_id}", timeout=10, trust_env=False).status_code == 200


def test_a_greedy_client_gets_its_quota_over_both_transports_and_a_429(quota_server: ServerProcess) -> None:
    """Kills: no quota on /reset, on WebSocket connections, or a refusal that is not a 429 naming the
    limit and when to retry. An unknown token must not buy a fresh quota (a client minting names)."""
    first = _reset(quota_server)
    assert first.status_code == 200
    with connect(quota_server.url.replace("http", "ws") + "/minimal/ws", proxy=None):
        second = _reset(quota_server)
        assert second.status_code == 200  # the socket's session and two HTTP ones: 3
        refused = _reset(quota_server)
        assert refused.status_code == 429, refused.text
        body = refused.json()
        assert body["code"] == "CLIENT_QUOTA_REACHED"
        assert body["active_sessions"] == 3 and body["max_sessions_per_client"] == 3
        assert int(refused.headers["Retry-After"]) >= 1 and body["retry_after_s"] > 0
        assert "--max-sessions-per-client" in body["detail"]
        assert _reset(quota_server, token="not-a-token-the-server-knows").status_code == 429
        with connect(quota_server.url.replace("http", "ws") + "/minimal/ws", proxy=None) as extra:
            frame = json.loads(extra.recv(timeout=10))
            assert frame["type"] == "error" and frame["data"]["code"] == "CLIENT_QUOTA_REACHED"
            with pytest.raises(ConnectionClosed):  # closed with 1013 (try again later)
                extra.recv(timeout=10)
            assert extra.close_code == 1013
    # The WebSocket closed: its slot is the client's again.
    replied = _reset(quota_server)
    assert replied.status_code == 200, replied.text
    for reply in (first, second, replied):
        _delete(quota_server, reply.json()["session_id"])


def test_a_client_token_is_its_own_client(quota_server: ServerProcess) -> None:
    """Kills: tokens ignored (every user behind one proxy would share one address's quota)."""
    mine = [_reset(quota_server) for _ in range(3)]
    assert all(r.status_code == 200 for r in mine)
    assert _reset(quota_server).status_code == 429
    theirs = [_reset(quota_server, token=TOKEN) for _ in range(3)]
    assert [r.status_code for r in theirs] == [200, 200, 200]
    assert _reset(quota_server, token=TOKEN).status_code == 429
    for reply in mine + theirs:
        _delete(quota_server, reply.json()["session_id"])


def test_opening_too_fast_is_a_429_with_retry_after() -> None:
    """Kills: no rate limit, and a refusal without the wait (a client would hammer the server)."""
    with running_server(["--session-rate", "0.2", "--session-burst", "2"]) as server:
        assert [_reset(server).status_code for _ in range(2)] == [200, 200]
        refused = _reset(server)
        assert refused.status_code == 429
        assert refused.json()["code"] == "RATE_LIMITED"
        assert 4 <= int(refused.headers["Retry-After"]) <= 5  # one session every 5 s
        with connect(server.url.replace("http", "ws") + "/minimal/ws", proxy=None) as ws:
            assert json.loads(ws.recv(timeout=10))["data"]["code"] == "RATE_LIMITED"
        health = server.health()
        assert health["session_rate"] == 0.2 and health["max_sessions_per_client"] == 256


# ---------------------------------------------------------------------------------------------- timeouts
@pytest.fixture(scope="module")
def impatient_server() -> Iterator[ServerProcess]:
    with running_server(["--connect-idle-timeout", "1", "--header-timeout", "1", "--body-timeout", "1"]) as server:
        yield server


def _raw(server: ServerProcess) -> socket.socket:
    host, port = server.url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=10)


def _read_all(sock: socket.socket) -> tuple[bytes, float]:
    """Everything the server sends until it closes the connection, and how long that took."""
    started, data = time.monotonic(), b""
    while chunk := sock.recv(65536):
        data += chunk
    return data, time.monotonic() - started


def test_a_connection_that_sends_nothing_is_closed(impatient_server: ServerProcess) -> None:
    """Kills: no idle timeout on a new connection (uvicorn keeps such a connection open for ever)."""
    with _raw(impatient_server) as sock:
        data, took = _read_all(sock)
    assert took < 5
    assert data.startswith(b"HTTP/1.1 408") and b"REQUEST_TIMEOUT" in data


def test_a_head_sent_a_byte_at_a_time_is_cut_off(impatient_server: ServerProcess) -> None:
    """Kills: a timer restarted by every byte (the slow-loris pattern would never be closed), and a
    head timer counted from the connection's opening instead of the request's first byte."""
    with _raw(impatient_server) as sock:
        time.sleep(0.8)  # the first request begins late, within the idle timeout: its head has a second of its own
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
        started = time.monotonic()
        with pytest.raises(OSError):  # the server closes while we still trickle
            while time.monotonic() - started < 8:
                sock.sendall(b"X")
                time.sleep(0.1)
    assert 0.7 < time.monotonic() - started < 5


def test_many_slow_bodies_are_answered_408_and_closed(impatient_server: ServerProcess) -> None:
    """Kills: no body timeout (300 such connections stayed open indefinitely), and a 408 that leaves
    the connection open."""

    def slow_body(_: int) -> tuple[bytes, float]:
        with _raw(impatient_server) as sock:
            sock.sendall(b"POST /minimal/reset HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         b"Content-Length: 100\r\n\r\n{")  # fmt: skip
            return _read_all(sock)

    with ThreadPoolExecutor(max_workers=50) as pool:
        results = list(pool.map(slow_body, range(50)))
    for data, took in results:
        assert took < 8
        assert data.startswith(b"HTTP/1.1 408") and b"REQUEST_TIMEOUT" in data
        assert b"connection: close" in data.lower()
    assert impatient_server.health()["status"] == "healthy"


def test_patient_clients_are_not_cut_off(impatient_server: ServerProcess) -> None:
    """Kills: a head timer left running after the head (a kept-alive HTTP client, or a WebSocket
    idle past the head timeout, would be closed)."""
    ws_url = impatient_server.url.replace("http", "ws") + "/minimal/ws"
    with httpx.Client(base_url=impatient_server.url, trust_env=False) as client, connect(ws_url, proxy=None) as ws:
        sid = client.post(RESET, json={}).json()["session_id"]
        ws.send(json.dumps({"type": "reset", "data": {}}))
        assert json.loads(ws.recv(timeout=10))["type"] == "observation"
        time.sleep(2.5)  # past the 1 s head timeout, within uvicorn's 5 s keep-alive
        assert client.post("/minimal/step", json={"session_id": sid, "action": {"amount": 1}}).status_code == 200
        ws.send(json.dumps({"type": "step", "data": {"amount": 1}}))
        assert json.loads(ws.recv(timeout=10))["type"] == "observation"
