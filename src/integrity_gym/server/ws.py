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

On a sealed server (``evaluations.py``) ``reset`` takes ``{"handle": ...}`` alone (error
``SEALED`` otherwise, ``HANDLE_NOT_FOUND``, ``HANDLE_USED``, ``EVALUATION_CLOSED``), observations
and metadata name no item, ``state`` and ``grade`` answer ``SEALED_UNTIL_CLOSED`` except to an
admin connection, and messages take the ASGI path (they read and write the evaluation's records).
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
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.http11 import Request

from integrity_gym.core.env import EpisodeFinishedError, NotResetError
from integrity_gym.server.compat import Profile
from integrity_gym.server.evaluations import (
    SEALED_UNTIL_CLOSED,
    refuse_handle,
    seal_info,
    seal_observation,
    seal_profile_observation,
)
from integrity_gym.server.security import (
    ApiError,
    describe_errors,
    is_admin,
    json_safe_errors,
    json_too_deep,
    presented_token,
    too_deep_message,
)
from integrity_gym.server.service import EnvService, public_state
from integrity_gym.server.sessions import CapacityError, Session, SessionBusyError, StoreUnavailableError

log = logging.getLogger("integrity_gym.server.ws")

CLOSE_TRY_AGAIN_LATER = 1013
CLOSE_GOING_AWAY = 1001
CLOSE_INTERNAL_ERROR = 1011
#: Every message type the endpoint answers.
MESSAGE_TYPES = ("reset", "step", "state", "grade", "close")
#: The ASGI scope extension of ``DirectWebSocketProtocol`` (a dict the endpoint puts its handler in).
DIRECT_EXTENSION = "integrity_gym.direct"


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


class DirectWebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's sans-I/O WebSocket protocol, answering text messages without the ASGI round trip.

    Through ASGI, each message is queued, reading is paused and resumed, and the endpoint's task
    is woken and resumed through every middleware's frame before it answers: about 15% of the
    server's CPU per pii_redaction step (benchmarks/server.py). This protocol puts a dict in the
    scope's extensions under ``DIRECT_EXTENSION``; an endpoint that stores a ``handler`` there
    (message text -> reply text, or ``None``) has each complete text message answered here, in
    ``data_received``, in arrival order. A ``None`` reply, a handler failure, a binary message,
    a message while earlier ones still wait in the queue, a transport paused for writing and a
    closing connection all take uvicorn's usual path, so the endpoint gets them from
    ``receive()``; an endpoint that ignores the extension behaves as under the parent class. It
    reads the parent's per-connection state (written against uvicorn 0.52.1 to 0.54): should a
    release keep other state, each connection warns and answers through ASGI instead.
    ``igym serve`` runs this protocol; tests/server/test_direct_ws.py checks that it is used and
    that its replies equal the ASGI path's, byte for byte.
    """

    _direct: dict[str, Callable[[str], str | None]] | None = None

    def handle_connect(self, event: Request) -> None:
        """Accept the handshake as the parent does, then offer the extension in the scope."""
        super().handle_connect(event)
        scope = getattr(self, "scope", None)  # absent when the handshake was refused
        if scope is not None:
            self._direct = scope["extensions"][DIRECT_EXTENSION] = {}

    def send_receive_event_to_app(self) -> None:
        """Answer a complete text message with the endpoint's handler, else hand it to the endpoint."""
        handler = self._direct.get("handler") if self._direct is not None else None
        data = self._answerable() if handler is not None else None
        if handler is not None and data is not None:
            try:
                reply = handler(data.decode())
            except UnicodeDecodeError:
                reply = None  # the parent closes with 1007
            except Exception:  # never break the protocol: the endpoint meets the same failure
                log.exception("direct WebSocket handler failed; passing the message to the endpoint")
                reply = None
            if reply is not None:
                self.frames = []
                self.conn.send_text(reply.encode())
                self.transport.write(b"".join(self.conn.data_to_send()))
                return
        super().send_receive_event_to_app()

    def _answerable(self) -> bytes | None:
        """The message, if it may be answered here: text, nothing queued before it, writable, open."""
        try:
            if self.curr_msg_data_type != "text" or self.close_sent or not self.writable.is_set():
                return None
            if not self.queue.empty():
                return None
            return self.frames[0] if len(self.frames) == 1 else b"".join(self.frames)
        except AttributeError:  # a uvicorn keeping other protocol state than 0.52.1 to 0.54 do
            log.warning("this uvicorn's WebSocket protocol is not the one DirectWebSocketProtocol knows: using ASGI")
            self._direct = None  # this connection stops trying
            return None


def _text(reply: str) -> dict[str, Any]:
    return {"type": "websocket.send", "text": reply}


async def _serve(scope: Scope, receive: Receive, send: Send, service: EnvService) -> None:
    if (await receive())["type"] != "websocket.connect":
        return
    await send({"type": "websocket.accept"})
    admin = _is_admin_connection(scope, service)
    peer = str((scope.get("client") or ("-",))[0])
    closed = False

    async def close(code: int) -> None:
        nonlocal closed
        if not closed:
            closed = True
            with contextlib.suppress(Exception):
                await asyncio.wait_for(send({"type": "websocket.close", "code": code}), timeout=1.0)

    async def refuse(reply: str, code: int) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(send(_text(reply)), timeout=1.0)
        await close(code)

    async def evict() -> None:
        # Called by the reaper after the session's slot is already freed.
        message = f"session closed after {service.config.session_ttl_s:g}s idle; reconnect and reset"
        await refuse(_error("SESSION_ERROR", message), CLOSE_GOING_AWAY)

    env = service.build(service.tasks[0])
    try:
        session = await service.store.open(service.name, env, kind="ws", on_evict=evict)
    except CapacityError as exc:
        env.close()
        full = _error("CAPACITY_REACHED", str(exc), active_sessions=exc.active, max_sessions=exc.maximum)
        await refuse(full, CLOSE_TRY_AGAIN_LATER)
        return
    except StoreUnavailableError as exc:
        env.close()
        await refuse(_error("SESSION_STORE_UNAVAILABLE", str(exc)), CLOSE_TRY_AGAIN_LATER)
        return
    except ApiError as exc:
        env.close()
        await refuse(_error("SESSION_ERROR", exc.message), CLOSE_TRY_AGAIN_LATER)
        return

    limit = service.config.max_body_bytes

    def answer(text: str) -> str | None:
        """The reply to one text message; ``None`` ends the connection."""
        if len(text) > limit:
            return _error("VALIDATION_ERROR", f"message of {len(text)} characters exceeds the limit of {limit}")
        if json_too_deep(text):
            return _error("VALIDATION_ERROR", too_deep_message("message"))
        session.busy += 1
        try:
            return _handle(text, session, service, admin, peer)
        finally:
            session.busy -= 1
            session.touch()

    sealed = service.sealed
    connection = _SealedConnection()

    async def answer_sealed(text: str) -> str | None:
        """The reply to one text message on a sealed server; ``None`` ends the connection."""
        if len(text) > limit:
            return _error("VALIDATION_ERROR", f"message of {len(text)} characters exceeds the limit of {limit}")
        if json_too_deep(text):
            return _error("VALIDATION_ERROR", too_deep_message("message"))
        session.busy += 1
        try:
            return await _handle_sealed(text, session, service, admin, peer, connection)
        finally:
            session.busy -= 1
            session.touch()

    # Under DirectWebSocketProtocol, text messages are answered inside the protocol; what it
    # passes on (a close, a binary message, anything after the reaper ended the session) and
    # every message under any other server arrives below. A sealed server's messages await the
    # store, so they all arrive below.
    direct: dict[str, Callable[[str], str | None]] | None = scope.get("extensions", {}).get(DIRECT_EXTENSION)
    if direct is not None and not sealed:
        direct["handler"] = lambda text: None if session.closed else answer(text)
    try:
        while not session.closed:
            message = await receive()
            if message["type"] != "websocket.receive" or session.closed:
                break  # websocket.disconnect, or the reaper ended the session meanwhile
            text = message.get("text")
            if text is None:
                try:
                    text = (message.get("bytes") or b"").decode("utf-8")
                except UnicodeDecodeError:
                    await send(_text(_error("INVALID_JSON", "binary message is not UTF-8 JSON")))
                    continue
            reply = await answer_sealed(text) if sealed else answer(text)
            if reply is None:
                break
            await send(_text(reply))
            # An idle connection keeps only its session: not its last message and reply.
            message = text = reply = None  # type: ignore[assignment]
    except OSError as exc:  # the client vanished or the reaper closed the socket under us
        log.debug("websocket of session %s ended: %s", session.id, exc)
    except Exception:  # a server bug outside any message: say so, then close properly
        log.exception("websocket of session %s failed", session.id)
        await refuse(
            _error(
                "EXECUTION_ERROR",
                "the server failed on this connection; see the server log",
                error_type="InternalError",
            ),
            CLOSE_INTERNAL_ERROR,
        )
    finally:
        if direct is not None:
            direct.pop("handler", None)
        if sealed and connection.handle is not None:
            with contextlib.suppress(Exception):
                await service.evaluations.left(connection.handle, session.env)
        await service.store.release(session)
        await close(1000)


def _is_admin_connection(scope: Scope, service: EnvService) -> bool:
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", ())}
    query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
    return is_admin(service.config.admin_token, presented_token(headers, query))


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


def _handle(text: str, session: Session, service: EnvService, admin: bool, peer: str = "-") -> str | None:
    """Answer one message; ``None`` means close the connection."""
    try:
        message = json.loads(text)
    except json.JSONDecodeError as exc:
        return _error("INVALID_JSON", f"invalid JSON: {exc.msg} at position {exc.pos}")
    except RecursionError:  # pragma: no cover - json_too_deep refuses such messages first
        return _error("VALIDATION_ERROR", too_deep_message("message"))
    if not isinstance(message, dict):
        return _error("VALIDATION_ERROR", f"a message must be a JSON object with 'type', not {type(message).__name__}")
    kind = message.get("type")
    try:
        if kind == "step":
            if service.profile is not None:
                return _profile_step(message, session, service, service.profile, peer)
            return _step(message, session)
        if kind == "reset":
            return _reset(message, session, service)
        if kind == "state":
            env = session.env
            data = (
                env.state().model_dump(mode="json") if admin else {**public_state(session), "ground_truth_hidden": True}
            )
            return json.dumps({"type": "state", "data": data})
        if kind == "grade":
            env = session.env
            if not (admin or env.done):
                env.observation()  # before the first reset this raises NotResetError, as in-process
                return _error(
                    "EPISODE_NOT_DONE",
                    "the grade is given once the episode has ended (before, it would reveal the hidden truth); "
                    "step until done is true, or connect with the admin token",
                )
            return f'{{"type":"grade","data":{env.grade().model_dump_json()}}}'
        if kind == "close":
            return None
    except Exception as exc:
        return _error_reply(exc, kind, session)
    known = ", ".join(MESSAGE_TYPES)
    if "type" not in message:
        return _error("UNKNOWN_TYPE", f"the message has no 'type'; use one of: {known}")
    return _error("UNKNOWN_TYPE", f"unknown message type {kind!r}; use one of: {known}")


def _step(message: dict[str, Any], session: Session) -> str:
    if "data" not in message:
        return _error("VALIDATION_ERROR", "'step' needs 'data': the action, as a JSON object")
    action = message["data"]
    if isinstance(action, str) and json_too_deep(action):
        return _error("VALIDATION_ERROR", too_deep_message("data"))
    # Whatever the action is, the environment judges it exactly as in-process: a malformed one
    # comes back as a step with info['error'], never as a protocol error.
    result = session.env.step(action)
    # One pass of pydantic's serializer over the whole reply (the observation model included):
    # about three times faster than json.dumps around model_dump_json, the same JSON values.
    reply = {"observation": result.observation, "reward": result.reward, "done": result.done, "metadata": result.info}
    return to_json({"type": "observation", "data": reply}).decode()


def _profile_step(message: dict[str, Any], session: Session, service: EnvService, profile: Profile, peer: str) -> str:
    """A step in the seed client's dialect (``compat.py``); the grade is kept once the episode ends."""
    if "data" not in message:
        return _error("VALIDATION_ERROR", "'step' needs 'data': the action, as a JSON object")
    env = session.env
    action, recorded = profile.action(message["data"], env)
    if isinstance(action, str) and json_too_deep(action):
        return _error("VALIDATION_ERROR", too_deep_message("data"))
    result = env.step(action)
    info = {**result.info, **recorded}
    obs: dict[str, Any] = result.observation.model_dump(mode="json")
    if profile.observation is not None:
        obs = profile.observation(obs, result.reward, info, session)
    if result.done:
        service.remember_grade(peer, env.grade().model_dump_json())
    data = {"observation": obs, "reward": result.reward, "done": result.done, "metadata": info}
    return json.dumps({"type": "observation", "data": data})


def _reset_request(message: dict[str, Any], service: EnvService) -> Any:
    """The reset arguments of a ``reset`` message in this environment's model, or the error frame to send."""
    data = message.get("data", {})
    if data is None:
        data = {}
    if not isinstance(data, dict):
        return _error(
            "VALIDATION_ERROR", f"'reset' data must be a JSON object of reset arguments, not {type(data).__name__}"
        )
    if service.profile is not None:
        data = service.profile.reset_data(data)
    return service.reset_model.model_validate(data)


def _reset(message: dict[str, Any], session: Session, service: EnvService) -> str:
    request = _reset_request(message, service)
    if isinstance(request, str):
        return request
    refuse_handle(request)
    spec = service.resolve_task(request)
    if session.env.spec.id != spec.id:
        session.env.close()
        session.env = service.build(spec)
    obs = service.reset(session.env, request)
    session.new_episode()
    meta = {"task_id": spec.id, "episode_id": session.episode_id}
    metadata = json.dumps(meta)
    if service.profile is not None and service.profile.observation is not None:
        shaped = service.profile.observation(obs.model_dump(mode="json"), None, {}, session)
        return json.dumps(
            {"type": "observation", "data": {"observation": shaped, "reward": None, "done": obs.done, "metadata": meta}}
        )
    return (
        f'{{"type":"observation","data":{{"observation":{obs.model_dump_json()},'
        f'"reward":null,"done":{"true" if obs.done else "false"},"metadata":{metadata}}}}}'
    )


# --------------------------------------------------------------------------- sealed servers
class _SealedConnection:
    """What a connection to a sealed server plays: the handle of its current episode."""

    __slots__ = ("handle",)

    def __init__(self) -> None:
        self.handle: str | None = None


async def _handle_sealed(
    text: str, session: Session, service: EnvService, admin: bool, peer: str, connection: _SealedConnection
) -> str | None:
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
            return await _sealed_reset(message, session, service, connection)
        if kind in ("state", "grade"):
            return _error("SEALED_UNTIL_CLOSED", SEALED_UNTIL_CLOSED)
        handle = connection.handle
        if handle is not None:
            live = service.evaluations.ws.get(handle)
            if live is None or live.ended:
                return _error(
                    "EVALUATION_CLOSED",
                    "this episode's evaluation is closed: its results were released by POST /evaluations/<id>/close",
                )
        return await _sealed_step(message, session, service, connection)
    except Exception as exc:
        return _error_reply(exc, kind, session, "sealed ")


async def _sealed_reset(
    message: dict[str, Any], session: Session, service: EnvService, connection: _SealedConnection
) -> str:
    request = _reset_request(message, service)
    if isinstance(request, str):
        return request
    evaluations = service.evaluations
    claim = await evaluations.claim(service, request)
    try:
        env = service.build(claim.spec)
        obs = env.reset(seed=claim.seed)
    except BaseException:
        await evaluations.unclaim(claim)
        raise
    previous, old_env = connection.handle, session.env
    session.env, connection.handle = env, claim.handle
    if previous is not None:
        await evaluations.left(previous, old_env)
    old_env.close()
    try:
        await evaluations.started(claim, session, "ws")
    except ApiError:
        connection.handle = None
        session.env = service.build(service.tasks[0])  # nothing of that item stays playable
        env.close()
        raise
    session.new_episode()
    obs = seal_observation(type(env), obs)
    metadata = {"task_id": claim.spec.id, "episode_id": session.episode_id}
    if service.profile is not None and service.profile.observation is not None:
        shaped = seal_profile_observation(service.profile.observation(obs.model_dump(mode="json"), None, {}, session))
        return json.dumps(
            {
                "type": "observation",
                "data": {"observation": shaped, "reward": None, "done": obs.done, "metadata": metadata},
            }
        )
    reply = {"observation": obs, "reward": None, "done": obs.done, "metadata": metadata}
    return to_json({"type": "observation", "data": reply}).decode()


async def _sealed_step(
    message: dict[str, Any], session: Session, service: EnvService, connection: _SealedConnection
) -> str:
    if "data" not in message:
        return _error("VALIDATION_ERROR", "'step' needs 'data': the action, as a JSON object")
    profile = service.profile
    action, recorded = (message["data"], {}) if profile is None else profile.action(message["data"], session.env)
    if isinstance(action, str) and json_too_deep(action):
        return _error("VALIDATION_ERROR", too_deep_message("data"))
    env = session.env
    result = env.step(action)
    cls = type(env)
    obs = seal_observation(cls, result.observation)
    info = seal_info(cls, result.info)
    if result.done and connection.handle is not None:
        await service.evaluations.finished(connection.handle, env)
    if profile is not None:
        info = {**info, **recorded}
        shown: Any = obs.model_dump(mode="json")
        if profile.observation is not None:
            shown = seal_profile_observation(profile.observation(shown, result.reward, info, session))
        return json.dumps(
            {
                "type": "observation",
                "data": {"observation": shown, "reward": result.reward, "done": result.done, "metadata": info},
            }
        )
    reply = {"observation": obs, "reward": result.reward, "done": result.done, "metadata": info}
    return to_json({"type": "observation", "data": reply}).decode()
