"""Another site's page cannot use a local server: Origin checks, a strict Content-Type, CORS off by default.

A browser names the page's origin in ``Origin`` on every WebSocket handshake and cross-site POST,
and sends a form or text/plain body unasked; clients and curl send no Origin. Kills: a WebSocket
accepted from another origin, /reset or /step reading a text/plain body as JSON, a cross-site POST
opening a session, CORS headers granted to an origin nobody listed, and the profiles' curl
requests refused.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from integrity_gym.server import ServerConfig, create_app
from tests.server.episodes import SERVED

EVIL = "https://evil.example"
MINE = "http://localhost:5173"


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with TestClient(create_app(tasks=SERVED, config=ServerConfig()), raise_server_exceptions=False) as test_client:
        yield test_client


def test_a_websocket_from_another_site_is_refused(client: TestClient) -> None:
    with (
        pytest.raises(WebSocketDisconnect) as refused,
        client.websocket_connect("/minimal/ws", headers={"origin": EVIL}),
    ):
        pass
    assert refused.value.code == 1008
    for origin in ({}, {"origin": "http://testserver"}):  # a client, and this server's own page
        with client.websocket_connect("/minimal/ws", headers=origin) as ws:
            ws.send_json({"type": "reset", "data": {}})
            assert ws.receive_json()["type"] == "observation"


def test_an_allowed_origin_may_connect_and_gets_cors_headers() -> None:
    config = ServerConfig(allowed_origins=(MINE,))
    with TestClient(create_app(tasks=SERVED, config=config)) as client:
        with client.websocket_connect("/minimal/ws", headers={"origin": MINE}) as ws:
            ws.send_json({"type": "reset", "data": {}})
            assert ws.receive_json()["type"] == "observation"
        preflight = client.options("/minimal/reset", headers={"origin": MINE, "access-control-request-method": "POST"})
        assert preflight.headers.get("access-control-allow-origin") == MINE
        other = client.options("/minimal/reset", headers={"origin": EVIL, "access-control-request-method": "POST"})
        assert other.headers.get("access-control-allow-origin") != EVIL


def test_cors_is_off_unless_configured(client: TestClient) -> None:
    preflight = client.options("/minimal/reset", headers={"origin": EVIL, "access-control-request-method": "POST"})
    assert "access-control-allow-origin" not in preflight.headers
    reply = client.post("/minimal/reset", json={}, headers={"origin": EVIL})
    assert "access-control-allow-origin" not in reply.headers


def test_a_cross_site_post_opens_no_session(client: TestClient) -> None:
    before = client.get("/health").json()
    reply = client.post("/minimal/reset", json={}, headers={"origin": EVIL})
    assert reply.status_code == 403 and reply.json()["code"] == "CROSS_SITE_REFUSED"
    assert "--allow-origin" in reply.json()["detail"]
    assert client.get("/health").json()["sessions"] == before["sessions"]


@pytest.mark.parametrize("kind", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data", None])
def test_a_body_not_declared_json_is_refused_on_reset_and_step(client: TestClient, kind: str | None) -> None:
    headers = {} if kind is None else {"content-type": kind}
    reply = client.post("/minimal/reset", content=b"{}", headers=headers)
    assert reply.status_code == 415 and reply.json()["code"] == "UNSUPPORTED_MEDIA_TYPE", reply.text
    sid = client.post("/minimal/reset", json={}).json()["session_id"]
    step = client.post("/minimal/step", content=f'{{"session_id": "{sid}", "action": {{"kind": "FINISH"}}}}',
                       headers=headers)  # fmt: skip
    assert step.status_code == 415, step.text


def test_json_bodies_and_an_empty_body_are_read(client: TestClient) -> None:
    assert client.post("/minimal/reset", content=b"").status_code == 200  # curl -X POST, no body
    typed = client.post(
        "/minimal/reset", content=b'{"seed": 1}', headers={"content-type": "application/json; charset=utf-8"}
    )
    assert typed.status_code == 200


@pytest.mark.parametrize("config", [ServerConfig(profile="seed000"), ServerConfig(lenient_content_type=True)])
def test_under_a_profile_or_when_lenient_any_type_is_read_as_json(config: ServerConfig) -> None:
    with TestClient(create_app(tasks=SERVED, config=config)) as client:
        env = "information_integrity" if config.profile else "minimal"
        reply = client.post(
            f"/{env}/reset", content=b'{"seed": 0}', headers={"content-type": "application/x-www-form-urlencoded"}
        )
        assert reply.status_code == 200, reply.text
        assert client.post(f"/{env}/reset", json={}, headers={"origin": EVIL}).status_code == 403  # still no other site
