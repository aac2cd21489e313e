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
import json
import logging
import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.responses import HTMLResponse, JSONResponse
from starlette.middleware.cors import CORSMiddleware

import integrity_gym
from integrity_gym.core.registry import TaskSpec
from integrity_gym.server.compat import RootMount, profiles
from integrity_gym.server.config import ServerConfig
from integrity_gym.server.fast_routes import HotRoutes, RawRoute
from integrity_gym.server.security import (
    BodyLimitMiddleware,
    SwallowHandledErrors,
    admin_token_from_env,
    install_error_handlers,
    redact_tokens_in_logs,
)
from integrity_gym.server.service import AnyEnv, EnvService, StoreHolder
from integrity_gym.server.sessions import build_store, check_store_reachable

log = logging.getLogger("integrity_gym.server")


#: Version of the HTTP protocol each environment's ``/<env>/openapi.json`` declares
#: (OpenEnv's runtime validator reads ``info.version``; 1.x is its current standard).
OPENENV_PROTOCOL_VERSION = "1.0.0"


#: Entry-point group of what a server mounts besides the environments (``pyproject.toml``).
MOUNTS_GROUP = "integrity_gym.server_mounts"


def server_mounts() -> list[Callable[[FastAPI, Mapping[str, EnvService], str | None], None]]:
    """The installed mounts, by name: the server knows them only through this entry-point group."""
    found = sorted(entry_points(group=MOUNTS_GROUP), key=lambda ep: ep.name)
    return [ep.load() for ep in found]


def _group(tasks: Sequence[TaskSpec]) -> dict[str, list[TaskSpec]]:
    groups: dict[str, list[TaskSpec]] = {}
    for spec in tasks:
        groups.setdefault(spec.env, []).append(spec)
    return groups


def create_app(tasks: Sequence[TaskSpec] | None = None, config: ServerConfig | None = None) -> FastAPI:
    """Build the server for ``tasks`` (default: every registered task) with ``config``."""
    from integrity_gym.server.http import build_env_router
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
            client_limits=config.client_limits(),
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
    profile = profiles()[config.profile][1] if config.profile else None
    services = {
        name: EnvService(name, env_specs, config, holder, profile if name == root else None)
        for name, env_specs in groups.items()
    }
    from integrity_gym.server.evaluations import Evaluations, add_evaluation_routes

    evaluations = Evaluations(config, services, holder, specs)
    if config.sealed:
        for service in services.values():
            service.evaluations = evaluations

    _add_server_routes(app, services, specs, holder, config)
    add_evaluation_routes(app, evaluations)
    # The hot /<env>/reset and /<env>/step are found first, by path (fast_routes.py).
    hot = HotRoutes()
    app.router.routes.insert(0, hot)
    for service in services.values():
        router = build_env_router(service)
        for route in router.routes:
            if isinstance(route, RawRoute):
                hot.add(route)
        app.include_router(router)
        add_ws_route(app, service)
        _add_env_docs(app, service)
    for mount in server_mounts():  # the browser playground at /web (docs/web.md), and any other
        mount(app, services, root)

    app.add_middleware(SwallowHandledErrors)
    app.add_middleware(BodyLimitMiddleware, max_bytes=config.max_body_bytes, timeout_s=config.body_timeout_s)
    if config.allowed_origins:  # CORS only when configured: no other site's page reads a reply otherwise
        app.add_middleware(CORSMiddleware, allow_origins=list(config.allowed_origins), allow_methods=["*"],
                           allow_headers=["*"])  # fmt: skip
    if root is not None:
        # Outermost: the path is rewritten before anything else (a sealed server's /evaluations stays).
        app.add_middleware(RootMount, env=root, keep=("/evaluations",) if config.sealed else ())
    app.state.services = services
    app.state.holder = holder
    app.state.evaluations = evaluations
    return app


def _add_server_routes(
    app: FastAPI,
    services: Mapping[str, EnvService],
    specs: Sequence[TaskSpec],
    holder: StoreHolder,
    config: ServerConfig,
) -> None:
    """The top level: ``/health``, ``/tasks`` and ``/`` (what this server serves)."""
    from integrity_gym.server.http import health_reply

    @app.get(
        "/health",
        tags=["server"],
        summary="Liveness and session counts; 503 when the session store is down",
        responses={503: {"description": "Unhealthy: the session store cannot be reached (SESSION_STORE_UNAVAILABLE)."}},
    )
    async def health() -> JSONResponse:
        store = holder.store

        async def details() -> dict[str, Any]:
            return {"envs": list(services), "sessions": await store.count(), **store.describe()}

        return await health_reply(store, details)

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
    # A store that is down is one line here, before uvicorn would print its lifespan's traceback.
    check_store_reachable(config.sessions)
    # Workers are separate processes: they read the settings back from the environment.
    os.environ.update(config.as_environ())
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
        # uvicorn's httptools protocol with a time limit on each request head (http_protocol.py).
        http="integrity_gym.server.http_protocol:HeadTimeoutProtocol",
        # No permessage-deflate (uvicorn offers it by default and OpenEnv's client accepts it): a
        # compressor per connection doubled the memory of an idle session (about 45 KB more) and
        # costs CPU on every reply, to save a few KB per step.
        ws_per_message_deflate=False,
        access_log=False,
    )
