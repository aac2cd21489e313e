"""Server safety: the admin token, request body limits, error bodies and request ids.

No input may produce a 500. Client mistakes get a 4xx whose JSON body is
``{"detail": <message>, "code": <CODE>}`` (``ErrorBody``); a genuine server-side failure gets a
500 that carries only a request id (the traceback goes to the server log, never to the client).
Every request body, WebSocket message and action string is checked for size, UTF-8 and JSON
nesting depth before any parser sees it, since Python's JSON parsers recurse once per level.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import ipaddress
import json
import logging
import math
import os
import re
import secrets
from collections.abc import Collection, Mapping
from typing import Any
from urllib.parse import urlsplit

import numpy as np
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from integrity_gym.server.sessions import StoreUnavailableError

log = logging.getLogger("integrity_gym.server")

ADMIN_TOKEN_ENV = "IGYM_ADMIN_TOKEN"
ADMIN_HEADER = "x-igym-admin-token"

#: Deepest JSON nesting accepted in a request body, a WebSocket message or an action string.
#: Real requests nest a handful of levels; the parsers behind them recurse once per level.
MAX_JSON_DEPTH = 64

_STRING_BYTES = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_OPENERS = b"[{"


def json_too_deep(data: str | bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when JSON text nests arrays/objects deeper than ``limit`` (strings are skipped).

    A scan in C speed (a regex drops string contents, numpy sums the brackets) that runs before
    any parser, so a body of a million ``[`` costs milliseconds, never a deep recursion.
    """
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if raw.count(b"[") + raw.count(b"{") <= limit:
        return False
    stripped = np.frombuffer(_STRING_BYTES.sub(b'""', raw), dtype=np.uint8)
    steps = np.isin(stripped, np.frombuffer(_OPENERS, dtype=np.uint8)).astype(np.int32)
    steps -= (stripped == ord("]")) | (stripped == ord("}"))
    return bool(steps.size) and int(np.cumsum(steps).max()) > limit


def too_deep_message(where: str, limit: int = MAX_JSON_DEPTH) -> str:
    """The message for JSON nested deeper than ``limit``."""
    return f"{where}: JSON nested deeper than {limit} levels; send at most {limit} levels of arrays/objects"


class FieldError(BaseModel):
    """One problem in a request: where (``loc``), what (``msg``) and pydantic's error type."""

    loc: list[str] = Field(description="Path of the offending field, e.g. ['body', 'seed'].")
    msg: str = Field(description="What is wrong and what is expected.")
    type: str = Field(description="Machine-readable kind of error.")


class ErrorBody(BaseModel):
    """The JSON body of every error response."""

    model_config = ConfigDict(extra="allow")

    detail: str = Field(description="What was wrong and what to do.")
    code: str = Field(description="Machine-readable code, e.g. VALIDATION_ERROR or SESSION_NOT_FOUND.")
    errors: list[FieldError] | None = Field(default=None, description="Each invalid field (validation errors).")


class ApiError(Exception):
    """A client-facing error with an HTTP status, a machine code and a readable message."""

    def __init__(
        self, status: int, code: str, message: str, *, retry_after_s: float | None = None, **extra: Any
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        #: When the client may try again (the ``Retry-After`` header, whole seconds; 1 for any 503).
        self.retry_after_s = retry_after_s if retry_after_s is not None else (1.0 if status == 503 else None)
        self.extra = extra if retry_after_s is None else {**extra, "retry_after_s": retry_after_s}

    def headers(self) -> dict[str, str] | None:
        """``Retry-After`` when the client should retry later."""
        if self.retry_after_s is None:
            return None
        return {"Retry-After": str(max(1, math.ceil(self.retry_after_s)))}


class RedactTokens(logging.Filter):
    """Masks ``admin_token=...`` in the request lines uvicorn logs (HTTP access, WebSocket handshakes)."""

    _TOKEN = re.compile(r"(admin_token=)[^&\s\"]*")

    def filter(self, record: logging.LogRecord) -> bool:
        """Rewrite the record's arguments and message; never drop it."""
        if isinstance(record.args, tuple):
            record.args = tuple(self._TOKEN.sub(r"\1<redacted>", a) if isinstance(a, str) else a for a in record.args)
        if isinstance(record.msg, str):
            record.msg = self._TOKEN.sub(r"\1<redacted>", record.msg)
        return True


def redact_tokens_in_logs() -> None:
    """Keep tokens sent as ``?admin_token=`` out of uvicorn's logs, however the server was started.

    ``igym serve`` turns uvicorn's access log off, but ``uvicorn integrity_gym.server.asgi:app``
    keeps it, and every WebSocket handshake is logged with its query string. The header
    (``Authorization: Bearer``) is the documented way; the query form is for clients that cannot
    set headers, and it is masked here.
    """
    for name in ("uvicorn.access", "uvicorn.error"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactTokens) for f in logger.filters):
            logger.addFilter(RedactTokens())


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


def client_identity(address: str | None, token: str | None, known_tokens: Collection[str] = ()) -> str:
    """Who a request's new session counts for (``sessions/quota.py``): a known token, else the address.

    A token counts only if the server knows it (a client token or the admin token), so a greedy
    client cannot mint fresh names; it is kept as a hash. An IPv6 address counts by its /64, the
    block one host is usually given; an IPv4-mapped one as its IPv4 address.
    """
    if token and any(hmac.compare_digest(token.encode(), k.encode()) for k in known_tokens):
        return "token:sha256:" + hashlib.sha256(token.encode()).hexdigest()[:16]
    if not address:
        return "address:unknown"
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:  # a name (a unix socket, a test client): as given
        return f"address:{address}"
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return f"address:{ip.ipv4_mapped}"
        return f"address:{ipaddress.ip_network((ip, 64), strict=False)}"
    return f"address:{ip}"


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


def cross_site_origin(headers: Mapping[str, str], allowed: tuple[str, ...] = ()) -> str | None:
    """The ``Origin`` of a browser's request from another site that ``allowed`` does not list, else None.

    Browsers send ``Origin`` on every WebSocket handshake and cross-site POST; other clients send
    none. A page of this server (the playground) has the origin of the ``Host`` it was served from.
    """
    origin = headers.get("origin")
    if origin is None or origin in allowed:
        return None
    netloc = urlsplit(origin).netloc if "://" in origin else None
    return None if netloc and netloc == headers.get("host") else origin


def cross_site_message(origin: str) -> str:
    """Why a request from ``origin`` is refused, and how to allow it."""
    return (
        f"a request from the web page at {origin!r} is refused: another site may not open or play sessions "
        "here (start the server with --allow-origin ORIGIN to allow one)"
    )


def refuse_cross_site(headers: Mapping[str, str], *, allowed: tuple[str, ...], strict: bool, has_body: bool) -> None:
    """Refuse what another site's page could send: 403 for its ``Origin``, 415 for a body not declared JSON.

    The type is checked when ``strict``. A browser sends a form or ``text/plain`` body to another
    site without asking it first (a JSON body only after a CORS preflight this server does not
    grant), and names the page's origin in ``Origin``; curl and the clients send no ``Origin``, and
    an empty body needs no type.
    """
    origin = cross_site_origin(headers, allowed)
    if origin is not None:
        raise ApiError(403, "CROSS_SITE_REFUSED", cross_site_message(origin))
    if not (strict and has_body):
        return
    kind = headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/json" and not kind.endswith("+json"):
        shown = kind or "none"
        raise ApiError(
            415,
            "UNSUPPORTED_MEDIA_TYPE",
            f"send the body as JSON with Content-Type: application/json (got {shown}); a server started with "
            "--profile (the seed clients) or --lenient-content-type also reads other types as JSON",
        )


def error_body(code: str, message: str, **extra: Any) -> dict[str, Any]:
    """The JSON body of every error response."""
    return {"detail": message, "code": code, **extra}


#: Fields people send by another name, and the name to use.
_FIELD_HINTS = {
    "task_id": "task",
    "env_id": "task",
    "tier": "difficulty",
    "level": "difficulty",
    "scenario": "scenario_id (or options.scenario)",
    "id": "session_id",
}


#: Steps pydantic adds to an error's location for the member of a union it tried (``str``,
#: ``int``, ``literal['a']``...): not fields, so they are dropped and the members' messages merged.
_UNION_MEMBER = re.compile(r"^(str|int|float|bool|none|list|dict|[a-z-]+\[.*\])$")


def json_safe_errors(errors: Any) -> list[dict[str, Any]]:
    """Pydantic's errors as plain JSON (``loc``, ``msg``, ``type``), each message saying what is expected.

    An unknown field gets the name to use instead when it is a common misnaming (``task_id``);
    the failed members of a union become one message (``a valid string or a valid integer``).
    """
    safe: list[dict[str, Any]] = []
    for err in errors:
        loc = [str(p) for p in err.get("loc", ())]
        member = bool(loc) and bool(_UNION_MEMBER.match(loc[-1]))
        if member:
            loc = loc[:-1]
        kind = str(err.get("type", ""))
        msg = str(err.get("msg", "invalid"))
        if kind == "extra_forbidden":
            hint = _FIELD_HINTS.get(loc[-1]) if loc else None
            msg = f"unknown field; use '{hint}'" if hint else "unknown field; see the schema for the accepted fields"
        if member and safe and safe[-1]["loc"] == loc:
            safe[-1]["msg"] += " or " + msg.removeprefix("Input should be ")
            continue
        safe.append({"loc": loc, "msg": msg, "type": kind, "input": err.get("input"), "shown": kind != "missing"})
    for item in safe:
        value, shown = item.pop("input"), item.pop("shown")
        if shown and item["type"] != "extra_forbidden" and value is not None:
            text = json.dumps(value, default=str)
            item["msg"] += f" (got {text if len(text) <= 40 else text[:37] + '...'})"
    return safe


def describe_errors(errors: list[dict[str, Any]]) -> str:
    """One line naming each invalid field and what is expected: ``data.seed: ...; task: ...``."""
    parts = []
    for err in errors:
        loc = [p for p in err["loc"] if p != "body"]
        parts.append(f"{'.'.join(loc) or 'body'}: {err['msg']}")
    return "; ".join(parts) or "invalid request"


def install_error_handlers(app: FastAPI) -> None:
    """Map every exception to a JSON error body: 4xx for client mistakes, 500 with a request id."""

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        body = error_body(exc.code, exc.message, **exc.extra)
        return JSONResponse(body, status_code=exc.status, headers=exc.headers())

    @app.exception_handler(StoreUnavailableError)
    async def _store_unavailable(request: Request, exc: StoreUnavailableError) -> JSONResponse:
        return JSONResponse(
            error_body("SESSION_STORE_UNAVAILABLE", str(exc)), status_code=503, headers={"Retry-After": "5"}
        )

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = json_safe_errors(exc.errors())
        return JSONResponse(error_body("VALIDATION_ERROR", describe_errors(errors), errors=errors), status_code=422)

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
    """Check every HTTP request body before any handler parses it.

    Refused with 413 ``BODY_TOO_LARGE``: a declared ``Content-Length`` over ``max_bytes`` (at
    once) or a streamed body crossing it. Refused with 408 ``REQUEST_TIMEOUT`` and the connection
    closed: a body not complete within ``timeout_s`` (a client trickling it would hold the
    connection for ever). Refused with 422 ``VALIDATION_ERROR``: a body that is not UTF-8, or JSON
    nested deeper than ``MAX_JSON_DEPTH``. A body passing the checks is handed on unchanged.
    """

    def __init__(self, app: ASGIApp, max_bytes: int, timeout_s: float = 30.0) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.timeout_s = timeout_s

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
        # Read the whole body first (it is at most max_bytes) so it is checked before parsing.
        chunks: list[bytes] = []
        try:
            async with asyncio.timeout(self.timeout_s):
                complete = await self._read(receive, chunks)
        except TimeoutError:
            message = f"the request body was not received within {self.timeout_s:g}s; send it promptly"
            await _send_json(send, 408, error_body("REQUEST_TIMEOUT", message), close=True)
            return
        if complete is None:
            await _send_json(send, 413, self._too_large())
            return
        if not complete:
            return  # the client went away before sending its body
        body = b"".join(chunks)
        problem = _body_problem(body)
        if problem is not None:
            await _send_json(send, 422, problem)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _read(self, receive: Receive, chunks: list[bytes]) -> bool | None:
        """Append the body's chunks: True once complete, False if the client left, None past the limit."""
        seen = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return False
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > self.max_bytes:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return True

    def _too_large(self) -> dict[str, Any]:
        return error_body("BODY_TOO_LARGE", f"request body is larger than the limit of {self.max_bytes} bytes")


def _body_problem(body: bytes) -> dict[str, Any] | None:
    """The 422 body for a request body that is not UTF-8 or nests too deep, else None."""
    if not body:
        return None
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as exc:
        message = f"body: not valid UTF-8 (byte {exc.start}); send JSON encoded as UTF-8"
        kind = "utf8_invalid"
    else:
        if not json_too_deep(body):
            return None
        message = too_deep_message("body")
        kind = "json_too_deep"
    return error_body("VALIDATION_ERROR", message, errors=[{"loc": ["body"], "msg": message, "type": kind}])


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


async def _send_json(send: Send, status: int, body: dict[str, Any], *, close: bool = False) -> None:
    payload = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    if close:  # the server closes the connection after this reply (the rest of the request is not read)
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
