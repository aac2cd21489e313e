"""Play a run's episodes in parallel threads, handing each finished record to the main thread.

At most ``concurrency`` episodes play at once (twice as many are queued). ``stop`` (set by Ctrl-C
or SIGTERM, see ``bench.signals``) ends the run between episodes: nothing new starts, episodes in
flight stop at their next step, and those that finished meanwhile are still handed over, so a
record is never half written.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from functools import partial
from typing import TYPE_CHECKING

from integrity_gym.bench.config import BenchConfig
from integrity_gym.bench.episode import RunInterrupted, play_episode
from integrity_gym.bench.record import PlannedEpisode
from integrity_gym.bench.records import EpisodeRecord
from integrity_gym.bench.signals import stop_on_signals

if TYPE_CHECKING:
    from integrity_gym.agents.llm import LLMSettings


class EpisodePool:
    """The threads that play a run's episodes; ``run`` plays them all (or until ``stop``)."""

    def __init__(
        self,
        bench: BenchConfig,
        llm_settings: LLMSettings | None,
        stop: threading.Event,
        handles: Mapping[tuple[str, int], str],
    ) -> None:
        self.bench, self.llm_settings, self.stop, self.handles = bench, llm_settings, stop, handles
        self._pool = ThreadPoolExecutor(max_workers=bench.concurrency, thread_name_prefix="igym-episode")
        self._pending: set[Future[EpisodeRecord]] = set()
        self._queue: list[PlannedEpisode] = []

    def _submit(self) -> None:
        while self._queue and len(self._pending) < self.bench.concurrency * 2:
            job = self._queue.pop()
            episode = partial(play_episode, epoch=job.epoch, llm_settings=self.llm_settings, stop=self.stop,
                              handle=self.handles.get(job.key))  # fmt: skip
            self._pending.add(self._pool.submit(episode, job.spec, self.bench, job.index, job.seed))

    @staticmethod
    def _collect(future: Future[EpisodeRecord], done: Callable[[EpisodeRecord], None]) -> None:
        try:
            record = future.result()
        except RunInterrupted:
            return
        done(record)

    def _drain(self, done: Callable[[EpisodeRecord], None]) -> None:
        """After ``stop``: start nothing more, keep the episodes in flight that still finish."""
        self._queue.clear()
        for future in list(self._pending):
            future.cancel()
        for future in list(self._pending):
            if not future.cancelled():
                wait([future])
                self._collect(future, done)

    def run(self, jobs: Sequence[PlannedEpisode], done: Callable[[EpisodeRecord], None]) -> bool:
        """Play ``jobs`` in order, calling ``done`` in this thread per finished episode; True if stopped."""
        self._queue = list(reversed(jobs))
        with stop_on_signals(self.stop):
            try:
                self._submit()
                while self._pending and not self.stop.is_set():
                    finished, _ = wait(self._pending, timeout=0.2, return_when=FIRST_COMPLETED)
                    for future in finished:
                        self._pending.discard(future)
                        self._collect(future, done)
                    if not self.stop.is_set():
                        self._submit()
            except KeyboardInterrupt:
                self.stop.set()
            finally:
                if self.stop.is_set():
                    self._drain(done)
                self._pool.shutdown(wait=False, cancel_futures=True)
        return self.stop.is_set()


__all__ = ["EpisodePool"]
