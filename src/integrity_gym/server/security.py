"""Server safety: the admin token, the request body limit, error bodies and request ids.

No input may produce a 500. Client mistakes get a 4xx whose JSON body is
``{"detail": <message>, "code": <CODE>}``; a genuine server-side failure gets a 500 that carries
only a request id (the traceback goes to the server log, never to the client).
"""

from __future__ import annotations

import hmac
import logging
import os
import secrets
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("integrity_gym.server")

ADMIN_TOKEN_ENV = "IGYM_ADMIN_TOKEN"
ADMIN_HEADER = "x-igym-admin-token"


class ApiError(Exception):
    """A client-facing error with an HTTP status, a machine code and a readable message."""

    def __init__(self, status: int, code: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.extra = extra


def admin_token_from_env() -> str | None:
    """The admin token configured through ``IGYM_ADMIN_TOKEN`` (``None`` when unset or empty)."""
    return os.environ.get(ADMIN_TOKEN_ENV) or None


def presented_token(headers: Mapping[str, str], query: Mapping[str, str] | None = None) -> str | None:
    """The token a request presents: ``Authorization: Bearer``, the admin header, or ``?admin_token``."""
    auth = headers.get("authorization", "")
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip() or None
    token = headers.get(ADMIN_HEADER)
    if token:
        return token
    if query is not None:
        return query.get("admin_token") or None
    return None


def is_admin(expected: str | None, presented: str | None) -> bool:
    """True when an admin token is configured and ``presented`` equals it (constant time)."""
    if expected is None or presented is None:
        return False
    return hmac.compare_digest(expected.encode(), presented.encode())


def require_admin(expected: str | None, presented: str | None) -> None:
    """Raise the right ``ApiError`` unless the request carries the configured admin token."""
    if expected is None:
        raise ApiError(
            403,
            "ADMIN_DISABLED",
            "full state (ground truth) is disabled on this server; start it with "
            f"{ADMIN_TOKEN_ENV}=<token> to enable it",
        )
    if presented is None:
        raise ApiError(
            401,
            "ADMIN_TOKEN_REQUIRED",
            "full state needs the admin token: send 'Authorization: Bearer <token>'",
        )
    if not is_admin(expected, presented):
        raise ApiError(403, "ADMIN_TOKEN_INVALID", "the admin token is wrong")


def error_body(code: str, message: str, **extra: Any) -> dict[str, Any]:
    """The JSON body of every error response."""
    return {"detail": message, "code": code, **extra}


def _describe_validation(errors: Any) -> str:
    parts = []
    for err in errors:
        loc = [str(p) for p in err.get("loc", ()) if p != "body"]
        parts.append(f"{'.'.join(loc) or 'body'}: {err.get('msg', 'invalid')}")
    return "; ".join(parts) or "invalid request"


def _json_safe_errors(errors: Any) -> list[dict[str, Any]]:
    safe = []
    for err in errors:
        safe.append(
            {
                "loc": [str(p) for p in err.get("loc", ())],
                "msg": str(err.get("msg", "")),
                "type": str(err.get("type", "")),
            }
        )
    return safe


def install_error_handlers(app: FastAPI) -> None:
    """Map every exception to a JSON error body: 4xx for client mistakes, 500 with a request id."""

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        headers = {"Retry-After": "1"} if exc.status == 503 else None
        return JSONResponse(error_body(exc.code, exc.message, **exc.extra), status_code=exc.status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        return JSONResponse(
            error_body("VALIDATION_ERROR", _describe_validation(errors), errors=_json_safe_errors(errors)),
            status_code=422,
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        codes = {404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED", 413: "BODY_TOO_LARGE"}
        message = exc.detail if isinstance(exc.detail, str) else "request refused"
        if exc.status_code == 404 and message == "Not Found":
            message = f"no route {request.method} {request.url.path}; see /docs for the API"
        return JSONResponse(
            error_body(codes.get(exc.status_code, "HTTP_ERROR"), message),
            status_code=exc.status_code,
            headers=getattr(exc, "headers", None),
        )

    @app.exception_handler(Exception)
    async def _server_error(request: Request, exc: Exception) -> JSONResponse:
        request_id = secrets.token_hex(8)
        log.exception("request %s failed: %s %s", request_id, request.method, request.url.path)
        return JSONResponse(
            error_body(
                "INTERNAL_ERROR", "internal server error; quote the request id when reporting it", request_id=request_id
            ),
            status_code=500,
        )


class BodyLimitMiddleware:
    """Refuse HTTP request bodies over ``max_bytes`` with 413, before any handler reads them.

    A declared ``Content-Length`` over the limit is refused at once; a chunked body is counted
    as it streams and refused as soon as it crosses the limit.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Run the wrapped application (ASGI)."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    await _send_json(send, 400, error_body("BAD_REQUEST", "Content-Length is not a number"))
                    return
                if declared > self.max_bytes:
                    await _send_json(send, 413, self._too_large())
                    return
        seen = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise _BodyTooLarge(self.max_bytes)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _BodyTooLarge:
            if not started:
                await _send_json(send, 413, self._too_large())

    def _too_large(self) -> dict[str, Any]:
        return error_body("BODY_TOO_LARGE", f"request body is larger than the limit of {self.max_bytes} bytes")


class SwallowHandledErrors:
    """Outermost guard: an exception whose 500 reply was already sent stops here.

    Starlette re-raises after its error handler answered (so servers can log it); uvicorn would
    then log the same failure a second time. If nothing was sent yet, answer 500 with a request id.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Run the wrapped application (ASGI)."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception:
            if started:
                return
            request_id = secrets.token_hex(8)
            log.exception("request %s failed: %s", request_id, scope.get("path"))
            await _send_json(
                send,
                500,
                error_body(
                    "INTERNAL_ERROR",
                    "internal server error; quote the request id when reporting it",
                    request_id=request_id,
                ),
            )


class _BodyTooLarge(HTTPException):
    """Raised from ``receive`` when a streamed body crosses the limit (FastAPI re-raises it)."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(413, f"request body is larger than the limit of {max_bytes} bytes")


async def _send_json(send: Send, status: int, body: dict[str, Any]) -> None:
    import json

    payload = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": payload})
