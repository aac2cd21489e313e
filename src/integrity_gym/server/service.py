"""The model the routes, the WebSocket endpoint and the playground share: one ``EnvService`` per environment.

An ``EnvService`` holds an environment's tasks, its request model, the shared session store and
the dialect it speaks; ``session`` opens a stored session with the one mapping of store errors to
API errors. ``app.py`` composes the application from these; nothing here builds routes.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, create_model

import integrity_gym
from integrity_gym.core.env import Env
from integrity_gym.core.registry import TaskSpec
from integrity_gym.server.compat import Profile
from integrity_gym.server.config import ServerConfig
from integrity_gym.server.security import ApiError
from integrity_gym.server.sessions import Session, SessionBusyError, SessionNotFoundError, SessionStore

AnyEnv = Env[Any, Any, Any]


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

    @contextlib.asynccontextmanager
    async def session(self, session_id: str, *, write: bool) -> AsyncIterator[Session]:
        """Use stored session ``session_id`` of this environment; unknown 404, locked elsewhere 409."""
        try:
            async with self.store.use(session_id, self.name, write=write) as session:
                yield session
        except SessionNotFoundError as exc:
            raise ApiError(404, "SESSION_NOT_FOUND", exc.message) from exc
        except SessionBusyError as exc:
            raise ApiError(409, "SESSION_BUSY", str(exc)) from exc

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
