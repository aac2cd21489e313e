"""Sealed evaluations (``igym serve --sealed``): the server draws every item and hands each out once.

``IGYM_EVAL_SECRET`` keeps the public code from rebuilding eval items; a sealed server also keeps
the agent from *asking the evaluator* about them. An agent that may reset whatever it likes can
open a second session on its item and answer it to read the truth from the reward, search seeds
until a first observation matches its own, confirm candidate answers in probe sessions, read the
explanation of a probe, or name an eval item outright (``scenario_id="gen_hard_eval_5"``). Here:

* ``POST /evaluations`` ``{"tasks": [...], "episodes": N, "repeat_of": null}`` draws, for each
  task, ``N`` seeds the server chose (``secrets``), on the task's own (eval) partition, never an
  item that an earlier evaluation under the same secret was given (the store keeps a record of the
  items each task handed out), unless ``repeat_of`` names an earlier evaluation, whose items are
  then reused in the same order. It answers one unguessable *handle* per episode.
* ``POST /<env>/reset`` ``{"handle": ...}`` (and a WebSocket ``reset`` with that data) starts the
  handle's episode once, in a new session. Every other reset is refused (403 ``SEALED``).
* Observations and step ``info`` of sealed sessions carry none of the env's ``ITEM_FIELDS``; the
  grade, the explanation and the full state wait for ``POST /evaluations/{id}/close``
  (403 ``SEALED_UNTIL_CLOSED`` before, unless the admin token is presented), which grades every
  started episode as it stands, closes their sessions and returns every result.

The evaluation id is its owner's credential (like a session id): the runner keeps it and hands
the agent only handles. Records live in the session store (``sessions.py``): in this process for
the memory store, in Redis (surviving restarts, shared by every process) for the Redis store.
"""

from __future__ import annotations

import fnmatch
import logging
import re
import secrets
import time
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal, get_args

from fastapi import Body, FastAPI, Path, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from integrity_gym.core.registry import TaskSpec
from integrity_gym.core.types import Grade
from integrity_gym.server.security import ApiError, ErrorBody, is_admin, presented_token
from integrity_gym.server.sessions import (
    EvaluationCapacityError,
    Session,
    SessionBusyError,
    SessionNotFoundError,
    SessionStore,
)

if TYPE_CHECKING:
    from integrity_gym.core.env import Env
    from integrity_gym.server.config import ServerConfig
    from integrity_gym.server.service import EnvService, ResetRequest, StoreHolder

log = logging.getLogger("integrity_gym.server.evaluations")

#: Reset fields that choose an item: a sealed reset sends none of them beside its handle.
NAMING_FIELDS = ("seed", "scenario_id", "options", "task", "difficulty")
#: Fields a seed-client profile adds to observations that name the item (``compat.py``).
PROFILE_ITEM_FIELDS = ("document_id",)
NOT_SEALED = "this server is not sealed; start it with igym serve --sealed"
SEALED_RESET = (
    "this server is sealed: episodes are handed out by POST /evaluations, and each is started by resetting "
    'with its handle alone ({"handle": "<handle>"})'
)
SEALED_UNTIL_CLOSED = (
    "this session plays a sealed evaluation: its grade, explanation and state are released when the "
    "evaluation is closed (POST /evaluations/<id>/close), or to the admin token"
)
MAX_EPISODES = 10_000
#: Seeds are drawn below this bound (62 bits: far beyond any search by first observation).
SEED_BITS = 62
_TOKEN = re.compile(r"^[A-Za-z0-9_-]{8,128}$")


# --------------------------------------------------------------------------- wire models
class EvaluationRequest(BaseModel):
    """Body of ``POST /evaluations``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tasks: list[StrictStr] = Field(
        min_length=1,
        max_length=256,
        description="Task ids (or env/name for the newest version) or globs over this server's task ids.",
    )
    episodes: StrictInt = Field(ge=1, le=MAX_EPISODES, description="Episodes (items) per task.")
    repeat_of: StrictStr | None = Field(
        default=None,
        max_length=128,
        description="An earlier evaluation whose items to reuse, in the same order (same tasks and episodes).",
    )


class HandedOut(BaseModel):
    """One episode of an evaluation."""

    handle: str = Field(description="Start the episode with POST /<env>/reset {'handle': ...}, once.")
    task_id: str = Field(description="Its task.")
    index: int = Field(ge=0, description="Its position among the task's episodes.")


class EvaluationCreated(BaseModel):
    """Reply of ``POST /evaluations``."""

    evaluation_id: str = Field(description="Id of the evaluation: keep it to yourself; give the agent handles.")
    data_mode: str = Field(description="'secret:<fingerprint>' of the server's eval secret.")
    episodes: list[HandedOut] = Field(description="Every episode, task by task, in order.")
    expires_in_s: float = Field(description="Seconds until the evaluation expires unless closed.")


class EpisodeStatus(HandedOut):
    """An episode as ``GET /evaluations/{id}`` shows it."""

    status: Literal["pending", "running", "finished"] = Field(description="Not started, started, or ended.")
    steps: int | None = Field(default=None, description="Admin token only: steps taken, once recorded.")
    grade: Grade | None = Field(default=None, description="Admin token only: the grade, once recorded.")


class EvaluationStatus(BaseModel):
    """Reply of ``GET /evaluations/{id}`` (no grades before the close, except to the admin token)."""

    evaluation_id: str = Field(description="The evaluation.")
    data_mode: str = Field(description="'secret:<fingerprint>' of the server's eval secret.")
    closed: bool = Field(description="True once closed.")
    episodes: list[EpisodeStatus] = Field(description="Every episode, in order.")


class EpisodeResult(HandedOut):
    """One episode's result, released at the close."""

    status: Literal["pending", "running", "finished"] = Field(
        description="pending (never started), running (cut off by the close) or finished."
    )
    steps: int | None = Field(description="Steps taken (null if never started).")
    grade: Grade | None = Field(description="The grade as the episode stood (null if never started).")
    explanation: str | None = Field(description="The environment's explain() of the episode, or null.")


class EvaluationResults(BaseModel):
    """Reply of ``POST /evaluations/{id}/close`` (the same on every later close)."""

    evaluation_id: str = Field(description="The evaluation.")
    data_mode: str = Field(description="'secret:<fingerprint>' of the server's eval secret.")
    closed: bool = Field(description="Always true.")
    episodes: list[EpisodeResult] = Field(description="Every episode's result, in order.")


# --------------------------------------------------------------------------- sealing views
@lru_cache(maxsize=64)
def _sealing(env_class: type[Env[Any, Any, Any]]) -> tuple[dict[str, Any], tuple[tuple[str, ...], ...]]:
    """(observation field -> blank value, info paths to drop) of ``env_class.ITEM_FIELDS``."""
    fields = env_class.observation_type.model_fields
    blanks: dict[str, Any] = {}
    paths: list[tuple[str, ...]] = []
    for name in env_class.ITEM_FIELDS:
        if name.startswith("info."):
            paths.append(tuple(name.split(".")[1:]))
            continue
        if name not in fields:
            raise ValueError(f"{env_class.__name__}.ITEM_FIELDS names {name!r}, not a field of its observation")
        annotation = fields[name].annotation
        options = get_args(annotation) or (annotation,)
        if type(None) in options:
            blanks[name] = None
        elif str in options:
            blanks[name] = ""
        elif int in options or float in options:
            blanks[name] = 0
        else:
            blanks[name] = None
    return blanks, tuple(paths)


def seal_observation(env_class: type[Env[Any, Any, Any]], obs: Any) -> Any:
    """``obs`` with every field that names the item blanked (``Env.ITEM_FIELDS``)."""
    blanks, _ = _sealing(env_class)
    return obs.model_copy(update=blanks) if blanks else obs


def seal_info(env_class: type[Env[Any, Any, Any]], info: Mapping[str, Any]) -> dict[str, Any]:
    """A step's ``info`` without the ``info.``-paths of ``Env.ITEM_FIELDS`` (ids, ground truth)."""
    _, paths = _sealing(env_class)
    out = dict(info)
    for path in paths:
        node: Any = out
        for key in path[:-1]:
            if not isinstance(node, dict) or not isinstance(node.get(key), dict):
                node = None
                break
            node[key] = dict(node[key])
            node = node[key]
        if isinstance(node, dict):
            node.pop(path[-1], None)
    return out


def seal_profile_observation(shaped: dict[str, Any]) -> dict[str, Any]:
    """A seed-client profile's observation without its item id."""
    return {k: ("" if k in PROFILE_ITEM_FIELDS else v) for k, v in shaped.items()}


def refuse_unsealed_reset(request: ResetRequest) -> str:
    """The handle of a sealed reset; 403 ``SEALED`` for a reset that has none or names an item."""
    if request.handle is None:
        raise ApiError(403, "SEALED", SEALED_RESET)
    named = [name for name in NAMING_FIELDS if getattr(request, name) is not None]
    if named:
        raise ApiError(
            403,
            "SEALED",
            f"{', '.join(named)} would choose the item: {SEALED_RESET}",
        )
    return request.handle


def refuse_handle(request: ResetRequest) -> None:
    """On a server that is not sealed, a reset with a handle is a mistake (422)."""
    if request.handle is not None:
        message = f"handle: {NOT_SEALED} (handles come from POST /evaluations of a sealed server)"
        raise ApiError(
            422,
            "VALIDATION_ERROR",
            message,
            errors=[{"loc": ["body", "handle"], "msg": message, "type": "value_error"}],
        )


def snapshot(env: Env[Any, Any, Any]) -> dict[str, Any]:
    """The episode as it stands: steps, grade (JSON) and explanation (None where unavailable)."""
    out: dict[str, Any] = {"steps": None, "grade": None, "explanation": None}
    try:
        out["steps"] = int(env.state().step_count)
        out["grade"] = env.grade().model_dump(mode="json")
    except Exception:  # an episode never reset, or an environment bug: no grade
        log.exception("could not grade a sealed episode of %s", env.spec.id)
        return out
    try:
        out["explanation"] = env.explain()
    except Exception:
        log.exception("could not explain a sealed episode of %s", env.spec.id)
    return out


# --------------------------------------------------------------------------- the service
@dataclass(frozen=True)
class Claim:
    """A handle taken for starting: where its record is and what to reset."""

    eval_id: str
    position: int
    handle: str
    spec: TaskSpec
    seed: int


@dataclass
class WsEpisode:
    """A sealed episode played on a WebSocket of this process."""

    session: Session
    handle: str
    #: Set when its evaluation closed: the connection's further steps are refused.
    ended: bool = False


class Evaluations:
    """The sealed evaluations of one server: drawing, starting, recording and closing."""

    def __init__(
        self,
        config: ServerConfig,
        services: Mapping[str, EnvService],
        holder: StoreHolder,
        specs: Sequence[TaskSpec],
    ) -> None:
        self.config = config
        self.services = services
        self.holder = holder
        self.specs = list(specs)
        self.by_id = {s.id: s for s in specs}
        self._pools: dict[str, int | None] = {}
        #: Sealed episodes on this process's WebSockets, by handle.
        self.ws: dict[str, WsEpisode] = {}

    @property
    def store(self) -> SessionStore:
        """The session store, which keeps the evaluations too."""
        return self.holder.store

    # ------------------------------------------------------------------ drawing
    def resolve_tasks(self, patterns: Sequence[str]) -> list[TaskSpec]:
        """The served tasks named by ids, ``env/name`` or globs, in order, each once; 422 otherwise."""
        chosen: dict[str, TaskSpec] = {}
        for i, pattern in enumerate(patterns):
            if pattern in self.by_id:
                found = [self.by_id[pattern]]
            else:
                versions = [s for s in self.specs if f"{s.env}/{s.name}" == pattern]
                if versions:
                    found = [max(versions, key=lambda s: s.version)]
                else:
                    found = [s for s in self.specs if fnmatch.fnmatchcase(s.id, pattern)]
            if not found:
                message = f"task {pattern!r} matches none of this server's tasks; choose among: " + ", ".join(
                    s.id for s in self.specs
                )
                raise ApiError(
                    422,
                    "VALIDATION_ERROR",
                    message,
                    errors=[{"loc": ["body", "tasks", str(i)], "msg": message, "type": "value_error"}],
                )
            for spec in found:
                chosen.setdefault(spec.id, spec)
        return list(chosen.values())

    def pool(self, spec: TaskSpec) -> int | None:
        """How many distinct items ``spec`` has when an item is ``seed % num_items`` (else None: one per seed)."""
        if spec.id not in self._pools:
            env = spec.env_class()(spec)
            try:
                size = getattr(env, "num_items", None)
            finally:
                env.close()
            self._pools[spec.id] = size if isinstance(size, int) and not isinstance(size, bool) else None
        return self._pools[spec.id]

    async def _check_room(self, spec: TaskSpec, want: int, namespace: str) -> set[str]:
        """The items of ``spec`` handed out so far; 409 ``ITEMS_EXHAUSTED`` when fewer than ``want`` are left."""
        pool = self.pool(spec)
        if pool is None:
            return set()
        used = await self.store.items_members(namespace)
        free = pool - len(used)
        if free < want:
            raise ApiError(
                409,
                "ITEMS_EXHAUSTED",
                f"{spec.id} has {pool} items and {max(0, free)} of them were never handed out under this "
                f"secret: ask for at most {max(0, free)} episodes of it (or repeat an earlier evaluation "
                "with repeat_of)",
            )
        return used

    async def _draw(self, spec: TaskSpec, count: int, namespace: str) -> list[int]:
        """``count`` fresh seeds of ``spec``, each an item no earlier evaluation under this secret got.

        An item is the seed itself, or ``seed % num_items`` for a task whose env has ``num_items``
        (selective_verification): the seed is then drawn uniformly among those of unused items.
        Keys are recorded atomically (``items_reserve``); one another process took meanwhile is drawn again.
        """
        pool = self.pool(spec)
        store = self.store
        seeds: list[int] = []
        for _ in range(1000):
            want = count - len(seeds)
            if want == 0:
                return seeds
            if pool is None:
                candidates = [secrets.randbits(SEED_BITS) for _ in range(want)]
                keys = [str(seed) for seed in candidates]
            else:
                used = await self._check_room(spec, want, namespace)
                picked: set[int] = set()
                while len(picked) < want:
                    index = secrets.randbelow(pool)
                    if str(index) not in used:
                        picked.add(index)
                candidates = [i + pool * secrets.randbelow((2**SEED_BITS - i) // pool) for i in picked]
                keys = [str(i) for i in picked]
            fresh = await store.items_reserve(namespace, keys)
            seeds.extend(seed for seed, new in zip(candidates, fresh, strict=True) if new)
        raise ApiError(409, "ITEMS_EXHAUSTED", f"could not draw fresh items of {spec.id}; retry")

    async def create(self, body: EvaluationRequest, *, admin: bool = False) -> dict[str, Any]:
        """Draw an evaluation's items and hand out its handles (the reply of ``POST /evaluations``).

        ``repeat_of`` hands out items that were handed out before, so only the evaluator may ask for
        it (``admin``): an agent that learned its evaluation's id would otherwise reopen its own items
        in a second session and probe them.
        """
        from integrity_gym.server.app import require_eval_secret

        if body.repeat_of is not None and not admin:
            raise ApiError(
                403,
                "ADMIN_TOKEN_REQUIRED",
                "repeat_of replays items already handed out, so it needs the server's admin token (the evaluator's)",
            )
        mode = require_eval_secret()
        specs = self.resolve_tasks(body.tasks)
        store = self.store
        task_ids = [s.id for s in specs]
        reused: dict[tuple[str, int], int] | None = None
        if body.repeat_of is not None:
            earlier = await store.eval_meta(body.repeat_of) if _TOKEN.match(body.repeat_of) else None
            if earlier is None:
                raise ApiError(
                    404, "EVALUATION_NOT_FOUND", f"repeat_of: no evaluation {body.repeat_of!r} (unknown or expired)"
                )
            if earlier["tasks"] != task_ids or earlier["episodes"] != body.episodes:
                message = (
                    f"repeat_of: evaluation {body.repeat_of!r} had tasks {earlier['tasks']} with "
                    f"{earlier['episodes']} episode(s) each; a repeat asks for exactly those"
                )
                raise ApiError(
                    422,
                    "VALIDATION_ERROR",
                    message,
                    errors=[{"loc": ["body", "repeat_of"], "msg": message, "type": "value_error"}],
                )
            if earlier["data_mode"] != mode:
                raise ApiError(
                    422,
                    "VALIDATION_ERROR",
                    f"repeat_of: evaluation {body.repeat_of!r} was drawn under another secret ({earlier['data_mode']})",
                )
            reused = {(e["task_id"], e["index"]): e["seed"] for e in await store.eval_episodes(body.repeat_of)}
        eval_id = secrets.token_urlsafe(16)
        try:
            await store.eval_reserve(eval_id)
        except EvaluationCapacityError as exc:
            raise ApiError(
                503, "CAPACITY_REACHED", str(exc), active_evaluations=exc.active, max_evaluations=exc.maximum
            ) from exc
        try:
            episodes: list[dict[str, Any]] = []
            fingerprint = mode.split(":", 1)[-1]
            if reused is None:  # before drawing anything: a refusal must not use up another task's items
                for spec in specs:
                    await self._check_room(spec, body.episodes, f"{fingerprint}:{spec.id}")
            for spec in specs:
                if reused is not None:
                    seeds = [reused[(spec.id, i)] for i in range(body.episodes)]
                else:
                    seeds = await self._draw(spec, body.episodes, f"{fingerprint}:{spec.id}")
                for index, seed in enumerate(seeds):
                    episodes.append(
                        {
                            "handle": secrets.token_urlsafe(24),
                            "task_id": spec.id,
                            "index": index,
                            "seed": seed,
                            "status": "pending",
                            "session_id": None,
                            "kind": None,
                            "result": None,
                            "graded": False,
                        }
                    )
            meta = {
                "evaluation_id": eval_id,
                "data_mode": mode,
                "tasks": task_ids,
                "episodes": body.episodes,
                "repeat_of": body.repeat_of,
                "created": time.time(),
                "closed": False,
                "final": False,
            }
            await store.eval_create(eval_id, meta, episodes)
        except BaseException:
            try:
                await store.eval_unreserve(eval_id)
            except Exception:  # the slot's score expires it anyway
                log.warning("could not release the slot of evaluation %s", eval_id)
            raise
        return {
            "evaluation_id": eval_id,
            "data_mode": mode,
            "episodes": [{"handle": e["handle"], "task_id": e["task_id"], "index": e["index"]} for e in episodes],
            "expires_in_s": float(store.evaluation_ttl_s),
        }

    # ------------------------------------------------------------------ reading and closing
    async def _meta(self, eval_id: str) -> dict[str, Any]:
        meta = await self.store.eval_meta(eval_id) if _TOKEN.match(eval_id) else None
        if meta is None:
            shown = eval_id if _TOKEN.match(eval_id) else "<malformed id>"
            raise ApiError(404, "EVALUATION_NOT_FOUND", f"no evaluation {shown!r}: it was never created, or it expired")
        return meta

    async def status(self, eval_id: str, *, admin: bool) -> dict[str, Any]:
        """``GET /evaluations/{id}``: the episodes' progress; grades only to the admin token."""
        meta = await self._meta(eval_id)
        shown = []
        for episode in await self.store.eval_episodes(eval_id):
            item = {k: episode[k] for k in ("handle", "task_id", "index", "status")}
            if admin:
                result = episode.get("result") or {}
                item["steps"] = result.get("steps")
                item["grade"] = result.get("grade")
            shown.append(item)
        return {
            "evaluation_id": eval_id,
            "data_mode": meta["data_mode"],
            "closed": bool(meta["closed"]),
            "episodes": shown,
        }

    async def close(self, eval_id: str) -> dict[str, Any]:
        """Close the evaluation: no handle starts any more; grade every started episode; close its session."""
        store = self.store
        async with store.eval_lock(eval_id):
            meta = await self._meta(eval_id)
            if not meta["closed"]:
                meta["closed"] = True
                meta["closed_at"] = time.time()
                await store.eval_put_meta(eval_id, meta, renew=True)  # results stay a full TTL
                await store.eval_unreserve(eval_id)
            final = bool(meta.get("final"))
        if not final:
            for position, episode in enumerate(await store.eval_episodes(eval_id)):
                if episode["status"] != "pending" and not episode.get("graded"):
                    await self._grade_at_close(eval_id, position, episode)
            async with store.eval_lock(eval_id):
                meta = await self._meta(eval_id)
                meta["final"] = True
                await store.eval_put_meta(eval_id, meta)
        results = []
        for episode in await store.eval_episodes(eval_id):
            result = episode.get("result") or {}
            results.append(
                {
                    "handle": episode["handle"],
                    "task_id": episode["task_id"],
                    "index": episode["index"],
                    "status": episode["status"],
                    "steps": result.get("steps"),
                    "grade": result.get("grade"),
                    "explanation": result.get("explanation"),
                }
            )
        return {"evaluation_id": eval_id, "data_mode": meta["data_mode"], "closed": True, "episodes": results}

    async def _grade_at_close(self, eval_id: str, position: int, episode: dict[str, Any]) -> None:
        """Grade one started episode as it stands (first writer wins), then end its session."""
        store = self.store
        spec = self.by_id.get(episode["task_id"])
        session_id = episode.get("session_id")
        if episode.get("kind") == "http" and session_id and spec is not None:
            try:
                async with store.use(session_id, spec.env, write=False) as session:
                    # Under the session's lock: no step can slip in between the grade and the record.
                    await self._record_close(
                        eval_id, position, None if episode["status"] == "finished" else snapshot(session.env)
                    )
            except (SessionNotFoundError, SessionBusyError):
                pass  # gone (closed, reaped): what was recorded stands
            await store.close(session_id, spec.env)
        elif episode.get("kind") == "ws":
            live = self.ws.get(episode["handle"])
            if live is not None and not live.ended:
                live.ended = True
                self.ws.pop(episode["handle"], None)
                if episode["status"] != "finished":
                    await self._record_close(eval_id, position, snapshot(live.session.env))
        await self._record_close(eval_id, position, None)

    async def _record_close(self, eval_id: str, position: int, result: dict[str, Any] | None) -> None:
        async with self.store.eval_lock(eval_id):
            episode = await self.store.eval_episode(eval_id, position)
            if episode is None or episode.get("graded"):
                return
            if result is not None:
                episode["result"] = result
            episode["graded"] = True
            await self.store.eval_put_episode(eval_id, position, episode)

    # ------------------------------------------------------------------ starting and recording episodes
    async def claim(self, service: EnvService, request: ResetRequest) -> Claim:
        """Take the handle of a sealed reset for starting (``unclaim`` gives it back on failure)."""
        handle = refuse_unsealed_reset(request)
        store = self.store
        where = await store.eval_handle(handle) if _TOKEN.match(handle) else None
        missing = ApiError(
            404,
            "HANDLE_NOT_FOUND",
            "no such handle: it was never handed out, or its evaluation expired; handles come from POST /evaluations",
        )
        if where is None:
            raise missing
        eval_id, position = where
        async with store.eval_lock(eval_id):
            meta = await store.eval_meta(eval_id)
            episode = await store.eval_episode(eval_id, position)
            if meta is None or episode is None:
                raise missing
            spec = self.by_id.get(episode["task_id"])
            if spec is None or spec.env != service.name:
                env = episode["task_id"].partition("/")[0]
                message = f"handle: it is an episode of {episode['task_id']}; start it at POST /{env}/reset"
                raise ApiError(
                    422,
                    "VALIDATION_ERROR",
                    message,
                    errors=[{"loc": ["body", "handle"], "msg": message, "type": "value_error"}],
                )
            if meta["closed"]:
                raise ApiError(
                    409, "EVALUATION_CLOSED", "this handle's evaluation is closed: its handles no longer start"
                )
            if episode["status"] != "pending":
                raise ApiError(409, "HANDLE_USED", "this handle was already started; a handle starts one episode, once")
            episode["status"] = "running"
            await store.eval_put_episode(eval_id, position, episode)
        return Claim(eval_id, position, handle, spec, int(episode["seed"]))

    async def unclaim(self, claim: Claim) -> None:
        """Give back a handle whose episode could not be started (never raises)."""
        try:
            async with self.store.eval_lock(claim.eval_id):
                episode = await self.store.eval_episode(claim.eval_id, claim.position)
                if episode is not None and episode["status"] == "running" and not episode.get("session_id"):
                    episode["status"] = "pending"
                    await self.store.eval_put_episode(claim.eval_id, claim.position, episode)
        except Exception:
            log.warning("could not give back handle of evaluation %s", claim.eval_id)

    async def started(self, claim: Claim, session: Session, kind: Literal["http", "ws"]) -> None:
        """Record the session playing a claimed handle; 409 if the evaluation closed meanwhile."""
        store = self.store
        async with store.eval_lock(claim.eval_id):
            meta = await store.eval_meta(claim.eval_id)
            episode = await store.eval_episode(claim.eval_id, claim.position)
            closed = meta is None or episode is None or bool(meta["closed"])
            if not closed:
                assert episode is not None
                episode["session_id"] = session.id
                episode["kind"] = kind
                await store.eval_put_episode(claim.eval_id, claim.position, episode)
        if closed:
            raise ApiError(409, "EVALUATION_CLOSED", "this handle's evaluation closed while the episode was starting")
        if kind == "ws":
            self.ws[claim.handle] = WsEpisode(session, claim.handle)

    async def _update(self, handle: str, env: Env[Any, Any, Any], *, finished: bool) -> None:
        store = self.store
        where = await store.eval_handle(handle)
        if where is None:
            return
        eval_id, position = where
        async with store.eval_lock(eval_id):
            meta = await store.eval_meta(eval_id)
            episode = await store.eval_episode(eval_id, position)
            if meta is None or episode is None or meta["closed"] or episode["status"] != "running":
                return  # a closed evaluation's results are final
            episode["result"] = snapshot(env)
            if finished:
                episode["status"] = "finished"
            await store.eval_put_episode(eval_id, position, episode)

    async def finished(self, handle: str, env: Env[Any, Any, Any]) -> None:
        """Record the result of an episode that just ended."""
        await self._update(handle, env, finished=True)

    async def left(self, handle: str, env: Env[Any, Any, Any]) -> None:
        """Record an unfinished episode as it stands before its session goes (closed, or its socket moved on)."""
        live = self.ws.pop(handle, None)
        if live is not None and live.ended:
            return
        try:
            await self._update(handle, env, finished=False)
        except Exception:
            log.warning("could not record the sealed episode of a session that ended")


# --------------------------------------------------------------------------- routes
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
