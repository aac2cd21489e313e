"""Every bad input gets a 4xx or an error frame naming the field and what is expected; never a 500.

In-process (the app under Starlette's test client): deep nesting in HTTP bodies, action strings
and WebSocket frames, bodies that are not UTF-8, misnamed and mistyped reset arguments, and a
WebSocket session that no HTTP request can reach, end, or use to escape the capacity limit.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from integrity_gym.server import ServerConfig, create_app
from integrity_gym.server.security import MAX_JSON_DEPTH, json_too_deep
from tests.server.episodes import ENV_NAMES, SERVED
from tests.server.servers import ADMIN_TOKEN

CAPACITY = 3
ADMIN = {"authorization": f"Bearer {ADMIN_TOKEN}"}
JSON = {"content-type": "application/json"}


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    app = create_app(tasks=SERVED, config=ServerConfig(admin_token=ADMIN_TOKEN, max_sessions=CAPACITY))
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client


def check(reply: Any, status: int, code: str, *fragments: str) -> dict[str, Any]:
    assert reply.status_code == status, reply.text
    body: dict[str, Any] = reply.json()
    assert body["code"] == code, body
    for fragment in fragments:
        assert fragment in body["detail"], body
    return body


def error(text: str, code: str, *fragments: str) -> dict[str, Any]:
    reply = json.loads(text)
    assert reply["type"] == "error", reply
    data: dict[str, Any] = reply["data"]
    assert data["code"] == code, data
    for fragment in fragments:
        assert fragment in data["message"], data
    return data


def test_the_depth_scan_counts_brackets_outside_strings_only() -> None:
    at_limit = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert not json_too_deep(at_limit)
    assert json_too_deep("[" + at_limit + "]")
    assert json_too_deep(b"{" * 100_000)
    # Brackets inside strings (escaped quotes included) are text, not nesting.
    assert not json_too_deep(json.dumps({"text": "[" * 1000 + '\\"' + "{" * 1000}))
    assert not json_too_deep("[" * 40 + '"' + "]" * 40)  # unbalanced, but shallow: the parser judges it
    # Many shallow objects side by side are not deep.
    assert not json_too_deep(json.dumps([{"a": [1]}] * 5000))


@pytest.mark.parametrize("env_name", ENV_NAMES)
def test_deep_json_is_refused_before_parsing(client: TestClient, env_name: str) -> None:
    deep = "[" * 100_000
    json_headers = {"content-type": "application/json"}
    for route in ("reset", "step", "mcp"):
        check(client.post(f"/{env_name}/{route}", content=deep, headers=json_headers), 422, "VALIDATION_ERROR", "body")
    session = client.post(f"/{env_name}/reset", json={"seed": 1}).json()["session_id"]
    try:
        body = check(
            client.post(f"/{env_name}/step", json={"session_id": session, "action": deep + "]" * 100_000}),
            422,
            "VALIDATION_ERROR",
            "action",
            f"at most {MAX_JSON_DEPTH} levels",
        )
        assert body["errors"][0]["loc"] == ["body", "action"]
        # A shallow malformed action string is still the environment's own business.
        reply = client.post(f"/{env_name}/step", json={"session_id": session, "action": "[[["})
        assert reply.status_code == 200 and reply.json()["info"]["error"], reply.text
    finally:
        client.delete(f"/{env_name}/session/{session}")
    with client.websocket_connect(f"/{env_name}/ws") as ws:
        ws.send_text("[" * 50_000)
        error(ws.receive_text(), "VALIDATION_ERROR", "message", "nested deeper")
        ws.send_text(json.dumps({"type": "reset", "data": {"seed": 1}}))
        assert json.loads(ws.receive_text())["type"] == "observation"
        ws.send_text(json.dumps({"type": "step", "data": "{" * 100_000}))
        error(ws.receive_text(), "VALIDATION_ERROR", "data", "nested deeper")
        ws.send_text(json.dumps({"type": "state"}))
        assert json.loads(ws.receive_text())["type"] == "state"  # the connection survives


def test_a_body_that_is_not_utf8_is_a_422_naming_the_body(client: TestClient) -> None:
    for route in ("reset", "step", "mcp"):
        reply = client.post(f"/minimal/{route}", content=b'{"seed": "\xff\xfe"}', headers=JSON)
        body = check(reply, 422, "VALIDATION_ERROR", "UTF-8")
        assert body["errors"][0]["loc"] == ["body"]


@pytest.mark.parametrize(
    ("data", "fragments"),
    [
        ({"task_id": "minimal/count-v0"}, ["data.task_id: unknown field; use 'task'"]),
        ({"seed": "one"}, ["data.seed:", "valid integer", '"one"']),
        ({"difficulty": "impossible"}, ["data.difficulty:", "'easy'"]),
        ({"task": "nope"}, ["data.task:", "minimal/count-v0"]),
        ({"scenario_id": False}, ["data.scenario_id:"]),
        ({"seed": 1, "bogus": 2}, ["data.bogus: unknown field"]),
    ],
)
def test_websocket_validation_errors_name_the_field_and_what_is_expected(
    client: TestClient, data: dict[str, Any], fragments: list[str]
) -> None:
    with client.websocket_connect("/minimal/ws") as ws:
        ws.send_text(json.dumps({"type": "reset", "data": data}))
        details = error(ws.receive_text(), "VALIDATION_ERROR", *fragments)
        assert details["errors"] and all(e["loc"][0] == "data" and e["msg"] for e in details["errors"])
    reply = client.post("/minimal/reset", json=data)
    body = check(reply, 422, "VALIDATION_ERROR", *(f.removeprefix("data.") for f in fragments))
    assert body["errors"][0]["loc"][0] == "body"


def test_a_websocket_session_is_out_of_reach_of_http_and_inside_the_limit(client: TestClient) -> None:
    store = client.app.state.holder.store  # type: ignore[attr-defined]
    assert store.max_sessions == CAPACITY and not store._local
    sockets = [client.websocket_connect("/minimal/ws").__enter__() for _ in range(CAPACITY)]
    try:
        for ws in sockets:
            ws.send_text(json.dumps({"type": "reset", "data": {"seed": 3}}))
            reply = ws.receive_text()
            assert json.loads(reply)["type"] == "observation" and "session_id" not in reply
        ws_ids = list(store._local)
        assert len(ws_ids) == CAPACITY
        for sid in ws_ids:
            # Knowing a WebSocket session's id gives no HTTP handle on it: not to end it, not to play it.
            check(client.delete(f"/minimal/session/{sid}"), 404, "SESSION_NOT_FOUND")
            check(
                client.post("/minimal/step", json={"session_id": sid, "action": {"kind": "FINISH"}}),
                404,
                "SESSION_NOT_FOUND",
            )
            check(client.get(f"/minimal/grade/{sid}", headers=ADMIN), 404, "SESSION_NOT_FOUND")
            check(client.get(f"/minimal/scenario/{sid}"), 404, "SESSION_NOT_FOUND")
            check(client.get(f"/minimal/state/{sid}", headers=ADMIN), 404, "SESSION_NOT_FOUND")
        assert client.get("/health").json()["sessions"] == CAPACITY
        # Full: HTTP and WebSocket alike are refused with the capacity error.
        check(client.post("/minimal/reset", json={}), 503, "CAPACITY_REACHED", f"{CAPACITY} of {CAPACITY}")
        with client.websocket_connect("/minimal/ws") as extra:
            error(extra.receive_text(), "CAPACITY_REACHED")
            with pytest.raises(WebSocketDisconnect) as closed:
                extra.receive_text()
            assert closed.value.code == 1013
        # Each socket still plays its own episode.
        for ws in sockets:
            ws.send_text(json.dumps({"type": "step", "data": {"kind": "ADD", "amount": 1}}))
            assert json.loads(ws.receive_text())["data"]["observation"]["total"] == 1
    finally:
        for ws in sockets:
            ws.__exit__(None, None, None)
    assert client.get("/health").json()["sessions"] == 0


def test_every_declared_json_schema_route_refuses_a_500(client: TestClient) -> None:
    """The shapes that used to reach a parser unguarded, on every route that takes a body."""
    doc = client.app.openapi()  # type: ignore[attr-defined]
    bodies = [b"[" * 100_000, b"\xff", b"{" * 70 + b"}" * 70, b'"' + b"\\" * 1000, b"null", b"1e999999"]
    for path, item in doc["paths"].items():
        for method, operation in item.items():
            if "requestBody" not in operation:
                continue
            for body in bodies:
                reply = client.request(method.upper(), path, content=body, headers={"content-type": "application/json"})
                assert reply.status_code < 500, (path, body[:20], reply.text)
                if reply.status_code == 200 and "session_id" in reply.json():  # `null` is an empty reset
                    client.delete(f"{path.rsplit('/', 1)[0]}/session/{reply.json()['session_id']}")
