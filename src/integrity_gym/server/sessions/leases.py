"""Leases in Redis: what a server process holds there lasts only while that process lives.

Each process (worker) of a shared store runs one heartbeat, ``WorkerLease``, in a thread of its own
(so an event loop busy with a long step does not stop it) that every ``lease_s / 3`` seconds, in one
Lua script:

* renews the worker's key ``<prefix>:w:<worker id>`` (time-to-live ``lease_s``, 3 s by default)
  and lists the worker id in ``<prefix>:workers``;
* renews every lock the worker holds (``<prefix>:lock:<session>``, ``<prefix>:elock:<evaluation>``:
  ``SET key token NX PX lease``, extended only while the token is still ours), so a lock whose
  holder died expires within ``lease_s``;
* frees the capacity slots of every worker whose key has expired (``RECLAIM_LUA``). The sessions
  only one worker can serve (its WebSocket connections') are listed in
  ``<prefix>:wslots:<worker id>`` besides the capacity index; the store's open and count scripts
  run the same reclaim, so a killed worker's slots stop counting within ``lease_s`` plus at most
  one heartbeat of a survivor.

A live worker that finds its own key gone (Redis was paused for longer than the lease, or the whole
process stalled) lists its slots again at once (``relist``).

The session store's per-use scripts (take a lock and read, save and release) go through
``WorkerLease.run``, which sends the calls made at about the same time in one pipeline: with many
sessions stepping at once, one write and one read to Redis serve several steps. The pipelines go
on a connection of their own, bounded by one timer per batch, their commands packed here
(``pack_scripts``): redis-py's ``Pipeline`` cost about twice as much CPU per call.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

log = logging.getLogger("integrity_gym.server.sessions")

T = TypeVar("T")

#: Lua: free the slots of every worker whose heartbeat key has expired. Expects ``prefix``,
#: ``workers`` (the set of worker ids) and ``index`` (the capacity ZSET) as locals.
RECLAIM_LUA = """
for _, wid in ipairs(redis.call('SMEMBERS', workers)) do
  if redis.call('EXISTS', prefix .. ':w:' .. wid) == 0 then
    local slots = prefix .. ':wslots:' .. wid
    local sids = redis.call('SMEMBERS', slots)
    for i = 1, #sids, 500 do
      redis.call('ZREM', index, unpack(sids, i, math.min(i + 499, #sids)))
    end
    redis.call('DEL', slots)
    redis.call('SREM', workers, wid)
  end
end
"""

# KEYS: heartbeat key, workers set, capacity index, then the locks held. ARGV: lease ms, worker
# id, key prefix, then each held lock's token (in the order of KEYS[4..]).
# Returns 1 when the worker's lease was still held, 0 when it had lapsed (or on the first beat).
_BEAT_SCRIPT = (
    """
local workers, index, prefix = KEYS[2], KEYS[3], ARGV[3]
local held = redis.call('SET', KEYS[1], '1', 'PX', ARGV[1], 'XX')
if not held then
  redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
end
redis.call('SADD', workers, ARGV[2])
for i = 4, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[i] then redis.call('PEXPIRE', KEYS[i], ARGV[1]) end
end
"""
    + RECLAIM_LUA
    + """
if held then return 1 end
return 0
"""
)

# KEYS: lock. ARGV: token. Delete the lock only if it is still ours.
_RELEASE_SCRIPT = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


def pack_scripts(calls: list[tuple[str, list[Any], list[Any]]]) -> bytes:
    """``EVALSHA sha numkeys keys... args...`` for each (sha, keys, args), as Redis reads them (RESP).

    The bytes redis-py's ``pack_commands`` makes of the same calls (tests/server/test_redis_batch.py
    compares them), at a third of its cost: every argument is bytes, str (UTF-8), int or float.
    """
    parts: list[bytes] = []
    for sha, keys, args in calls:
        parts.append(b"*%d\r\n$7\r\nEVALSHA\r\n$%d\r\n%s\r\n" % (3 + len(keys) + len(args), len(sha), sha.encode()))
        count = b"%d" % len(keys)
        parts.append(b"$%d\r\n%s\r\n" % (len(count), count))
        for arg in (*keys, *args):
            if type(arg) is not bytes:
                arg = (arg if type(arg) is str else repr(arg)).encode()
            parts.append(b"$%d\r\n%s\r\n" % (len(arg), arg))
    return b"".join(parts)


def new_worker_id() -> str:
    """An id for this process unique across hosts and restarts (host, pid and a random tail)."""
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(4)}"


class WorkerLease:
    """The heartbeat of this process in Redis: its lease, its locks' leases, dead workers' slots.

    ``sync_client`` is a synchronous ``redis.Redis`` used only by the heartbeat thread (with the
    store's bounded timeouts); ``async_client`` serves ``RedisLease`` and ``give_back``.
    ``relist`` is called (in the heartbeat thread, with the synchronous client) when the lease
    had lapsed, to list this worker's slots again.
    """

    def __init__(
        self,
        sync_client: Any,
        async_client: Any,
        prefix: str,
        index: str,
        *,
        lease_s: float,
        relist: Callable[[Any], None] | None = None,
    ) -> None:
        if lease_s <= 0:
            raise ValueError(f"lease must be positive, got {lease_s}")
        self.worker_id = new_worker_id()
        self.lease_s = lease_s
        self.interval_s = lease_s / 3
        self.key = f"{prefix}:w:{self.worker_id}"
        self.slots_key = f"{prefix}:wslots:{self.worker_id}"
        self.workers_key = f"{prefix}:workers"
        self._prefix = prefix
        self._index = index
        self._sync = sync_client
        self._async = async_client
        self._beat_script = sync_client.register_script(_BEAT_SCRIPT)
        self._release_script = async_client.register_script(_RELEASE_SCRIPT)
        self._relist = relist
        # (lock key, our token) of every lock held or being taken. Several leases of this process may
        # try the same key at once (e.g. two requests on one evaluation): each is listed on its own, so
        # one that fails to take the lock never unlists the holder's (whose lease would then lapse).
        self._held: dict[tuple[str, str], None] = {}
        self._held_guard = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._beats = 0
        self._failing = False
        #: Wall-clock time of the last renewal Redis confirmed (0 before the first).
        self.renewed_at = 0.0
        # Script calls waiting to be sent together (``run``), and the task sending them.
        self._batch: list[tuple[Any, list[Any], list[Any], asyncio.Future[Any]]] = []
        self._sender: asyncio.Task[None] | None = None
        self._conn: Any = None  # made by ``_connection``, with the two timeouts it applies per batch
        self._reply_timeout_s = self._connect_timeout_s = 1.0

    @property
    def lease_ms(self) -> int:
        """The lease in milliseconds (for ``PX``)."""
        return max(1, round(self.lease_s * 1000))

    @property
    def held(self) -> bool:
        """Whether the last confirmed renewal is recent enough for the lease to be alive."""
        return self.renewed_at > 0 and time.time() - self.renewed_at < self.lease_s

    # ------------------------------------------------------------------ the heartbeat
    def beat(self) -> None:
        """Renew the lease and the locks held (and reclaim dead workers' slots); relist if it had lapsed.

        Synchronous (the heartbeat thread's, or ``asyncio.to_thread``); raises Redis errors.
        """
        with self._held_guard:
            locks = list(self._held)
        keys = [self.key, self.workers_key, self._index, *(k for k, _ in locks)]
        args = [self.lease_ms, self.worker_id, self._prefix, *(t for _, t in locks)]
        held = int(self._beat_script(keys=keys, args=args))
        self.renewed_at = time.time()
        first = self._beats == 0
        self._beats += 1
        if not held and self._relist is not None:
            if not first:
                log.warning("worker lease %s had lapsed (Redis or this process stalled); slots listed again", self.key)
            self._relist(self._sync)

    def running(self) -> bool:
        """Whether the heartbeat thread runs."""
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Start the heartbeat thread (idempotent)."""
        if not self.running():
            self._stopping.clear()
            self._thread = threading.Thread(target=self._beat_forever, name="igym-worker-lease", daemon=True)
            self._thread.start()

    def _beat_forever(self) -> None:
        while not self._stopping.is_set():
            started = time.monotonic()
            try:
                self.beat()
                if self._failing:
                    log.warning("worker lease %s renewed again", self.key)
                self._failing = False
            except Exception as exc:  # Redis away: keep trying; the lease lapses if it lasts
                if not self._failing:
                    log.warning("could not renew worker lease %s: %s", self.key, exc)
                self._failing = True
            self._stopping.wait(max(0.0, self.interval_s - (time.monotonic() - started)))

    async def stop(self) -> None:
        """Stop the heartbeat and give the lease back (the caller frees its slots first)."""
        self._stopping.set()
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join, self.lease_s)
            self._thread = None
        with contextlib.suppress(Exception):
            pipe = self._async.pipeline(transaction=True)
            pipe.delete(self.key, self.slots_key)
            pipe.srem(self.workers_key, self.worker_id)
            await pipe.execute()
        with contextlib.suppress(Exception):
            self._sync.close()
        if self._conn is not None:
            with contextlib.suppress(Exception):
                await self._conn.disconnect()

    # ------------------------------------------------------------------ batched scripts
    async def run(self, script: Any, keys: list[Any], args: list[Any]) -> Any:
        """Run ``script`` (registered on the async client) on ``keys`` and ``args``; its reply.

        Calls are sent in batches, each batch one pipeline (one write, one read, instead of one
        each): the calls made in one turn of the event loop (the steps of several sessions), and
        while a batch is out, the calls made meanwhile, sent as the next batch once it is answered.
        Each script is still atomic on its own and answered, or failed, on its own. A batch that
        got no reply within the bounded timeouts fails the calls queued behind it too, so none
        waits for more than about one timeout.
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._batch.append((script, keys, args, future))
        if self._sender is None or self._sender.done():  # none out: send once this turn is over
            self._sender = loop.create_task(self._send_batches())
        return await future

    async def _send_batches(self) -> None:
        from redis.exceptions import TimeoutError as RedisTimeoutError

        while self._batch:
            batch, self._batch = self._batch, []
            failure = await self._send_batch([call for call in batch if not call[3].done()])
            if isinstance(failure, RedisTimeoutError):  # the calls queued meanwhile waited as long
                batch, self._batch = self._batch, []
                for *_, future in batch:
                    if not future.done():
                        future.set_exception(failure)

    async def _send_batch(self, batch: list[tuple[Any, list[Any], list[Any], asyncio.Future[Any]]]) -> Exception | None:
        """Send one batch and answer its calls; the exception if Redis failed the batch as a whole."""
        from redis.exceptions import NoScriptError

        if not batch:
            return None
        try:
            try:
                replies = await self._exchange(batch)
            except Exception as exc:
                for *_, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                return exc
            for (script, keys, args, future), reply in zip(batch, replies, strict=True):
                if isinstance(reply, NoScriptError):  # Redis lost its scripts (a restart): load, run again
                    try:
                        reply = await script(keys=keys, args=args)
                    except Exception as exc:
                        reply = exc
                if future.done():
                    continue
                if isinstance(reply, Exception):
                    future.set_exception(reply)
                else:
                    future.set_result(reply)
            return None
        except BaseException:  # cancelled (the event loop is closing): no caller is left waiting
            for *_, future in batch:
                future.cancel()
            raise

    async def _exchange(self, batch: list[tuple[Any, list[Any], list[Any], asyncio.Future[Any]]]) -> list[Any]:
        """Send the batch's scripts as one write on this worker's own connection; their replies, in order.

        A reply that is an error (a script's, or NOSCRIPT) is returned as its exception. The batch
        as a whole is bounded by the store's timeouts (one timer for it, where redis-py's
        ``Pipeline`` runs one per read and a task per write: a third of a step's CPU here); on any
        failure the connection is closed, so no reply of this batch is read by the next.
        """
        from redis.exceptions import ResponseError
        from redis.exceptions import TimeoutError as RedisTimeoutError

        conn = self._connection()
        bound = self._reply_timeout_s + (0.0 if conn.is_connected else self._connect_timeout_s)
        packed = pack_scripts([(script.sha, keys, args) for script, keys, args, _ in batch])
        replies: list[Any] = []
        try:
            async with asyncio.timeout(bound):
                await conn.send_packed_command(packed, check_health=False)
                for _ in batch:
                    try:
                        replies.append(await conn.read_response())
                    except ResponseError as exc:
                        replies.append(exc)
        except BaseException as exc:
            with contextlib.suppress(Exception):
                await conn.disconnect()
            if isinstance(exc, TimeoutError) and not isinstance(exc, RedisTimeoutError):
                raise RedisTimeoutError(f"no reply from Redis within {bound:g}s") from None
            raise
        return replies

    def _connection(self) -> Any:
        """The connection batches go on: the async client's settings, without its per-read timeout."""
        if self._conn is None:
            pool = self._async.connection_pool
            kwargs = dict(pool.connection_kwargs)
            self._reply_timeout_s = float(kwargs.get("socket_timeout") or 1.0)
            self._connect_timeout_s = float(kwargs.get("socket_connect_timeout") or 1.0)
            kwargs["socket_timeout"] = None  # bounded per batch instead (``_exchange``)
            self._conn = pool.connection_class(**kwargs)
        return self._conn

    # ------------------------------------------------------------------ locks
    def lock(self, key: str, *, wait_s: float, poll_s: float = 0.05) -> RedisLease:
        """A new (not yet taken) lock on ``key`` whose lease this heartbeat renews while held."""
        if not self.running():
            self.start()
        return RedisLease(self, key, wait_s=wait_s, poll_s=poll_s)

    def _hold(self, key: str, token: str) -> None:
        with self._held_guard:
            self._held[key, token] = None

    def _drop(self, key: str, token: str) -> None:
        with self._held_guard:
            self._held.pop((key, token), None)


class RedisLease:
    """A lock in Redis held as a lease: ``lease_s`` to live, renewed by the worker's heartbeat."""

    def __init__(self, worker: WorkerLease, key: str, *, wait_s: float, poll_s: float = 0.05) -> None:
        self._worker = worker
        self.key = key
        self.wait_s = wait_s
        self.poll_s = poll_s
        self.token = secrets.token_hex(16)
        self.acquired = False

    async def acquire(self) -> bool:
        """Take the lock, waiting up to ``wait_s`` for another holder; False if it stayed taken."""
        taken, _ = await self.acquire_with(self._try_set)
        return taken

    async def _try_set(self) -> tuple[bool, None]:
        taken = await self._worker._async.set(self.key, self.token, nx=True, px=self._worker.lease_ms)
        return bool(taken), None

    async def acquire_with(self, attempt: Callable[[], Awaitable[tuple[bool, T]]]) -> tuple[bool, T | None]:
        """Take the lock as ``acquire`` does, each try being one call of ``attempt``.

        ``attempt`` must, in one atomic Redis call, ``SET key token NX PX lease`` (``token`` and
        ``lease_ms`` of this lease and its worker) and may read more in the same call; it returns
        (whether the lock was taken, what it read). Tried again every ``poll_s`` while the lock is
        taken, up to ``wait_s``: returns (True, what the taking try read) or (False, None). An
        exception of ``attempt`` is raised as is, the lock not held.
        """
        deadline = time.monotonic() + self.wait_s
        while True:
            # Listed before the SET, so a beat between the two cannot miss it (renewing a lock
            # that is not ours yet is a no-op: the token does not match).
            self._worker._hold(self.key, self.token)
            try:
                taken, value = await attempt()
            except BaseException:
                self._worker._drop(self.key, self.token)
                raise
            if taken:
                self.acquired = True
                return True, value
            self._worker._drop(self.key, self.token)
            if time.monotonic() >= deadline:
                return False, None
            await asyncio.sleep(min(self.poll_s, max(0.0, deadline - time.monotonic())))

    def released(self) -> None:
        """Stop renewing the lock: a caller's script deleted it in Redis, or found it no longer ours.

        ``release`` is then a no-op.
        """
        self._worker._drop(self.key, self.token)
        self.acquired = False

    async def release(self) -> None:
        """Stop renewing and delete the lock if it is still ours (never raises)."""
        self._worker._drop(self.key, self.token)
        if self.acquired:
            self.acquired = False
            with contextlib.suppress(Exception):
                await self._worker._release_script(keys=[self.key], args=[self.token])
