"""The sealed evaluations of one server: creating, starting, recording and closing them.

:class:`Evaluations` extends :class:`~integrity_gym.server.evaluations.items.TaskItems` (the items
it draws) with every evaluation's records in the session store: its episodes, which handle
started which session, and each episode's result, released at the close.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from integrity_gym.core.registry import TaskSpec
from integrity_gym.server.evaluations.items import TaskItems
from integrity_gym.server.evaluations.models import _TOKEN, EvaluationRequest
from integrity_gym.server.evaluations.sealing import refuse_unsealed_reset
from integrity_gym.server.security import ApiError
from integrity_gym.server.sessions import EvaluationCapacityError, Session, SessionBusyError, SessionNotFoundError

if TYPE_CHECKING:
    from integrity_gym.core.env import Env
    from integrity_gym.server.config import ServerConfig
    from integrity_gym.server.service import EnvService, ResetRequest, StoreHolder

log = logging.getLogger("integrity_gym.server.evaluations")


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


class Evaluations(TaskItems):
    """The sealed evaluations of one server: drawing, starting, recording and closing."""

    def __init__(
        self,
        config: ServerConfig,
        services: Mapping[str, EnvService],
        holder: StoreHolder,
        specs: Sequence[TaskSpec],
    ) -> None:
        super().__init__(holder, specs)
        self.config = config
        self.services = services
        #: Sealed episodes on this process's WebSockets, by handle.
        self.ws: dict[str, WsEpisode] = {}

    # ------------------------------------------------------------------ creating
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
            reused = await self._repeated_seeds(body.repeat_of, task_ids, body.episodes, mode)
        eval_id = secrets.token_urlsafe(16)
        try:
            await store.eval_reserve(eval_id)
        except EvaluationCapacityError as exc:
            raise ApiError(
                503, "CAPACITY_REACHED", str(exc), active_evaluations=exc.active, max_evaluations=exc.maximum
            ) from exc
        try:
            episodes = await self._hand_out(specs, body.episodes, mode, reused)
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

    async def _hand_out(
        self, specs: Sequence[TaskSpec], count: int, mode: str, reused: dict[tuple[str, int], int] | None
    ) -> list[dict[str, Any]]:
        """The episode records of a new evaluation: ``count`` per task, reused or freshly drawn, one handle each."""
        episodes: list[dict[str, Any]] = []
        fingerprint = mode.split(":", 1)[-1]
        if reused is None:  # before drawing anything: a refusal must not use up another task's items
            for spec in specs:
                await self._check_room(spec, count, f"{fingerprint}:{spec.id}")
        for spec in specs:
            if reused is not None:
                seeds = [reused[(spec.id, i)] for i in range(count)]
            else:
                seeds = await self._draw(spec, count, f"{fingerprint}:{spec.id}")
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
        return episodes

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
