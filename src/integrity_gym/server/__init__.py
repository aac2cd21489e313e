"""One server for every registered environment: OpenEnv's WebSocket protocol and stateful HTTP.

Needs the ``server`` extra (FastAPI and uvicorn): ``pip install 'integrity-gym[server]'``.
"""

from integrity_gym.server.app import create_app, serve
from integrity_gym.server.config import ServerConfig

__all__ = ["ServerConfig", "create_app", "serve"]
