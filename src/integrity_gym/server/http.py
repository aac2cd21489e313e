"""HTTP routes of one environment: OpenEnv's info endpoints and stateful sessions.

OpenEnv's own HTTP ``/reset`` and ``/step`` build a fresh environment per request and keep
nothing; here ``POST /reset`` opens a session and returns its id, and every later request names
it. Errors are JSON ``{"detail", "code"}`` with a 4xx status: 404 ``SESSION_NOT_FOUND``, 409
``EPISODE_FINISHED``, 422 ``VALIDATION_ERROR``, 503 ``CAPACITY_REACHED`` (with Retry-After),
401/403 for the admin token.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.routing import Route

from integrity_gym.core.env import EpisodeFinishedError, NotResetError
from integrity_gym.core.types import Grade
from integrity_gym.server.app import EnvService, ResetRequest, public_state
from integrity_gym.server.security import ApiError, presented_token, require_admin
from integrity_gym.server.sessions import CapacityError, SessionBusyError, SessionNotFoundError


class StepRequest(BaseModel):
    """Body of ``POST /<env>/step``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    session_id: str = Field(max_length=128, description="Id returned by POST /reset.")
    action: Any = Field(
        description="The action: a JSON object of this environment's action schema (or that object as a JSON "
        "string). The environment judges it exactly as in-process: a malformed action is a step whose "
        "info['error'] says what was wrong."
    )


class ResetResponse(BaseModel):
    """Reply of ``POST /<env>/reset``."""

    session_id: str = Field(description="Name this session in every later request.")
    task_id: str = Field(description="The task being played.")
    observation: dict[str, Any] = Field(description="First observation.")
    reward: float | None = Field(default=None, description="Always null on reset (OpenEnv's shape).")
    done: bool = Field(description="Whether the episode is already over.")


class StepResponse(BaseModel):
    """Reply of ``POST /<env>/step``: the same ``StepResult`` the in-process ``Env.step`` returns."""

    observation: dict[str, Any] = Field(description="Observation after the action.")
    reward: float = Field(description="Step reward.")
    done: bool = Field(description="True if this step ended the episode.")
    info: dict[str, Any] = Field(description="'reward_breakdown' and 'error' (null unless the action was rejected).")


_ERRORS: dict[int | str, dict[str, Any]] = {
    404: {"description": "Unknown, closed or expired session (code SESSION_NOT_FOUND)."},
    409: {"description": "The episode has ended (EPISODE_FINISHED) or the session is busy (SESSION_BUSY)."},
    413: {"description": "Request body over the size limit (BODY_TOO_LARGE)."},
    422: {"description": "Malformed request (VALIDATION_ERROR)."},
}


def _json(content: str | bytes) -> Response:
    return Response(content=content, media_type="application/json")


def _not_found(exc: SessionNotFoundError) -> ApiError:
    return ApiError(404, "SESSION_NOT_FOUND", exc.message)


def build_env_router(service: EnvService) -> tuple[APIRouter, Route]:
    """The routes of one environment under ``/<env>``, and the fast route that serves its ``/step``.

    ``/step`` is the hot path of training: the returned Starlette ``Route`` answers it without
    FastAPI's per-request dependency machinery (it must be placed before the router's routes);
    the FastAPI ``/step`` stays in the router so the OpenAPI documents describe it.
    """
    name = service.name
    app = APIRouter(prefix=f"/{name}")

    # ------------------------------------------------------------- OpenEnv info endpoints
    @app.get("/health", tags=["info"], summary="Liveness probe (OpenEnv)")
    async def health() -> JSONResponse:
        return JSONResponse({"status": "healthy"})

    metadata = service.metadata()

    @app.get("/metadata", tags=["info"], summary="Name, description and README (OpenEnv)")
    async def get_metadata() -> JSONResponse:
        return JSONResponse(metadata)

    schema = service.schema()

    @app.get("/schema", tags=["info"], summary="JSON schemas of action, observation and state (OpenEnv)")
    async def get_schema() -> JSONResponse:
        return JSONResponse(schema)

    @app.get("/tasks", tags=["info"], summary="Tasks of this environment")
    async def tasks() -> JSONResponse:
        return JSONResponse([s.model_dump(mode="json") for s in service.tasks])

    @app.post("/mcp", tags=["info"], summary="MCP JSON-RPC 2.0 (this environment exposes no tools)")
    async def mcp(request: Request) -> JSONResponse:
        return JSONResponse(_mcp_reply(await request.body()))

    # ------------------------------------------------------------- stateful sessions
    @app.post(
        "/reset",
        tags=["session"],
        summary="Start an episode in a new session",
        response_model=ResetResponse,
        responses={**_ERRORS, 503: {"description": "At capacity (CAPACITY_REACHED)."}},
    )
    async def reset(request: ResetRequest | None = None) -> Response:
        request = request or ResetRequest()
        spec = service.resolve_task(request)
        env: Any = None
        try:
            await service.store.ensure_room()
            env = service.build(spec)
            obs = service.reset(env, request)
            session = await service.store.open(name, env, kind="http")
        except CapacityError as exc:
            if env is not None:
                env.close()
            raise ApiError(
                503, "CAPACITY_REACHED", str(exc), active_sessions=exc.active, max_sessions=exc.maximum
            ) from exc
        body = (
            f'{{"session_id":{json.dumps(session.id)},"task_id":{json.dumps(spec.id)},'
            f'"observation":{obs.model_dump_json()},"reward":null,"done":{json.dumps(bool(obs.done))}}}'
        )
        return _json(body)

    async def apply_step(request: StepRequest) -> Response:
        try:
            async with service.store.use(request.session_id, name) as session:
                try:
                    result = session.env.step(request.action)
                except EpisodeFinishedError as exc:
                    raise ApiError(409, "EPISODE_FINISHED", str(exc)) from exc
                return _json(result.model_dump_json())
        except SessionNotFoundError as exc:
            raise _not_found(exc) from exc
        except SessionBusyError as exc:
            raise ApiError(409, "SESSION_BUSY", str(exc)) from exc

    @app.post("/step", tags=["session"], summary="Apply one action", response_model=StepResponse, responses=_ERRORS)
    async def step(request: StepRequest) -> Response:
        return await apply_step(request)

    async def fast_step(request: Request) -> Response:
        try:
            parsed = StepRequest.model_validate_json(await request.body())
        except ValidationError as exc:
            raise RequestValidationError(exc.errors(include_url=False, include_context=False)) from exc
        return await apply_step(parsed)

    @app.get(
        "/grade/{session_id}",
        tags=["session"],
        summary="Grade the episode so far",
        response_model=Grade,
        responses=_ERRORS,
    )
    async def grade(session_id: str) -> Response:
        try:
            async with service.store.use(session_id, name, write=False) as session:
                return _json(session.env.grade().model_dump_json())
        except SessionNotFoundError as exc:
            raise _not_found(exc) from exc

    @app.get(
        "/scenario/{session_id}",
        tags=["session"],
        summary="Ids, counters and the current observation (no ground truth)",
        responses=_ERRORS,
    )
    async def scenario(session_id: str) -> JSONResponse:
        try:
            async with service.store.use(session_id, name, write=False) as session:
                data = public_state(session.env)
                data["session_id"] = session_id
                data["observation"] = session.env.observation().model_dump(mode="json")
                return JSONResponse(data)
        except SessionNotFoundError as exc:
            raise _not_found(exc) from exc

    async def full_state(request: Request, session_id: str) -> Response:
        require_admin(service.config.admin_token, presented_token(request.headers))
        try:
            async with service.store.use(session_id, name, write=False) as session:
                return _json(session.env.state().model_dump_json())
        except SessionNotFoundError as exc:
            raise _not_found(exc) from exc
        except NotResetError as exc:  # pragma: no cover - HTTP sessions are always reset
            raise ApiError(409, "NOT_RESET", str(exc)) from exc

    state_responses: dict[int | str, dict[str, Any]] = {
        **_ERRORS,
        401: {"description": "No admin token sent (ADMIN_TOKEN_REQUIRED)."},
        403: {"description": "Wrong token (ADMIN_TOKEN_INVALID), or no token configured (ADMIN_DISABLED)."},
    }

    @app.get(
        "/state/{session_id}",
        tags=["session"],
        summary="Full state, ground truth included (admin token)",
        responses=state_responses,
    )
    async def state_by_path(request: Request, session_id: str) -> Response:
        return await full_state(request, session_id)

    @app.get("/state", tags=["session"], summary="Full state of ?session_id= (admin token)", responses=state_responses)
    async def state_by_query(
        request: Request, session_id: str = Query(max_length=128, description="Session to read.")
    ) -> Response:
        return await full_state(request, session_id)

    @app.delete("/session/{session_id}", tags=["session"], summary="End a session and free its slot", responses=_ERRORS)
    async def close(session_id: str) -> JSONResponse:
        if not await service.store.close(session_id, name):
            raise _not_found(SessionNotFoundError(session_id, name))
        return JSONResponse({"session_id": session_id, "closed": True})

    collect = getattr(service.env_class, "collect", None)
    if callable(collect):
        _add_collect(app, service, collect)
    return app, Route(f"/{name}/step", fast_step, methods=["POST"])


def _add_collect(app: APIRouter, service: EnvService, collect: Any) -> None:
    """``POST /<env>/collect`` for environments whose Env class offers ``collect(payload)``.

    The hook is a classmethod taking the JSON body (a mapping) and returning a pydantic model or a
    JSON-ready dict; it raises ``ValueError`` for a request it cannot serve (answered with 422).
    """

    @app.post(
        "/collect", tags=["data"], summary="Build a scenario with the environment's data collector", responses=_ERRORS
    )
    async def collect_route(payload: dict[str, Any]) -> JSONResponse:
        try:
            # Collection searches and reads documents: keep it off the event loop.
            result = await asyncio.to_thread(collect, payload)
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
