"""Nothing hidden leaves the server before the episode ends, through any route or message type.

The same proof ``check_env`` gives for observations, lifted to the server: two sessions play
side by side; before every step, the second one's episode is replaced by the first one's state
with every unseen piece of truth altered (``Env.counterfactual``), and with another seed and
episode id. Every answer a client without the admin token can get must then be the same for
both sessions: every HTTP route of the app's OpenAPI document (enumerated, so a new route is
covered the moment it exists) and every WebSocket message type. Only the moves themselves
(reset, step, close) are exempt: a step's reward is meant to depend on the truth.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from starlette.testclient import WebSocketTestSession

from integrity_gym.server import ServerConfig, create_app
from integrity_gym.server.sessions import Session
from integrity_gym.server.ws import MESSAGE_TYPES
from tests.server.episodes import ENV_NAMES, SERVED
from tests.server.servers import ADMIN_TOKEN

SEED = 5
ADMIN = {"authorization": f"Bearer {ADMIN_TOKEN}"}
#: Operations that change the episode (or end the session): played, not compared.
MOVES = {("post", "/{env}/reset"), ("post", "/{env}/step"), ("delete", "/{env}/session/{session_id}")}
#: A valid body for each read-only operation that needs one.
BODIES: dict[str, Any] = {
    "/{env}/mcp": {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
    "/{env}/collect": {"claim": "the bridge opened in 1932", "limit": 3},
    "/{env}/grade": {"session_id": "<session>"},
}
#: WebSocket messages that read rather than move (an unknown type and a malformed one included).
WS_READS = [{"type": "state"}, {"type": "grade"}, {"type": "no-such-type"}, {"type": "step"}, {"no_type": True}]
WS_MOVES = {"reset", "step", "close"}


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    app = create_app(tasks=SERVED, config=ServerConfig(admin_token=ADMIN_TOKEN))
    with TestClient(app) as test_client:
        yield test_client


def store_sessions(client: TestClient) -> dict[str, Session]:
    sessions: dict[str, Session] = client.app.state.holder.store._local  # type: ignore[attr-defined]
    return sessions


def read_operations(client: TestClient, env: str) -> list[tuple[str, str, dict[str, Any]]]:
    """Every (method, path template, operation) of the app's OpenAPI that reads, for ``env``."""
    doc = client.app.openapi()  # type: ignore[attr-defined]
    found = []
    for path, item in doc["paths"].items():
        if path.count("/") > 1 and not path.startswith(f"/{env}/"):
            continue  # another environment's route
        for method, operation in item.items():
            generic = path.replace(f"/{env}/", "/{env}/", 1)
            if (method, generic) not in MOVES:
                found.append((method, path, operation))
    return found


def call(client: TestClient, method: str, path: str, operation: dict[str, Any], session_id: str) -> tuple[int, str]:
    """Call one operation for ``session_id`` without the admin token; the reply with its session's ids masked.

    Those ids (the session's and its episode's) are drawn at random, whatever the item: exactly they are masked,
    so an id derived from the state still shows as a difference.
    """
    episode_id = store_sessions(client)[session_id].episode_id
    params = {}
    for parameter in operation.get("parameters", []):
        if parameter["name"] != "session_id":
            raise AssertionError(f"{method} {path}: teach this test how to fill parameter {parameter['name']!r}")
        if parameter["in"] == "path":
            path = path.replace("{session_id}", session_id)
        else:
            params["session_id"] = session_id
    body = None
    if "requestBody" in operation:
        generic = "/{env}/" + path.split("/", 2)[2]
        if generic not in BODIES:
            raise AssertionError(f"{method} {path}: teach this test a valid body for it (BODIES)")
        body = json.loads(json.dumps(BODIES[generic]).replace("<session>", session_id))
    reply = client.request(method.upper(), path, params=params, json=body)
    return reply.status_code, reply.text.replace(session_id, "<session>").replace(episode_id, "<episode>")


def twin_state(state: Any, cls: Any, step: int) -> Any:
    """``state`` with every unseen truth altered, and another seed and episode id."""
    altered = cls.counterfactual(state, random.Random(f"server-hidden-truth/{step}"))
    return altered.model_copy(update={"seed": (state.seed or 0) + 1_000_003, "episode_id": f"{state.episode_id}-twin"})


def play(
    env_name: str,
    open_pair: Callable[[], tuple[Session, Session]],
    compare: Callable[[int], None],
    step_both: Callable[[Any], None],
) -> int:
    """Oracle episode on the first session; the second is reset to its counterfactual before each read."""
    cls = next(s for s in SERVED if s.env == env_name).env_class()
    real, twin = open_pair()
    steps = 0
    while not real.env.done:
        state = real.env.state()
        twin.env.load_state(twin_state(state, cls, steps))
        assert twin.env.state().model_dump_json() != state.model_dump_json()
        compare(steps)
        step_both(cls.oracle_action(state).model_dump(mode="json"))
        steps += 1
        assert steps < 2_000, "the oracle episode did not end"
    return steps


@pytest.mark.parametrize("env_name", ENV_NAMES)
def test_no_http_route_reveals_hidden_truth_before_the_end(client: TestClient, env_name: str) -> None:
    operations = read_operations(client, env_name)
    assert any(path.endswith("/grade/{session_id}") for _, path, _ in operations)
    ids: list[str] = []

    def open_pair() -> tuple[Session, Session]:
        for _ in range(2):
            reply = client.post(f"/{env_name}/reset", json={"seed": SEED})
            assert reply.status_code == 200, reply.text
            ids.append(reply.json()["session_id"])
        sessions = store_sessions(client)
        return sessions[ids[0]], sessions[ids[1]]

    checked: set[str] = set()

    def compare(step: int) -> None:
        for method, path, operation in operations:
            real = call(client, method, path, operation, ids[0])
            twin = call(client, method, path, operation, ids[1])
            assert real == twin, f"{method.upper()} {path} at step {step} depends on hidden truth"
            checked.add(f"{method} {path}")
        # The alteration is real: the admin sees it.
        states = [client.get(f"/{env_name}/state/{sid}", headers=ADMIN).text for sid in ids]
        assert states[0] != states[1]

    def step_both(action: Any) -> None:
        for sid in ids:
            assert client.post(f"/{env_name}/step", json={"session_id": sid, "action": action}).status_code == 200

    assert play(env_name, open_pair, compare, step_both) >= 1
    assert checked == {f"{method} {path}" for method, path, _ in operations}
    # Once the episode is over, its grade is given.
    assert client.get(f"/{env_name}/grade/{ids[0]}").status_code == 200
    for sid in ids:
        client.delete(f"/{env_name}/session/{sid}")


def ask(ws: WebSocketTestSession, message: dict[str, Any]) -> str:
    ws.send_text(json.dumps(message))
    return ws.receive_text()


@pytest.mark.parametrize("env_name", ENV_NAMES)
def test_no_websocket_message_reveals_hidden_truth_before_the_end(client: TestClient, env_name: str) -> None:
    # Every type the endpoint answers is either compared below or a move.
    handled = set(MESSAGE_TYPES)
    assert handled == {m["type"] for m in WS_READS if m.get("type") in handled} | WS_MOVES
    with client.websocket_connect(f"/{env_name}/ws") as ws_real, client.websocket_connect(f"/{env_name}/ws") as ws_twin:
        sockets = [ws_real, ws_twin]
        episode_ids: list[str] = []

        def open_pair() -> tuple[Session, Session]:
            for ws in sockets:
                reply = json.loads(ask(ws, {"type": "reset", "data": {"seed": SEED}}))
                assert reply["type"] == "observation", reply
                assert "session_id" not in json.dumps(reply)
                episode_ids.append(reply["data"]["metadata"]["episode_id"])
            # The two sessions play the same moves, so which socket owns which does not matter.
            mine = [s for s in store_sessions(client).values() if s.env_name == env_name and s.kind == "ws"]
            assert len(mine) == 2
            return mine[0], mine[1]

        def compare(step: int) -> None:
            for message in WS_READS:
                replies = [ask(ws, message).replace(e, "<episode>") for ws, e in zip(sockets, episode_ids, strict=True)]
                assert replies[0] == replies[1], f"WebSocket {message} at step {step} depends on hidden truth"

        def step_both(action: Any) -> None:
            for ws in sockets:
                assert json.loads(ask(ws, {"type": "step", "data": action}))["type"] == "observation"

        play(env_name, open_pair, compare, step_both)


@pytest.mark.parametrize("env_name", ENV_NAMES)
def test_no_reply_shows_the_seed_or_the_episode_id(client: TestClient, env_name: str) -> None:
    """The episode id is derived from the seed: with a seed below 2**31, a search over seeds finds it."""
    reply = client.post(f"/{env_name}/reset", json={})
    sid = reply.json()["session_id"]
    state = client.get(f"/{env_name}/state/{sid}", headers=ADMIN).json()
    seen = [(state, [reply.text, client.get(f"/{env_name}/scenario/{sid}").text])]
    with client.websocket_connect(f"/{env_name}/ws") as ws:
        texts = [ask(ws, {"type": "reset", "data": {}})]
        (session,) = [s for s in store_sessions(client).values() if s.env_name == env_name and s.kind == "ws"]
        texts += [ask(ws, {"type": "state"}), ask(ws, {"type": "no-such-type"})]
        seen.append((session.env.state().model_dump(mode="json"), texts))
    client.delete(f"/{env_name}/session/{sid}")
    for truth, texts in seen:
        for text in texts:
            assert truth["episode_id"] not in text
            assert f'"seed":{truth["seed"]}' not in text.replace(" ", "")
