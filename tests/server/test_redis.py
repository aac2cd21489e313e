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
            seen.append(StepResult(**data).model_dump_json())
        assert seen == ref.seen
        grades = [http.get(f"{url}/grade/{session}").json() for url in urls]
        assert grades[0] == grades[1]
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
