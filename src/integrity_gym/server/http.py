"""HTTP routes of one environment: OpenEnv's info endpoints and stateful sessions.

OpenEnv's own HTTP ``/reset`` and ``/step`` build a fresh environment per request and keep
nothing; here ``POST /reset`` opens a session and returns its id, and every later request names
it. Nothing hidden leaves before the episode ends: ``/grade`` answers once the episode is done
(409 ``EPISODE_NOT_DONE`` before, unless the admin token is presented), ``/scenario`` shows ids,
counters and the observation only (no seed: with the public generator a seed rebuilds the episode
and its labels), and the full state needs the admin token. Only HTTP sessions are reachable here;
a WebSocket's session belongs to its connection.

Errors are JSON ``ErrorBody`` with a 4xx status: 404 ``SESSION_NOT_FOUND``, 409
``EPISODE_FINISHED`` / ``EPISODE_NOT_DONE`` / ``SESSION_BUSY``, 413 ``BODY_TOO_LARGE``, 422
``VALIDATION_ERROR``, 503 ``CAPACITY_REACHED`` or ``SESSION_STORE_UNAVAILABLE`` (with
Retry-After), 401/403 for the admin token.

On a sealed server (``igym serve --sealed``, ``evaluations/``) a reset takes a handle alone
(403 ``SEALED`` otherwise; 404 ``HANDLE_NOT_FOUND``, 409 ``HANDLE_USED`` / ``EVALUATION_CLOSED``),
observations and step info name no item, and grade, state and collect answer 403
(``SEALED_UNTIL_CLOSED`` / ``SEALED``) except to the admin token.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import math
import typing
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import APIRouter, Body, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ValidationError
from pydantic_core import to_json

from integrity_gym.core.env import EpisodeFinishedError
from integrity_gym.core.registry import TaskSpec
from integrity_gym.core.types import Grade, StepResult
from integrity_gym.server.evaluations import SEALED_RESET, SEALED_UNTIL_CLOSED, seal_observation
from integrity_gym.server.fast_routes import RawRoute, documented_as
from integrity_gym.server.http_docs import (
    BODY_ERRORS,
    CROSS_SITE_ERRORS,
    GRADE_ERRORS,
    SEALED_UNTIL_CLOSED_ERROR,
    SESSION_ERRORS,
    Closed,
    GradeRequest,
    Health,
    ResetResponse,
    Responses,
    ScenarioView,
    StepRequest,
    doc,
    reset_responses,
    state_responses,
)
from integrity_gym.server.security import (
    ApiError,
    is_admin,
    json_too_deep,
    presented_token,
    refuse_cross_site,
    require_admin,
    too_deep_message,
)
from integrity_gym.server.service import EnvService, Shown, public_state
from integrity_gym.server.sessions import Session, SessionNotFoundError, SessionStore, StoreUnavailableError

__all__ = ["GradeRequest", "StepRequest", "build_env_router", "health_reply"]

#: The id of a session in a path or query.
SessionIdPath = typing.Annotated[str, Path(max_length=128, description="Id returned by POST /reset.")]


def _json(content: str | bytes) -> Response:
    return Response(content=content, media_type="application/json")


def build_env_router(service: EnvService) -> APIRouter:
    """The routes of one environment under ``/<env>``, one per path, each documented in the OpenAPI document.

    ``/reset`` and ``/step`` are the hot path of training: they are ``RawRoute``s, answered
    without FastAPI's per-request dependency machinery (``fast_routes.py``; the application
    indexes them in its ``HotRoutes``).
    """
    app = APIRouter(prefix=f"/{service.name}")
    _add_info_routes(app, service)
    _add_reset(app, service)
    _add_step(app, service)
    _add_grade_routes(app, service)
    _add_scenario(app, service)
    _add_state_routes(app, service)
    _add_close(app, service)
    collect = getattr(service.env_class, "collect", None)
    if callable(collect):
        _add_collect(app, service, collect)
    return app


def _add_info_routes(app: APIRouter, service: EnvService) -> None:
    """OpenEnv's info endpoints: ``/health``, ``/metadata``, ``/schema``, ``/tasks`` and ``POST /mcp``."""
    name = service.name

    @app.get(
        "/health",
        tags=["info"],
        summary="Liveness probe (OpenEnv); 503 when the session store is down",
        response_model=Health,
        responses={503: {"model": Health, "description": "The session store cannot be reached."}},
        operation_id=f"{name}_health",
    )
    async def health() -> JSONResponse:
        return await health_reply(service.store)

    metadata = service.metadata()

    @app.get(
        "/metadata", tags=["info"], summary="Name, description and README (OpenEnv)", operation_id=f"{name}_metadata"
    )
    async def get_metadata() -> JSONResponse:
        return JSONResponse(metadata)

    schema = service.schema()

    @app.get(
        "/schema",
        tags=["info"],
        summary="JSON schemas of action, observation and state (OpenEnv)",
        operation_id=f"{name}_schema",
    )
    async def get_schema() -> JSONResponse:
        return JSONResponse(schema)

    @app.get("/tasks", tags=["info"], summary="Tasks of this environment", operation_id=f"{name}_tasks")
    async def tasks() -> JSONResponse:
        return JSONResponse([s.model_dump(mode="json") for s in service.tasks])

    @app.post(
        "/mcp",
        tags=["info"],
        summary="MCP JSON-RPC 2.0 (this environment exposes no tools)",
        responses=BODY_ERRORS,
        operation_id=f"{name}_mcp",
    )
    async def mcp(request: Request) -> Response:
        # Written with ASCII escapes: a method name echoed back may hold a lone surrogate.
        return _json(json.dumps(_mcp_reply(await request.body())))


def _add_reset(app: APIRouter, service: EnvService) -> None:
    """``POST /<env>/reset``: a new session and its first observation."""
    reset_model: Any = service.reset_model
    obs_type: Any = service.env_class.observation_type

    async def reset(request: Request) -> Response:
        # Declared JSON (a form or text/plain body is what another site's page can send unasked);
        # under a profile any Content-Type (curl -d sends a form type), read as JSON as /step's is.
        body = await request.body()
        config = service.config
        refuse_cross_site(request.headers, allowed=config.allowed_origins, strict=config.strict_content_type,
                          has_body=bool(body.strip()))  # fmt: skip
        try:
            data = json.loads(body) if body.strip() else {}
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            errors = [{"loc": ["body"], "msg": f"the body is not JSON: {exc}", "type": "json_invalid"}]
            raise RequestValidationError(errors) from exc
        try:
            parsed = service.reset_request(data)
        except ValidationError as exc:
            raise RequestValidationError(
                [{**e, "loc": ["body", *e["loc"]]} for e in exc.errors(include_url=False, include_context=False)]
            ) from exc
        client = service.client_of(request.client.host if request.client else None, presented_token(request.headers))
        session, spec, shown = await service.open_episode(parsed, client)
        return _reset_reply(session, spec, shown)

    app.add_api_route(
        "/reset",
        documented_as(reset, request=(typing.Annotated[reset_model | None, Body()], None)),
        methods=["POST"],
        route_class_override=RawRoute,
        tags=["session"],
        summary="Start an episode in a new session",
        response_model=ResetResponse[obs_type],
        responses=reset_responses(service.name, service.sealed),
        operation_id=f"{service.name}_reset",
    )


def _reset_reply(session: Session, spec: TaskSpec, shown: Shown) -> Response:
    obs = json.dumps(shown.observation) if shown.shaped else shown.observation.model_dump_json()
    return _json(
        f'{{"session_id":{json.dumps(session.id)},"task_id":{json.dumps(spec.id)},'
        f'"episode_id":{json.dumps(session.episode_id)},"observation":{obs},"reward":null,'
        f'"done":{json.dumps(shown.done)}}}'
    )


def _add_step(app: APIRouter, service: EnvService) -> None:
    """``POST /<env>/step``: one action in a session."""
    obs_type: Any = service.env_class.observation_type

    async def step(request: Request) -> Response:
        config = service.config
        refuse_cross_site(request.headers, allowed=config.allowed_origins, strict=config.strict_content_type,
                          has_body=True)  # fmt: skip
        try:
            parsed = StepRequest.model_validate_json(await request.body())
        except ValidationError as exc:
            raise RequestValidationError(exc.errors(include_url=False, include_context=False)) from exc
        action = parsed.action
        if isinstance(action, str) and json_too_deep(action):
            message = too_deep_message("action")
            raise ApiError(
                422,
                "VALIDATION_ERROR",
                message,
                errors=[{"loc": ["body", "action"], "msg": message, "type": "json_too_deep"}],
            )
        async with service.session(parsed.session_id, write=True) as session:
            try:
                shown = await service.step_recorded(session, action, where="action")
            except EpisodeFinishedError as exc:
                raise ApiError(409, "EPISODE_FINISHED", str(exc)) from exc
        if shown.shaped:
            return JSONResponse(
                {"observation": shown.observation, "reward": shown.reward, "done": shown.done, "info": shown.info}
            )
        return _json(
            to_json({"observation": shown.observation, "reward": shown.reward, "done": shown.done, "info": shown.info})
        )

    app.add_api_route(
        "/step",
        documented_as(step, request=StepRequest),
        methods=["POST"],
        route_class_override=RawRoute,
        tags=["session"],
        summary="Apply one action",
        response_model=StepResult[obs_type],
        responses={
            **SESSION_ERRORS,
            **BODY_ERRORS,
            **CROSS_SITE_ERRORS,
            409: doc("EPISODE_FINISHED, SESSION_BUSY", "The episode has ended, or another request holds it"),
        },
        operation_id=f"{service.name}_step",
    )


def _admin_or_unsealed(service: EnvService, request: Request) -> bool:
    """True for the admin; 403 SEALED_UNTIL_CLOSED for anyone else on a sealed server."""
    admin = is_admin(service.config.admin_token, presented_token(request.headers))
    if service.sealed and not admin:
        raise ApiError(403, "SEALED_UNTIL_CLOSED", SEALED_UNTIL_CLOSED)
    return admin


def _add_grade_routes(app: APIRouter, service: EnvService) -> None:
    """``GET /<env>/grade/{id}`` and ``POST /<env>/grade`` (which a seed client asks without a session)."""
    name = service.name
    responses: Responses = {**GRADE_ERRORS, **({403: SEALED_UNTIL_CLOSED_ERROR} if service.sealed else {})}

    @app.get(
        "/grade/{session_id}",
        tags=["session"],
        summary="Grade of a finished episode (any time with the admin token)",
        response_model=Grade,
        responses=responses,
        operation_id=f"{name}_grade",
    )
    async def grade(request: Request, session_id: SessionIdPath) -> Response:
        admin = _admin_or_unsealed(service, request)
        async with service.session(session_id, write=False) as session:
            return _json(service.grade_json(session, admin=admin, how="present"))

    @app.post(
        "/grade",
        tags=["session"],
        summary="Grade of a finished episode: of session_id, or else of this client's last finished WebSocket "
        "episode (under a seed profile)",
        response_model=Grade,
        responses=responses,
        operation_id=f"{name}_grade_post",
    )
    async def grade_post(request: Request, body: GradeRequest | None = None) -> Response:
        _admin_or_unsealed(service, request)
        if body is not None and body.session_id is not None:
            return await grade(request, body.session_id)
        peer = request.client.host if request.client else "-"
        if peer in service.finished:
            return _json(service.finished[peer])
        raise ApiError(
            409,
            "EPISODE_NOT_DONE",
            'no finished episode to grade: send {"session_id": ...} of an HTTP session, or finish a WebSocket '
            "episode from this address first (the grade is given only once an episode has ended)",
        )


def _add_scenario(app: APIRouter, service: EnvService) -> None:
    """``GET /<env>/scenario/{id}``: ids, counters and the observation, nothing hidden."""
    obs_type: Any = service.env_class.observation_type

    @app.get(
        "/scenario/{session_id}",
        tags=["session"],
        summary="Ids, counters and the current observation (nothing hidden)",
        response_model=ScenarioView[obs_type],
        responses=SESSION_ERRORS,
        operation_id=f"{service.name}_scenario",
    )
    async def scenario(session_id: SessionIdPath) -> JSONResponse:
        async with service.session(session_id, write=False) as session:
            data = {"session_id": session_id, **public_state(session)}
            obs = session.env.observation()
            if service.sealed:
                obs = seal_observation(type(session.env), obs)
            data["observation"] = obs.model_dump(mode="json")
            return JSONResponse(data)


def _add_state_routes(app: APIRouter, service: EnvService) -> None:
    """``GET /<env>/state/{id}`` and ``GET /<env>/state?session_id=``: the full state (admin token)."""
    responses = state_responses(service.env_class.state_type, service.sealed)

    async def full_state(request: Request, session_id: str) -> Response:
        _admin_or_unsealed(service, request)
        require_admin(service.config.admin_token, presented_token(request.headers))
        async with service.session(session_id, write=False) as session:
            return _json(session.env.state().model_dump_json())

    @app.get(
        "/state/{session_id}",
        tags=["session"],
        summary="Full state, ground truth included (admin token)",
        responses=responses,
        operation_id=f"{service.name}_state",
    )
    async def state_by_path(request: Request, session_id: SessionIdPath) -> Response:
        return await full_state(request, session_id)

    @app.get(
        "/state",
        tags=["session"],
        summary="Full state of ?session_id= (admin token)",
        responses=responses,
        operation_id=f"{service.name}_state_by_query",
    )
    async def state_by_query(
        request: Request, session_id: str = Query(max_length=128, description="Session to read.")
    ) -> Response:
        return await full_state(request, session_id)


def _add_close(app: APIRouter, service: EnvService) -> None:
    """``DELETE /<env>/session/{id}``: end an HTTP session."""
    name = service.name

    @app.delete(
        "/session/{session_id}",
        tags=["session"],
        summary="End an HTTP session and free its slot (a WebSocket's session ends with its socket)",
        response_model=Closed,
        responses=SESSION_ERRORS,
        operation_id=f"{name}_close",
    )
    async def close(session_id: SessionIdPath) -> JSONResponse:
        if service.sealed:  # record the sealed episode as it stands before its session goes
            with contextlib.suppress(ApiError):
                async with service.session(session_id, write=False) as session:
                    if session.handle is not None:
                        await service.evaluations.left(session.handle, session.env)
        if not await service.store.close(session_id, name):
            raise ApiError(404, "SESSION_NOT_FOUND", SessionNotFoundError(session_id, name).message)
        return JSONResponse({"session_id": session_id, "closed": True})


async def health_reply(
    store: SessionStore, details: Callable[[], Awaitable[dict[str, Any]]] | None = None
) -> JSONResponse:
    """``healthy`` (with the fields ``details`` gives), or 503 ``unhealthy`` naming the store when it cannot serve.

    The store's own report (``SessionStore.health``: reachable, its latency, this worker's lease)
    is under ``store_health``; it never waits more than about a second.
    """
    report = await store.health()
    if report.get("ok"):
        try:
            extra = await details() if details is not None else {}
        except StoreUnavailableError as exc:  # the store went away since
            report = {**report, "ok": False, "detail": str(exc)}
        else:
            return JSONResponse({"status": "healthy", **extra, "store_health": report})
    body = {"status": "unhealthy", "code": "SESSION_STORE_UNAVAILABLE", "detail": report.get("detail")}
    return JSONResponse({**body, "store_health": report}, status_code=503, headers={"Retry-After": "5"})


def _add_collect(app: APIRouter, service: EnvService, collect: Any) -> None:
    """``POST /<env>/collect`` for environments whose Env class offers ``collect(payload)``.

    The hook is a classmethod taking the JSON body (a mapping) and returning a pydantic model or a
    JSON-ready dict; it raises ``ValueError`` for a request it cannot serve (answered with 422).
    The body's schema is the ``CollectRequest`` model of the environment's module, and the reply's
    the hook's return annotation, so the OpenAPI document shows both.
    """
    module = inspect.getmodule(service.env_class)
    request_model: Any = getattr(module, "CollectRequest", None)
    if not (isinstance(request_model, type) and issubclass(request_model, BaseModel)):
        request_model = dict[str, Any]
    try:
        returned: Any = typing.get_type_hints(collect).get("return")
    except (NameError, TypeError):  # pragma: no cover - an unresolvable annotation documents nothing
        returned = None
    if not (isinstance(returned, type) and issubclass(returned, BaseModel)):
        returned = None

    async def collect_route(payload: Any) -> JSONResponse:
        if service.sealed:
            raise ApiError(403, "SEALED", f"collect builds scenarios of the client's choosing: {SEALED_RESET}")
        data = payload.model_dump(mode="json") if isinstance(payload, BaseModel) else payload
        try:
            # Collection searches and reads documents: keep it off the event loop.
            result = await asyncio.to_thread(collect, data)
        except (ValueError, KeyError, TypeError) as exc:
            raise ApiError(422, "VALIDATION_ERROR", f"collect refused: {exc}") from exc
        if isinstance(result, BaseModel):
            return JSONResponse(result.model_dump(mode="json"))
        return JSONResponse(result)

    collect_route.__annotations__["payload"] = typing.Annotated[request_model, Body()]
    app.add_api_route(
        "/collect",
        collect_route,
        methods=["POST"],
        tags=["data"],
        summary="Build a scenario with the environment's data collector",
        response_model=returned,
        responses={
            **BODY_ERRORS,
            422: doc("VALIDATION_ERROR", "A field is invalid, or the server has no corpus to search"),
            **({403: doc("SEALED", "Refused on a sealed server")} if service.sealed else {}),
        },
        operation_id=f"{service.name}_collect",
    )


def _mcp_reply(body: bytes) -> dict[str, Any]:
    """Answer a JSON-RPC 2.0 request: this server exposes no MCP tools."""

    def error(code: int, message: str, request_id: Any = None) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}

    if json_too_deep(body):
        return error(-32700, f"parse error: {too_deep_message('body')}")
    try:
        request = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return error(-32700, "parse error: the body is not JSON")
    if not isinstance(request, dict) or request.get("jsonrpc") != "2.0" or not isinstance(request.get("method"), str):
        return error(-32600, "invalid request: send a JSON-RPC 2.0 object with 'method'")
    request_id = request.get("id")
    number = isinstance(request_id, int | float) and not isinstance(request_id, bool)
    if not (request_id is None or isinstance(request_id, str) or (number and math.isfinite(request_id))):
        return error(-32600, "invalid request: 'id' must be a string, a finite number or null")
    if request["method"] == "tools/list":
        return {"jsonrpc": "2.0", "id": request_id, "result": {"tools": []}}
    return error(
        -32601,
        f"method {request['method']!r} not found: this environment has no MCP tools; use /ws or /reset",
        request_id,
    )
