"""A token sent as ``?admin_token=`` never reaches uvicorn's log, even under plain uvicorn with its access log on."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import httpx
from websockets.sync.client import connect

from tests.server.servers import free_port

TOKEN = "a-secret-admin-token-that-must-not-be-logged"


def test_query_tokens_are_masked_in_access_and_handshake_logs() -> None:
    # Kills: no filter on uvicorn's loggers (the WebSocket handshake line and the access line carry the query).
    port = free_port()
    env = {**os.environ, "IGYM_ADMIN_TOKEN": TOKEN, "IGYM_TASKS": "pii_redaction/*", "NO_PROXY": "*"}
    command = [
        sys.executable,
        "-m",
        "uvicorn",
        "integrity_gym.server.asgi:app",
        "--port",
        str(port),
        "--log-level",
        "info",
    ]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{base}/health", timeout=2, trust_env=False).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        reply = httpx.get(f"{base}/pii_redaction/tasks", params={"admin_token": TOKEN, "x": "1"}, trust_env=False)
        assert reply.status_code == 200
        with connect(f"ws://127.0.0.1:{port}/pii_redaction/ws?admin_token={TOKEN}", proxy=None) as ws:
            ws.send('{"type": "reset", "data": {}}')
            assert '"observation"' in str(ws.recv(timeout=10))
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=20)
    assert "GET /pii_redaction/tasks?admin_token=<redacted>&x=1" in out, out[-2000:]
    assert "/pii_redaction/ws?admin_token=<redacted>" in out, out[-2000:]
    assert TOKEN not in out
