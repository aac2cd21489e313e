"""``create_app``: one FastAPI application serving every registered environment.

Each environment lives under ``/<env>``. It speaks OpenEnv's protocol (WebSocket
``/<env>/ws``, ``/health``, ``/metadata``, ``/schema``, ``POST /mcp``, its own ``/openapi.json``
and ``/docs``) so OpenEnv's unmodified client and ``openenv validate --url
http://host:port/<env>`` work against it, plus stateful HTTP (``POST /<env>/reset`` returns a
session id; see ``http.py``). The top level serves ``/health``, ``/tasks`` and ``/docs``.

Everything is built from the task registry when the app is created, so an environment is served
as soon as its tasks are registered.
"""

from __future__ import annotations

import contextlib
import html
import importlib
import inspect
import json
import logging
import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from fastapi import FastAPI
from fastapi.responses import HTMLResponse, JSONResponse
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError, create_model

import integrity_gym
from integrity_gym.core.env import Env
from integrity_gym.core.registry import TaskSpec, list_tasks
from integrity_gym.server.compat import PROFILE_ENVS, PROFILES, Profile, ProfileName, RootMount
from integrity_gym.server.security import (
    ApiError,
    BodyLimitMiddleware,
    SwallowHandledErrors,
    admin_token_from_env,
    install_error_handlers,
    redact_tokens_in_logs,
)
from integrity_gym.server.sessions import Session, SessionStore, build_store

log = logging.getLogger("integrity_gym.server")

AnyEnv = Env[Any, Any, Any]

#: Version of the HTTP protocol each environment's ``/<env>/openapi.json`` declares
#: (OpenEnv's runtime validator reads ``info.version``; 1.x is its current standard).
OPENENV_PROTOCOL_VERSION = "1.0.0"


class ServerConfig(BaseModel):
    """Settings of one server process (``igym serve`` options map onto these)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    sessions: str = Field(
        default="memory", description="Session store: 'memory' or a redis:// URL shared by several processes."
    )
    max_sessions: int = Field(
        default=1024, ge=1, description="Most sessions open at once (HTTP and WebSocket together)."
    )
    session_ttl_s: float = Field(
        default=600.0, gt=0, description="Idle seconds after which the reaper closes a session."
    )
    reap_interval_s: float | None = Field(
        default=None, gt=0, description="Seconds between reaper passes (default: ttl/4, at most 15 s)."
    )
    max_body_bytes: int = Field(
        default=1 << 20, ge=1024, description="Largest HTTP request body or WebSocket message accepted."
    )
    admin_token: str | None = Field(
        default=None, description="Token that unlocks full state (ground truth); None disables it."
    )
    tasks: str = Field(
        default="*", description="Glob (comma-separated globs allowed) over registered task ids to serve."
    )
    extra_tasks: tuple[str, ...] = Field(
        default=(),
        description="Unregistered tasks to serve too, as 'module:ATTR' naming a TaskSpec or a sequence of them.",
    )
    root: str | None = Field(
        default=None, description="Environment also served at '/' (as an OpenEnv Space serves its one environment)."
    )
    profile: ProfileName | None = Field(
        default=None,
        description="Speak a seed client's dialect: 'seed001' (pii_redaction) or 'seed000' (information_integrity); "
        "implies --root of that environment.",
    )
    sealed: bool = Field(
        default=False,
        description="Sealed evaluations: episodes are handed out only by POST /evaluations (the server draws each "
        "item), observations name no item, and grades wait for the evaluation's close. Needs IGYM_EVAL_SECRET.",
    )
    evaluation_ttl_s: float = Field(
        default=86400.0, gt=0, description="Seconds an evaluation (and, once closed, its results) is kept."
    )
    max_evaluations: int = Field(default=64, ge=1, description="Most evaluations open at once (sealed servers).")

    def root_env(self) -> str | None:
        """The environment served at '/', from ``root`` or the profile; ``ValueError`` if they disagree."""
        wanted = PROFILE_ENVS[self.profile] if self.profile else None
        if self.root and wanted and self.root != wanted:
            raise ValueError(f"profile {self.profile} is for {wanted}, not --root {self.root}")
        return self.root or wanted

    def task_specs(self) -> list[TaskSpec]:
        """The registered tasks matching ``tasks`` plus the ``extra_tasks``."""
        specs = list_tasks(self.tasks)
        for ref in self.extra_tasks:
            module_name, _, attr = ref.partition(":")
            try:
                loaded = getattr(importlib.import_module(module_name), attr)
            except (ImportError, AttributeError) as exc:
                raise ValueError(f"extra task {ref!r} cannot be loaded: {exc}") from exc
            specs.extend([loaded] if isinstance(loaded, TaskSpec) else list(loaded))
        return specs

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ServerConfig:
        """Read settings from the ``IGYM_*`` variables (how uvicorn workers get them).

        Variables: ``IGYM_SESSIONS``, ``IGYM_MAX_SESSIONS``, ``IGYM_SESSION_TTL``,
        ``IGYM_REAP_INTERVAL``, ``IGYM_MAX_BODY_BYTES``, ``IGYM_TASKS``, ``IGYM_EXTRA_TASKS``
        (comma-separated), ``IGYM_ROOT``, ``IGYM_PROFILE``, ``IGYM_ADMIN_TOKEN``, ``IGYM_SEALED``
        (``1``/``true`` seals the server), ``IGYM_EVALUATION_TTL`` and ``IGYM_MAX_EVALUATIONS``.
        """
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {"admin_token": env.get("IGYM_ADMIN_TOKEN") or None}
        for key, name in (
            ("sessions", "IGYM_SESSIONS"),
            ("max_sessions", "IGYM_MAX_SESSIONS"),
            ("session_ttl_s", "IGYM_SESSION_TTL"),
            ("reap_interval_s", "IGYM_REAP_INTERVAL"),
            ("max_body_bytes", "IGYM_MAX_BODY_BYTES"),
            ("tasks", "IGYM_TASKS"),
            ("root", "IGYM_ROOT"),
            ("profile", "IGYM_PROFILE"),
            ("sealed", "IGYM_SEALED"),
            ("evaluation_ttl_s", "IGYM_EVALUATION_TTL"),
            ("max_evaluations", "IGYM_MAX_EVALUATIONS"),
        ):
            if env.get(name):
                values[key] = env[name]
        if env.get("IGYM_EXTRA_TASKS"):
            values["extra_tasks"] = tuple(p.strip() for p in env["IGYM_EXTRA_TASKS"].split(",") if p.strip())
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            raise ValueError(f"invalid server settings from the environment: {exc}") from exc


class ResetRequest(BaseModel):
    """Body of ``POST /<env>/reset`` and ``data`` of a WebSocket ``reset`` message."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task: str | None = Field(default=None, description="Task id of this environment (default: its first task).")
    difficulty: Literal["easy", "medium", "hard"] | None = Field(
        default=None, description="Pick this environment's task of this tier."
    )
    # Strict: JSON true/false are not seeds or indices (the schema says integer, so must the server).
    seed: StrictInt | None = Field(
        default=None,
        ge=-(2**63),
        lt=2**63,
        description="Seed of the episode (a 64-bit signed integer); the same seed gives the same episode.",
    )
    scenario_id: StrictStr | StrictInt | None = Field(default=None, description="A specific item, by id or index.")
    options: dict[str, Any] | None = Field(default=None, description="Environment-specific reset options.")
    episode_id: str | None = Field(
        default=None,
        description="Accepted for OpenEnv compatibility and ignored: episode ids are derived from task, seed and item.",
    )
    handle: StrictStr | None = Field(
        default=None,
        max_length=128,
        description="Sealed servers only: the handle of an episode handed out by POST /evaluations, sent alone "
        "(no seed, scenario_id, options, task or difficulty). It starts that episode once; the server chose its "
        "item. A server that is not sealed refuses it (422).",
    )


@dataclass
class EnvService:
    """Everything the routes of one environment need: its tasks, classes and the shared store."""

    name: str
    tasks: list[TaskSpec]
    config: ServerConfig
    holder: StoreHolder
    #: The seed client's dialect this environment speaks, if any (``compat.py``).
    profile: Profile | None = None
    #: Grade (JSON) of the last episode each client address finished, under a profile: the seed
    #: client asks ``POST /grade`` without naming its session. Bounded; oldest dropped first.
    finished: dict[str, str] = field(default_factory=dict)
    #: The sealed evaluations of this server (``evaluations.py``); None unless sealed.
    evaluations: Any = None

    @property
    def sealed(self) -> bool:
        """True on a sealed server (``igym serve --sealed``)."""
        return self.config.sealed

    def remember_grade(self, client: str, grade_json: str) -> None:
        """Keep ``grade_json`` as the last finished episode of ``client`` (at most 4,096 clients)."""
        self.finished.pop(client, None)
        self.finished[client] = grade_json
        if len(self.finished) > 4096:
            del self.finished[next(iter(self.finished))]

    @cached_property
    def env_class(self) -> type[AnyEnv]:
        """The Env implementation (taken from the environment's first task)."""
        return self.tasks[0].env_class()

    @property
    def store(self) -> SessionStore:
        """The session store shared by every environment of this server."""
        return self.holder.store

    @cached_property
    def reset_model(self) -> type[ResetRequest]:
        """``ResetRequest`` narrowed to this environment: ``task`` and ``difficulty`` list its choices."""
        names = sorted({n for s in self.tasks for n in (s.id, f"{s.env}/{s.name}", s.name)})
        tiers = sorted({s.tier for s in self.tasks})
        task_type: Any = Literal[tuple(names)] | None
        tier_type: Any = Literal[tuple(tiers)] | None
        model: type[ResetRequest] = create_model(
            "".join(part.title() for part in self.name.split("_")) + "ResetRequest",
            __base__=ResetRequest,
            task=(task_type, Field(default=None, description=f"One of {self.name}'s tasks.")),
            difficulty=(tier_type, Field(default=None, description="Pick the task of this tier.")),
        )
        return model

    def resolve_task(self, request: ResetRequest) -> TaskSpec:
        """The task a reset asks for; ``ApiError`` 422 with the choices when it names none of ours."""
        if request.task is not None:
            for spec in self.tasks:
                if request.task in (spec.id, f"{spec.env}/{spec.name}", spec.name):
                    if request.task == spec.id:
                        return spec
                    return max((s for s in self.tasks if s.name == spec.name), key=lambda s: s.version)
            raise ApiError(
                422,
                "VALIDATION_ERROR",
                f"task {request.task!r} is not served by {self.name}; "
                f"choose one of: {', '.join(s.id for s in self.tasks)}",
            )
        if request.difficulty is not None:
            for spec in self.tasks:
                if spec.tier == request.difficulty:
                    return spec
            tiers = sorted({s.tier for s in self.tasks})
            raise ApiError(
                422,
                "VALIDATION_ERROR",
                f"{self.name} has no task of difficulty {request.difficulty!r}; choose one of: {', '.join(tiers)}",
            )
        return self.tasks[0]

    def build(self, spec: TaskSpec) -> AnyEnv:
        """A fresh environment for ``spec``."""
        return spec.env_class()(spec)

    def reset(self, env: AnyEnv, request: ResetRequest) -> Any:
        """Reset ``env``; an env-level ``ValueError``/``KeyError`` is the client's mistake (422)."""
        refused = sorted(set(request.options or {}) & env.local_only_options)
        if refused:
            raise ApiError(
                422,
                "VALIDATION_ERROR",
                f"reset refused: option(s) {refused} read files on the server and are not accepted "
                "remotely; send the content itself (e.g. options.scenario)",
            )
        try:
            return env.reset(seed=request.seed, scenario_id=request.scenario_id, options=request.options)
        except (ValueError, KeyError, TypeError) as exc:
            message = exc.args[0] if exc.args and isinstance(exc.args[0], str) else str(exc)
            raise ApiError(422, "VALIDATION_ERROR", f"reset refused: {message}") from exc

    def metadata(self) -> dict[str, Any]:
        """OpenEnv's ``/metadata`` fields."""
        module = inspect.getmodule(self.env_class)
        readme: str | None = None
        if module is not None and module.__file__:
            path = Path(module.__file__).with_name("README.md")
            if path.is_file():
                readme = path.read_text(encoding="utf-8")
        doc = inspect.getdoc(self.env_class) or ""
        description = doc.split("\n\n")[0].replace("\n", " ") or f"integrity-gym environment {self.name}"
        return {
            "name": self.name,
            "description": description,
            "readme_content": readme,
            "version": integrity_gym.__version__,
            "author": "integrity-gym",
            "documentation_url": None,
            "tasks": [s.id for s in self.tasks],
        }

    def schema(self) -> dict[str, Any]:
        """OpenEnv's ``/schema``: JSON schemas of action, observation and full state."""
        cls = self.env_class
        return {
            "action": cls.action_type.model_json_schema(),
            "observation": cls.observation_type.model_json_schema(),
            "state": cls.state_type.model_json_schema(),
        }


#: The fields of a state anyone may see. Not the seed (with the public generator it rebuilds the
#: episode and its labels) nor the env's episode id (derived from the seed, so a search could find
#: it): the session's own random episode id stands in for it.
PUBLIC_STATE_FIELDS = frozenset({"task_id", "step_count", "done"})


def public_state(session: Session) -> dict[str, Any]:
    """The part of a session's state anyone may see: the task, counters and its random episode id, nothing hidden."""
    data: dict[str, Any] = session.env.state().model_dump(mode="json", include=set(PUBLIC_STATE_FIELDS))
    return {"episode_id": session.episode_id, **data}


@dataclass
class StoreHolder:
    """Late-bound store: created in the app's lifespan, inside the serving event loop."""

    factory: Callable[[], SessionStore]
    _store: SessionStore | None = field(default=None)

    @property
    def store(self) -> SessionStore:
        """The running store (raises if the app was not started through its lifespan)."""
        if self._store is None:
            raise ApiError(503, "NOT_READY", "the server is starting or stopping; retry in a moment")
        return self._store


def _group(tasks: Sequence[TaskSpec]) -> dict[str, list[TaskSpec]]:
    groups: dict[str, list[TaskSpec]] = {}
    for spec in tasks:
        groups.setdefault(spec.env, []).append(spec)
    return groups


def create_app(tasks: Sequence[TaskSpec] | None = None, config: ServerConfig | None = None) -> FastAPI:
    """Build the server for ``tasks`` (default: every registered task) with ``config``."""
    from integrity_gym.server.http import build_env_router, health_reply
    from integrity_gym.server.ws import add_ws_route

    config = config or ServerConfig(admin_token=admin_token_from_env())
    redact_tokens_in_logs()
    if config.sealed:
        require_eval_secret()
    specs = list(tasks) if tasks is not None else config.task_specs()
    if not specs:
        raise ValueError(f"no tasks to serve: none registered matches {config.tasks!r}")
    by_id = {s.id: s for s in specs}

    def env_factory(task_id: str) -> AnyEnv:
        spec = by_id[task_id]
        return spec.env_class()(spec)

    holder = StoreHolder(
        lambda: build_store(
            config.sessions,
            env_factory,
            max_sessions=config.max_sessions,
            ttl_s=config.session_ttl_s,
            reap_interval_s=config.reap_interval_s,
            evaluation_ttl_s=config.evaluation_ttl_s,
            max_evaluations=config.max_evaluations,
        )
    )
    # Fail on a bad store spec now, not at the first request.
    if not (config.sessions == "memory" or config.sessions.startswith(("redis://", "rediss://", "unix://"))):
        raise ValueError(f"unknown session store {config.sessions!r}: use 'memory' or a redis://host:port/db URL")

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        store = holder.factory()
        await store.start()
        holder._store = store
        try:
            yield
        finally:
            holder._store = None
            await store.stop()

    groups = _group(specs)
    root = config.root_env()
    if root is not None and root not in groups:
        raise ValueError(f"--root {root}: this server serves no such environment; choose one of: {', '.join(groups)}")
    app = FastAPI(
        title="integrity-gym",
        version=integrity_gym.__version__,
        description=(
            "Every integrity-gym environment over OpenEnv's WebSocket protocol and stateful HTTP. "
            "Each environment has its own API docs at `/<env>/docs`: "
            + ", ".join(f"[/{name}/docs](/{name}/docs)" for name in groups)
        ),
        lifespan=lifespan,
        docs_url=None,  # served by _add_docs from local files: FastAPI's own page loads Swagger UI from a CDN
        redoc_url=None,
    )
    install_error_handlers(app)
    _add_docs(app)
    profile = PROFILES[config.profile] if config.profile else None
    services = {
        name: EnvService(name, env_specs, config, holder, profile if name == root else None)
        for name, env_specs in groups.items()
    }
    from integrity_gym.server.evaluations import Evaluations, add_evaluation_routes

    evaluations = Evaluations(config, services, holder, specs)
    if config.sealed:
        for service in services.values():
            service.evaluations = evaluations

    @app.get(
        "/health",
        tags=["server"],
        summary="Liveness and session counts; 503 when the session store is down",
        responses={503: {"description": "Unhealthy: the session store cannot be reached (SESSION_STORE_UNAVAILABLE)."}},
    )
    async def health() -> JSONResponse:
        store = holder.store
        reply = await health_reply(store)
        if reply.status_code != 200:
            return reply
        return JSONResponse(
            {"status": "healthy", "envs": list(services), "sessions": await store.count(), **store.describe()}
        )

    @app.get("/tasks", tags=["server"], summary="Every task this server serves")
    async def all_tasks() -> JSONResponse:
        return JSONResponse([s.model_dump(mode="json") for s in specs])

    @app.get("/", tags=["server"], summary="What this server serves")
    async def index() -> JSONResponse:
        sealed = {"sealed": True, "evaluations": "/evaluations"} if config.sealed else {}
        return JSONResponse(
            {
                **sealed,
                "name": "integrity-gym",
                "version": integrity_gym.__version__,
                "envs": {
                    name: {
                        "ws": f"/{name}/ws",
                        "http": f"/{name}/reset",
                        "docs": f"/{name}/docs",
                        "tasks": [s.id for s in svc.tasks],
                    }
                    for name, svc in services.items()
                },
                "docs": "/docs",
                "web": "/web/",
            }
        )

    add_evaluation_routes(app, evaluations)
    fast_routes: list[Any] = []
    for service in services.values():
        router, fast = build_env_router(service)
        app.include_router(router)
        add_ws_route(app, service)
        _add_env_docs(app, service)
        fast_routes.extend(fast)
    # The hot /<env>/step routes answer first; FastAPI's twins behind them only document them.
    app.router.routes[:0] = fast_routes
    from integrity_gym.web.playground import mount_playground

    mount_playground(app, services, root)  # the browser playground at /web (docs/web.md)

    app.add_middleware(SwallowHandledErrors)
    app.add_middleware(BodyLimitMiddleware, max_bytes=config.max_body_bytes)
    if root is not None:
        # Outermost: the path is rewritten before anything else (a sealed server's /evaluations stays).
        app.add_middleware(RootMount, env=root, keep=("/evaluations",) if config.sealed else ())
    app.state.services = services
    app.state.holder = holder
    app.state.evaluations = evaluations
    return app


def require_eval_secret() -> str:
    """The data mode of a sealed server; ``ValueError`` naming ``IGYM_EVAL_SECRET`` when it is unset."""
    from integrity_gym.core.seeding import EVAL_SECRET_ENV, data_mode, eval_secret

    if eval_secret() is None:  # a secret too short raises its own ValueError naming the variable
        raise ValueError(
            f"a sealed server needs the eval secret: set {EVAL_SECRET_ENV} (at least 16 characters) before "
            "igym serve --sealed; without it anyone with the public code could rebuild every item"
        )
    return data_mode()


def _add_env_docs(app: FastAPI, service: EnvService) -> None:
    """``/<env>/openapi.json`` and ``/<env>/docs``: the environment's own API, as OpenEnv expects.

    The paths are given relative to ``/<env>`` (``/reset``, ``/step``, ``/state`` ...), so
    ``openenv validate --url http://host:port/<env>`` sees a simulation-mode OpenEnv server.
    """
    name = service.name
    prefix = f"/{name}"
    cache: dict[str, Any] = {}

    def document() -> dict[str, Any]:
        if "doc" not in cache:
            full = app.openapi()
            doc = {key: value for key, value in full.items() if key not in ("paths", "info")}
            doc["info"] = {
                "title": f"integrity-gym: {name}",
                "version": OPENENV_PROTOCOL_VERSION,
                "description": (
                    f"The {name} environment. WebSocket: {prefix}/ws (OpenEnv protocol: reset, step, state, "
                    f"close, and grade). Stateful HTTP: POST {prefix}/reset returns a session_id for /step, "
                    f"/grade, /scenario, /state (admin token) and DELETE /session. Paths below are relative "
                    f"to {prefix}. Tasks: " + ", ".join(s.id for s in service.tasks)
                ),
            }
            doc["servers"] = [{"url": prefix}]
            doc["paths"] = {
                path[len(prefix) :]: item
                for path, item in full.get("paths", {}).items()
                if path.startswith(prefix + "/")
            }
            cache["doc"] = doc
        result: dict[str, Any] = cache["doc"]
        return result

    @app.get(f"{prefix}/openapi.json", include_in_schema=False)
    async def env_openapi() -> JSONResponse:
        return JSONResponse(document())

    @app.get(f"{prefix}/docs", include_in_schema=False)
    async def env_docs() -> Any:
        return _swagger_page(f"{prefix}/openapi.json", f"integrity-gym: {name}")


#: Where the API pages load Swagger UI from: this server (the files fastapi-offline ships), never a CDN.
DOCS_ASSETS = "/docs-assets"


def _swagger_dir() -> Path | None:
    """Swagger UI's files (the server extra's fastapi-offline), or None on an install without them."""
    from importlib.resources import files

    try:
        return Path(str(files("fastapi_offline").joinpath("static")))
    except ModuleNotFoundError:
        return None


def _swagger_page(openapi_url: str, title: str) -> HTMLResponse:
    """A Swagger UI page for ``openapi_url`` whose script and style this server serves (works offline)."""
    if _swagger_dir() is None:  # the schema still answers; only the page needs the files
        return HTMLResponse(
            f"<!DOCTYPE html><title>{html.escape(title)}</title><p>The API document is "
            f'<a href="{html.escape(openapi_url)}">{html.escape(openapi_url)}</a>; its browsable page needs '
            "Swagger UI's files: <code>pip install 'integrity-gym[server]'</code> (fastapi-offline).</p>"
        )
    page = f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title>
<link rel="stylesheet" href="{DOCS_ASSETS}/swagger-ui.css">
<link rel="icon" href="{DOCS_ASSETS}/favicon.png">
</head>
<body>
<div id="swagger-ui"></div>
<script src="{DOCS_ASSETS}/swagger-ui-bundle.js"></script>
<script>
SwaggerUIBundle({{url: {json.dumps(openapi_url)}, dom_id: "#swagger-ui", layout: "BaseLayout", deepLinking: true,
                  presets: [SwaggerUIBundle.presets.apis]}});
</script>
</body>
</html>
"""
    return HTMLResponse(page)


def _add_docs(app: FastAPI) -> None:
    """``/docs`` for the whole server and the Swagger UI files every ``/docs`` page loads."""
    from starlette.staticfiles import StaticFiles

    assets = _swagger_dir()
    if assets is not None:
        app.mount(DOCS_ASSETS, StaticFiles(directory=assets), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    async def docs() -> Any:
        return _swagger_page("/openapi.json", "integrity-gym")


def app_from_environment() -> FastAPI:
    """Factory for ``uvicorn --factory`` (one call per worker): settings come from ``IGYM_*``."""
    return create_app(config=ServerConfig.from_env())


def serve(
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    workers: int = 1,
    config: ServerConfig | None = None,
    log_level: str = "info",
) -> None:
    """Run the server with uvicorn until interrupted (what ``igym serve`` calls)."""
    import uvicorn

    config = config or ServerConfig.from_env()
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    if config.sealed:
        require_eval_secret()
    if workers > 1 and config.sessions == "memory":
        raise ValueError(
            "--workers > 1 needs a shared session store: an HTTP session made by one worker would be "
            "unknown to the others. Pass --sessions redis://host:port/0"
        )
    # Workers are separate processes: they read the settings back from the environment.
    os.environ.update(
        {
            "IGYM_SESSIONS": config.sessions,
            "IGYM_MAX_SESSIONS": str(config.max_sessions),
            "IGYM_SESSION_TTL": str(config.session_ttl_s),
            "IGYM_MAX_BODY_BYTES": str(config.max_body_bytes),
            "IGYM_TASKS": config.tasks,
            "IGYM_EXTRA_TASKS": ",".join(config.extra_tasks),
            "IGYM_ROOT": config.root or "",
            "IGYM_PROFILE": config.profile or "",
            "IGYM_SEALED": "1" if config.sealed else "",
            "IGYM_EVALUATION_TTL": str(config.evaluation_ttl_s),
            "IGYM_MAX_EVALUATIONS": str(config.max_evaluations),
        }
    )
    if config.reap_interval_s is not None:
        os.environ["IGYM_REAP_INTERVAL"] = str(config.reap_interval_s)
    if config.admin_token:
        os.environ["IGYM_ADMIN_TOKEN"] = config.admin_token
    uvicorn.run(
        "integrity_gym.server.app:app_from_environment",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level=log_level,
        # Let messages a little over our limit reach the handler, which answers them with a
        # documented error; only far larger frames are cut by the protocol layer (close 1009).
        ws_max_size=config.max_body_bytes * 4,
        # uvicorn's sans-I/O WebSocket protocol (~30% less CPU per message than its legacy one),
        # answering our endpoints' text messages without the ASGI round trip (ws.py).
        ws="integrity_gym.server.ws:DirectWebSocketProtocol",
        # No permessage-deflate (uvicorn offers it by default and OpenEnv's client accepts it): a
        # compressor per connection doubled the memory of an idle session (about 45 KB more) and
        # costs CPU on every reply, to save a few KB per step.
        ws_per_message_deflate=False,
        access_log=False,
    )
