"""Every kind of bad input gets its documented 4xx or error code; nothing produces a 500."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from websockets.sync.client import ClientConnection, connect

from tests.server.episodes import ENV_NAMES, SERVED
from tests.server.servers import ADMIN_TOKEN, ServerProcess


@pytest.fixture
def http(server: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=10, trust_env=False) as client:
        yield client


def ws_connect(server: ServerProcess, env_name: str, **kwargs: Any) -> ClientConnection:
    url = server.url.replace("http://", "ws://") + f"/{env_name}/ws"
    return connect(url, proxy=None, open_timeout=10, **kwargs).__enter__()


def ask(ws: ClientConnection, message: str | bytes) -> dict[str, Any]:
    ws.send(message)
    reply: dict[str, Any] = json.loads(ws.recv(timeout=10))
    return reply


def error_code(reply: dict[str, Any]) -> str:
    assert reply["type"] == "error", reply
    assert reply["data"]["message"]
    return str(reply["data"]["code"])


@pytest.mark.parametrize("env_name", ENV_NAMES)
def test_websocket_bad_messages_get_openenv_error_codes(server: ServerProcess, env_name: str) -> None:
    ws = ws_connect(server, env_name)
    try:
        assert error_code(ask(ws, "{not json")) == "INVALID_JSON"
        assert error_code(ask(ws, b"\xff\xfe")) == "INVALID_JSON"
        assert error_code(ask(ws, json.dumps([1, 2]))) == "VALIDATION_ERROR"
        assert error_code(ask(ws, json.dumps({"type": "teleport"}))) == "UNKNOWN_TYPE"
        assert error_code(ask(ws, json.dumps({"no_type": 1}))) == "UNKNOWN_TYPE"
        # Stepping before reset is the same error as in-process.
        reply = ask(ws, json.dumps({"type": "step", "data": {}}))
        assert error_code(reply) == "EXECUTION_ERROR" and reply["data"]["error_type"] == "NotResetError"
        assert error_code(ask(ws, json.dumps({"type": "reset", "data": {"seed": "abc"}}))) == "VALIDATION_ERROR"
        assert error_code(ask(ws, json.dumps({"type": "reset", "data": [1]}))) == "VALIDATION_ERROR"
        assert error_code(ask(ws, json.dumps({"type": "reset", "data": {"bogus": 1}}))) == "VALIDATION_ERROR"
        assert (
            error_code(ask(ws, json.dumps({"type": "reset", "data": {"task": "nope/none-v0"}}))) == "VALIDATION_ERROR"
        )
        reset = ask(ws, json.dumps({"type": "reset", "data": {"seed": 1}}))
        assert reset["type"] == "observation"
        assert error_code(ask(ws, json.dumps({"type": "step"}))) == "VALIDATION_ERROR"
        # A malformed action is the environment's business: a step with info['error'], as in-process.
        for action in ({"no_such_field": 1}, "not json", 12345, None):
            reply = ask(ws, json.dumps({"type": "step", "data": action}))
            assert reply["type"] == "observation", reply
            assert reply["data"]["metadata"]["error"]
            if reply["data"]["done"]:
                break
        too_big = json.dumps({"type": "step", "data": {"x": "a" * (1 << 20)}})
        assert error_code(ask(ws, too_big)) == "VALIDATION_ERROR"
        # The connection survives every error above.
        assert ask(ws, json.dumps({"type": "state"}))["type"] == "state"
    finally:
        ws.close()


@pytest.mark.parametrize("env_name", ENV_NAMES)
def test_http_bad_requests_get_documented_4xx(http: httpx.Client, env_name: str) -> None:
    def check(response: httpx.Response, status: int, code: str) -> None:
        assert response.status_code == status, response.text
        body = response.json()
        assert body["code"] == code and body["detail"], body

    base = f"/{env_name}"
    json_headers = {"content-type": "application/json"}
    check(http.post(f"{base}/reset", content=b"{not json", headers=json_headers), 422, "VALIDATION_ERROR")
    check(http.post(f"{base}/reset", json={"seed": "abc"}), 422, "VALIDATION_ERROR")
    check(http.post(f"{base}/reset", json={"seed": 1, "bogus": True}), 422, "VALIDATION_ERROR")
    check(http.post(f"{base}/reset", json=[1, 2]), 422, "VALIDATION_ERROR")
    check(http.post(f"{base}/reset", json={"task": "nope/none-v0"}), 422, "VALIDATION_ERROR")
    check(http.post(f"{base}/reset", json={"difficulty": "impossible"}), 422, "VALIDATION_ERROR")
    check(http.post(f"{base}/step", json={"session_id": "does-not-exist", "action": {}}), 404, "SESSION_NOT_FOUND")
    check(http.post(f"{base}/step", json={"session_id": "../../etc", "action": {}}), 404, "SESSION_NOT_FOUND")
    check(http.post(f"{base}/step", json={"session_id": 12, "action": {}}), 422, "VALIDATION_ERROR")
    check(http.post(f"{base}/step", json={"action": {}}), 422, "VALIDATION_ERROR")
    check(http.post(f"{base}/step", content=b"x" * (2 << 20), headers=json_headers), 413, "BODY_TOO_LARGE")
    check(http.get(f"{base}/grade/nope-nope-nope"), 404, "SESSION_NOT_FOUND")
    check(http.get(f"{base}/scenario/nope-nope-nope"), 404, "SESSION_NOT_FOUND")
    check(http.delete(f"{base}/session/nope-nope-nope"), 404, "SESSION_NOT_FOUND")
    check(http.get(f"{base}/no-such-route"), 404, "NOT_FOUND")
    check(http.put(f"{base}/reset"), 405, "METHOD_NOT_ALLOWED")

    session = http.post(f"{base}/reset", json={"seed": 2}).json()["session_id"]
    # The full state needs the admin token.
    check(http.get(f"{base}/state/{session}"), 401, "ADMIN_TOKEN_REQUIRED")
    check(http.get(f"{base}/state/{session}", headers={"authorization": "Bearer wrong"}), 403, "ADMIN_TOKEN_INVALID")
    assert http.get(f"{base}/state/{session}", headers={"authorization": f"Bearer {ADMIN_TOKEN}"}).status_code == 200
    assert (
        http.get(
            f"{base}/state", params={"session_id": session}, headers={"x-igym-admin-token": ADMIN_TOKEN}
        ).status_code
        == 200
    )
    # A session of one environment is unknown to the others.
    for other in ENV_NAMES:
        if other != env_name:
            check(http.post(f"/{other}/step", json={"session_id": session, "action": {}}), 404, "SESSION_NOT_FOUND")
    # The scenario view has ids and the observation, never the full state.
    scenario = http.get(f"{base}/scenario/{session}").json()
    assert set(scenario) == {"task_id", "step_count", "done", "session_id", "episode_id", "observation"}

    # A chunked body over the limit is cut off too.
    def chunks() -> Iterator[bytes]:
        for _ in range(40):
            yield b"x" * 65536

    check(http.post(f"{base}/step", content=chunks(), headers=json_headers), 413, "BODY_TOO_LARGE")
    # Play the oracle to the end, then a step is refused with 409.
    cls = next(s for s in SERVED if s.env == env_name).env_class()
    admin = {"authorization": f"Bearer {ADMIN_TOKEN}"}
    for _ in range(1000):
        state = cls.state_type.model_validate(http.get(f"{base}/state/{session}", headers=admin).json())
        action = cls.oracle_action(state).model_dump(mode="json")
        if http.post(f"{base}/step", json={"session_id": session, "action": action}).json()["done"]:
            break
    check(http.post(f"{base}/step", json={"session_id": session, "action": {}}), 409, "EPISODE_FINISHED")
    assert http.delete(f"{base}/session/{session}").json() == {"session_id": session, "closed": True}
    check(http.get(f"{base}/grade/{session}"), 404, "SESSION_NOT_FOUND")


def test_state_disabled_without_admin_token() -> None:
    from tests.server.servers import running_server

    with running_server(admin_token=None) as srv, httpx.Client(base_url=srv.url, trust_env=False) as http:
        env_name = "minimal"
        session = http.post(f"/{env_name}/reset", json={}).json()["session_id"]
        reply = http.get(f"/{env_name}/state/{session}", headers={"authorization": "Bearer anything"})
        assert reply.status_code == 403 and reply.json()["code"] == "ADMIN_DISABLED"
        ws = ws_connect(srv, env_name, additional_headers={"authorization": "Bearer anything"})
        ask(ws, json.dumps({"type": "reset", "data": {}}))
        state = ask(ws, json.dumps({"type": "state"}))
        assert state["data"]["ground_truth_hidden"] is True
        ws.close()


def test_server_log_has_no_tracebacks(server: ServerProcess, http: httpx.Client) -> None:
    for env_name in ENV_NAMES:
        http.post(f"/{env_name}/reset", content=b"\x00\x01", headers={"content-type": "application/json"})
        http.post(f"/{env_name}/step", content=b"null", headers={"content-type": "application/json"})
    assert not [line for line in server.log if "Traceback" in line], "".join(server.log)


def test_a_server_side_failure_is_a_500_with_a_request_id_and_nothing_leaked() -> None:
    from tests.server.broken import SECRET
    from tests.server.servers import running_server

    with running_server(["--extra-tasks", "tests.server.broken:BROKEN_TASK"]) as srv:
        with httpx.Client(base_url=srv.url, trust_env=False) as http:
            session = http.post("/broken/reset", json={}).json()["session_id"]
            reply = http.post("/broken/step", json={"session_id": session, "action": {"kind": "ADD", "amount": 1}})
            assert reply.status_code == 500
            body = reply.json()
            assert body["code"] == "INTERNAL_ERROR" and len(body["request_id"]) == 16
            assert SECRET not in reply.text and "Traceback" not in reply.text
            # The server keeps serving, and a malformed action is still the env's own 200 reply.
            assert http.post("/broken/step", json={"session_id": session, "action": {"x": 1}}).status_code == 200
            assert http.get("/health").status_code == 200
        ws = ws_connect(srv, "broken")
        ask(ws, json.dumps({"type": "reset", "data": {}}))
        reply = ask(ws, json.dumps({"type": "step", "data": {"kind": "ADD", "amount": 1}}))
        assert error_code(reply) == "EXECUTION_ERROR" and reply["data"]["error_type"] == "InternalError"
        assert SECRET not in json.dumps(reply)
        assert ask(ws, json.dumps({"type": "state"}))["type"] == "state"
        ws.close()
        # The failure and its request id are in the server's own log, for the operator.
        assert any(body["request_id"] in line for line in srv.log)


@pytest.mark.parametrize("env_name", ENV_NAMES)
def test_collect_exists_exactly_where_the_env_offers_it(http: httpx.Client, env_name: str) -> None:
    cls = next(s for s in SERVED if s.env == env_name).env_class()
    reply = http.post(f"/{env_name}/collect", json={"no_such_option": True})
    if callable(getattr(cls, "collect", None)):
        assert reply.status_code == 422 and reply.json()["code"] == "VALIDATION_ERROR", reply.text
    else:
        assert reply.status_code == 404
    assert http.post(
        f"/{env_name}/collect", content=b"[1]", headers={"content-type": "application/json"}
    ).status_code in (404, 422)
