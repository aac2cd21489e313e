"""Stopping a run cleanly: SIGINT and SIGTERM set the run's ``stop`` event instead of killing it.

Ctrl-C, and SIGTERM (what ``timeout``, ``docker stop`` and a cluster's pre-emption send), only set
``stop``: the run notices it between episodes, finishes its record and is marked interrupted. A
second signal raises ``KeyboardInterrupt`` and forces the way out.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

#: What stops a run cleanly.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM set ``stop`` (main thread only; elsewhere nothing changes)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()

    previous = {sig: signal.signal(sig, handler) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


__all__ = ["STOP_SIGNALS", "stop_on_signals"]
