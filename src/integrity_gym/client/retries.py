"""When the client sends a request again, and how long it waits first; tenacity runs the loops.

What is safe to send again, over HTTP:

- any request whose connection could not be opened (refused, or no answer to the connect):
  it never reached the server, so even a ``step`` is sent again;
- requests that are safe to repeat — ``reset`` (it starts a fresh episode anyway), ``state`` and
  ``grade`` (they only read) — also after a timeout or a connection dropped mid-request, and when
  the server answers 429 or 503 (past this client's quota or rate, at capacity, session store
  down, starting up).

A ``step`` that may have reached the server is never sent twice: whatever went wrong is raised.

Over the WebSocket a session lives on its connection, so only a ``reset`` is sent again, on a new
connection: when the connection drops or cannot be opened, or the server refuses the session for
now (at capacity, past this client's quota or rate, session store down). A timeout there is
raised, not retried.

Waits: the server's ``Retry-After`` when it sends one (our server does on every 503 and 429; over
the WebSocket, the error frame's ``retry_after_s``), otherwise
``backoff`` seconds doubled at each retry, never more than ``max_wait``. A server that asks for a
longer wait than ``max_wait`` is not retried at all: its error is raised at once, rather than
asking again before the time it named.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx
import tenacity

from integrity_gym.client.protocol import RemoteError

#: Replies that mean "not now": too many requests, or the server cannot take it at the moment.
RETRY_STATUSES = frozenset({429, 503})
#: WebSocket error codes after which a ``reset`` may be sent again on a new connection.
_WS_RETRY_CODES = frozenset({"CAPACITY_REACHED", "CLIENT_QUOTA_REACHED", "RATE_LIMITED", "SESSION_STORE_UNAVAILABLE"})


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently a client sends a request again (see the module docstring).

    ``sleep`` replaces the pause between attempts (by default ``asyncio.sleep``): tests pass a
    recorder, so nothing waits. ``AsyncRemoteEnv`` calls it on its event loop, and awaits what it
    returns if that is awaitable; ``RemoteEnv`` takes a blocking one (like ``time.sleep``) and
    calls it in a worker thread (``in_worker_thread``), so it never holds up the shared loop.
    """

    attempts: int = 3
    backoff: float = 0.1
    max_wait: float = 10.0
    sleep: Callable[[float], object] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.attempts, bool) or not isinstance(self.attempts, int) or self.attempts < 1:
            raise ValueError(f"attempts must be a whole number of tries, at least 1, not {self.attempts!r}")
        if not self.backoff >= 0 or not self.max_wait >= 0:
            raise ValueError(
                f"backoff and max_wait must be non-negative seconds, not {self.backoff!r} and {self.max_wait!r}"
            )


def retry_after(response: httpx.Response) -> float | None:
    """The seconds a reply's ``Retry-After`` asks to wait (a number or an HTTP date), else None."""
    value = response.headers.get("retry-after", "").strip()
    if not value:
        return None
    if value.isdecimal():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


class _WaitRetryAfter(tenacity.wait.wait_base):
    """The server's ``Retry-After`` when its reply names one, else the doubling back-off."""

    def __init__(self, policy: RetryPolicy) -> None:
        self._backoff = tenacity.wait_exponential(multiplier=policy.backoff, max=policy.max_wait)

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        outcome = retry_state.outcome
        if outcome is not None and outcome.failed:
            asked = _error_retry_after(outcome.exception())
        else:
            reply = outcome.result() if outcome is not None else None
            asked = retry_after(reply) if isinstance(reply, httpx.Response) else None
        return asked if asked is not None else float(self._backoff(retry_state))


def _error_retry_after(exc: BaseException | None) -> float | None:
    """The wait a WebSocket error frame asks for (``retry_after_s``, sent with a 429's codes), else None."""
    asked = exc.data.get("retry_after_s") if isinstance(exc, RemoteError) else None
    return float(asked) if isinstance(asked, int | float) and asked >= 0 else None


def _last_outcome(state: tenacity.RetryCallState) -> Any:
    """Out of attempts: the last reply, or the last error raised as it is (no ``RetryError``)."""
    if state.outcome is None:  # tenacity calls this only after an attempt
        raise RuntimeError("no attempt was made")
    return state.outcome.result()


def http_retry(policy: RetryPolicy, *, repeatable: bool) -> tenacity.retry_base:
    """Which HTTP failures and replies to retry (``repeatable``: the request is safe to repeat)."""

    def on_error(exc: BaseException) -> bool:
        if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
            return True  # the request never left
        return repeatable and isinstance(exc, httpx.TimeoutException | httpx.NetworkError | httpx.RemoteProtocolError)

    def on_reply(response: httpx.Response) -> bool:
        if not repeatable or response.status_code not in RETRY_STATUSES:
            return False
        asked = retry_after(response)
        return asked is None or asked <= policy.max_wait

    return tenacity.retry_if_exception(on_error) | tenacity.retry_if_result(on_reply)


def ws_reset_retry(policy: RetryPolicy) -> tenacity.retry_base:
    """Which failures of a WebSocket ``reset`` to retry on a new connection.

    A dropped connection, a connection that could not be opened, or the server refusing the
    session for now (at capacity, past this client's quota or rate, session store down) unless
    it asks for a longer wait than ``policy.max_wait``. A refused handshake (e.g. 404: the server
    does not serve this environment) is final.
    """
    from websockets.exceptions import ConnectionClosed

    def on_error(exc: BaseException) -> bool:
        if isinstance(exc, ConnectionClosed):
            return True
        if isinstance(exc, RemoteError):
            asked = _error_retry_after(exc)
            return exc.code in _WS_RETRY_CODES and (asked is None or asked <= policy.max_wait)
        return isinstance(exc, ConnectionError) and isinstance(exc.__cause__, OSError)

    return tenacity.retry_if_exception(on_error)


def retrying(policy: RetryPolicy, retry: tenacity.retry_base) -> tenacity.AsyncRetrying:
    """A tenacity loop (asynchronous: both clients run on ``AsyncRemoteEnv``)."""
    sleeper = policy.sleep

    async def nap(seconds: float) -> None:
        if sleeper is None:
            await asyncio.sleep(float(seconds))
            return
        paused = sleeper(float(seconds))
        if inspect.isawaitable(paused):
            await paused

    return tenacity.AsyncRetrying(
        stop=tenacity.stop_after_attempt(policy.attempts),
        wait=_WaitRetryAfter(policy),
        retry=retry,
        sleep=nap,
        retry_error_callback=_last_outcome,
    )


def in_worker_thread(policy: RetryPolicy) -> RetryPolicy:
    """``policy`` with its blocking ``sleep`` (if any) called in a worker thread, off the event loop."""
    sleeper = policy.sleep
    if sleeper is None:
        return policy

    async def nap(seconds: float) -> None:
        paused = await asyncio.to_thread(sleeper, seconds)
        if inspect.isawaitable(paused):
            await paused

    return replace(policy, sleep=nap)
