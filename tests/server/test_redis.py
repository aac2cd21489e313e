"""Two server processes sharing a real redis-server hand sessions to each other."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from integrity_gym.core.types import StepResult
from tests.conftest import require_service
from tests.server.episodes import SPECS, TASK_IDS, reference
from tests.server.servers import ADMIN_TOKEN, ServerProcess, redis_available, running_redis, start_server

SEED = 21
CAPACITY = 4


@pytest.fixture(scope="module")
def pair() -> Iterator[tuple[ServerProcess, ServerProcess]]:
    require_service(redis_available(), "redis-server and the redis package")
    with running_redis() as url:
        args = ["--sessions", url, "--max-sessions", str(CAPACITY)]
        first = start_server(args)
        try:
            second = start_server(args)
        except Exception:
            first.stop()
            raise
        try:
            yield first, second
        finally:
            first.stop()
            second.stop()


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_a_session_moves_between_processes(pair: tuple[ServerProcess, ServerProcess], task_id: str) -> None:
    """Reset through one process, then alternate every step between the two: same episode."""
    ref = reference(task_id, SEED)
    env = SPECS[task_id].env
    admin = {"authorization": f"Bearer {ADMIN_TOKEN}"}
    with httpx.Client(trust_env=False, timeout=30) as http:
        urls = [f"{server.url}/{env}" for server in pair]
        reply = http.post(f"{urls[0]}/reset", json={"seed": SEED, "task": task_id}).json()
        session = reply["session_id"]
        seen = [SPECS[task_id].env_class().observation_type.model_validate(reply["observation"]).model_dump_json()]
        obs_type = SPECS[task_id].env_class().observation_type
        for i, action in enumerate(ref.actions):
            step = http.post(f"{urls[(i + 1) % 2]}/step", json={"session_id": session, "action": action})
            assert step.status_code == 200, step.text
            data = step.json()
            data["observation"] = obs_type.model_validate(data["observation"])
            last_grade = data["info"].pop("grade", None)  # the server's addition to the last step
            assert (last_grade is not None) == data["done"]
            seen.append(StepResult(**data).model_dump_json())
        assert seen == ref.seen
        grades = [http.get(f"{url}/grade/{session}").json() for url in urls]
        assert grades[0] == grades[1] == last_grade
        # The episode's random id moves with it (kills: not stored, so the other process draws its own).
        assert [http.get(f"{url}/scenario/{session}").json()["episode_id"] for url in urls] == [reply["episode_id"]] * 2
        state = http.get(f"{urls[1]}/state/{session}", headers=admin)
        assert state.json() == SPECS[task_id].env_class().state_type.model_validate_json(ref.state).model_dump(
            mode="json"
        )
        finished = http.post(f"{urls[0]}/step", json={"session_id": session, "action": ref.actions[-1]})
        assert finished.status_code == 409 and finished.json()["code"] == "EPISODE_FINISHED"
        assert http.delete(f"{urls[1]}/session/{session}").status_code == 200
        assert http.get(f"{urls[0]}/grade/{session}").status_code == 404


def test_concurrent_steps_through_both_processes_are_serialized(pair: tuple[ServerProcess, ServerProcess]) -> None:
    """Without the shared lock, two processes would both load version v and one step would be lost."""
    n = 24
    urls = [f"{server.url}/minimal" for server in pair]
    with httpx.Client(trust_env=False, timeout=30) as http:
        session = http.post(f"{urls[0]}/reset", json={"seed": 1}).json()["session_id"]

    def step(i: int) -> int:
        with httpx.Client(trust_env=False, timeout=30) as own:
            reply = own.post(
                f"{urls[i % 2]}/step", json={"session_id": session, "action": {"kind": "ADD", "amount": 1}}
            )
            assert reply.status_code == 200, reply.text
            count: int = reply.json()["observation"]["step_count"]
            return count

    with ThreadPoolExecutor(max_workers=12) as pool:
        counts = sorted(pool.map(step, range(n)))
    assert counts == list(range(1, n + 1))
    with httpx.Client(trust_env=False) as http:
        scenario = http.get(f"{urls[1]}/scenario/{session}").json()
        assert scenario["step_count"] == n and scenario["observation"]["total"] == n
        http.delete(f"{urls[0]}/session/{session}")


def test_capacity_is_shared_by_the_processes(pair: tuple[ServerProcess, ServerProcess]) -> None:
    first, second = pair
    with httpx.Client(trust_env=False, timeout=30) as http:
        open_now = int(first.health()["sessions"])  # type: ignore[arg-type]
        ids = [
            http.post(f"{(first, second)[i % 2].url}/minimal/reset", json={}).json()["session_id"]
            for i in range(CAPACITY - open_now)
        ]
        try:
            for server in (first, second):
                refused = http.post(f"{server.url}/minimal/reset", json={})
                assert refused.status_code == 503 and refused.json()["code"] == "CAPACITY_REACHED"
            assert first.health()["sessions"] == second.health()["sessions"] == CAPACITY
            assert http.delete(f"{second.url}/minimal/session/{ids[0]}").status_code == 200
            ids[0] = http.post(f"{first.url}/minimal/reset", json={}).json()["session_id"]
        finally:
            for session in ids:
                http.delete(f"{first.url}/minimal/session/{session}")


def test_igym_serve_with_two_workers_shares_sessions() -> None:
    """``igym serve --workers 2 --sessions redis://``: requests on fresh connections reach both workers."""
    require_service(redis_available(), "redis-server and the redis package")
    import integrity_gym

    task_id = integrity_gym.list_tasks()[0].id
    env = task_id.split("/")[0]
    ref = reference(task_id, SEED)
    with running_redis() as url:
        server = start_server(["--workers", "2", "--sessions", url], cli=True)
        try:
            reply = httpx.post(f"{server.url}/{env}/reset", json={"seed": SEED, "task": task_id}, trust_env=False)
            session = reply.json()["session_id"]
            for action, want in zip(ref.actions, ref.seen[1:], strict=True):
                # A new connection per request: the kernel spreads them over the two workers.
                step = httpx.post(
                    f"{server.url}/{env}/step", json={"session_id": session, "action": action}, trust_env=False
                )
                assert step.status_code == 200, step.text
                assert step.json()["reward"] == json.loads(want)["reward"]
            assert "Started parent process" in "".join(server.log)
        finally:
            server.stop()


def test_a_websocket_session_is_out_of_reach_of_http_in_every_process(
    pair: tuple[ServerProcess, ServerProcess],
) -> None:
    """Its id sits in the shared index, yet no process ends or plays it over HTTP."""
    import redis
    from websockets.sync.client import connect

    first = pair[0]
    store = redis.Redis.from_url(_redis_url(first))
    before = {m.decode() for m in store.zrange("igym:sessions", 0, -1)}
    ws = connect(first.url.replace("http://", "ws://") + "/minimal/ws", proxy=None).__enter__()
    try:
        ws.send(json.dumps({"type": "reset", "data": {"seed": 1}}))
        assert json.loads(ws.recv(timeout=10))["type"] == "observation"
        (ws_id,) = {m.decode() for m in store.zrange("igym:sessions", 0, -1)} - before
        with httpx.Client(trust_env=False, timeout=30) as http:
            for server in pair:
                gone = http.delete(f"{server.url}/minimal/session/{ws_id}")
                assert gone.status_code == 404 and gone.json()["code"] == "SESSION_NOT_FOUND"
                step = http.post(f"{server.url}/minimal/step", json={"session_id": ws_id, "action": {"kind": "FINISH"}})
                assert step.status_code == 404
        assert ws_id in {m.decode() for m in store.zrange("igym:sessions", 0, -1)}  # still counted
        ws.send(json.dumps({"type": "step", "data": {"kind": "ADD", "amount": 2}}))
        assert json.loads(ws.recv(timeout=10))["data"]["observation"]["total"] == 2
    finally:
        ws.close()
        store.close()


def _redis_url(server: ServerProcess) -> str:
    url = server.health()["url"]
    assert isinstance(url, str)
    return url


def test_redis_down_is_a_503_naming_the_session_store_and_recovers() -> None:
    """Redis stops mid-run: every request that needs it says so (503), nothing is a 500, then it returns."""
    require_service(redis_available(), "redis-server and the redis package")
    from fastapi.testclient import TestClient
    from starlette.websockets import WebSocketDisconnect

    from integrity_gym.server import ServerConfig, create_app
    from integrity_gym.server.minimal import MINIMAL_TASK
    from tests.server.servers import start_redis, stop_process

    url, proc = start_redis()
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    try:
        app = create_app(tasks=[MINIMAL_TASK], config=ServerConfig(sessions=url, admin_token=ADMIN_TOKEN))
        with TestClient(app, raise_server_exceptions=False) as client:
            session = client.post("/minimal/reset", json={}).json()["session_id"]
            with client.websocket_connect("/minimal/ws") as live:
                live.send_text(json.dumps({"type": "reset", "data": {}}))
                assert json.loads(live.receive_text())["type"] == "observation"
                stop_process(proc)

                def unavailable(reply: httpx.Response) -> None:
                    assert reply.status_code == 503, reply.text
                    body = reply.json()
                    assert body["code"] == "SESSION_STORE_UNAVAILABLE", body
                    assert "session store (Redis at redis://127.0.0.1" in body["detail"], body
                    assert reply.headers["retry-after"]

                unavailable(client.post("/minimal/reset", json={}))
                unavailable(client.post("/minimal/step", json={"session_id": session, "action": {"kind": "FINISH"}}))
                unavailable(client.get(f"/minimal/scenario/{session}"))
                unavailable(client.get(f"/minimal/grade/{session}"))
                unavailable(client.get(f"/minimal/state/{session}", headers={"authorization": f"Bearer {ADMIN_TOKEN}"}))
                unavailable(client.delete(f"/minimal/session/{session}"))
                for path in ("/health", "/minimal/health"):
                    health = client.get(path)
                    assert health.status_code == 503 and health.json()["status"] == "unhealthy"
                    assert "session store" in health.json()["detail"]
                # A new WebSocket hears why, then the connection is closed properly (1013: try again later).
                with client.websocket_connect("/minimal/ws") as refused:
                    frame = json.loads(refused.receive_text())
                    assert frame["data"]["code"] == "SESSION_STORE_UNAVAILABLE", frame
                    assert "session store" in frame["data"]["message"]
                    with pytest.raises(WebSocketDisconnect) as closed:
                        refused.receive_text()
                    assert closed.value.code == 1013
                # A WebSocket already playing lives in this process and plays on.
                live.send_text(json.dumps({"type": "step", "data": {"kind": "ADD", "amount": 1}}))
                assert json.loads(live.receive_text())["data"]["observation"]["total"] == 1
            # Redis is back (empty: no persistence): the server is healthy again and serves new sessions.
            url_again, proc = start_redis(port)
            assert url_again == url
            assert client.get("/health").status_code == 200
            assert client.post("/minimal/reset", json={}).status_code == 200
    finally:
        stop_process(proc)
