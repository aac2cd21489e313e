"""Routes on the hot path of training: documented like any FastAPI route, served without its machinery.

``RawRoute`` is a FastAPI route whose endpoint is a plain Starlette handler (request ->
response) that parses and answers the request itself: FastAPI documents it from the signature
the handler declares (``documented_as``), and no dependency solving, body model or response
validation runs per request. Each such path has one route and one OpenAPI entry.

``HotRoutes`` is an index placed first in the application's routes: a request to the path of a
``RawRoute`` goes straight to it, instead of being matched against every route before it (with
FastAPI's included routers that costs tens of microseconds per request, about a fifth of a
minimal step; ``benchmarks/server.py``). The index only finds the route: any request it does not
fully match (another method, a path under a ``root_path``) is routed as usual to the same route.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from typing import Any

from fastapi.routing import APIRoute
from starlette.datastructures import URLPath
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, NoMatchFound, request_response
from starlette.types import Receive, Scope, Send

Handler = Callable[[Request], Awaitable[Response]]


def documented_as(handler: Handler, **params: Any) -> Handler:
    """``handler`` declaring the parameters FastAPI documents: name -> annotation, or (annotation, default).

    FastAPI reads a route's parameters from its endpoint's signature; a ``RawRoute`` endpoint
    takes the request alone, so it declares what it reads from it.
    """
    declared = []
    for name, spec in params.items():
        annotation, default = spec if isinstance(spec, tuple) else (spec, inspect.Parameter.empty)
        declared.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation))
    handler.__signature__ = inspect.Signature(declared, return_annotation=Response)  # type: ignore[attr-defined]
    return handler


class RawRoute(APIRoute):
    """A route documented by FastAPI from its endpoint's declared signature, served by the endpoint as is.

    Use it with ``documented_as``; the endpoint raises ``RequestValidationError`` for what FastAPI
    would have refused, so the reply is the same ``VALIDATION_ERROR``.
    """

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(path, endpoint, **kwargs)
        self.app = request_response(endpoint)  # Starlette's: no per-request exit stacks (none are used)

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        """The endpoint itself (FastAPI's extension point for a route's request handling)."""
        handler: Callable[[Request], Coroutine[Any, Any, Response]] = self.endpoint
        return handler


class HotRoutes(BaseRoute):
    """An index of ``RawRoute``s by path, placed first in the application's routes (see the module)."""

    def __init__(self, routes: Iterable[APIRoute] = ()) -> None:
        self.by_path: dict[str, APIRoute] = {}
        for route in routes:
            self.add(route)

    def add(self, route: APIRoute) -> None:
        """Index ``route`` (a path without parameters)."""
        self.by_path[route.path] = route

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        """A full match of an indexed route, found by its path and method; anything else is left to the router."""
        route = self.by_path.get(scope["path"]) if scope["type"] == "http" else None
        if route is None or scope["method"] not in (route.methods or ()):
            return Match.NONE, {}
        # What the route's own match would put in the scope (its path has no parameters).
        return Match.FULL, {"endpoint": route.endpoint, "path_params": {}, "route": route}

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve the request with the route it matched (``matches`` put it in the scope)."""
        await scope["route"].app(scope, receive, send)

    def url_path_for(self, name: str, /, **path_params: Any) -> URLPath:
        """The index names no route: the indexed routes answer for themselves where the router holds them."""
        raise NoMatchFound(name, path_params)
