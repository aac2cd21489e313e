"""One way to drive either client in a test: ``c("reset", seed=1)`` returns the result, sync or async."""

from __future__ import annotations

import asyncio
import inspect
from dataclasses import dataclass, field
from typing import Any

from integrity_gym.client import AsyncRemoteEnv, RemoteEnv


@dataclass
class Client:
    """A sync or async client driven the same way: ``c("reset", seed=1)`` returns the result."""

    env: RemoteEnv | AsyncRemoteEnv
    loop: asyncio.AbstractEventLoop
    sleeps: list[float] = field(default_factory=list)

    def __call__(self, method: str, *args: Any, **kwargs: Any) -> Any:
        value = getattr(self.env, method)(*args, **kwargs)
        return self.loop.run_until_complete(value) if inspect.isawaitable(value) else value
