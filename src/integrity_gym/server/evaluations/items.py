"""The items a sealed server hands out: the tasks an evaluation names, their item pools, fresh seeds.

Every item goes to one evaluation only: :class:`TaskItems` draws seeds the server chose and
records the item each one plays per secret and task, in the session store.
"""

from __future__ import annotations

import fnmatch
import secrets
from collections.abc import Sequence
from typing import TYPE_CHECKING

from integrity_gym.core.registry import TaskSpec
from integrity_gym.server.evaluations.models import _TOKEN
from integrity_gym.server.security import ApiError
from integrity_gym.server.sessions import SessionStore

if TYPE_CHECKING:
    from integrity_gym.server.service import StoreHolder

#: Seeds are drawn below this bound (62 bits: far beyond any search by first observation).
SEED_BITS = 62


class TaskItems:
    """The served tasks of a sealed server and the items each hands out: naming tasks, item pools, draws."""

    def __init__(self, holder: StoreHolder, specs: Sequence[TaskSpec]) -> None:
        self.holder = holder
        self.specs = list(specs)
        self.by_id = {s.id: s for s in specs}
        self._pools: dict[str, int | None] = {}

    @property
    def store(self) -> SessionStore:
        """The session store, which keeps the evaluations too."""
        return self.holder.store

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

    async def _repeated_seeds(
        self, repeat_of: str, task_ids: Sequence[str], episodes: int, mode: str
    ) -> dict[tuple[str, int], int]:
        """The seeds of evaluation ``repeat_of`` by (task, index); 404 or 422 unless it is the same request."""
        store = self.store
        earlier = await store.eval_meta(repeat_of) if _TOKEN.match(repeat_of) else None
        if earlier is None:
            raise ApiError(404, "EVALUATION_NOT_FOUND", f"repeat_of: no evaluation {repeat_of!r} (unknown or expired)")
        if earlier["tasks"] != task_ids or earlier["episodes"] != episodes:
            message = (
                f"repeat_of: evaluation {repeat_of!r} had tasks {earlier['tasks']} with "
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
                f"repeat_of: evaluation {repeat_of!r} was drawn under another secret ({earlier['data_mode']})",
            )
        return {(e["task_id"], e["index"]): e["seed"] for e in await store.eval_episodes(repeat_of)}
