"""What the client and server agree on: URLs, payloads, replies, and errors as exceptions."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel

from integrity_gym.core.env import EpisodeFinishedError, NotResetError
from integrity_gym.core.types import Grade, StepResult


class RemoteError(RuntimeError):
    """The server refused a request; ``code`` is its machine-readable error code."""

    def __init__(self, message: str, code: str, data: Mapping[str, Any] | None = None) -> None:
        super().__init__(f"{message} (code {code})")
        self.code = code
        self.data = dict(data or {})


class RemoteValidationError(RemoteError, ValueError):
    """The request was malformed (a reset argument of the wrong type, an unknown task, ...)."""


class ServerCapacityError(RemoteError):
    """No session for now: the server is full, or this client holds its quota or opens too fast.

    ``code`` says which (``CAPACITY_REACHED``, ``CLIENT_QUOTA_REACHED``, ``RATE_LIMITED``); retry
    later (``data['retry_after_s']`` when the server names the wait) or close sessions.
    """


class SessionLostError(RemoteError, ConnectionError):
    """The session is gone (closed, expired, or its connection dropped mid-episode): reset again."""


class EpisodeNotDoneError(RemoteError):
    """A remote grade is given once the episode has ended (or with the server's admin token)."""


class AdminTokenError(RemoteError, PermissionError):
    """Full state (ground truth) needs the server's admin token (``admin_token=`` or IGYM_ADMIN_TOKEN)."""


def env_url(url: str, env_name: str) -> str:
    """``http://host:port[/prefix]`` → the environment's base URL ``.../<env_name>``."""
    parts = urlsplit(url if "://" in url else f"http://{url}")
    if parts.scheme not in {"http", "https", "ws", "wss"}:
        raise ValueError(f"server URL {url!r} must start with http://, https://, ws:// or wss://")
    path = parts.path.rstrip("/")
    if not path.endswith(f"/{env_name}"):
        path = f"{path}/{env_name}"
    scheme = {"ws": "http", "wss": "https"}.get(parts.scheme, parts.scheme)
    return urlunsplit((scheme, parts.netloc, path, "", ""))


def ws_url(base: str) -> str:
    """The environment's WebSocket URL (``/<env>/ws``) from its HTTP base URL."""
    return "ws" + base[4:] + "/ws" if base.startswith("http") else base + "/ws"


def action_payload(action: Any) -> Any:
    """An action as JSON-ready data: models are dumped; mappings, strings and the rest go as they are."""
    if isinstance(action, BaseModel):
        return action.model_dump(mode="json")
    if isinstance(action, Mapping):
        return dict(action)
    return action


def reset_payload(
    seed: int | None,
    task: str | None,
    scenario_id: str | int | None,
    options: Mapping[str, Any] | None,
    handle: str | None = None,
) -> dict[str, Any]:
    """The reset arguments that were given (omitted ones use the server's defaults).

    A sealed episode is started by its ``handle`` alone: the server chose its item.
    """
    if handle is not None:
        if seed is not None or scenario_id is not None or options is not None:
            raise ValueError("a sealed episode starts from its handle alone: no seed, scenario_id or options")
        return {"handle": handle}
    payload: dict[str, Any] = {}
    if seed is not None:
        payload["seed"] = seed
    if task is not None:
        payload["task"] = task
    if scenario_id is not None:
        payload["scenario_id"] = scenario_id
    if options is not None:
        payload["options"] = dict(options)
    return payload


def parse_step(observation_type: type[BaseModel], data: Mapping[str, Any], *, info_key: str) -> StepResult[Any]:
    """A reply's observation, reward, done and info as the same ``StepResult`` ``Env.step`` returns."""
    return StepResult(
        observation=observation_type.model_validate(data["observation"]),
        reward=float(data["reward"]),
        done=bool(data["done"]),
        info=dict(data.get(info_key) or {}),
    )


def parse_grade(data: Mapping[str, Any]) -> Grade:
    """A reply's grade."""
    return Grade.model_validate(data)


_LOCAL_ERRORS: dict[str, type[Exception]] = {
    "EpisodeFinishedError": EpisodeFinishedError,
    "NotResetError": NotResetError,
}


#: The codes of a session refused for room (``ServerCapacityError``).
_NO_ROOM = frozenset({"CAPACITY_REACHED", "CLIENT_QUOTA_REACHED", "RATE_LIMITED"})


def ws_error(data: Mapping[str, Any]) -> Exception:
    """The exception for a WebSocket ``error`` reply (the same types an in-process env raises)."""
    message = str(data.get("message", "unknown error"))
    code = str(data.get("code", "UNKNOWN"))
    local = _LOCAL_ERRORS.get(str(data.get("error_type")))
    if local is not None:
        return local(message)
    if code in _NO_ROOM:
        return ServerCapacityError(message, code, data)
    if code == "EPISODE_NOT_DONE":
        return EpisodeNotDoneError(message, code, data)
    if code in {"VALIDATION_ERROR", "INVALID_JSON", "UNKNOWN_TYPE"}:
        return RemoteValidationError(message, code, data)
    if code == "SESSION_ERROR":
        return SessionLostError(message, code, data)
    return RemoteError(message, code, data)


def http_error(status: int, body: bytes) -> Exception:
    """The exception for an HTTP error reply."""
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    message = str(data.get("detail") or f"HTTP {status}")
    code = str(data.get("code") or f"HTTP_{status}")
    if code == "EPISODE_FINISHED":
        return EpisodeFinishedError(message)
    if code == "EPISODE_NOT_DONE":
        return EpisodeNotDoneError(message, code, data)
    if status in {429, 503} and code in _NO_ROOM:
        return ServerCapacityError(message, code, data)
    if status == 404 and code == "SESSION_NOT_FOUND":
        return SessionLostError(message, code, data)
    if status in {401, 403}:
        return AdminTokenError(message, code, data)
    if status in {400, 413, 422}:
        return RemoteValidationError(message, code, data)
    return RemoteError(message, code, data)
