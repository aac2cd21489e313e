"""The settings of a server process: ``ServerConfig``, read from ``IGYM_*`` and written back.

``igym serve`` options map onto the fields; uvicorn workers are separate processes and read the
same settings back from the environment. ``ENV_NAMES`` is the one table of variable names:
``ServerConfig.from_env`` reads it and ``ServerConfig.as_environ`` writes it.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from integrity_gym.core.registry import TaskSpec, list_tasks
from integrity_gym.server.compat import profiles
from integrity_gym.server.sessions.quota import DEFAULT_BURST, DEFAULT_PER_CLIENT, DEFAULT_RATE, ClientLimits

#: Each setting's environment variable.
ENV_NAMES: dict[str, str] = {
    "sessions": "IGYM_SESSIONS",
    "max_sessions": "IGYM_MAX_SESSIONS",
    "session_ttl_s": "IGYM_SESSION_TTL",
    "reap_interval_s": "IGYM_REAP_INTERVAL",
    "max_body_bytes": "IGYM_MAX_BODY_BYTES",
    "max_sessions_per_client": "IGYM_MAX_SESSIONS_PER_CLIENT",
    "session_rate": "IGYM_SESSION_RATE",
    "session_burst": "IGYM_SESSION_BURST",
    "client_tokens": "IGYM_CLIENT_TOKENS",
    "connect_idle_timeout_s": "IGYM_CONNECT_IDLE_TIMEOUT",
    "header_timeout_s": "IGYM_HEADER_TIMEOUT",
    "body_timeout_s": "IGYM_BODY_TIMEOUT",
    "step_threads": "IGYM_STEP_THREADS",
    "allowed_origins": "IGYM_ALLOWED_ORIGINS",
    "lenient_content_type": "IGYM_LENIENT_CONTENT_TYPE",
    "admin_token": "IGYM_ADMIN_TOKEN",
    "tasks": "IGYM_TASKS",
    "extra_tasks": "IGYM_EXTRA_TASKS",
    "root": "IGYM_ROOT",
    "profile": "IGYM_PROFILE",
    "sealed": "IGYM_SEALED",
    "evaluation_ttl_s": "IGYM_EVALUATION_TTL",
    "max_evaluations": "IGYM_MAX_EVALUATIONS",
}


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
    max_sessions_per_client: int = Field(
        default=DEFAULT_PER_CLIENT,
        ge=0,
        description="Most sessions one client (an address, an IPv6 /64, or a client token) holds at once; "
        "0: no quota. Past it: 429 CLIENT_QUOTA_REACHED.",
    )
    session_rate: float = Field(
        default=DEFAULT_RATE,
        ge=0,
        description="New sessions per second one client may open, after a burst of session_burst; 0: no limit. "
        "Past it: 429 RATE_LIMITED with Retry-After.",
    )
    session_burst: int = Field(default=DEFAULT_BURST, ge=1, description="Sessions a client may open at once.")
    client_tokens: tuple[str, ...] = Field(
        default=(),
        description="Tokens that name a client (sent as 'Authorization: Bearer <token>'): a request bearing one "
        "counts in that token's quota and rate instead of its address's (many users behind one proxy).",
    )
    connect_idle_timeout_s: float = Field(
        default=60.0,
        gt=0,
        description="Seconds a new connection may stay silent before its first request (or WebSocket handshake) "
        "begins; past it the connection is closed (igym serve's HTTP protocol).",
    )
    header_timeout_s: float = Field(
        default=10.0,
        gt=0,
        description="Seconds from a request's first byte to the end of its head (the WebSocket handshake's too); "
        "a head sent too slowly is answered 408 and closed (igym serve's HTTP protocol).",
    )
    body_timeout_s: float = Field(
        default=30.0, gt=0, description="Seconds a request has to send its whole body (past it: 408, and closed)."
    )
    step_threads: int = Field(
        default=1024,
        ge=1,
        description="Worker threads that run the resets and steps of blocking environments (Env.blocking), "
        "so that a session that waits holds up no other; fast environments step on the event loop.",
    )
    allowed_origins: tuple[str, ...] = Field(
        default=(),
        description="Web origins (scheme://host:port) allowed to open WebSockets and to call the API from a "
        "browser (CORS); none by default: only this server's own pages and non-browser clients.",
    )
    lenient_content_type: bool = Field(
        default=False,
        description="Read /reset and /step bodies as JSON whatever their Content-Type (as seed clients send "
        "them); on by default under a profile. Off, a body must say application/json.",
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
    profile: str | None = Field(
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

    @field_validator("profile")
    @classmethod
    def _known_profile(cls, value: str | None) -> str | None:
        if value is None:
            return value
        known = profiles()
        if value not in known:
            raise ValueError(f"unknown profile {value!r}; the environments speak: {', '.join(sorted(known)) or 'none'}")
        return value

    def client_limits(self) -> ClientLimits:
        """The per-client quota and rate every store applies."""
        return ClientLimits(self.max_sessions_per_client, self.session_rate, self.session_burst)

    @property
    def strict_content_type(self) -> bool:
        """Whether /reset and /step read only bodies declared JSON (not under a profile or when lenient)."""
        return not (self.lenient_content_type or self.profile)

    def root_env(self) -> str | None:
        """The environment served at '/', from ``root`` or the profile; ``ValueError`` if they disagree."""
        wanted = profiles()[self.profile][0] if self.profile else None
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

    def as_environ(self) -> dict[str, str]:
        """The ``IGYM_*`` variables that ``from_env`` reads back as this config (how workers get it).

        Unset settings are empty strings, which ``from_env`` reads as the default.
        """
        out: dict[str, str] = {}
        for key, name in ENV_NAMES.items():
            value = getattr(self, key)
            if isinstance(value, bool):
                out[name] = "1" if value else ""
            elif isinstance(value, tuple):
                out[name] = ",".join(value)
            else:
                out[name] = "" if value is None else str(value)
        return out

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ServerConfig:
        """Read settings from the ``IGYM_*`` variables (how uvicorn workers get them).

        Variables: ``IGYM_SESSIONS``, ``IGYM_MAX_SESSIONS``, ``IGYM_SESSION_TTL``,
        ``ENV_NAMES`` lists them; lists (``IGYM_EXTRA_TASKS``, ``IGYM_ALLOWED_ORIGINS``,
        ``IGYM_CLIENT_TOKENS``) are comma-separated, ``IGYM_SEALED=1`` seals the server, and an
        empty variable means the default.
        """
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {key: env[name] for key, name in ENV_NAMES.items() if env.get(name)}
        for listed in ("extra_tasks", "allowed_origins", "client_tokens"):
            if listed in values:
                values[listed] = tuple(p.strip() for p in values[listed].split(",") if p.strip())
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            raise ValueError(f"invalid server settings from the environment: {exc}") from exc

    @classmethod
    def from_options(cls, options: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> ServerConfig:
        """The ``IGYM_*`` settings (``from_env``) with the command-line ``options`` given over them.

        An option that is None was not given; both front ends (``igym serve`` and ``python -m
        integrity_gym.server``) build their config here, so a variable means the same to each.
        """
        given = {k: v for k, v in options.items() if v is not None}
        unknown = sorted(set(given) - set(cls.model_fields))
        if unknown:
            raise ValueError(f"unknown server settings: {', '.join(unknown)}")
        try:
            return cls.model_validate({**cls.from_env(environ).model_dump(), **given})
        except ValidationError as exc:
            raise ValueError(f"invalid server settings: {exc}") from exc
