"""A ready ASGI application for ``uvicorn integrity_gym.server.asgi:app`` (settings from ``IGYM_*``).

Importing this module builds the app; prefer ``igym serve`` or ``create_app`` in code. ``igym
serve`` also picks the WebSocket protocol; under plain uvicorn add
``--ws integrity_gym.server.ws:DirectWebSocketProtocol`` for the same speed (ws.py).
"""

from integrity_gym.server.app import app_from_environment

app = app_from_environment()
