"""The client's retries against a real server that fails on purpose (tests/client/faulty.py).

Every pause goes to an injected sleeper that records it, so nothing waits and each test can
state exactly which waits the client chose: the server's Retry-After, or the doubling back-off.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import httpx
import pytest

from integrity_gym.client import RemoteError, RetryPolicy, ServerCapacityError
from integrity_gym.client.retries import retry_after
from integrity_gym.server.minimal import MINIMAL_TASK
from tests.client.drive import Client
from tests.client.faulty import Fault, FaultyServer, Relay

ADD = {"kind": "ADD", "amount": 3}


def local_reset(seed: int) -> str:
    return MINIMAL_TASK.env_class()(MINIMAL_TASK).reset(seed=seed).model_dump_json()


def test_reset_waits_as_long_as_retry_after_asks(faulty: FaultyServer, connect: Callable[..., Client]) -> None:
    faulty.plan(
        "POST /reset",
        Fault(503, "CAPACITY_REACHED", retry_after="2"),
        Fault(503, "SESSION_STORE_UNAVAILABLE", retry_after="3"),
    )
    c = connect(faulty.url)
    assert c("reset", seed=7).model_dump_json() == local_reset(7)
    assert faulty.seen["POST /reset"] == 3
    assert c.sleeps == [2.0, 3.0]


def test_reads_are_retried_after_a_dropped_reply_and_a_429(
    faulty: FaultyServer, connect: Callable[..., Client]
) -> None:
    c = connect(faulty.url)
    c("reset", seed=1)
    c("step", ADD)
    faulty.plan("GET /state", Fault(drop=True), Fault(429, "RATE_LIMITED", retry_after="0"))
    assert c("state").total == 3
    assert faulty.seen["GET /state"] == 3
    assert c.sleeps == [0.1, 0.0]  # back-off after the drop, then what the 429 asked
    c("step", {"kind": "FINISH"})
    faulty.plan("GET /grade", Fault(drop=True))
    local = MINIMAL_TASK.env_class()(MINIMAL_TASK)
    local.reset(seed=1)
    local.step(ADD)
    local.step({"kind": "FINISH"})
    assert c("grade") == local.grade()
    assert faulty.seen["GET /grade"] == 0  # the grade came with the step that ended the episode


@pytest.mark.parametrize(
    ("fault", "error", "match", "applied"),
    [
        (Fault(drop=True), ConnectionError, r"request to http://127\.0\.0\.1:\d+/minimal/step failed", True),
        (Fault(503, retry_after="0"), RemoteError, r"planned 503 \(code SESSION_STORE_UNAVAILABLE\)", False),
        (Fault(429, "RATE_LIMITED", retry_after="0"), RemoteError, r"code RATE_LIMITED", False),
    ],
)
def test_a_step_that_reached_the_server_is_never_sent_again(
    faulty: FaultyServer,
    connect: Callable[..., Client],
    fault: Fault,
    error: type[Exception],
    match: str,
    applied: bool,
) -> None:
    c = connect(faulty.url)
    c("reset", seed=1)
    faulty.plan("POST /step", fault)
    with pytest.raises(error, match=match):
        c("step", ADD)
    assert faulty.seen["POST /step"] == 1
    assert c.sleeps == []
    # A dropped reply hides a step that was applied: once, not twice.
    assert c("state").total == (3 if applied else 0)


@pytest.mark.parametrize("failure", ["refused", "stalled"])
def test_a_step_whose_connection_could_not_be_opened_is_sent_again(
    faulty: FaultyServer, connect: Callable[..., Client], failure: str
) -> None:
    relay = Relay(faulty.port)
    relay.open()
    try:
        c = connect(relay.url, on_sleep=relay.open, connect_timeout=0.3)  # the pause brings the relay back
        c("reset", seed=1)
        if failure == "refused":
            relay.shut()
        else:
            relay.stall()
        result = c("step", ADD)
        assert result.observation.total == 3 and result.observation.step_count == 1
        assert faulty.seen["POST /step"] == 1
        assert c.sleeps == [0.1]
    finally:
        relay.shut()
        relay.unstall()


@pytest.mark.parametrize(("transport", "match"), [("http", "cannot connect to"), ("ws", "cannot open a WebSocket")])
def test_a_server_that_never_answers_the_connect_is_tried_attempts_times(
    faulty: FaultyServer, connect: Callable[..., Client], transport: str, match: str
) -> None:
    relay = Relay(faulty.port)
    relay.open()
    relay.stall()
    try:
        c = connect(relay.url, transport=transport, connect_timeout=0.3)
        with pytest.raises((TimeoutError, ConnectionError), match=match):
            c("reset")
        assert c.sleeps == [0.1, 0.2]
        assert faulty.seen["POST /reset"] + faulty.seen["WS"] == 0
    finally:
        relay.unstall()


def test_attempts_are_bounded_and_the_back_off_capped(faulty: FaultyServer, connect: Callable[..., Client]) -> None:
    faulty.plan("POST /reset", *[Fault(503, "CAPACITY_REACHED")] * 10)
    c = connect(faulty.url, attempts=5, backoff=1.0, max_wait=3.0)
    with pytest.raises(ServerCapacityError, match="planned 503"):
        c("reset")
    assert faulty.seen["POST /reset"] == 5
    assert c.sleeps == [1.0, 2.0, 3.0, 3.0]
    faulty.clear()
    faulty.plan("POST /reset", Fault(503, "CAPACITY_REACHED"))
    once = connect(faulty.url, attempts=1)
    with pytest.raises(ServerCapacityError, match="planned 503"):
        once("reset")
    assert faulty.seen["POST /reset"] == 1 and once.sleeps == []


def test_a_server_asking_for_a_longer_wait_than_max_wait_gets_its_error_at_once(
    faulty: FaultyServer, connect: Callable[..., Client]
) -> None:
    faulty.plan("POST /reset", Fault(503, "CAPACITY_REACHED", retry_after="60"))
    c = connect(faulty.url, max_wait=10.0)
    with pytest.raises(ServerCapacityError, match="planned 503"):
        c("reset")
    assert faulty.seen["POST /reset"] == 1 and c.sleeps == []


@pytest.mark.parametrize("transport", ["http", "ws"])
def test_an_unreachable_server_is_tried_attempts_times(
    connect: Callable[..., Client], unused_port: int, transport: str
) -> None:
    c = connect(f"http://127.0.0.1:{unused_port}", transport=transport, attempts=3)
    with pytest.raises(ConnectionError, match=r"127\.0\.0\.1"):
        c("reset")
    assert c.sleeps == [0.1, 0.2]


@pytest.fixture
def unused_port() -> int:
    from tests.server.servers import free_port

    return free_port()


def test_a_websocket_reset_starts_over_on_a_new_connection(
    faulty: FaultyServer, connect: Callable[..., Client]
) -> None:
    faulty.plan("WS", Fault(drop=True))
    c = connect(faulty.url, transport="ws")
    assert c("reset", seed=3).model_dump_json() == local_reset(3)
    assert faulty.seen["WS"] == 2 and c.sleeps == [0.1]
    assert c("step", ADD).observation.total == 3


def test_a_reset_at_capacity_waits_for_a_free_slot(connect: Callable[..., Client]) -> None:
    """Against the real server's own 503: its Retry-After (HTTP), the back-off (WebSocket)."""
    server = FaultyServer(max_sessions=1).start()
    try:
        with httpx.Client(base_url=server.url + "/minimal", trust_env=False) as http:
            for transport, waits in (("http", [1.0]), ("ws", [0.1])):
                held = http.post("/reset", json={}).json()["session_id"]
                c = connect(server.url, transport=transport, on_sleep=lambda held=held: http.delete(f"/session/{held}"))
                assert c("reset", seed=5).model_dump_json() == local_reset(5)
                assert c.sleeps == waits
                c("close")
    finally:
        server.stop()


def test_retry_after_reads_seconds_and_dates() -> None:
    def reply(value: str | None) -> httpx.Response:
        return httpx.Response(503, headers={} if value is None else {"Retry-After": value})

    assert retry_after(reply("7")) == 7.0
    assert retry_after(reply(" 0 ")) == 0.0
    assert retry_after(reply(None)) is None
    assert retry_after(reply("soon")) is None
    assert retry_after(reply("-3")) is None
    assert retry_after(reply("Wed, 21 Oct 2015 07:28:00 GMT")) == 0.0  # already past
    ahead = retry_after(reply(format_datetime(datetime.now(UTC) + timedelta(hours=1), usegmt=True)))
    assert ahead is not None and 3500 < ahead <= 3600


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"attempts": 0}, "attempts must be"),
        ({"attempts": 2.5}, "attempts must be"),
        ({"attempts": True}, "attempts must be"),
        ({"backoff": -1.0}, "non-negative"),
        ({"max_wait": float("nan")}, "non-negative"),
    ],
)
def test_a_bad_policy_is_refused(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        RetryPolicy(**kwargs)
