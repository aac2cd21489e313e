"""Remote environments that behave like in-process ones: ``RemoteEnv`` (sync), ``AsyncRemoteEnv``.

``integrity_gym.make(task_id, url="http://host:port")`` returns a ``RemoteEnv``. ``reset``,
``step``, ``state`` and ``grade`` return the same typed models as a local ``Env`` (parsed with
the environment's own pydantic models) and raise the same ``EpisodeFinishedError`` /
``NotResetError``. The transport is the WebSocket protocol (default; one connection is one
session) or stateful HTTP (``transport="http"``).

Failures are explicit: ``ServerCapacityError`` when the server is full, ``SessionLostError`` when a
connection drops mid-episode or the session expired (call ``reset`` again), ``TimeoutError`` after
``timeout`` seconds, ``ConnectionError`` when the server cannot be reached. Only what is safe is
retried (``retries=RetryPolicy(...)``, see ``integrity_gym.client.retries``): a request that never
reached the server; ``reset``, ``state`` and ``grade`` also after transient failures and 429/503
replies, waiting as long as the server's ``Retry-After`` asks. A ``step`` that may have been
applied is never repeated.

There is one implementation: ``AsyncRemoteEnv`` holds the transports, the retries and the error
mapping. ``RemoteEnv`` is a thin synchronous facade over one: each call runs the async client's
coroutine on a background event loop shared by every ``RemoteEnv`` in the process
(``integrity_gym.client.background``) and waits for it, so it behaves the same, and works from any
thread, from several threads at once and inside a running event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Mapping
from typing import Any, Generic, Literal, TypedDict, TypeVar, Unpack, overload

import httpx
from pydantic import BaseModel

from integrity_gym.client.background import run
from integrity_gym.client.protocol import (
    AdminTokenError,
    SessionLostError,
    action_payload,
    env_url,
    http_error,
    parse_grade,
    parse_step,
    reset_payload,
    ws_error,
    ws_url,
)
from integrity_gym.client.retries import RetryPolicy, http_retry, in_worker_thread, retrying, ws_reset_retry
from integrity_gym.core.env import NotResetError
from integrity_gym.core.registry import TaskSpec, get_spec
from integrity_gym.core.types import Grade, StepResult

Transport = Literal["ws", "http"]
T = TypeVar("T")
#: Error codes after which the server closes the WebSocket.
_FATAL_CODES = frozenset({"CAPACITY_REACHED", "SESSION_ERROR", "SESSION_STORE_UNAVAILABLE"})


def _transport_error(exc: httpx.TransportError, client: AsyncRemoteEnv, path: str) -> Exception:
    """The error to raise for an HTTP request that failed (after any retries)."""
    if isinstance(exc, httpx.ConnectError):
        return ConnectionError(f"cannot reach {client.base_url}: {exc}")
    if isinstance(exc, httpx.ConnectTimeout):
        return TimeoutError(f"cannot connect to {client.base_url} within {client.connect_timeout}s")
    if isinstance(exc, httpx.TimeoutException):
        return TimeoutError(f"no reply from {client.base_url}{path} within {client.timeout}s")
    return ConnectionError(f"request to {client.base_url}{path} failed: {exc}")


def _request(body: Any) -> dict[str, Any]:
    """``httpx`` request arguments for a JSON body (or none)."""
    if body is None:
        return {}
    return {"content": json.dumps(body), "headers": {"content-type": "application/json"}}


class AsyncRemoteEnv:
    """A remote environment with the interface of an in-process ``Env``: ``await env.reset()``, ``await env.step(...)``.

    All the client's logic lives here; ``RemoteEnv`` is its synchronous facade.
    """

    def __init__(
        self,
        url: str,
        task_id: str,
        *,
        transport: Transport = "ws",
        admin_token: str | None = None,
        timeout: float = 60.0,
        connect_timeout: float = 10.0,
        max_message_bytes: int = 16 << 20,
        retries: RetryPolicy | None = None,
        spec: TaskSpec | None = None,
    ) -> None:
        if transport not in ("ws", "http"):
            raise ValueError(f"transport must be 'ws' or 'http', not {transport!r}")
        if timeout <= 0 or connect_timeout <= 0:
            raise ValueError("timeout and connect_timeout must be positive seconds")
        self.spec = spec or get_spec(task_id)
        cls = self.spec.env_class()
        self.env_name = self.spec.env
        self.action_type: type[BaseModel] = cls.action_type
        self.observation_type: type[BaseModel] = cls.observation_type
        self.state_type: type[BaseModel] = cls.state_type
        self.transport: Transport = transport
        self.base_url = env_url(url, self.env_name)
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.max_message_bytes = max_message_bytes
        self.retries = retries or RetryPolicy()
        token = admin_token if admin_token is not None else os.environ.get("IGYM_ADMIN_TOKEN") or None
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.session_id: str | None = None
        self._last_obs: Any = None
        self._final_grade: Grade | None = None
        self._closed = False
        self._fatal = False
        self._ws: Any = None
        self._http: httpx.AsyncClient | None = None
        self._lock = asyncio.Lock()

    # ------------------------------------------------------------------ replies
    def _reset_body(
        self,
        seed: int | None,
        task: str | None,
        scenario_id: str | int | None,
        options: Mapping[str, Any] | None,
        handle: str | None,
    ) -> dict[str, Any]:
        target = self.spec if task is None or task == self.spec.id else get_spec(task)
        if target.env != self.env_name:
            raise ValueError(f"task {target.id!r} is not a {self.env_name} task")
        self.spec = target
        return reset_payload(seed, None if handle else target.id, scenario_id, options, handle)

    def _on_observation(self, data: Mapping[str, Any]) -> Any:
        obs = self.observation_type.model_validate(data)
        self._last_obs = obs
        self._final_grade = None  # a new episode
        return obs

    def _on_step(self, data: Mapping[str, Any], info_key: str) -> StepResult[Any]:
        result = parse_step(self.observation_type, data, info_key=info_key)
        self._last_obs = result.observation
        # The server sends the grade with the step that ends the episode: kept for grade(), which then
        # asks nothing, and taken out of info so that the step reads as in-process.
        final = result.info.pop("grade", None) if result.done else None
        self._final_grade = parse_grade(final) if isinstance(final, dict) else None
        return result

    def _on_state(self, data: Mapping[str, Any]) -> Any:
        if data.get("ground_truth_hidden"):
            raise AdminTokenError(
                "full state (ground truth) needs the server's admin token: pass admin_token= or set IGYM_ADMIN_TOKEN",
                "ADMIN_TOKEN_REQUIRED",
            )
        return self.state_type.model_validate(data)

    def _require_started(self) -> None:
        if self._last_obs is None:
            raise NotResetError(f"call reset() on {self.spec.id} before using it")

    def observation(self) -> Any:
        """The latest observation (no request is made)."""
        self._require_started()
        return self._last_obs

    @property
    def done(self) -> bool:
        """True once the current episode has ended."""
        return self._last_obs is not None and bool(self._last_obs.done)

    def _ws_reply(self, raw: str | bytes) -> dict[str, Any]:
        reply = json.loads(raw)
        if reply.get("type") == "error":
            error = reply.get("data") or {}
            if error.get("code") in _FATAL_CODES:
                self._fatal = True  # the server closes the connection after these
            raise ws_error(error)
        data: dict[str, Any] = reply.get("data") or {}
        return data

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.spec.id} at {self.base_url} over {self.transport}>"

    # ------------------------------------------------------------------ transport
    async def _connect_ws(self) -> None:
        from websockets.asyncio.client import connect

        try:
            self._ws = await connect(
                ws_url(self.base_url),
                open_timeout=self.connect_timeout,
                max_size=self.max_message_bytes,
                additional_headers=self.headers or None,
                proxy=None,
                compression=None,
            )
        except (OSError, TimeoutError) as exc:
            raise ConnectionError(f"cannot open a WebSocket to {ws_url(self.base_url)}: {exc}") from exc
        except Exception as exc:
            raise ConnectionError(f"WebSocket handshake with {ws_url(self.base_url)} failed: {exc}") from exc

    async def _drop_ws(self) -> None:
        ws, self._ws = self._ws, None
        if ws is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(ws.close(), timeout=1.0)

    async def _ws_exchange(self, message: dict[str, Any]) -> dict[str, Any]:
        """Send one message and parse its reply, opening the connection first if there is none."""
        from websockets.exceptions import ConnectionClosed

        if self._ws is None:
            await self._connect_ws()
        with contextlib.suppress(ConnectionClosed):
            # A refused session sends an error frame, then closes: recv() still gets it.
            await self._ws.send(json.dumps(message))
        try:
            async with asyncio.timeout(self.timeout):  # no extra task per reply, as wait_for makes in 3.11
                raw = await self._ws.recv()
        except (TimeoutError, asyncio.CancelledError) as exc:
            await self._drop_ws()
            if isinstance(exc, asyncio.CancelledError):
                raise
            raise TimeoutError(f"no reply from {self.base_url} within {self.timeout}s; the session is lost") from exc
        except ConnectionClosed:
            await self._drop_ws()
            raise
        try:
            return self._ws_reply(raw)
        finally:
            if self._fatal:
                self._fatal = False
                await self._drop_ws()

    async def _ws_call(self, message: dict[str, Any], *, reconnect: bool = False, retry: bool = True) -> dict[str, Any]:
        from websockets.exceptions import ConnectionClosed

        async with self._lock:  # one request in flight per connection keeps replies paired
            if self._ws is None and not reconnect:
                raise SessionLostError("the connection was lost; call reset() to start again", "SESSION_ERROR")
            try:
                if reconnect and retry:  # only a reset may start over on a new connection
                    reply: dict[str, Any] = await retrying(self.retries, ws_reset_retry(self.retries))(
                        self._ws_exchange, message
                    )
                    return reply
                return await self._ws_exchange(message)
            except ConnectionClosed as exc:
                raise SessionLostError(
                    f"the connection to {self.base_url} dropped mid-episode: {exc}", "SESSION_ERROR"
                ) from exc

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            self._http = httpx.AsyncClient(
                timeout=httpx.Timeout(self.timeout, connect=self.connect_timeout), headers=self.headers, trust_env=False
            )
        return self._http

    async def _http_call(self, method: str, path: str, body: Any = None, *, repeatable: bool = False) -> Any:
        send = retrying(self.retries, http_retry(self.retries, repeatable=repeatable))
        try:
            response: httpx.Response = await send(
                self._client().request, method, self.base_url + path, **_request(body)
            )
        except httpx.TransportError as exc:
            raise _transport_error(exc, self, path) from exc
        if response.status_code >= 400:
            raise http_error(response.status_code, response.content)
        return response.json()

    # ------------------------------------------------------------------ Env interface
    async def reset(
        self,
        *,
        seed: int | None = None,
        task: str | None = None,
        scenario_id: str | int | None = None,
        options: Mapping[str, Any] | None = None,
        handle: str | None = None,
    ) -> Any:
        """Start a new episode and return its first observation.

        ``handle`` starts an episode of a sealed evaluation (``client.evaluation``) instead: the
        server chose its item, and a handle starts once, so its reset is never repeated.
        """
        body = self._reset_body(seed, task, scenario_id, options, handle)
        if self.transport == "ws":
            data = await self._ws_call({"type": "reset", "data": body}, reconnect=True, retry=handle is None)
            self.session_id = (data.get("metadata") or {}).get("session_id")
            return self._on_observation(data["observation"])
        if self.session_id is not None:
            await self._forget_http_session()
        data = await self._http_call("POST", "/reset", body, repeatable=handle is None)
        self.session_id = data["session_id"]
        return self._on_observation(data["observation"])

    async def step(self, action: Any) -> StepResult[Any]:
        """Apply one action; a malformed one comes back with ``info['error']``, as in-process."""
        self._require_started()
        payload = action_payload(action)
        if self.transport == "ws":
            return self._on_step(await self._ws_call({"type": "step", "data": payload}), "metadata")
        data = await self._http_call("POST", "/step", {"session_id": self.session_id, "action": payload})
        return self._on_step(data, "info")

    async def state(self) -> Any:
        """The full state, ground truth included (needs the server's admin token)."""
        self._require_started()
        if self.transport == "ws":
            return self._on_state(await self._ws_call({"type": "state"}))
        return self._on_state(await self._http_call("GET", f"/state/{self.session_id}", repeatable=True))

    async def grade(self) -> Grade:
        """Grade the finished episode (``EpisodeNotDoneError`` before, unless holding the admin token)."""
        self._require_started()
        if self._final_grade is not None:
            return self._final_grade
        if self.transport == "ws":
            return parse_grade(await self._ws_call({"type": "grade"}))
        return parse_grade(await self._http_call("GET", f"/grade/{self.session_id}", repeatable=True))

    async def _forget_http_session(self) -> None:
        with contextlib.suppress(SessionLostError, ConnectionError, TimeoutError):
            await self._http_call("DELETE", f"/session/{self.session_id}")
        self.session_id = None

    async def close(self) -> None:
        """End the session and release the connection. Closing twice is harmless."""
        if self._closed:
            return
        self._closed = True
        if self._ws is not None:
            with contextlib.suppress(Exception):
                await self._ws.send(json.dumps({"type": "close"}))
            await self._drop_ws()
        if self._http is not None:
            if self.session_id is not None:
                await self._forget_http_session()
            await self._http.aclose()
            self._http = None

    async def __aenter__(self) -> AsyncRemoteEnv:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class ResetArgs(TypedDict, total=False):
    """The keyword arguments of ``reset`` (all optional; see ``AsyncRemoteEnv.reset``)."""

    seed: int | None
    task: str | None
    scenario_id: str | int | None
    options: Mapping[str, Any] | None
    handle: str | None


class _Shared(Generic[T]):
    """An attribute of ``RemoteEnv`` that is the attribute of the same name of its async client."""

    def __set_name__(self, owner: type[RemoteEnv], name: str) -> None:
        self.name = name

    @overload
    def __get__(self, env: None, owner: type[RemoteEnv]) -> _Shared[T]: ...
    @overload
    def __get__(self, env: RemoteEnv, owner: type[RemoteEnv]) -> T: ...
    def __get__(self, env: RemoteEnv | None, owner: type[RemoteEnv]) -> T | _Shared[T]:
        if env is None:
            return self
        value: T = getattr(env._async, self.name)
        return value

    def __set__(self, env: RemoteEnv, value: T) -> None:
        setattr(env._async, self.name, value)


class RemoteEnv:
    """A synchronous remote environment with the interface of an in-process ``Env``.

    A facade over an ``AsyncRemoteEnv`` (same keyword arguments, same behaviour): each call runs
    the async client's coroutine on the process's shared background loop and waits for it.
    A ``retries`` policy's ``sleep`` here is a blocking one, like ``time.sleep``.
    """

    spec: _Shared[TaskSpec] = _Shared()
    env_name: _Shared[str] = _Shared()
    action_type: _Shared[type[BaseModel]] = _Shared()
    observation_type: _Shared[type[BaseModel]] = _Shared()
    state_type: _Shared[type[BaseModel]] = _Shared()
    transport: _Shared[Transport] = _Shared()
    base_url: _Shared[str] = _Shared()
    timeout: _Shared[float] = _Shared()
    connect_timeout: _Shared[float] = _Shared()
    max_message_bytes: _Shared[int] = _Shared()
    headers: _Shared[dict[str, str]] = _Shared()
    session_id: _Shared[str | None] = _Shared()

    def __init__(self, url: str, task_id: str, **kwargs: Any) -> None:
        self._async = AsyncRemoteEnv(url, task_id, **kwargs)
        self.retries = self._async.retries

    @property
    def retries(self) -> RetryPolicy:
        """The retry policy, its blocking ``sleep`` (if any) called in a worker thread, off the shared loop."""
        return self._async.retries

    @retries.setter
    def retries(self, policy: RetryPolicy) -> None:
        self._async.retries = in_worker_thread(policy)

    def reset(self, **kwargs: Unpack[ResetArgs]) -> Any:
        """Start a new episode and return its first observation (the arguments: ``AsyncRemoteEnv.reset``)."""
        return run(self._async.reset(**kwargs))

    def step(self, action: Any) -> StepResult[Any]:
        """Apply one action; a malformed one comes back with ``info['error']``, as in-process."""
        return run(self._async.step(action))

    def state(self) -> Any:
        """The full state, ground truth included (needs the server's admin token)."""
        return run(self._async.state())

    def grade(self) -> Grade:
        """Grade the finished episode (``EpisodeNotDoneError`` before, unless holding the admin token)."""
        return run(self._async.grade())

    def observation(self) -> Any:
        """The latest observation (no request is made)."""
        return self._async.observation()

    @property
    def done(self) -> bool:
        """True once the current episode has ended."""
        return self._async.done

    def close(self) -> None:
        """End the session and release the connection. Closing twice is harmless."""
        run(self._async.close())

    def __enter__(self) -> RemoteEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.spec.id} at {self.base_url} over {self.transport}>"
