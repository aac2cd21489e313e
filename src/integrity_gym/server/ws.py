"""The WebSocket endpoint ``/<env>/ws``, speaking OpenEnv's protocol.

Client → server: ``{"type": "reset", "data": {seed, task, difficulty, scenario_id, options}}``,
``{"type": "step", "data": <the action object>}``, ``{"type": "state"}``, ``{"type": "close"}``,
and our extension ``{"type": "grade"}``. Server → client: ``{"type": "observation", "data":
{"observation", "reward", "done", "metadata"}}`` (``metadata`` is the step's ``info``),
``{"type": "state", "data": ...}``, ``{"type": "grade", "data": <Grade>}`` and
``{"type": "error", "data": {"message", "code", ...}}`` with OpenEnv's codes: INVALID_JSON,
UNKNOWN_TYPE, VALIDATION_ERROR (the message names each field and what is expected; ``errors``
lists pydantic's details), EXECUTION_ERROR (with ``error_type`` naming the exception, e.g.
``EpisodeFinishedError``), CAPACITY_REACHED and SESSION_ERROR; and ours: EPISODE_NOT_DONE and
SESSION_STORE_UNAVAILABLE. An error never closes the connection except CAPACITY_REACHED and
SESSION_STORE_UNAVAILABLE (close code 1013), SESSION_ERROR after the idle time-to-live (1001),
and a server failure outside any message (1011); the error frame always comes first.

Nothing hidden leaves before the episode ends: ``grade`` answers once it is done (or to a
connection that presented the admin token), and ``state`` returns the full state only to an admin
connection (``Authorization: Bearer`` header or ``?admin_token=``); others get the task and
counters with ``"ground_truth_hidden": true``. The session belongs to this connection alone:
its id is never sent and no HTTP route can reach or end it.

On a sealed server (``evaluations/``) ``reset`` takes ``{"handle": ...}`` alone (error
``SEALED`` otherwise, ``HANDLE_NOT_FOUND``, ``HANDLE_USED``, ``EVALUATION_CLOSED``), observations
and metadata name no item, ``state`` and ``grade`` answer ``SEALED_UNTIL_CLOSED`` except to an
admin connection, and messages take the ASGI path (they read and write the evaluation's records).

Starting and stepping episodes, sealing and the seed client's dialect are the service's
(``service.py``); this module parses messages and serializes what the service returns. Under
``igym serve`` text messages are answered inside uvicorn's protocol (``direct_ws.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qsl

from fastapi import FastAPI
from pydantic import ValidationError
from pydantic_core import to_json
from starlette.routing import WebSocketRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from integrity_gym.core.env import EpisodeFinishedError, NotResetError
from integrity_gym.server.direct_ws import DIRECT_EXTENSION, Direct, DirectWebSocketProtocol
from integrity_gym.server.evaluations import SEALED_UNTIL_CLOSED
from integrity_gym.server.security import (
    ApiError,
    cross_site_message,
    cross_site_origin,
    describe_errors,
    is_admin,
    json_safe_errors,
    json_too_deep,
    presented_token,
    too_deep_message,
)
from integrity_gym.server.service import EnvService, Shown, public_state
from integrity_gym.server.sessions import Session, SessionBusyError, StoreUnavailableError

__all__ = ["DIRECT_EXTENSION", "MESSAGE_TYPES", "DirectWebSocketProtocol", "add_ws_route"]

log = logging.getLogger("integrity_gym.server.ws")

CLOSE_TRY_AGAIN_LATER = 1013
CLOSE_GOING_AWAY = 1001
CLOSE_INTERNAL_ERROR = 1011
#: Every message type the endpoint answers.
MESSAGE_TYPES = ("reset", "step", "state", "grade", "close")


def _error(code: str, message: str, **extra: Any) -> str:
    return json.dumps({"type": "error", "data": {"message": message, "code": code, **extra}})


def add_ws_route(app: FastAPI, service: EnvService) -> None:
    """Register ``/<env>/ws`` on the server's application.

    The endpoint is a plain ASGI application (no Starlette ``WebSocket`` wrapper): the message
    loop is the hot path of training and every layer costs microseconds per step.
    """

    async def endpoint(scope: Scope, receive: Receive, send: Send) -> None:
        await _serve(scope, receive, send, service)

    path = f"/{service.name}/ws"
    app.router.routes.append(WebSocketRoute(path, _AsgiEndpoint(endpoint)))
    endpoints: dict[str, Endpoint] | None = getattr(app.state, "ws_endpoints", None)
    if endpoints is None:
        endpoints = app.state.ws_endpoints = {}
        app.add_middleware(_WebSocketDispatch, endpoints=endpoints)
    endpoints[path] = endpoint


Endpoint = Callable[[Scope, Receive, Send], Awaitable[None]]


class _WebSocketDispatch:
    """Hands each ``/<env>/ws`` connection straight to its endpoint, past routing and exception layers.

    A connection keeps every layer it went through on its stack for as long as the socket stays
    open, and each reply passes through their ``send`` wrappers: skipping the router, FastAPI's
    exit stack and Starlette's exception middleware saves memory per idle session and a call
    per message. Those layers add nothing here: the endpoint answers every error itself. Any
    other path, or a WebSocket path unknown here, goes through the application as usual.
    """

    def __init__(self, app: ASGIApp, endpoints: dict[str, Endpoint]) -> None:
        self.app = app
        self.endpoints = endpoints

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Run the endpoint of a known WebSocket path, else the wrapped application (ASGI)."""
        if scope["type"] == "websocket":
            endpoint = self.endpoints.get(scope["path"])
            if endpoint is not None:
                await endpoint(scope, receive, send)
                return
        await self.app(scope, receive, send)


class _AsgiEndpoint:
    """Marks an ASGI callable so Starlette's route uses it as is (not as a ``WebSocket`` function)."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


def _text(reply: str) -> dict[str, Any]:
    return {"type": "websocket.send", "text": reply}


class _Socket:
    """One accepted connection: closing it (once), and refusing with an error frame first."""

    __slots__ = ("closed", "direct", "send")

    def __init__(self, send: Send, direct: Direct | None) -> None:
        self.send = send
        self.direct = direct
        self.closed = False

    async def close(self, code: int) -> None:
        if self.direct is not None:  # nothing is answered inside the protocol past this point
            self.direct.pop("handler", None)
        if not self.closed:
            self.closed = True
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.send({"type": "websocket.close", "code": code}), timeout=1.0)

    async def refuse(self, reply: str, code: int) -> None:
        if self.direct is not None:
            self.direct.pop("handler", None)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.send(_text(reply)), timeout=1.0)
        await self.close(code)


async def _open_session(service: EnvService, socket: _Socket, client: str) -> Session | None:
    """The connection's session, or None once the connection was refused (capacity, limits, store down)."""

    async def evict() -> None:
        # Called by the reaper after the session's slot is already freed.
        message = f"session closed after {service.config.session_ttl_s:g}s idle; reconnect and reset"
        await socket.refuse(_error("SESSION_ERROR", message), CLOSE_GOING_AWAY)

    env = None
    try:
        await service.admit(client)
        env = service.build(service.tasks[0])
        return await service.open_session(env, client, kind="ws", on_evict=evict)
    except StoreUnavailableError as exc:
        reply = _error("SESSION_STORE_UNAVAILABLE", str(exc))
    except ApiError as exc:  # at capacity, past the client's limits
        reply = _error(exc.code, exc.message, **exc.extra)
    if env is not None:
        env.close()
    await socket.refuse(reply, CLOSE_TRY_AGAIN_LATER)
    return None


def _message_text(message: Message) -> str | None:
    """The text of a ``websocket.receive`` message (a binary one decoded as UTF-8), None if not UTF-8."""
    text: str | None = message.get("text")
    if text is None:
        try:
            text = (message.get("bytes") or b"").decode("utf-8")
        except UnicodeDecodeError:
            return None
    return text


def _refused(text: str, limit: int) -> str | None:
    """The error frame for a message too long or nested too deep, else None."""
    if len(text) > limit:
        return _error("VALIDATION_ERROR", f"message of {len(text)} characters exceeds the limit of {limit}")
    if json_too_deep(text):
        return _error("VALIDATION_ERROR", too_deep_message("message"))
    return None


async def _serve(scope: Scope, receive: Receive, send: Send, service: EnvService) -> None:
    if (await receive())["type"] != "websocket.connect":
        return
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", ())}
    origin = cross_site_origin(headers, service.config.allowed_origins)
    if origin is not None:  # a page of another site: refused before the handshake completes (HTTP 403)
        log.warning("websocket refused: %s", cross_site_message(origin))
        await send({"type": "websocket.close", "code": 1008, "reason": "cross-site origin refused"})
        return
    await send({"type": "websocket.accept"})
    token = _token(scope, headers)
    admin = is_admin(service.config.admin_token, token)
    peer = str((scope.get("client") or ("-",))[0])
    direct: Direct | None = scope.get("extensions", {}).get(DIRECT_EXTENSION)
    socket = _Socket(send, direct)
    session = await _open_session(service, socket, service.client_of(peer, token))
    if session is None:
        return
    limit = service.config.max_body_bytes
    sealed = service.sealed

    def answer(text: str) -> str | None:
        """The reply to one text message; ``None`` ends the connection."""
        error = _refused(text, limit)
        if error is not None:
            return error
        session.busy += 1
        try:
            return service.inline(_handle, text, session, service, admin, peer)
        finally:
            session.busy -= 1
            session.touch()

    async def answer_sealed(text: str) -> str | None:
        """The reply to one text message on a sealed server; ``None`` ends the connection."""
        error = _refused(text, limit)
        if error is not None:
            return error
        session.busy += 1
        try:
            return await _handle_sealed(text, session, service, admin, peer)
        finally:
            session.busy -= 1
            session.touch()

    # Under DirectWebSocketProtocol, text messages are answered inside the protocol; what it
    # passes on (a close, a binary message, anything after the reaper ended the session) and
    # every message under any other server arrives below. A sealed server's messages await the
    # store, so they all arrive below.
    if direct is not None and not sealed:
        # A blocking environment's messages are answered below, in a worker thread.
        direct["handler"] = lambda text: None if session.closed or service.off_loop else answer(text)
    try:
        while not session.closed:
            message = await receive()
            if message["type"] != "websocket.receive" or session.closed:
                break  # websocket.disconnect, or the reaper ended the session meanwhile
            text = _message_text(message)
            if text is None:
                reply: str | None = _error("INVALID_JSON", "binary message is not UTF-8 JSON")
            else:
                reply = await answer_sealed(text) if sealed else await _answer_plain(service, answer, text)
            if reply is None:
                break
            await send(_text(reply))
            if direct is not None:
                direct["pending"] -= 1  # answered: later text may be answered inside the protocol again
            # An idle connection keeps only its session: not its last message and reply.
            message = text = reply = None  # type: ignore[assignment]
    except OSError as exc:  # the client vanished or the reaper closed the socket under us
        log.debug("websocket of session %s ended: %s", session.id, exc)
    except Exception:  # a server bug outside any message: say so, then close properly
        log.exception("websocket of session %s failed", session.id)
        failed = "the server failed on this connection; see the server log"
        await socket.refuse(_error("EXECUTION_ERROR", failed, error_type="InternalError"), CLOSE_INTERNAL_ERROR)
    finally:
        if direct is not None:
            direct.pop("handler", None)
        if sealed and session.handle is not None:
            with contextlib.suppress(Exception):
                await service.evaluations.left(session.handle, session.env)
        await service.store.release(session)
        await socket.close(1000)


async def _answer_plain(service: EnvService, answer: Callable[[str], str | None], text: str) -> str | None:
    """``answer(text)``: in a worker thread once the environment is blocking, else here."""
    return await service.call(answer, text) if service.off_loop else answer(text)


def _token(scope: Scope, headers: dict[str, str]) -> str | None:
    """The token the handshake presents (a header, or ``?admin_token=`` for clients without headers)."""
    return presented_token(headers, dict(parse_qsl(scope.get("query_string", b"").decode("latin-1"))))


def _error_reply(exc: Exception, kind: Any, session: Session, what: str = "") -> str:
    """The error frame for an exception raised while answering a ``kind`` message (plain or sealed)."""
    if isinstance(exc, NotResetError | EpisodeFinishedError):
        return _error("EXECUTION_ERROR", str(exc), error_type=type(exc).__name__)
    if isinstance(exc, ApiError):
        return _error(exc.code, exc.message, **exc.extra)
    if isinstance(exc, ValidationError):
        errors = [{**e, "loc": ["data", *e["loc"]]} for e in json_safe_errors(exc.errors())]
        return _error("VALIDATION_ERROR", f"invalid '{kind}' message: {describe_errors(errors)}", errors=errors)
    if isinstance(exc, StoreUnavailableError):
        return _error("SESSION_STORE_UNAVAILABLE", str(exc))
    if isinstance(exc, SessionBusyError):
        return _error("SESSION_ERROR", str(exc))
    # An environment bug: report it without the traceback.
    log.exception("session %s: %s%s message failed", session.id, what, kind, exc_info=exc)
    return _error(
        "EXECUTION_ERROR",
        f"the environment failed on this {kind} message ({type(exc).__name__}); see the server log",
        error_type="InternalError",
    )


def _parse(text: str) -> dict[str, Any] | str:
    """The message as a JSON object, or the error frame to send."""
    try:
        message = json.loads(text)
    except json.JSONDecodeError as exc:
        return _error("INVALID_JSON", f"invalid JSON: {exc.msg} at position {exc.pos}")
    except RecursionError:  # pragma: no cover - json_too_deep refuses such messages first
        return _error("VALIDATION_ERROR", too_deep_message("message"))
    if not isinstance(message, dict):
        return _error("VALIDATION_ERROR", f"a message must be a JSON object with 'type', not {type(message).__name__}")
    return message


def _handle(text: str, session: Session, service: EnvService, admin: bool, peer: str = "-") -> str | None:
    """Answer one message; ``None`` means close the connection."""
    message = _parse(text)
    if isinstance(message, str):
        return message
    kind = message.get("type")
    try:
        if kind == "step":
            if "data" not in message:
                return _error("VALIDATION_ERROR", "'step' needs 'data': the action, as a JSON object")
            return _observation_frame(service.step(session, message["data"], client=peer))
        if kind == "reset":
            request = _reset_request(message, service)
            if isinstance(request, str):
                return request
            spec, shown = service.reset(session, request)
            return _reset_frame(shown, {"task_id": spec.id, "episode_id": session.episode_id}, service.sealed)
        if kind == "state":
            env = session.env
            data = (
                env.state().model_dump(mode="json") if admin else {**public_state(session), "ground_truth_hidden": True}
            )
            return json.dumps({"type": "state", "data": data})
        if kind == "grade":
            return f'{{"type":"grade","data":{service.grade_json(session, admin=admin, how="connect with")}}}'
        if kind == "close":
            return None
    except Exception as exc:
        return _error_reply(exc, kind, session)
    known = ", ".join(MESSAGE_TYPES)
    if "type" not in message:
        return _error("UNKNOWN_TYPE", f"the message has no 'type'; use one of: {known}")
    return _error("UNKNOWN_TYPE", f"unknown message type {kind!r}; use one of: {known}")


def _observation_frame(shown: Shown, metadata: dict[str, Any] | None = None) -> str:
    """An ``observation`` message: the step's (its info as ``metadata``) or a reset's."""
    data = {
        "observation": shown.observation,
        "reward": shown.reward,
        "done": shown.done,
        "metadata": shown.info if metadata is None else metadata,
    }
    if shown.shaped:
        return json.dumps({"type": "observation", "data": data})
    # One pass of pydantic's serializer over the whole reply (the observation model included):
    # about three times faster than json.dumps around model_dump_json, the same JSON values.
    return to_json({"type": "observation", "data": data}).decode()


def _reset_frame(shown: Shown, metadata: dict[str, Any], sealed: bool) -> str:
    if shown.shaped or sealed:
        return _observation_frame(shown, metadata)
    return (
        f'{{"type":"observation","data":{{"observation":{shown.observation.model_dump_json()},'
        f'"reward":null,"done":{"true" if shown.done else "false"},"metadata":{json.dumps(metadata)}}}}}'
    )


def _reset_request(message: dict[str, Any], service: EnvService) -> Any:
    """The reset arguments of a ``reset`` message in this environment's model, or the error frame to send."""
    data = message.get("data", {})
    if data is not None and not isinstance(data, dict):
        return _error(
            "VALIDATION_ERROR", f"'reset' data must be a JSON object of reset arguments, not {type(data).__name__}"
        )
    return service.reset_request(data)


# --------------------------------------------------------------------------- sealed servers
async def _handle_sealed(text: str, session: Session, service: EnvService, admin: bool, peer: str) -> str | None:
    """Answer one message on a sealed server; what is not sealed-specific goes to ``_handle``."""
    try:
        message = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return _handle(text, session, service, admin, peer)
    kind = message.get("type") if isinstance(message, dict) else None
    if kind not in ("reset", "step", "state", "grade") or (admin and kind in ("state", "grade")):
        return _handle(text, session, service, admin, peer)  # close, unknown types, the admin's reads
    try:
        if kind == "reset":
            request = _reset_request(message, service)
            if isinstance(request, str):
                return request
            spec, shown = await service.reset_sealed(session, request)
            return _observation_frame(shown, {"task_id": spec.id, "episode_id": session.episode_id})
        if kind in ("state", "grade"):
            return _error("SEALED_UNTIL_CLOSED", SEALED_UNTIL_CLOSED)
        handle = session.handle
        if handle is not None:
            live = service.evaluations.ws.get(handle)
            if live is None or live.ended:
                return _error(
                    "EVALUATION_CLOSED",
                    "this episode's evaluation is closed: its results were released by POST /evaluations/<id>/close",
                )
        if "data" not in message:
            return _error("VALIDATION_ERROR", "'step' needs 'data': the action, as a JSON object")
        return _observation_frame(await service.step_recorded(session, message["data"]))
    except Exception as exc:
        return _error_reply(exc, kind, session, "sealed ")
