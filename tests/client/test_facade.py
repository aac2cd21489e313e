"""One client, two faces: ``AsyncRemoteEnv`` does the work, ``RemoteEnv`` runs it on a shared loop thread.

A WebSocket step whose connection drops is lost, never sent again (by either face); the sync
facade works inside a running event loop, from several threads at once, in a forked child and
without uvloop, and its blocking retry sleeper never holds up the loop the other clients share.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import subprocess
import sys
import threading
from collections.abc import Callable

import pytest

from integrity_gym.client import RemoteEnv, RetryPolicy, SessionLostError
from integrity_gym.client.background import shared_loop
from integrity_gym.server.minimal import MINIMAL_TASK
from tests.client.drive import Client
from tests.client.faulty import Fault, FaultyServer, Relay
from tests.server.servers import ServerProcess

ADD = {"kind": "ADD", "amount": 3}
LOOP_THREAD = "integrity-gym-client-loop"


def test_a_websocket_step_cut_before_its_reply_is_lost_not_sent_again(
    faulty: FaultyServer, connect: Callable[..., Client]
) -> None:
    c = connect(faulty.url, transport="ws")
    c("reset", seed=1)
    faulty.plan("WS step", Fault(drop=True))  # the server applies the step, then the connection is cut
    with pytest.raises(SessionLostError, match="dropped mid-episode"):
        c("step", ADD)
    assert faulty.seen["WS step"] == 1 and faulty.seen["WS"] == 1  # no second connection, no second step
    assert c.sleeps == []
    with pytest.raises(SessionLostError, match=r"call reset\(\)"):  # still lost: nothing is resent later either
        c("step", ADD)
    assert faulty.seen["WS step"] == 1
    assert c("reset", seed=1).total == 0  # a reset starts over on a new connection
    assert c("step", ADD).observation.total == 3
    assert faulty.seen["WS"] == 2 and faulty.seen["WS step"] == 2


def test_a_websocket_step_on_a_cut_connection_is_not_sent_on_a_new_one(
    faulty: FaultyServer, connect: Callable[..., Client]
) -> None:
    relay = Relay(faulty.port)
    relay.open()
    try:
        c = connect(relay.url, transport="ws")
        c("reset", seed=1)
        assert c("step", ADD).observation.total == 3
        relay.shut()
        relay.open()  # the connection is cut, but a new one would be accepted
        with pytest.raises(SessionLostError, match="dropped mid-episode"):
            c("step", ADD)
        assert faulty.seen["WS step"] <= 1 and faulty.seen["WS"] == 1
        assert c.sleeps == []
    finally:
        relay.shut()


@pytest.mark.parametrize("transport", ["ws", "http"])
def test_the_sync_client_works_inside_a_running_event_loop(server: ServerProcess, transport: str) -> None:
    async def main() -> tuple[int, int, bool]:
        with RemoteEnv(server.url, MINIMAL_TASK.id, spec=MINIMAL_TASK, transport=transport) as env:  # type: ignore[arg-type]
            assert asyncio.get_running_loop() is not shared_loop()
            first = env.reset(seed=3)
            result = env.step(ADD)
            await asyncio.sleep(0)  # this loop keeps running between the blocking calls
            done = env.step({"kind": "FINISH"}).done
            return first.total, result.observation.total, done and env.grade() is not None

    assert asyncio.run(main()) == (0, 3, True)


def test_four_threads_each_with_its_own_client_play_at_once(server: ServerProcess) -> None:
    start = threading.Barrier(4)
    results: dict[int, tuple[str, str]] = {}
    errors: list[BaseException] = []

    def play(seed: int) -> None:
        try:
            with RemoteEnv(server.url, MINIMAL_TASK.id, spec=MINIMAL_TASK) as env:
                start.wait(10)
                first = env.reset(seed=seed)
                for amount in range(1, 11):
                    env.step({"kind": "ADD", "amount": amount % 3})
                env.step({"kind": "FINISH"})
                results[seed] = (first.model_dump_json(), env.grade().model_dump_json())
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=play, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors and sorted(results) == [0, 1, 2, 3]
    for seed, (first, grade) in results.items():
        local = MINIMAL_TASK.env_class()(MINIMAL_TASK)
        assert first == local.reset(seed=seed).model_dump_json()
        for amount in range(1, 11):
            local.step({"kind": "ADD", "amount": amount % 3})
        local.step({"kind": "FINISH"})
        assert grade == local.grade().model_dump_json()
    assert [t.name for t in threading.enumerate()].count(LOOP_THREAD) == 1  # one loop serves them all


def test_one_client_shared_by_four_threads_keeps_replies_paired(server: ServerProcess) -> None:
    with RemoteEnv(server.url, MINIMAL_TASK.id, spec=MINIMAL_TASK) as env:
        env.reset(seed=0)
        counts: list[int] = []
        lock = threading.Lock()

        def steps() -> None:
            for _ in range(10):
                count = env.step({"kind": "ADD", "amount": 1}).observation.step_count
                with lock:
                    counts.append(count)

        threads = [threading.Thread(target=steps) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert sorted(counts) == list(range(1, 41))  # every step got its own reply, none was lost
        assert env.observation().total == 40


def test_a_blocking_retry_sleeper_does_not_hold_up_the_shared_loop(faulty: FaultyServer) -> None:
    sleeping, stepped = threading.Event(), threading.Event()

    def sleeper(seconds: float) -> None:
        sleeping.set()
        stepped.wait(10)

    def step() -> None:
        other.step(ADD)
        stepped.set()

    waiting = RemoteEnv(faulty.url, MINIMAL_TASK.id, spec=MINIMAL_TASK, retries=RetryPolicy(sleep=sleeper))
    other = RemoteEnv(faulty.url, MINIMAL_TASK.id, spec=MINIMAL_TASK)
    with waiting, other:
        other.reset(seed=1)
        faulty.plan("WS", Fault(drop=True))  # the first reset's connection drops: it sleeps, then tries again
        resetting = threading.Thread(target=waiting.reset, kwargs={"seed": 2})
        resetting.start()
        assert sleeping.wait(10)
        stepping = threading.Thread(target=step)
        stepping.start()
        stepping.join(5)
        assert stepped.is_set(), "the other client could not step while this one slept"
        resetting.join(10)
        assert waiting.observation().total == 0 and other.observation().total == 3


def test_the_sync_client_refuses_to_block_its_own_loop_thread(server: ServerProcess) -> None:
    env = RemoteEnv(server.url, MINIMAL_TASK.id, spec=MINIMAL_TASK)

    async def inside() -> None:
        env.reset()

    with pytest.raises(RuntimeError, match="use AsyncRemoteEnv there"):
        asyncio.run_coroutine_threadsafe(inside(), shared_loop()).result(10)
    env.close()


def test_the_facade_shows_the_async_clients_attributes() -> None:
    env = RemoteEnv("http://127.0.0.1:9", MINIMAL_TASK.id, spec=MINIMAL_TASK, transport="http", timeout=3)
    assert (env.spec, env.env_name, env.transport, env.timeout) == (MINIMAL_TASK, "minimal", "http", 3)
    assert env.base_url == "http://127.0.0.1:9/minimal" and env.session_id is None and not env.done
    assert repr(env) == "<RemoteEnv minimal/count-v0 at http://127.0.0.1:9/minimal over http>"
    env.timeout = 5
    assert env.timeout == 5
    env.close()
    env.close()


PLAY = """
import sys
{block}
from integrity_gym.client import RemoteEnv, background
from integrity_gym.server.minimal import MINIMAL_TASK
with RemoteEnv(sys.argv[1], MINIMAL_TASK.id, spec=MINIMAL_TASK) as env:
    env.reset(seed=1)
    print(type(background.shared_loop()).__module__, env.step({{"kind": "ADD", "amount": 3}}).observation.total)
"""


def test_without_uvloop_the_shared_loop_is_asyncios_own(server: ServerProcess) -> None:
    script = PLAY.format(block='sys.modules["uvloop"] = None  # as if it were not installed')
    done = subprocess.run([sys.executable, "-c", script, server.url], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["asyncio.unix_events", "3"]


def test_a_forked_child_starts_its_own_loop_thread(server: ServerProcess) -> None:
    with RemoteEnv(server.url, MINIMAL_TASK.id, spec=MINIMAL_TASK) as env:
        env.reset(seed=1)  # the parent's loop thread is running when it forks
        child = multiprocessing.get_context("fork").Process(target=_play_in_child, args=(server.url,))
        child.start()
        child.join(60)
        assert child.exitcode == 0
        assert env.step(ADD).observation.total == 3


def _play_in_child(url: str) -> None:
    with RemoteEnv(url, MINIMAL_TASK.id, spec=MINIMAL_TASK) as env:
        env.reset(seed=1)
        if env.step(ADD).observation.total != 3:
            raise SystemExit(1)
