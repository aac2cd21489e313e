"""The client's own behaviour: make(url=), URLs, and clear errors on refusals, timeouts, disconnects."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator

import pytest
from websockets.sync.client import connect

import integrity_gym
from integrity_gym.client import AsyncRemoteEnv, EpisodeNotDoneError, RemoteEnv, SessionLostError
from integrity_gym.client.protocol import env_url, ws_url
from integrity_gym.core.env import NotResetError
from integrity_gym.server.minimal import MINIMAL_TASK
from tests.server.servers import ServerProcess, start_server

TASK_IDS = [spec.id for spec in integrity_gym.list_tasks()]


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_make_with_url_returns_a_client_that_plays_like_the_env(server: ServerProcess, task_id: str) -> None:
    local = integrity_gym.make(task_id)
    with integrity_gym.make(task_id, url=server.url) as remote:
        assert isinstance(remote, RemoteEnv) and remote.transport == "ws"
        assert remote.reset(seed=4).model_dump_json() == local.reset(seed=4).model_dump_json()
        action = type(local).noop_action(local.observation())
        assert remote.step(action).model_dump_json() == local.step(action).model_dump_json()
        assert remote.observation() == local.observation()
        assert remote.done == local.done
        if local.done:
            assert remote.grade() == local.grade()
        else:  # a remote grade comes once the episode has ended (before, it would reveal the truth)
            with pytest.raises(EpisodeNotDoneError, match="once the episode has ended"):
                remote.grade()


def test_urls() -> None:
    assert env_url("http://h:1", "pii_redaction") == "http://h:1/pii_redaction"
    assert env_url("http://h:1/", "pii_redaction") == "http://h:1/pii_redaction"
    assert env_url("http://h:1/pii_redaction", "pii_redaction") == "http://h:1/pii_redaction"
    assert env_url("ws://h:1/prefix", "x") == "http://h:1/prefix/x"
    assert env_url("h:1", "x") == "http://h:1/x"
    assert ws_url("https://h/x") == "wss://h/x/ws"
    with pytest.raises(ValueError, match="must start with"):
        env_url("ftp://h", "x")


def test_bad_arguments_fail_before_any_request() -> None:
    with pytest.raises(ValueError, match="transport"):
        RemoteEnv("http://127.0.0.1:9", MINIMAL_TASK.id, spec=MINIMAL_TASK, transport="smoke")  # type: ignore[arg-type]
    with pytest.raises(KeyError, match="unknown task"):
        RemoteEnv("http://127.0.0.1:9", "nope/none-v0")
    env = RemoteEnv("http://127.0.0.1:9", MINIMAL_TASK.id, spec=MINIMAL_TASK)
    with pytest.raises(NotResetError, match=r"call reset\(\) on minimal/count-v0"):
        env.step({})
    if TASK_IDS:
        other_env_task = TASK_IDS[0]
        with pytest.raises(ValueError, match="is not a minimal task"):
            env.reset(task=other_env_task)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.mark.parametrize("transport", ["ws", "http"])
def test_unreachable_server_is_a_connection_error(transport: str) -> None:
    env = RemoteEnv(f"http://127.0.0.1:{closed_port()}", MINIMAL_TASK.id, spec=MINIMAL_TASK, transport=transport)  # type: ignore[arg-type]
    with pytest.raises(ConnectionError, match=r"127\.0\.0\.1"):
        env.reset()
    env.close()
    env.close()


@pytest.fixture
def silent_listener() -> Iterator[str]:
    """A TCP server that accepts connections and never answers."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        sock.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(sock.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    stop.set()
    thread.join()
    for conn in accepted:
        conn.close()
    sock.close()


def test_silent_server_times_out_clearly(silent_listener: str) -> None:
    http = RemoteEnv(
        silent_listener, MINIMAL_TASK.id, spec=MINIMAL_TASK, transport="http", timeout=0.3, connect_timeout=0.3
    )
    with pytest.raises(TimeoutError, match="no reply"):
        http.reset()
    http.close()
    ws = RemoteEnv(silent_listener, MINIMAL_TASK.id, spec=MINIMAL_TASK, timeout=0.3, connect_timeout=0.3)
    # The WebSocket handshake never completes.
    with pytest.raises(ConnectionError, match=r"cannot open a WebSocket to ws://127\.0\.0\.1:\d+/minimal/ws"):
        ws.reset()
    ws.close()


def test_server_that_dies_mid_episode() -> None:
    server = start_server()
    ws_env = RemoteEnv(server.url, MINIMAL_TASK.id, spec=MINIMAL_TASK, timeout=5)
    http_env = RemoteEnv(server.url, MINIMAL_TASK.id, spec=MINIMAL_TASK, transport="http", timeout=5)
    ws_env.reset(seed=1)
    http_env.reset(seed=1)
    server.proc.kill()
    server.proc.wait()
    server.stop()
    with pytest.raises(SessionLostError, match="dropped mid-episode"):
        ws_env.step({"kind": "ADD", "amount": 1})
    with pytest.raises(SessionLostError, match="reset"):  # still lost: nothing is retried behind your back
        ws_env.step({"kind": "ADD", "amount": 1})
    with pytest.raises(ConnectionError, match=r"cannot reach http://127\.0\.0\.1"):
        http_env.step({"kind": "ADD", "amount": 1})
    with pytest.raises(ConnectionError, match=r"cannot open a WebSocket to ws://127\.0\.0\.1"):
        ws_env.reset()  # reset would reconnect, but there is no server any more
    ws_env.close()
    http_env.close()


def test_async_clients_share_one_event_loop(server: ServerProcess) -> None:
    """Many async clients at once, each with its own session, all get their own episodes and grades."""

    def actions(seed: int) -> list[dict[str, object]]:
        # Even seeds end at total 0 (seeds 2 and 12 hit their target), odd seeds at 5: both grades occur.
        return [{"kind": "ADD", "amount": seed % 2}] * 5 + [{"kind": "FINISH"}]

    async def one(seed: int) -> tuple[str, str]:
        async with AsyncRemoteEnv(server.url, MINIMAL_TASK.id, spec=MINIMAL_TASK) as env:
            first = await env.reset(seed=seed)
            for action in actions(seed):
                await env.step(action)
            return first.model_dump_json(), (await env.grade()).model_dump_json()

    async def main() -> list[tuple[str, str]]:
        return list(await asyncio.gather(*(one(seed) for seed in range(20))))

    results = asyncio.run(main())
    local = MINIMAL_TASK.env_class()(MINIMAL_TASK)
    scores = set()
    for seed, (first, grade) in enumerate(results):
        assert first == local.reset(seed=seed).model_dump_json()
        for action in actions(seed):
            local.step(action)
        assert local.done
        assert grade == local.grade().model_dump_json()
        scores.add(local.grade().score)
    assert scores == {0.0, 1.0}


def test_the_last_step_brings_the_grade_and_grade_then_asks_nothing(server: ServerProcess) -> None:
    """Kills: no grade in the terminal step's info over the server (OpenEnv clients would get only the
    reward sum), a client that keeps it in info (remote steps would differ from in-process ones), and
    a cached grade outliving its episode."""
    for transport in ("ws", "http"):
        with RemoteEnv(server.url, MINIMAL_TASK.id, spec=MINIMAL_TASK, transport=transport) as env:  # type: ignore[arg-type]
            env.reset(seed=3)
            last = env.step({"kind": "FINISH"})
            assert last.done and "grade" not in last.info
            local = MINIMAL_TASK.env_class()(MINIMAL_TASK)
            local.reset(seed=3)
            local.step({"kind": "FINISH"})
            assert env.grade() == local.grade()
            env.reset(seed=4)
            with pytest.raises(EpisodeNotDoneError):  # not the last episode's grade
                env.grade()
    with connect(server.url.replace("http", "ws") + "/minimal/ws", proxy=None) as ws:
        ws.send(json.dumps({"type": "reset", "data": {"seed": 3}}))
        ws.recv(timeout=10)
        ws.send(json.dumps({"type": "step", "data": {"kind": "FINISH"}}))
        metadata = json.loads(ws.recv(timeout=10))["data"]["metadata"]
        assert metadata["grade"] == local.grade().model_dump(mode="json")
