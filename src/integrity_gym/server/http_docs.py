"""What the OpenAPI documents say about an environment's HTTP routes (``http.py``).

The request and reply models, the documented errors of each kind of route, and the links from
``POST /<env>/reset`` to every session operation.
"""

from __future__ import annotations

from typing import Any, Generic

from pydantic import BaseModel, ConfigDict, Field

from integrity_gym.core.types import ObsT
from integrity_gym.server.security import ErrorBody


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
    store_health: dict[str, Any] | None = Field(
        default=None,
        description="The session store's own report: 'store', 'ok', 'detail', and for Redis its latency and "
        "this worker's lease. Answered within about a second even when the store hangs.",
    )


Responses = dict[int | str, dict[str, Any]]


def doc(status_codes: str, description: str) -> dict[str, Any]:
    """The documented reply of an error status: an ``ErrorBody`` with these codes."""
    return {"model": ErrorBody, "description": f"{description} ({status_codes})."}


BODY_ERRORS: Responses = {
    413: doc("BODY_TOO_LARGE", "Request body over the size limit"),
    422: doc(
        "VALIDATION_ERROR",
        "Malformed request: each field named with what is expected; a body that is not UTF-8 or nests JSON too deep",
    ),
}
STORE_DOWN = doc("SESSION_STORE_UNAVAILABLE", "The session store cannot be reached; retry after Retry-After")
SESSION_ERRORS: Responses = {
    404: doc("SESSION_NOT_FOUND", "Unknown, closed or expired HTTP session"),
    409: doc("SESSION_BUSY", "Another request holds the session"),
    422: doc("VALIDATION_ERROR", "Malformed session id"),
    503: STORE_DOWN,
}
ADMIN_ERRORS: Responses = {
    401: doc("ADMIN_TOKEN_REQUIRED", "No admin token sent"),
    403: doc("ADMIN_TOKEN_INVALID, ADMIN_DISABLED", "Wrong token, or no token configured"),
}
#: The refusals of what another site's page could send (``security.refuse_cross_site``).
CROSS_SITE_ERRORS: Responses = {
    403: doc("CROSS_SITE_REFUSED", "Sent by another site's page (its Origin); --allow-origin allows one"),
    415: doc("UNSUPPORTED_MEDIA_TYPE", "A body not declared application/json (any type under a profile)"),
}
#: What a sealed server adds to the documents of its routes.
SEALED_RESET_ERRORS: Responses = {
    403: doc(
        "SEALED, CROSS_SITE_REFUSED",
        "A reset without a handle, or naming an item beside it (episodes come from POST /evaluations), "
        "or sent by another site's page",
    ),
    404: doc("HANDLE_NOT_FOUND", "Unknown or expired handle"),
    409: doc("HANDLE_USED, EVALUATION_CLOSED", "The handle was started already, or its evaluation is closed"),
}
SEALED_UNTIL_CLOSED_ERROR = doc("SEALED_UNTIL_CLOSED", "Released when the evaluation closes, or to the admin token")
GRADE_ERRORS: Responses = {
    **SESSION_ERRORS,
    409: doc("EPISODE_NOT_DONE, SESSION_BUSY", "The episode is still running, or another request holds it"),
}


def reset_responses(name: str, sealed: bool) -> Responses:
    """The documented replies of ``POST /<name>/reset``, with the links to every session operation."""
    by_session = {"session_id": "$response.body#/session_id"}
    in_path = {"path.session_id": by_session["session_id"]}
    links = {
        "step": {"operationId": f"{name}_step", "requestBody": by_session},
        "grade": {"operationId": f"{name}_grade", "parameters": in_path},
        "scenario": {"operationId": f"{name}_scenario", "parameters": in_path},
        "state": {"operationId": f"{name}_state", "parameters": in_path},
        "close": {"operationId": f"{name}_close", "parameters": in_path},
    }
    return {
        200: {"description": "The new session and its first observation.", "links": links},
        **BODY_ERRORS,
        **CROSS_SITE_ERRORS,
        429: doc(
            "CLIENT_QUOTA_REACHED, RATE_LIMITED",
            "This client holds its quota of sessions, or opens them too fast; retry after Retry-After",
        ),
        503: doc("CAPACITY_REACHED, SESSION_STORE_UNAVAILABLE", "At capacity, or the session store is down"),
        **(SEALED_RESET_ERRORS if sealed else {}),
    }


def state_responses(state_type: type[BaseModel], sealed: bool) -> Responses:
    """The documented replies of the full-state routes (admin token)."""
    responses: Responses = {
        200: {"model": state_type, "description": "The full state, ground truth included."},
        **SESSION_ERRORS,
        **ADMIN_ERRORS,
    }
    if sealed:
        responses[403] = doc(
            "ADMIN_TOKEN_INVALID, ADMIN_DISABLED, SEALED_UNTIL_CLOSED",
            "Wrong token, no token configured, or a sealed session without the admin token",
        )
    return responses
