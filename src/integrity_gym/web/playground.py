"""The playground's routes: its page at ``/web/`` and the one thing the public API lacks, ``explain()``.

The page plays through the environment's own HTTP routes (``/<env>/reset``, ``/<env>/step``,
``/<env>/grade/{id}``, ``DELETE /<env>/session/{id}``), so capacity, the idle TTL, the admin token
and "grade only after done" hold for it exactly as for any client. ``explain()`` words the grade
in sentences, which can name hidden facts: it is answered, like the grade, only once the episode
has ended. On a sealed server (``igym serve --sealed``) it waits for the evaluation's close, like
the grade (403 ``SEALED_UNTIL_CLOSED``, except to the admin token); the page's resets are refused
there, as every reset without a handle is.

Under ``--root ENV`` the server answers ``/<path>`` as ``/ENV/<path>``, so the routes are also
mounted at ``/ENV/web``; the page builds every URL relative to itself and works at both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route, Router

from integrity_gym.server.security import ApiError, is_admin, presented_token
from integrity_gym.web import page, static_files

if TYPE_CHECKING:
    from fastapi import FastAPI

    from integrity_gym.server.service import EnvService


def playground_router(services: Mapping[str, EnvService]) -> Router:
    """The routes under ``/web``: the page, its files and ``api/explain/{env}/{session_id}``."""

    async def index(request: Request) -> Response:
        return page("playground.html")

    async def explain(request: Request) -> Response:
        name = request.path_params["env"]
        session_id = request.path_params["session_id"]
        service = services.get(name)
        if service is None:
            raise ApiError(404, "NOT_FOUND", f"no environment {name!r}; choose one of: {', '.join(services)}")
        if service.sealed and not is_admin(service.config.admin_token, presented_token(request.headers)):
            from integrity_gym.server.evaluations import SEALED_UNTIL_CLOSED

            raise ApiError(403, "SEALED_UNTIL_CLOSED", SEALED_UNTIL_CLOSED)
        async with service.session(session_id, write=False) as session:
            if not session.env.done:
                raise ApiError(
                    409,
                    "EPISODE_NOT_DONE",
                    "the explanation is given once the episode has ended (it may name hidden facts)",
                )
            return JSONResponse({"explain": session.env.explain()})

    return Router(
        routes=[
            Route("/", index, methods=["GET"]),
            Route("/api/explain/{env}/{session_id}", explain, methods=["GET"]),
            Mount("/static", app=static_files(), name="static"),
        ]
    )


def mount_playground(app: FastAPI, services: Mapping[str, EnvService], root: str | None) -> None:
    """Serve the playground at ``/web`` (and at ``/<root>/web``, where ``/web`` lands under ``--root``)."""
    router = playground_router(services)

    async def to_slash(request: Request) -> Response:
        # Relative, so it lands right whether the browser asked /web or a proxy's /prefix/web.
        return RedirectResponse("web/", status_code=307)

    for prefix in ["/web"] + ([f"/{root}/web"] if root else []):
        app.add_route(prefix, to_slash, methods=["GET"], include_in_schema=False)
        app.mount(prefix, router)
