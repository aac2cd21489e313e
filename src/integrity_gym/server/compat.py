"""One environment at the server root, and the seed clients' dialects (``igym serve --profile``).

An OpenEnv Space serves a single environment at ``/`` (``/ws``, ``/reset``, ``/health`` ...).
``RootMount`` gives our server that shape: a request to ``/<path>`` is answered by
``/<env>/<path>``, while the prefixed paths keep working (the environment's ``/docs`` and
``/openapi.json`` name them).

A profile speaks the wire dialect of a seed document's own client, so it runs unmodified. The
environment that speaks it declares it (``EnvExtras.profiles``; ``envs/pii_redaction/seed001.py``,
``envs/information_integrity/seed000.py``). Every profile's state (``{"type": "state"}``) carries
the session's ``episode_id``, as OpenEnv's ``State(episode_id, step_count)`` does.
"""

from __future__ import annotations

import importlib

from starlette.types import ASGIApp, Receive, Scope, Send

from integrity_gym.core.extras import Dialect
from integrity_gym.core.registry import env_extras, list_tasks


class RootMount:
    """ASGI wrapper serving environment ``env`` at ``/`` besides ``/<env>``."""

    def __init__(self, app: ASGIApp, env: str, keep: tuple[str, ...] = ()) -> None:
        self.app = app
        self.prefix = f"/{env}"
        #: Top-level paths (and their sub-paths) left as they are (a sealed server's /evaluations).
        self.keep = keep

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer ``/<path>`` as ``/<env>/<path>`` (``/`` itself stays the server's index)."""
        if scope["type"] in ("http", "websocket"):
            path: str = scope["path"]
            kept = any(path == k or path.startswith(k + "/") for k in self.keep)
            if not kept and path != "/" and path != self.prefix and not path.startswith(self.prefix + "/"):
                scope = {**scope, "path": self.prefix + path, "raw_path": (self.prefix + path).encode()}
        await self.app(scope, receive, send)


def profiles() -> dict[str, tuple[str, Dialect]]:
    """Every seed client's dialect the registered environments declare: name -> (env, dialect)."""
    found: dict[str, tuple[str, Dialect]] = {}
    for env in dict.fromkeys(spec.env for spec in list_tasks()):
        for name, module in env_extras(env).profiles.items():
            found[name] = (env, importlib.import_module(module).DIALECT)
    return found
