"""The routes of sealed evaluations: ``POST /evaluations``, ``GET /evaluations/{id}``, ``POST .../close``."""

from __future__ import annotations

import typing
from typing import Any

from fastapi import Body, FastAPI, Path, Request
from fastapi.responses import JSONResponse, Response

from integrity_gym.server.evaluations.lifecycle import Evaluations
from integrity_gym.server.evaluations.models import (
    EvaluationCreated,
    EvaluationRequest,
    EvaluationResults,
    EvaluationStatus,
)
from integrity_gym.server.evaluations.sealing import NOT_SEALED
from integrity_gym.server.security import ApiError, ErrorBody, is_admin, presented_token
from integrity_gym.server.sessions import SessionBusyError


def _doc(codes: str, description: str) -> dict[str, Any]:
    return {"model": ErrorBody, "description": f"{description} ({codes})."}


EvaluationIdPath = typing.Annotated[str, Path(max_length=128, description="Id returned by POST /evaluations.")]


def add_evaluation_routes(app: FastAPI, evaluations: Evaluations) -> None:
    """``POST /evaluations``, ``GET /evaluations/{id}`` and ``POST /evaluations/{id}/close``.

    On a server that is not sealed the paths answer 404 ``NOT_SEALED`` (and stay out of its
    OpenAPI document, which is unchanged).
    """
    config = evaluations.config
    if not config.sealed:

        async def not_sealed(request: Request) -> Response:
            raise ApiError(404, "NOT_SEALED", NOT_SEALED)

        app.add_api_route("/evaluations", not_sealed, methods=["GET", "POST"], include_in_schema=False)
        app.add_api_route("/evaluations/{rest:path}", not_sealed, methods=["GET", "POST"], include_in_schema=False)
        return

    unknown = _doc("EVALUATION_NOT_FOUND", "Unknown or expired evaluation")
    store_down = _doc("SESSION_STORE_UNAVAILABLE", "The store cannot be reached; retry after Retry-After")

    @app.post(
        "/evaluations",
        tags=["evaluations"],
        summary="Open a sealed evaluation: the server draws the items and hands out one handle per episode",
        status_code=201,
        response_model=EvaluationCreated,
        responses={
            201: {"description": "The evaluation and its handles."},
            403: _doc("ADMIN_TOKEN_REQUIRED", "repeat_of without the admin token"),
            404: _doc("EVALUATION_NOT_FOUND", "repeat_of names no evaluation"),
            409: _doc("ITEMS_EXHAUSTED", "A task has fewer items never handed out than asked"),
            413: _doc("BODY_TOO_LARGE", "Request body over the size limit"),
            422: _doc("VALIDATION_ERROR", "A task matching nothing (the choices listed), a bad count, a bad repeat"),
            503: _doc("CAPACITY_REACHED, SESSION_STORE_UNAVAILABLE", "Too many evaluations open, or the store is down"),
        },
        operation_id="evaluations_create",
    )
    async def create(request: Request, body: typing.Annotated[EvaluationRequest, Body()]) -> JSONResponse:
        admin = is_admin(config.admin_token, presented_token(request.headers))
        return JSONResponse(await evaluations.create(body, admin=admin), status_code=201)

    @app.get(
        "/evaluations/{evaluation_id}",
        tags=["evaluations"],
        summary="Progress of an evaluation (grades only to the admin token until it is closed)",
        response_model=EvaluationStatus,
        responses={404: unknown, 422: _doc("VALIDATION_ERROR", "Malformed id"), 503: store_down},
        operation_id="evaluations_status",
    )
    async def status(request: Request, evaluation_id: EvaluationIdPath) -> JSONResponse:
        admin = is_admin(config.admin_token, presented_token(request.headers))
        return JSONResponse(await evaluations.status(evaluation_id, admin=admin))

    @app.post(
        "/evaluations/{evaluation_id}/close",
        tags=["evaluations"],
        summary="Close an evaluation: handles stop working, every started episode is graded as it stands",
        response_model=EvaluationResults,
        responses={
            404: unknown,
            409: _doc("SESSION_BUSY", "The store's lock of the evaluation could not be taken in time"),
            422: _doc("VALIDATION_ERROR", "Malformed id"),
            503: store_down,
        },
        operation_id="evaluations_close",
    )
    async def close(evaluation_id: EvaluationIdPath) -> JSONResponse:
        try:
            return JSONResponse(await evaluations.close(evaluation_id))
        except SessionBusyError as exc:
            raise ApiError(409, "SESSION_BUSY", str(exc)) from exc
