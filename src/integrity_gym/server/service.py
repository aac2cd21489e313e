"""The model the routes, the WebSocket endpoint and the playground share: one ``EnvService`` per environment.

An ``EnvService`` holds an environment's tasks, its request model, the shared session store and
the dialect it speaks; ``session`` opens a stored session with the one mapping of store errors to
API errors. Episodes are started and stepped here for both transports (``open_episode`` for an
HTTP reset, ``reset``/``reset_sealed`` for a WebSocket's, ``step``/``step_recorded``): sealing and
the seed client's dialect are applied once, and each transport only parses its messages and
serializes the ``Shown`` it gets back. ``app.py`` composes the application; nothing here builds routes.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, NamedTuple, TypeVar

import anyio.to_thread
from anyio import CapacityLimiter
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, create_model

import integrity_gym
from integrity_gym.core.env import Env
from integrity_gym.core.extras import Dialect
from integrity_gym.core.registry import TaskSpec
from integrity_gym.server.config import ServerConfig
from integrity_gym.server.evaluations import (
    refuse_handle,
    seal_info,
    seal_observation,
    seal_profile_observation,
)
from integrity_gym.server.security import ApiError, client_identity, json_too_deep, too_deep_message
from integrity_gym.server.sessions import (
    LOCAL_CLIENT,
    CapacityError,
    ClientLimitError,
    Session,
    SessionBusyError,
    SessionNotFoundError,
    SessionStore,
)

AnyEnv = Env[Any, Any, Any]
T = TypeVar("T")

log = logging.getLogger("integrity_gym.server")

#: Seconds a reset or step of an environment not declared blocking may hold the event loop before
#: the server takes the environment for a blocking one and runs its calls off the loop from then on.
BLOCKING_AFTER_S = 0.2


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


class Shown(NamedTuple):
    """An observation as its client sees it, with the step's reward, end and info.

    Sealed on a sealed server (no field names the item) and in the seed client's dialect under a
    profile: then ``shaped`` is true and ``observation`` is the dialect's JSON-ready dict (and
    ``info`` holds what the dialect recorded); otherwise ``observation`` is the env's model.
    After a reset ``reward`` is None and ``info`` empty.
    """

    observation: Any
    reward: float | None
    done: bool
    info: dict[str, Any]
    shaped: bool


#: The message of a grade asked for too early; the transport says how to present the admin token.
NOT_DONE = (
    "the grade is given once the episode has ended (before, it would reveal the hidden truth); "
    "step until done is true, or {how} the admin token"
)


@dataclass
class EnvService:
    """Everything the routes of one environment need: its tasks, classes and the shared store."""

    name: str
    tasks: list[TaskSpec]
    config: ServerConfig
    holder: StoreHolder
    #: The seed client's dialect this environment speaks, if any (``compat.py``).
    profile: Dialect | None = None
    #: Grade (JSON) of the last episode each client address finished, under a profile: the seed
    #: client asks ``POST /grade`` without naming its session. Bounded; oldest dropped first.
    finished: dict[str, str] = field(default_factory=dict)
    #: The sealed evaluations of this server (``evaluations/``); None unless sealed.
    evaluations: Any = None

    #: Whether this environment's resets and steps run in worker threads: declared (``Env.blocking``)
    #: or found (``timed``). Set once, never unset.
    off_loop: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        self.off_loop = self.env_class.blocking

    @cached_property
    def _threads(self) -> CapacityLimiter:
        return CapacityLimiter(self.config.step_threads)

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)``: in a worker thread for a blocking environment, else inline and timed.

        An inline call that holds the event loop ``BLOCKING_AFTER_S`` or more makes the environment
        a blocking one for the rest of this process (logged once).
        """
        if self.off_loop:
            return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs), limiter=self._threads)
        return self.inline(fn, *args, **kwargs)

    def inline(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` in this thread, timed while the environment is not known to block (see ``call``)."""
        if self.off_loop:
            return fn(*args, **kwargs)
        started = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            self._timed(time.perf_counter() - started)

    def _timed(self, elapsed: float) -> None:
        if elapsed >= BLOCKING_AFTER_S and not self.off_loop:
            self.off_loop = True
            log.warning(
                "%s: a call took %.2f s on the event loop; its resets and steps now run in worker threads "
                "(declare %s.blocking = True to start so)",
                self.name,
                elapsed,
                self.env_class.__name__,
            )

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

    def reset_env(self, env: AnyEnv, request: ResetRequest) -> Any:
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

    # ------------------------------------------------------------------ episodes, for both transports
    def reset_request(self, data: Any) -> ResetRequest:
        """Reset arguments (JSON, in the dialect's spelling) in this environment's model; ``ValidationError``."""
        if isinstance(data, dict) and self.profile is not None:
            data = self.profile.reset_data(data)
        return self.reset_model.model_validate({} if data is None else data)

    def show(
        self,
        session: Session,
        obs: Any,
        reward: float | None = None,
        info: dict[str, Any] | None = None,
        recorded: dict[str, Any] | None = None,
        *,
        step: bool = False,
    ) -> Shown:
        """``obs`` (and a step's ``reward``/``info``) as the client sees it: sealed, then in the dialect."""
        info = {} if info is None else info
        done = bool(obs.done)
        if self.sealed:
            cls = type(session.env)
            obs, info = seal_observation(cls, obs), seal_info(cls, info)
        profile = self.profile
        if profile is None or (not step and profile.observation is None):
            return Shown(obs, reward, done, info, False)
        if recorded:
            info = {**info, **recorded}
        shaped: dict[str, Any] = obs.model_dump(mode="json")
        if profile.observation is not None:
            shaped = profile.observation(shaped, reward, info, session)
            if self.sealed:
                shaped = seal_profile_observation(shaped)
        return Shown(shaped, reward, done, info, True)

    def client_of(self, address: str | None, token: str | None) -> str:
        """The client a new session from ``address`` presenting ``token`` counts for (its quota and rate)."""
        config = self.config
        known = (*config.client_tokens, config.admin_token) if config.admin_token else config.client_tokens
        return client_identity(address, token, known)

    async def admit(self, client: str) -> None:
        """``store.admit``, its refusals as ``ApiError``s: 503 at capacity, 429 past ``client``'s limits."""
        try:
            await self.store.admit(client)
        except (CapacityError, ClientLimitError) as exc:
            raise refusal(exc) from exc

    async def open_session(self, env: AnyEnv, client: str, **kwargs: Any) -> Session:
        """``store.open`` for ``client``, its refusals as ``ApiError``s (``admit``'s)."""
        try:
            return await self.store.open(self.name, env, client=client, **kwargs)
        except (CapacityError, ClientLimitError) as exc:
            raise refusal(exc) from exc

    async def open_episode(self, request: ResetRequest, client: str = LOCAL_CLIENT) -> tuple[Session, TaskSpec, Shown]:
        """Start the episode ``request`` asks for in a new HTTP session of ``client`` (a handle's, when sealed)."""
        if self.sealed:
            return await self._open_sealed(request, client)
        refuse_handle(request)
        spec = self.resolve_task(request)
        _, obs, session = await self._open(spec, lambda env: self.reset_env(env, request), client)
        return session, spec, self.show(session, obs)

    async def _open(
        self, spec: TaskSpec, start: Callable[[AnyEnv], Any], client: str, handle: str | None = None
    ) -> Any:
        """Build ``spec``'s env, ``start`` it and open its HTTP session; the env is closed if any of it fails."""
        await self.admit(client)
        env = self.build(spec)
        try:
            obs = await self.call(start, env)
            session = await self.open_session(env, client, kind="http", handle=handle)
        except BaseException:
            env.close()
            raise
        return env, obs, session

    async def _open_sealed(self, request: ResetRequest, client: str) -> tuple[Session, TaskSpec, Shown]:
        evaluations = self.evaluations
        claim = await evaluations.claim(self, request)
        try:
            _, obs, session = await self._open(claim.spec, lambda env: env.reset(seed=claim.seed), client, claim.handle)
        except BaseException:
            await evaluations.unclaim(claim)
            raise
        try:
            await evaluations.started(claim, session, "http")
        except ApiError:
            await self.store.close(session.id, self.name)
            raise
        return session, claim.spec, self.show(session, obs)

    def reset(self, session: Session, request: ResetRequest) -> tuple[TaskSpec, Shown]:
        """Start a new episode in ``session`` (a WebSocket's), on another task's env if ``request`` asks for one."""
        refuse_handle(request)
        spec = self.resolve_task(request)
        if session.env.spec.id != spec.id:
            session.env.close()
            session.env = self.build(spec)
        obs = self.reset_env(session.env, request)
        session.new_episode()
        return spec, self.show(session, obs)

    async def reset_sealed(self, session: Session, request: ResetRequest) -> tuple[TaskSpec, Shown]:
        """Start a handle's episode in ``session`` (a WebSocket's, on a sealed server); the one it played is left."""
        evaluations = self.evaluations
        claim = await evaluations.claim(self, request)
        try:
            env = self.build(claim.spec)
            obs = await self.call(env.reset, seed=claim.seed)
        except BaseException:
            await evaluations.unclaim(claim)
            raise
        previous, old_env = session.handle, session.env
        session.env, session.handle = env, claim.handle
        if previous is not None:
            await evaluations.left(previous, old_env)
        old_env.close()
        try:
            await evaluations.started(claim, session, "ws")
        except ApiError:
            session.handle = None
            session.env = self.build(self.tasks[0])  # nothing of that item stays playable
            env.close()
            raise
        session.new_episode()
        return claim.spec, self.show(session, obs)

    def step(self, session: Session, action: Any, *, where: str = "data", client: str | None = None) -> Shown:
        """Apply ``action`` (in the dialect) to ``session``'s env; a string nested too deep is refused (422).

        The env judges any other action exactly as in-process (a malformed one is a step with
        ``info['error']``) and raises its own errors (``EpisodeFinishedError``); the step that ends
        an episode also carries its grade in ``info['grade']`` (``metadata`` over the WebSocket),
        except on a sealed server, whose grades wait for the evaluation's close. Under a profile the
        grade of an episode that ends is kept for ``client`` (the seed client's ``POST /grade``).
        On a sealed server use ``step_recorded``, which records the episode's end.
        """
        profile = self.profile
        recorded: dict[str, Any] = {}
        # Before the dialect too: seed000's reads a JSON-string action.
        if isinstance(action, str) and json_too_deep(action):
            raise ApiError(422, "VALIDATION_ERROR", too_deep_message(where))
        if profile is not None:
            action, recorded = profile.action(action, session.env)
        result = session.env.step(action)
        if profile is None and not self.sealed:
            # The grade of an episode that ends rides on its last step (OpenEnv clients read nothing else).
            info = {**result.info, "grade": session.env.grade().model_dump(mode="json")} if result.done else result.info
            return Shown(result.observation, result.reward, result.done, info, False)
        if result.done and client is not None and profile is not None and not self.sealed:
            self.remember_grade(client, session.env.grade().model_dump_json())
        return self.show(session, result.observation, result.reward, result.info, recorded, step=True)

    async def step_recorded(self, session: Session, action: Any, *, where: str = "data") -> Shown:
        """``step``, recording the result of a sealed episode that ends with it."""
        shown = await self.call(self.step, session, action, where=where)
        if shown.done and self.sealed and session.handle is not None:
            await self.evaluations.finished(session.handle, session.env)
        return shown

    def grade_json(self, session: Session, *, admin: bool, how: str) -> str:
        """The grade of ``session``'s episode (JSON); 409 ``EPISODE_NOT_DONE`` before it ends, unless ``admin``."""
        env = session.env
        if not (admin or env.done):
            env.observation()  # before the first reset this raises NotResetError, as in-process
            raise ApiError(409, "EPISODE_NOT_DONE", NOT_DONE.format(how=how))
        return env.grade().model_dump_json()

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


def refusal(exc: CapacityError | ClientLimitError) -> ApiError:
    """The reply to a session refused for room: 503 when the server is full, 429 past a client's limit."""
    if isinstance(exc, ClientLimitError):
        return ApiError(429, exc.code, str(exc), retry_after_s=exc.retry_after_s, **exc.details)
    return ApiError(503, "CAPACITY_REACHED", str(exc), active_sessions=exc.active, max_sessions=exc.maximum)


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
