"""The event loop the synchronous clients run on: one daemon thread per process, started on first use.

``RemoteEnv`` is a facade over ``AsyncRemoteEnv``: each of its calls hands the async client's
coroutine to this loop and waits in the calling thread for the result (``run``: what
``asyncio.run_coroutine_threadsafe(coro, loop).result()`` does, with a lighter hand-back). So a
sync client works from any thread, from several threads at once (each waits only for its own
coroutine; the loop interleaves their network waits), and inside a running event loop too (it never
touches that loop). The loop is uvloop's where uvloop is installed, else asyncio's. The thread
lives as long as the process; a forked child starts its own on first use.
"""

from __future__ import annotations

import asyncio
import os
import queue
import threading
from collections.abc import Coroutine
from typing import Any, Generic, TypeVar, cast

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None


def _new_loop() -> asyncio.AbstractEventLoop:
    """A new loop: uvloop's where it is installed (``uvicorn[standard]`` brings it), else asyncio's.

    Each call crosses threads twice; uvloop's cross-thread wake-ups cost about half as much.
    """
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def _serve(loop: asyncio.AbstractEventLoop) -> None:
    asyncio.set_event_loop(loop)
    loop.run_forever()


def shared_loop() -> asyncio.AbstractEventLoop:
    """The background loop, started (with its thread) the first time it is asked for."""
    global _loop, _thread
    with _lock:
        if _loop is None or _thread is None or not _thread.is_alive():
            loop = _new_loop()
            thread = threading.Thread(target=_serve, args=(loop,), name="integrity-gym-client-loop", daemon=True)
            thread.start()  # coroutines handed over before run_forever starts simply wait for it
            _loop, _thread = loop, thread
        return _loop


class _Call(Generic[T]):
    """One coroutine handed to the loop, and its outcome handed back to the thread that waits for it.

    The coroutine's own task hands its outcome back through a ``SimpleQueue``: no turn of the loop
    for a done-callback and no ``concurrent.futures.Future``, as ``run_coroutine_threadsafe`` takes.
    """

    def __init__(self, coro: Coroutine[Any, Any, T]) -> None:
        self.coro = coro
        self.done: queue.SimpleQueue[None] = queue.SimpleQueue()
        self.value: T | None = None
        self.error: BaseException | None = None
        self.task: asyncio.Task[None] | None = None
        self.abandoned = False

    def start(self) -> None:
        """On the loop: start the coroutine (unless the caller stopped waiting already)."""
        if self.abandoned:
            self.coro.close()
        else:
            self.task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        try:
            self.value = await self.coro
        except BaseException as exc:  # all of it goes to the caller, the loop's thread lives on
            self.error = exc
        self.done.put(None)

    def cancel(self) -> None:
        """On the loop: stop the coroutine (the caller stopped waiting)."""
        if self.task is not None:
            self.task.cancel()


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on the background loop and return its result (or raise its error) here."""
    if threading.current_thread() is _thread:
        coro.close()
        raise RuntimeError("a RemoteEnv cannot be called from its own event-loop thread: use AsyncRemoteEnv there")
    loop = shared_loop()
    call = _Call(coro)
    loop.call_soon_threadsafe(call.start)
    try:
        call.done.get()
    except BaseException:  # e.g. KeyboardInterrupt while waiting: stop the coroutine as well
        call.abandoned = True
        loop.call_soon_threadsafe(call.cancel)
        raise
    if call.error is not None:
        raise call.error
    return cast(T, call.value)


def _forget_after_fork() -> None:
    """In a forked child the loop's thread is gone (and the lock may be held): start afresh."""
    global _lock, _loop, _thread
    _lock = threading.Lock()
    _loop = _thread = None


os.register_at_fork(after_in_child=_forget_after_fork)
