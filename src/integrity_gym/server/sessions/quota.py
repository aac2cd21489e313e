"""Fair shares of one server: each client's quota of open sessions and its rate of opening new ones.

A client is named by ``client_key`` (``security.client_identity``): its address (an IPv6 address
by its /64, since one host holds the whole prefix), or a token the server knows when the request
presents one. Every store enforces the same ``ClientLimits`` before building an episode
(``SessionStore.admit``) and again atomically when registering it (``open``):

* **quota**: at most ``per_client`` sessions open at once per client (HTTP and WebSocket
  together), so one client filling the server leaves the others their room. Past it:
  ``ClientQuotaError`` (HTTP 429 ``CLIENT_QUOTA_REACHED``, Retry-After the time until the
  client's soonest idle session expires).
* **rate**: a token bucket per client, ``burst`` sessions at once then ``rate`` per second.
  Past it: ``RateLimitError`` (HTTP 429 ``RATE_LIMITED``, Retry-After when the next token is due).

A zero ``per_client`` or ``rate`` switches that limit off (as a load test from one address
needs). The memory store keeps the counts in this process (``TokenBuckets``); the Redis store
keeps them in Redis with the same arithmetic in Lua (``CLIENT_LIVE_LUA``, ``BUCKET_LUA``), so
every worker sharing it applies one quota and one bucket per client.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: Defaults: a quarter of the default 1,024 sessions per client, and sessions opened no faster
#: than an episode loop needs (a step takes microseconds, an episode many steps).
DEFAULT_PER_CLIENT = 256
DEFAULT_RATE = 100.0
DEFAULT_BURST = 200

#: The client of a session opened by code in this process (tests, tools), not by a request.
LOCAL_CLIENT = "local"


@dataclass(frozen=True)
class ClientLimits:
    """Per-client limits every store applies (see the module); 0 switches one off."""

    per_client: int = DEFAULT_PER_CLIENT
    rate: float = DEFAULT_RATE
    burst: int = DEFAULT_BURST

    def __post_init__(self) -> None:
        if self.per_client < 0 or self.rate < 0 or self.burst < 1:
            raise ValueError(
                f"client limits: the quota and rate must be 0 (off) or positive and the burst at least 1, "
                f"got quota {self.per_client}, rate {self.rate}, burst {self.burst}"
            )

    @classmethod
    def off(cls) -> ClientLimits:
        """No per-client limit (a load test from one address; tests of other things)."""
        return cls(per_client=0, rate=0.0)


def client_label(client: str) -> str:
    """How an error names ``client`` (``address 10.0.0.7``, ``token sha256:1f2e…``)."""
    kind, _, value = client.partition(":")
    return f"{kind} {value}" if value else client


def _retry_after(seconds: float) -> float:
    return max(0.001, round(seconds, 3))


class ClientLimitError(RuntimeError):
    """A per-client limit refused a new session: HTTP 429 with ``code``, retry after ``retry_after_s``."""

    code = "CLIENT_LIMIT"

    def __init__(self, message: str, client: str, retry_after_s: float, **details: float) -> None:
        super().__init__(message)
        self.client = client
        self.retry_after_s = retry_after_s
        #: Figures for the error body (``active_sessions``, ``rate``...), besides ``retry_after_s``.
        self.details = details


class ClientQuotaError(ClientLimitError):
    """The client already holds its quota of open sessions."""

    code = "CLIENT_QUOTA_REACHED"

    def __init__(self, client: str, active: int, maximum: int, retry_after_s: float) -> None:
        wait = _retry_after(retry_after_s)
        super().__init__(
            f"this client ({client_label(client)}) already holds {active} of its {maximum} sessions: close one "
            f"(DELETE /<env>/session/<id> or a WebSocket 'close') or retry after {wait:g}s, when its soonest "
            "idle session expires; the server's --max-sessions-per-client sets the quota",
            client,
            wait,
            active_sessions=active,
            max_sessions_per_client=maximum,
        )


class RateLimitError(ClientLimitError):
    """The client opens sessions faster than the server's rate allows."""

    code = "RATE_LIMITED"

    def __init__(self, client: str, rate: float, burst: int, retry_after_s: float) -> None:
        wait = _retry_after(retry_after_s)
        super().__init__(
            f"this client ({client_label(client)}) opens sessions faster than {rate:g} per second (bursts of "
            f"{burst}); retry after {wait:g}s, or play more episodes per session (a WebSocket resets as often "
            "as it likes); the server's --session-rate and --session-burst set the limit",
            client,
            wait,
            session_rate=rate,
            session_burst=burst,
        )


@dataclass
class TokenBuckets:
    """One token bucket per client, in this process (the memory store's rate limit)."""

    limits: ClientLimits
    _buckets: dict[str, tuple[float, float]] = field(default_factory=dict)  # client -> (tokens, at)

    def _level(self, client: str, now: float) -> float:
        tokens, at = self._buckets.get(client, (float(self.limits.burst), now))
        return min(float(self.limits.burst), tokens + max(0.0, now - at) * self.limits.rate)

    def take(self, client: str, now: float) -> float:
        """Take one token for ``client``: 0.0 when taken, else the seconds until one is due."""
        if self.limits.rate <= 0:
            return 0.0
        tokens = self._level(client, now)
        if tokens < 1.0:
            return (1.0 - tokens) / self.limits.rate
        self._buckets[client] = (tokens - 1.0, now)
        return 0.0

    def prune(self, now: float) -> None:
        """Forget the buckets that have filled up again (they are the same as no bucket)."""
        for client in [c for c in self._buckets if self._level(c, now) >= self.limits.burst]:
            del self._buckets[client]

    def __len__(self) -> int:
        return len(self._buckets)


#: Lua: the live sessions of a client, dropping from its set those that left the index (closed,
#: expired, reclaimed). Expects ``cset`` (the client's set), ``index`` and ``now`` as locals; sets
#: ``live`` and ``soonest`` (the earliest expiry among them, or false).
CLIENT_LIVE_LUA = """
local live, soonest = 0, false
for _, sid in ipairs(redis.call('SMEMBERS', cset)) do
  local score = redis.call('ZSCORE', index, sid)
  if score and tonumber(score) > now then
    live = live + 1
    if not soonest or tonumber(score) < soonest then soonest = tonumber(score) end
  else
    redis.call('SREM', cset, sid)
  end
end
"""

#: Lua: take a token from the bucket ``bucket`` (a hash: ``v`` tokens at time ``t``); sets ``wait``
#: to 0 when taken, else the seconds until one is due. Expects ``now``, ``rate``, ``burst``.
BUCKET_LUA = """
local wait = 0
if rate > 0 then
  local stored = redis.call('HMGET', bucket, 'v', 't')
  local tokens = tonumber(stored[1]) or burst
  local at = tonumber(stored[2]) or now
  tokens = math.min(burst, tokens + math.max(0, now - at) * rate)
  if tokens < 1 then
    wait = (1 - tokens) / rate
  else
    redis.call('HSET', bucket, 'v', tostring(tokens - 1), 't', tostring(now))
    redis.call('PEXPIRE', bucket, math.ceil(burst / rate * 1000) + 1000)
  end
end
"""
