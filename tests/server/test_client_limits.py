"""Per-client quota and session rate (``sessions/quota.py``), in both stores and across Redis workers.

Each test names the mutation it kills. The stores are real: the memory store and a real
redis-server; two ``RedisStore`` objects on one Redis stand for two worker processes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import pytest

from integrity_gym.server.minimal import MINIMAL_TASK
from integrity_gym.server.security import client_identity
from integrity_gym.server.sessions import (
    CapacityError,
    ClientLimits,
    ClientQuotaError,
    MemoryStore,
    RateLimitError,
    RedisStore,
    SessionStore,
)
from integrity_gym.server.sessions.base import AnyEnv
from integrity_gym.server.sessions.quota import TokenBuckets
from tests.conftest import require_service
from tests.server.servers import redis_available, running_redis

pytestmark = pytest.mark.anyio
GREEDY, OTHER = "address:10.0.0.1", "address:10.0.0.2"
TTL_S = 600.0


def _env(task_id: str = MINIMAL_TASK.id) -> AnyEnv:
    env: AnyEnv = MINIMAL_TASK.env_class()(MINIMAL_TASK)
    env.reset(seed=1)
    return env


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    require_service(redis_available(), "redis-server and the redis package")
    with running_redis() as url:
        yield url


StoreMaker = Callable[[ClientLimits, int], Awaitable[SessionStore]]


@pytest.fixture(params=["memory", "redis"])
async def make_store(request: pytest.FixtureRequest) -> AsyncIterator[StoreMaker]:
    """Build started stores of the parametrised kind (Redis ones share one prefix: like workers)."""
    made: list[SessionStore] = []
    prefix = f"t{id(request)}"

    async def make(limits: ClientLimits, max_sessions: int = 100) -> SessionStore:
        store: SessionStore
        if request.param == "memory":
            store = MemoryStore(max_sessions=max_sessions, ttl_s=TTL_S, limits=limits)
        else:
            url = request.getfixturevalue("redis_url")
            store = RedisStore(url, _env, max_sessions=max_sessions, ttl_s=TTL_S, prefix=prefix, limits=limits)
        await store.start()
        made.append(store)
        return store

    yield make
    for store in made:
        await store.stop()


async def _open(store: SessionStore, client: str, kind: str = "http") -> object:
    await store.admit(client)
    return await store.open("minimal", _env(), kind=kind, client=client)  # type: ignore[arg-type]


async def test_one_client_gets_its_quota_and_the_others_keep_their_room(make_store: StoreMaker) -> None:
    """Kills: no quota (the greedy client's fourth session opens), a quota counted for everyone
    together (the other client is refused), and a quota counting only one transport."""
    store = await make_store(ClientLimits(per_client=3, rate=0), 100)
    await _open(store, GREEDY, "http")
    await _open(store, GREEDY, "ws")
    await _open(store, GREEDY, "http")
    with pytest.raises(ClientQuotaError) as refused:
        await store.admit(GREEDY)
    assert refused.value.code == "CLIENT_QUOTA_REACHED"
    assert refused.value.details == {"active_sessions": 3, "max_sessions_per_client": 3}
    assert 590 < refused.value.retry_after_s <= TTL_S  # its soonest session expires in about the TTL
    assert "10.0.0.1" in str(refused.value) and "--max-sessions-per-client" in str(refused.value)
    for _ in range(3):
        await _open(store, OTHER)
    assert await store.count() == 6


async def test_open_itself_enforces_the_quota(make_store: StoreMaker) -> None:
    """Kills: a quota checked only by ``admit`` (two requests admitted at once would both open)."""
    store = await make_store(ClientLimits(per_client=2, rate=0), 100)
    for _ in range(2):
        await store.open("minimal", _env(), kind="http", client=GREEDY)
    with pytest.raises(ClientQuotaError):
        await store.open("minimal", _env(), kind="http", client=GREEDY)
    with pytest.raises(ClientQuotaError):
        await store.open("minimal", _env(), kind="ws", client=GREEDY)


async def test_closing_a_session_gives_the_client_its_room_back(make_store: StoreMaker) -> None:
    """Kills: closed or released sessions still counted in the client's quota."""
    store = await make_store(ClientLimits(per_client=2, rate=0), 100)
    http = await _open(store, GREEDY, "http")
    ws = await _open(store, GREEDY, "ws")
    with pytest.raises(ClientQuotaError):
        await store.admit(GREEDY)
    assert await store.close(http.id, "minimal")  # type: ignore[attr-defined]
    await _open(store, GREEDY, "http")
    await store.release(ws)  # type: ignore[arg-type]
    await _open(store, GREEDY, "ws")


async def test_the_global_capacity_still_applies_under_the_quota(make_store: StoreMaker) -> None:
    """Kills: a quota check replacing the capacity check."""
    store = await make_store(ClientLimits(per_client=5, rate=0), 3)
    for client in ("address:a", "address:b", "address:c"):
        await _open(store, client)
    with pytest.raises(CapacityError):
        await store.admit("address:d")


async def test_the_rate_refuses_past_the_burst_and_says_when_to_retry(make_store: StoreMaker) -> None:
    """Kills: no rate limit, a bucket shared by every client, and a wrong wait (1/rate here)."""
    store = await make_store(ClientLimits(per_client=0, rate=0.5, burst=2), 100)
    await store.admit(GREEDY)
    await store.admit(GREEDY)
    with pytest.raises(RateLimitError) as refused:
        await store.admit(GREEDY)
    assert refused.value.code == "RATE_LIMITED"
    assert 1.5 < refused.value.retry_after_s <= 2.0  # one token every 2 s
    assert refused.value.details == {"session_rate": 0.5, "session_burst": 2}
    await store.admit(OTHER)  # another client has its own bucket


async def test_the_rate_refills_over_time(make_store: StoreMaker) -> None:
    """Kills: a bucket that never refills (the client refused for ever)."""
    store = await make_store(ClientLimits(per_client=0, rate=20.0, burst=1), 100)
    await store.admit(GREEDY)
    with pytest.raises(RateLimitError) as refused:
        await store.admit(GREEDY)
    await asyncio.sleep(refused.value.retry_after_s + 0.05)
    await store.admit(GREEDY)


async def test_zero_switches_both_limits_off(make_store: StoreMaker) -> None:
    """Kills: 0 read as "no session at all" instead of "no limit"."""
    store = await make_store(ClientLimits.off(), 100)
    for _ in range(30):
        await _open(store, GREEDY)


async def test_two_redis_workers_apply_one_quota_and_one_bucket(redis_url: str) -> None:
    """Kills: per-process counting with a shared store (each worker would grant the full quota)."""
    limits = ClientLimits(per_client=2, rate=0.01, burst=3)
    first = RedisStore(redis_url, _env, max_sessions=100, ttl_s=TTL_S, prefix="pair", limits=limits)
    second = RedisStore(redis_url, _env, max_sessions=100, ttl_s=TTL_S, prefix="pair", limits=limits)
    await first.start()
    await second.start()
    try:
        await _open(first, GREEDY)
        await _open(second, GREEDY, "ws")
        with pytest.raises(ClientQuotaError):
            await first.admit(GREEDY)
        with pytest.raises(ClientQuotaError):
            await second.open("minimal", _env(), kind="http", client=GREEDY)
        fresh = "address:10.0.0.9"  # a burst of 3 over both workers, then refused by either
        await first.admit(fresh)
        await second.admit(fresh)
        await first.admit(fresh)
        with pytest.raises(RateLimitError):
            await second.admit(fresh)
    finally:
        await first.stop()
        await second.stop()


def test_the_token_bucket_arithmetic() -> None:
    """Kills: a refill not capped at the burst (an idle client hoarding tokens) and an off-by-one burst."""
    buckets = TokenBuckets(ClientLimits(per_client=0, rate=2.0, burst=3))
    assert [buckets.take("c", 0.0) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert buckets.take("c", 0.0) == pytest.approx(0.5)
    assert buckets.take("c", 0.5) == 0.0
    assert [buckets.take("c", 1000.0) for _ in range(3)] == [0.0, 0.0, 0.0]  # refilled to 3, not 2,000
    assert buckets.take("c", 1000.0) > 0
    buckets.prune(2000.0)
    assert len(buckets) == 0


def test_a_client_is_its_address_or_a_token_the_server_knows() -> None:
    """Kills: unknown tokens naming a client (a greedy client would mint names), a token kept in
    clear, and IPv6 counted per address (one host owns its whole /64)."""
    assert client_identity("10.0.0.7", None) == "address:10.0.0.7"
    assert client_identity("10.0.0.7", "made-up", ("known",)) == "address:10.0.0.7"
    by_token = client_identity("10.0.0.7", "known", ("known",))
    assert by_token.startswith("token:sha256:") and "known" not in by_token.removeprefix("token:sha256:")
    assert by_token == client_identity("10.9.9.9", "known", ("known",))
    assert client_identity("2001:db8:1:2::5", None) == client_identity("2001:db8:1:2:ffff::1", None)
    assert client_identity("2001:db8:1:2::5", None) != client_identity("2001:db8:1:3::5", None)
    assert client_identity("::ffff:10.0.0.7", None) == "address:10.0.0.7"
    assert client_identity(None, None) == "address:unknown"


def test_limits_refuse_nonsense() -> None:
    """Kills: negative limits silently accepted (they would refuse everyone)."""
    with pytest.raises(ValueError, match="quota"):
        ClientLimits(per_client=-1)
    with pytest.raises(ValueError, match="burst"):
        ClientLimits(burst=0)
