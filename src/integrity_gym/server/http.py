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

On a sealed server (``igym serve --sealed``, ``evaluations.py``) a reset takes a handle alone
(403 ``SEALED`` otherwise; 404 ``HANDLE_NOT_FOUND``, 409 ``HANDLE_USED`` / ``EVALUATION_CLOSED``),
observations and step info name no item, and grade, state and collect answer 403
(``SEALED_UNTIL_CLOSED`` / ``SEALED``) except to the admin token.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import typing
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from fastapi import APIRouter, Body, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.routing import Route

from integrity_gym.core.env import EpisodeFinishedError
from integrity_gym.core.registry import TaskSpec
from integrity_gym.core.types import Grade, ObsT, StepResult
from integrity_gym.server.evaluations import (
    SEALED_RESET,
    SEALED_UNTIL_CLOSED,
    refuse_handle,
    seal_info,
    seal_observation,
    seal_profile_observation,
)
from integrity_gym.server.security import (
    ApiError,
    ErrorBody,
    is_admin,
    json_too_deep,
    presented_token,
    require_admin,
    too_deep_message,
)
from integrity_gym.server.service import EnvService, public_state
from integrity_gym.server.sessions import (
    CapacityError,
    Session,
    SessionNotFoundError,
    SessionStore,
    StoreUnavailableError,
)


class StepRequest(BaseModel):
    """Body of ``POST /<env>/step``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    session_id: str = Field(max_length=128, description="Id returned by POST /reset.")
    action: Any = Field(
        description="The action: a JSON object of this environment's action schema (or that object as a JSON "
        "string). The environment judges it exactly as in-process: a malformed action is a step whose "
        "info['error'] says what was wrong."
    )


class GradeRequest(BaseModel):
    """Body of ``POST /<env>/grade`` (optional)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    session_id: str | None = Field(default=None, max_length=128, description="HTTP session to grade.")


class ResetResponse(BaseModel, Generic[ObsT]):
    """Reply of ``POST /<env>/reset``."""

    session_id: str = Field(description="Name this session in every later request.")
    task_id: str = Field(description="The task being played.")
    episode_id: str = Field(
        description="A random id of this episode (a UUID drawn at reset, not derived from the item)."
    )
    observation: ObsT = Field(description="First observation.")
    reward: None = Field(default=None, description="Always null on reset (OpenEnv's shape).")
    done: bool = Field(description="Whether the episode is already over.")


class ScenarioView(BaseModel, Generic[ObsT]):
    """Reply of ``GET /<env>/scenario/{id}``: what the agent may know, nothing hidden."""

    session_id: str = Field(description="The session.")
    task_id: str = Field(description="The task being played.")
    episode_id: str = Field(description="The random id of the episode (drawn at reset).")
    step_count: int = Field(ge=0, description="Steps taken so far.")
    done: bool = Field(description="Whether the episode has ended.")
    observation: ObsT = Field(description="The current observation.")


class Closed(BaseModel):
    """Reply of ``DELETE /<env>/session/{id}``."""

    session_id: str = Field(description="The session that was ended.")
    closed: bool = Field(description="Always true.")


class Health(BaseModel):
    """Reply of ``/health``: ``healthy``, or ``unhealthy`` (503) when the session store is down."""

    model_config = ConfigDict(extra="allow")

    status: str = Field(description="'healthy' or 'unhealthy'.")
    detail: str | None = Field(default=None, description="What is wrong, when unhealthy.")


def _doc(status_codes: str, description: str) -> dict[str, Any]:
    return {"model": ErrorBody, "description": f"{description} ({status_codes})."}


_BODY_ERRORS: dict[int | str, dict[str, Any]] = {
    413: _doc("BODY_TOO_LARGE", "Request body over the size limit"),
    422: _doc(
        "VALIDATION_ERROR",
        "Malformed request: each field named with what is expected; a body that is not UTF-8 or nests JSON too deep",
    ),
}
_STORE_DOWN = _doc("SESSION_STORE_UNAVAILABLE", "The session store cannot be reached; retry after Retry-After")
_SESSION_ERRORS: dict[int | str, dict[str, Any]] = {
    404: _doc("SESSION_NOT_FOUND", "Unknown, closed or expired HTTP session"),
    409: _doc("SESSION_BUSY", "Another request holds the session"),
    422: _doc("VALIDATION_ERROR", "Malformed session id"),
    503: _STORE_DOWN,
}
_ADMIN_ERRORS: dict[int | str, dict[str, Any]] = {
    401: _doc("ADMIN_TOKEN_REQUIRED", "No admin token sent"),
    403: _doc("ADMIN_TOKEN_INVALID, ADMIN_DISABLED", "Wrong token, or no token configured"),
}
#: What a sealed server adds to the documents of its routes.
_SEALED_RESET_ERRORS: dict[int | str, dict[str, Any]] = {
    403: _doc("SEALED", "A reset without a handle, or naming an item beside it: episodes come from POST /evaluations"),
    404: _doc("HANDLE_NOT_FOUND", "Unknown or expired handle"),
    409: _doc("HANDLE_USED, EVALUATION_CLOSED", "The handle was started already, or its evaluation is closed"),
}
_SEALED_UNTIL_CLOSED = _doc("SEALED_UNTIL_CLOSED", "Released when the evaluation closes, or to the admin token")

_F = TypeVar("_F", bound=Callable[..., Any])

#: The id of a session in a path or query.
SessionIdPath = typing.Annotated[str, Path(max_length=128, description="Id returned by POST /reset.")]


def _annotate(**annotations: Any) -> Callable[[_F], _F]:
    """Give a route's parameters types built at run time (FastAPI reads ``__annotations__``).

    Under ``from __future__ import annotations`` an annotation naming a local variable (this
    environment's request model) is a string FastAPI cannot resolve.
    """

    def apply(func: _F) -> _F:
        func.__annotations__.update(annotations)
        return func

    return apply


def _json(content: str | bytes) -> Response:
    return Response(content=content, media_type="application/json")


def build_env_router(service: EnvService) -> tuple[APIRouter, list[Route]]:
    """The routes of one environment under ``/<env>``, and the fast route that serves its ``/step``.

    ``/step`` is the hot path of training: the returned Starlette ``Route`` answers it without
    FastAPI's per-request dependency machinery (it must be placed before the router's routes);
    the FastAPI ``/step`` stays in the router so the OpenAPI documents describe it.
    """
    name = service.name
    app = APIRouter(prefix=f"/{name}")
    obs_type: Any = service.env_class.observation_type
    reset_model: Any = service.reset_model
    sealed = service.sealed

    session_of = service.session

    # ------------------------------------------------------------- OpenEnv info endpoints
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
        "/metadata",
        tags=["info"],
        summary="Name, description and README (OpenEnv)",
        operation_id=f"{name}_metadata",
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
        responses=_BODY_ERRORS,
        operation_id=f"{name}_mcp",
    )
    async def mcp(request: Request) -> JSONResponse:
        return JSONResponse(_mcp_reply(await request.body()))

    # ------------------------------------------------------------- stateful sessions
    by_session = {"session_id": "$response.body#/session_id"}
    links = {
        "step": {"operationId": f"{name}_step", "requestBody": by_session},
        "grade": {"operationId": f"{name}_grade", "parameters": {"path.session_id": by_session["session_id"]}},
        "scenario": {"operationId": f"{name}_scenario", "parameters": {"path.session_id": by_session["session_id"]}},
        "state": {"operationId": f"{name}_state", "parameters": {"path.session_id": by_session["session_id"]}},
        "close": {"operationId": f"{name}_close", "parameters": {"path.session_id": by_session["session_id"]}},
    }

    @app.post(
        "/reset",
        tags=["session"],
        summary="Start an episode in a new session",
        response_model=ResetResponse[obs_type],
        responses={
            200: {"description": "The new session and its first observation.", "links": links},
            **_BODY_ERRORS,
            503: _doc("CAPACITY_REACHED, SESSION_STORE_UNAVAILABLE", "At capacity, or the session store is down"),
            **(_SEALED_RESET_ERRORS if sealed else {}),
        },
        operation_id=f"{name}_reset",
    )
    @_annotate(request=typing.Annotated[reset_model | None, Body()])
    async def reset(request: Any = None) -> Response:
        return await apply_reset(request or reset_model())

    async def fast_reset(request: Request) -> Response:
        # Any Content-Type (curl -d sends a form type): the body is read as JSON, as /step's is.
        body = await request.body()
        try:
            data = json.loads(body) if body.strip() else {}
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            errors = [{"loc": ["body"], "msg": f"the body is not JSON: {exc}", "type": "json_invalid"}]
            raise RequestValidationError(errors) from exc
        if isinstance(data, dict) and service.profile is not None:
            data = service.profile.reset_data(data)
        try:
            parsed = reset_model.model_validate({} if data is None else data)
        except ValidationError as exc:
            raise RequestValidationError(
                [{**e, "loc": ["body", *e["loc"]]} for e in exc.errors(include_url=False, include_context=False)]
            ) from exc
        return await apply_reset(parsed)

    async def apply_reset(request: Any) -> Response:
        if sealed:
            return await sealed_reset(request)
        refuse_handle(request)
        spec = service.resolve_task(request)
        _, obs, session = await open_session(spec, lambda env: service.reset(env, request))
        shown = obs.model_dump_json()
        if service.profile is not None and service.profile.observation is not None:
            shown = json.dumps(service.profile.observation(obs.model_dump(mode="json"), None, {}, session))
        return reset_reply(session, spec, shown, obs)

    async def open_session(spec: TaskSpec, start: Callable[[Any], Any], handle: str | None = None) -> Any:
        """Build ``spec``'s env, ``start`` it and open its HTTP session; the env is closed if any of it fails."""
        env: Any = None
        try:
            await service.store.ensure_room()
            env = service.build(spec)
            obs = start(env)
            session = await service.store.open(name, env, kind="http", handle=handle)
        except CapacityError as exc:
            if env is not None:
                env.close()
            raise ApiError(
                503, "CAPACITY_REACHED", str(exc), active_sessions=exc.active, max_sessions=exc.maximum
            ) from exc
        except BaseException:
            if env is not None:
                env.close()
            raise
        return env, obs, session

    def reset_reply(session: Session, spec: TaskSpec, shown: str, obs: Any) -> Response:
        body = (
            f'{{"session_id":{json.dumps(session.id)},"task_id":{json.dumps(spec.id)},'
            f'"episode_id":{json.dumps(session.episode_id)},"observation":{shown},"reward":null,"done":{json.dumps(bool(obs.done))}}}'
        )
        return _json(body)

    async def sealed_reset(request: Any) -> Response:
        evaluations = service.evaluations
        claim = await evaluations.claim(service, request)
        try:
            env, obs, session = await open_session(claim.spec, lambda env: env.reset(seed=claim.seed), claim.handle)
        except BaseException:
            await evaluations.unclaim(claim)
            raise
        try:
            await evaluations.started(claim, session, "http")
        except ApiError:
            await service.store.close(session.id, name)
            raise
        obs = seal_observation(type(env), obs)
        shown = obs.model_dump_json()
        if service.profile is not None and service.profile.observation is not None:
            shaped = service.profile.observation(obs.model_dump(mode="json"), None, {}, session)
            shown = json.dumps(seal_profile_observation(shaped))
        return reset_reply(session, claim.spec, shown, obs)

    async def sealed_step(session: Session, result: StepResult[Any], recorded: dict[str, Any]) -> Response:
        cls = type(session.env)
        obs = seal_observation(cls, result.observation)
        info = seal_info(cls, result.info)
        if result.done and session.handle is not None:
            await service.evaluations.finished(session.handle, session.env)
        profile = service.profile
        if profile is None:
            return _json(result.model_copy(update={"observation": obs, "info": info}).model_dump_json())
        info = {**info, **recorded}
        shown: Any = obs.model_dump(mode="json")
        if profile.observation is not None:
            shown = seal_profile_observation(profile.observation(shown, result.reward, info, session))
        return JSONResponse({"observation": shown, "reward": result.reward, "done": result.done, "info": info})

    async def apply_step(request: StepRequest) -> Response:
        if isinstance(request.action, str) and json_too_deep(request.action):
            message = too_deep_message("action")
            raise ApiError(
                422,
                "VALIDATION_ERROR",
                message,
                errors=[{"loc": ["body", "action"], "msg": message, "type": "json_too_deep"}],
            )
        profile = service.profile
        async with session_of(request.session_id, write=True) as session:
            action, recorded = (request.action, {}) if profile is None else profile.action(request.action, session.env)
            try:
                result = session.env.step(action)
            except EpisodeFinishedError as exc:
                raise ApiError(409, "EPISODE_FINISHED", str(exc)) from exc
            if sealed:
                return await sealed_step(session, result, recorded)
            if profile is None:
                return _json(result.model_dump_json())
            info = {**result.info, **recorded}
            obs: Any = result.observation.model_dump(mode="json")
            if profile.observation is not None:
                obs = profile.observation(obs, result.reward, info, session)
            return JSONResponse({"observation": obs, "reward": result.reward, "done": result.done, "info": info})

    @app.post(
        "/step",
        tags=["session"],
        summary="Apply one action",
        response_model=StepResult[obs_type],
        responses={
            **_SESSION_ERRORS,
            **_BODY_ERRORS,
            409: _doc("EPISODE_FINISHED, SESSION_BUSY", "The episode has ended, or another request holds it"),
        },
        operation_id=f"{name}_step",
    )
    async def step(request: StepRequest) -> Response:
        return await apply_step(request)

    async def fast_step(request: Request) -> Response:
        try:
            parsed = StepRequest.model_validate_json(await request.body())
        except ValidationError as exc:
            raise RequestValidationError(exc.errors(include_url=False, include_context=False)) from exc
        return await apply_step(parsed)

    admin_token = service.config.admin_token
    sealed_grade: dict[int | str, dict[str, Any]] = {403: _SEALED_UNTIL_CLOSED} if sealed else {}

    def refuse_sealed(request: Request) -> bool:
        """True for the admin; 403 SEALED_UNTIL_CLOSED for anyone else on a sealed server."""
        admin = is_admin(admin_token, presented_token(request.headers))
        if sealed and not admin:
            raise ApiError(403, "SEALED_UNTIL_CLOSED", SEALED_UNTIL_CLOSED)
        return admin

    @app.get(
        "/grade/{session_id}",
        tags=["session"],
        summary="Grade of a finished episode (any time with the admin token)",
        response_model=Grade,
        responses={
            **_SESSION_ERRORS,
            409: _doc("EPISODE_NOT_DONE, SESSION_BUSY", "The episode is still running, or another request holds it"),
            **sealed_grade,
        },
        operation_id=f"{name}_grade",
    )
    async def grade(request: Request, session_id: SessionIdPath) -> Response:
        admin = refuse_sealed(request)
        async with session_of(session_id, write=False) as session:
            if not (admin or session.env.done):
                raise ApiError(
                    409,
                    "EPISODE_NOT_DONE",
                    "the grade is given once the episode has ended (before, it would reveal the hidden truth); "
                    "step until done is true, or present the admin token",
                )
            return _json(session.env.grade().model_dump_json())

    @app.post(
        "/grade",
        tags=["session"],
        summary="Grade of a finished episode: of session_id, or else of this client's last finished WebSocket "
        "episode (under a seed profile)",
        response_model=Grade,
        responses={
            **_SESSION_ERRORS,
            409: _doc("EPISODE_NOT_DONE, SESSION_BUSY", "The episode is still running, or another request holds it"),
            **sealed_grade,
        },
        operation_id=f"{name}_grade_post",
    )
    async def grade_post(request: Request, body: GradeRequest | None = None) -> Response:
        refuse_sealed(request)
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

    @app.get(
        "/scenario/{session_id}",
        tags=["session"],
        summary="Ids, counters and the current observation (nothing hidden)",
        response_model=ScenarioView[obs_type],
        responses=_SESSION_ERRORS,
        operation_id=f"{name}_scenario",
    )
    async def scenario(session_id: SessionIdPath) -> JSONResponse:
        async with session_of(session_id, write=False) as session:
            data = {"session_id": session_id, **public_state(session)}
            obs = session.env.observation()
            if sealed:
                obs = seal_observation(type(session.env), obs)
            data["observation"] = obs.model_dump(mode="json")
            return JSONResponse(data)

    async def full_state(request: Request, session_id: str) -> Response:
        refuse_sealed(request)
        require_admin(admin_token, presented_token(request.headers))
        async with session_of(session_id, write=False) as session:
            return _json(session.env.state().model_dump_json())

    state_responses: dict[int | str, dict[str, Any]] = {
        200: {"model": service.env_class.state_type, "description": "The full state, ground truth included."},
        **_SESSION_ERRORS,
        **_ADMIN_ERRORS,
    }
    if sealed:
        state_responses[403] = _doc(
            "ADMIN_TOKEN_INVALID, ADMIN_DISABLED, SEALED_UNTIL_CLOSED",
            "Wrong token, no token configured, or a sealed session without the admin token",
        )

    @app.get(
        "/state/{session_id}",
        tags=["session"],
        summary="Full state, ground truth included (admin token)",
        responses=state_responses,
        operation_id=f"{name}_state",
    )
    async def state_by_path(request: Request, session_id: SessionIdPath) -> Response:
        return await full_state(request, session_id)

    @app.get(
        "/state",
        tags=["session"],
        summary="Full state of ?session_id= (admin token)",
        responses=state_responses,
        operation_id=f"{name}_state_by_query",
    )
    async def state_by_query(
        request: Request, session_id: str = Query(max_length=128, description="Session to read.")
    ) -> Response:
        return await full_state(request, session_id)

    @app.delete(
        "/session/{session_id}",
        tags=["session"],
        summary="End an HTTP session and free its slot (a WebSocket's session ends with its socket)",
        response_model=Closed,
        responses=_SESSION_ERRORS,
        operation_id=f"{name}_close",
    )
    async def close(session_id: SessionIdPath) -> JSONResponse:
        if sealed:  # record the sealed episode as it stands before its session goes
            with contextlib.suppress(ApiError):
                async with session_of(session_id, write=False) as session:
                    if session.handle is not None:
                        await service.evaluations.left(session.handle, session.env)
        if not await service.store.close(session_id, name):
            raise ApiError(404, "SESSION_NOT_FOUND", SessionNotFoundError(session_id, name).message)
        return JSONResponse({"session_id": session_id, "closed": True})

    collect = getattr(service.env_class, "collect", None)
    if callable(collect):
        _add_collect(app, service, collect)
    return app, [
        Route(f"/{name}/step", fast_step, methods=["POST"]),
        Route(f"/{name}/reset", fast_reset, methods=["POST"]),
    ]


async def health_reply(store: SessionStore) -> JSONResponse:
    """``healthy``, or 503 ``unhealthy`` naming the session store when it cannot be reached."""
    try:
        await store.check()
    except StoreUnavailableError as exc:
        return JSONResponse(
            {"status": "unhealthy", "code": "SESSION_STORE_UNAVAILABLE", "detail": str(exc)}, status_code=503
        )
    return JSONResponse({"status": "healthy"})


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

    @app.post(
        "/collect",
        tags=["data"],
        summary="Build a scenario with the environment's data collector",
        response_model=returned,
        responses={
            **_BODY_ERRORS,
            422: _doc("VALIDATION_ERROR", "A field is invalid, or the server has no corpus to search"),
            **({403: _doc("SEALED", "Refused on a sealed server")} if service.sealed else {}),
        },
        operation_id=f"{service.name}_collect",
    )
    @_annotate(payload=typing.Annotated[request_model, Body()])
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


def _mcp_reply(body: bytes) -> dict[str, Any]:
    """Answer a JSON-RPC 2.0 request: this server exposes no MCP tools."""

    def error(code: int, message: str, request_id: Any = None) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}

    try:
        request = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return error(-32700, "parse error: the body is not JSON")
    if not isinstance(request, dict) or request.get("jsonrpc") != "2.0" or not isinstance(request.get("method"), str):
        return error(-32600, "invalid request: send a JSON-RPC 2.0 object with 'method'")
    request_id = request.get("id")
    if request["method"] == "tools/list":
        return {"jsonrpc": "2.0", "id": request_id, "result": {"tools": []}}
    return error(
        -32601,
        f"method {request['method']!r} not found: this environment has no MCP tools; use /ws or /reset",
        request_id,
    )
