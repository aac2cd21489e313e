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
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Mapping
from typing import Any, Literal

import httpx
from pydantic import BaseModel

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
from integrity_gym.client.retries import RetryPolicy, async_retrying, http_retry, retrying, ws_reset_retry
from integrity_gym.core.env import NotResetError
from integrity_gym.core.registry import TaskSpec, get_spec
from integrity_gym.core.types import Grade, StepResult

Transport = Literal["ws", "http"]
#: Error codes after which the server closes the WebSocket.
_FATAL_CODES = frozenset({"CAPACITY_REACHED", "SESSION_ERROR", "SESSION_STORE_UNAVAILABLE"})


def _transport_error(exc: httpx.TransportError, client: _Base, path: str) -> Exception:
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


class _Base:
    """What both clients share: the task, its typed models, headers and the last observation."""

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
        self._closed = False
        self._fatal = False

    # ------------------------------------------------------------ helpers shared by both
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
        return obs

    def _on_step(self, data: Mapping[str, Any], info_key: str) -> StepResult[Any]:
        result = parse_step(self.observation_type, data, info_key=info_key)
        self._last_obs = result.observation
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


class RemoteEnv(_Base):
    """A synchronous remote environment with the interface of an in-process ``Env``."""

    def __init__(self, url: str, task_id: str, **kwargs: Any) -> None:
        super().__init__(url, task_id, **kwargs)
        self._ws: Any = None
        self._http: httpx.Client | None = None

    # ------------------------------------------------------------------ transport
    def _connect_ws(self) -> Any:
        from websockets.sync.client import connect

        try:
            # Entering the connection as a context manager marks it as managed by us (close()).
            self._ws = connect(
                ws_url(self.base_url),
                open_timeout=self.connect_timeout,
                max_size=self.max_message_bytes,
                additional_headers=self.headers or None,
                proxy=None,
                compression=None,
            ).__enter__()
        except (OSError, TimeoutError) as exc:
            raise ConnectionError(f"cannot open a WebSocket to {ws_url(self.base_url)}: {exc}") from exc
        except Exception as exc:  # handshake refused (e.g. 404 for an env the server lacks)
            raise ConnectionError(f"WebSocket handshake with {ws_url(self.base_url)} failed: {exc}") from exc
        return self._ws

    def _drop_ws(self) -> None:
        ws, self._ws = self._ws, None
        if ws is not None:
            with contextlib.suppress(Exception):
                ws.close()

    def _ws_exchange(self, message: dict[str, Any]) -> dict[str, Any]:
        """Send one message and parse its reply, opening the connection first if there is none."""
        from websockets.exceptions import ConnectionClosed

        if self._ws is None:
            self._connect_ws()
        with contextlib.suppress(ConnectionClosed):
            # A refused session (at capacity, reaped) sends an error frame, then closes:
            # the send may fail but the frame is still queued, and recv() returns it.
            self._ws.send(json.dumps(message))
        try:
            raw = self._ws.recv(timeout=self.timeout)
        except TimeoutError as exc:
            # A late reply would pair with the next request: this connection is unusable now.
            self._drop_ws()
            raise TimeoutError(f"no reply from {self.base_url} within {self.timeout}s; the session is lost") from exc
        except ConnectionClosed:
            self._drop_ws()
            raise
        try:
            return self._ws_reply(raw)
        finally:
            if self._fatal:
                self._fatal = False
                self._drop_ws()

    def _ws_call(self, message: dict[str, Any], *, reconnect: bool = False, retry: bool = True) -> dict[str, Any]:
        from websockets.exceptions import ConnectionClosed

        if self._ws is None and not reconnect:
            raise SessionLostError("the connection was lost; call reset() to start again", "SESSION_ERROR")
        try:
            if reconnect and retry:  # only a reset may start over on a new connection
                reply: dict[str, Any] = retrying(self.retries, ws_reset_retry())(self._ws_exchange, message)
                return reply
            return self._ws_exchange(message)
        except ConnectionClosed as exc:
            raise SessionLostError(
                f"the connection to {self.base_url} dropped mid-episode: {exc}", "SESSION_ERROR"
            ) from exc

    def _client(self) -> httpx.Client:
        if self._http is None:
            self._http = httpx.Client(
                timeout=httpx.Timeout(self.timeout, connect=self.connect_timeout), headers=self.headers, trust_env=False
            )
        return self._http

    def _http_call(self, method: str, path: str, body: Any = None, *, repeatable: bool = False) -> Any:
        send = retrying(self.retries, http_retry(self.retries, repeatable=repeatable))
        try:
            response: httpx.Response = send(self._client().request, method, self.base_url + path, **_request(body))
        except httpx.TransportError as exc:
            raise _transport_error(exc, self, path) from exc
        if response.status_code >= 400:
            raise http_error(response.status_code, response.content)
        return response.json()

    # ------------------------------------------------------------------ Env interface
    def reset(
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
            data = self._ws_call({"type": "reset", "data": body}, reconnect=True, retry=handle is None)
            self.session_id = (data.get("metadata") or {}).get("session_id")
            return self._on_observation(data["observation"])
        if self.session_id is not None:
            self._forget_http_session()
        data = self._http_call("POST", "/reset", body, repeatable=handle is None)
        self.session_id = data["session_id"]
        return self._on_observation(data["observation"])

    def step(self, action: Any) -> StepResult[Any]:
        """Apply one action; a malformed one comes back with ``info['error']``, as in-process."""
        self._require_started()
        payload = action_payload(action)
        if self.transport == "ws":
            return self._on_step(self._ws_call({"type": "step", "data": payload}), "metadata")
        return self._on_step(
            self._http_call("POST", "/step", {"session_id": self.session_id, "action": payload}), "info"
        )

    def state(self) -> Any:
        """The full state, ground truth included (needs the server's admin token)."""
        self._require_started()
        if self.transport == "ws":
            return self._on_state(self._ws_call({"type": "state"}))
        return self._on_state(self._http_call("GET", f"/state/{self.session_id}", repeatable=True))

    def grade(self) -> Grade:
        """Grade the finished episode (``EpisodeNotDoneError`` before, unless holding the admin token)."""
        self._require_started()
        if self.transport == "ws":
            return parse_grade(self._ws_call({"type": "grade"}))
        return parse_grade(self._http_call("GET", f"/grade/{self.session_id}", repeatable=True))

    def _forget_http_session(self) -> None:
        with contextlib.suppress(SessionLostError, ConnectionError, TimeoutError):
            self._http_call("DELETE", f"/session/{self.session_id}")
        self.session_id = None

    def close(self) -> None:
        """End the session and release the connection. Closing twice is harmless."""
        if self._closed:
            return
        self._closed = True
        if self._ws is not None:
            with contextlib.suppress(Exception):
                self._ws.send(json.dumps({"type": "close"}))
            self._drop_ws()
        if self._http is not None:
            if self.session_id is not None:
                self._forget_http_session()
            self._http.close()
            self._http = None

    def __enter__(self) -> RemoteEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncRemoteEnv(_Base):
    """The asynchronous twin of ``RemoteEnv``: ``await env.reset()``, ``await env.step(...)``."""

    def __init__(self, url: str, task_id: str, **kwargs: Any) -> None:
        super().__init__(url, task_id, **kwargs)
        self._ws: Any = None
        self._http: httpx.AsyncClient | None = None
        self._lock = asyncio.Lock()

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
            raw = await asyncio.wait_for(self._ws.recv(), timeout=self.timeout)
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
                    reply: dict[str, Any] = await async_retrying(self.retries, ws_reset_retry())(
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
        send = async_retrying(self.retries, http_retry(self.retries, repeatable=repeatable))
        try:
            response: httpx.Response = await send(
                self._client().request, method, self.base_url + path, **_request(body)
            )
        except httpx.TransportError as exc:
            raise _transport_error(exc, self, path) from exc
        if response.status_code >= 400:
            raise http_error(response.status_code, response.content)
        return response.json()

    async def reset(
        self,
        *,
        seed: int | None = None,
        task: str | None = None,
        scenario_id: str | int | None = None,
        options: Mapping[str, Any] | None = None,
        handle: str | None = None,
    ) -> Any:
        """Start a new episode and return its first observation (``handle``: see ``RemoteEnv.reset``)."""
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
