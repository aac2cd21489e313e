"""``DirectWebSocketProtocol``: uvicorn's sans-I/O WebSocket protocol, answering text without the ASGI round trip.

Through ASGI, each message is queued, reading is paused and resumed, and the endpoint's task is
woken and resumed through every middleware's frame before it answers: about 15% of the server's
CPU per pii_redaction step (benchmarks/server.py). This protocol puts a dict in the scope's
extensions under ``DIRECT_EXTENSION``; an endpoint that stores a ``handler`` there (message text
-> reply text, or ``None``) has each complete single-frame text message answered here, in
arrival order. A ``None`` reply, a handler failure, a binary or fragmented message, a message
while earlier ones still wait for the endpoint, a transport paused for writing and a connection
that is not open all take uvicorn's usual path, so the endpoint gets them from ``receive()``. The
endpoint counts down ``pending`` once it has answered each message it received; an endpoint that
ignores the extension behaves as under the parent class.

What it relies on: asyncio's protocol callbacks (``connection_made``, ``pause_writing``,
``resume_writing``), websockets' public sans-I/O API (``ServerProtocol.state``, ``send_text``,
``data_to_send``), and, of uvicorn's ``WebSocketsSansIOProtocol``, its hooks ``handle_connect``,
``handle_text`` and ``handle_bytes`` and two attributes read in one place,
``_uvicorn_connection``: ``scope`` and ``conn``. That function answers only on a uvicorn in
``UVICORN_CHECKED``: on any other release each connection answers through ASGI (a warning is
logged once), and tests/server/test_direct_ws.py fails naming what to re-check. ``igym serve``
runs this protocol; that test file also checks that it is used and that its replies equal the
ASGI path's, byte for byte.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, cast

import uvicorn
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.frames import Frame
from websockets.http11 import Request
from websockets.protocol import State
from websockets.server import ServerProtocol

log = logging.getLogger("integrity_gym.server.ws")

#: The ASGI scope extension of ``DirectWebSocketProtocol`` (a dict the endpoint puts its handler in).
DIRECT_EXTENSION = "integrity_gym.direct"
#: The uvicorn releases whose ``WebSocketsSansIOProtocol`` this module was checked against: [first, past).
UVICORN_CHECKED = ((0, 52, 1), (0, 56))

Direct = dict[str, Any]


def uvicorn_checked(version: str = uvicorn.__version__) -> bool:
    """Whether uvicorn ``version`` is one this module was checked against (``UVICORN_CHECKED``)."""
    try:
        parts = tuple(int(p) for p in version.split(".")[:3])
    except ValueError:  # a pre-release or local build: not checked
        return False
    first, past = UVICORN_CHECKED
    return first <= parts < past


_warned: list[str] = []


def _uvicorn_connection(protocol: WebSocketsSansIOProtocol) -> tuple[dict[str, Any], ServerProtocol] | None:
    """The connection's ASGI scope extensions and websockets protocol, read from uvicorn's private state.

    None when the handshake was refused (no scope), and, with a warning logged once, on a uvicorn
    outside ``UVICORN_CHECKED`` or keeping other state: the connection then answers through ASGI.
    """
    version = uvicorn.__version__
    scope = getattr(protocol, "scope", None)  # absent when the handshake was refused
    conn = getattr(protocol, "conn", None)
    if uvicorn_checked(version) and isinstance(conn, ServerProtocol):
        if scope is None:
            return None
        extensions = scope.get("extensions") if isinstance(scope, dict) else None
        if isinstance(extensions, dict):
            return extensions, conn
    if not _warned:
        _warned.append(version)
        log.warning(
            "uvicorn %s's WebSocket protocol is not one DirectWebSocketProtocol was checked against "
            "(uvicorn %s to before %s): using ASGI",
            version,
            ".".join(map(str, UVICORN_CHECKED[0])),
            ".".join(map(str, UVICORN_CHECKED[1])),
        )
    return None


class DirectWebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's sans-I/O WebSocket protocol, answering text messages without the ASGI round trip (see the module)."""

    _direct: Direct | None = None
    _conn: ServerProtocol | None = None
    _transport: asyncio.Transport | None = None
    _paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Keep the transport (asyncio callback), then connect as the parent does."""
        self._transport = cast(asyncio.Transport, transport)  # uvloop's transports do not subclass asyncio's
        super().connection_made(transport)

    def pause_writing(self) -> None:
        """The transport's buffer is over its high-water mark: answer through ASGI until it drains."""
        self._paused = True
        super().pause_writing()

    def resume_writing(self) -> None:
        """The transport's buffer drained."""
        self._paused = False
        super().resume_writing()

    def handle_connect(self, event: Request) -> None:
        """Accept the handshake as the parent does, then offer the extension in the scope."""
        super().handle_connect(event)
        found = _uvicorn_connection(self)
        if found is not None:
            extensions, self._conn = found
            self._direct = extensions[DIRECT_EXTENSION] = {"pending": 0}

    def handle_text(self, event: Frame) -> None:
        """Answer a complete text message with the endpoint's handler, else hand it to the endpoint."""
        if not (event.fin and self._answered(event.data)):
            self._hand_over()
            super().handle_text(event)

    def handle_bytes(self, event: Frame) -> None:
        """Hand a binary message to the endpoint (it waits its turn: later text is not answered before it)."""
        self._hand_over()
        super().handle_bytes(event)

    def _hand_over(self) -> None:
        if self._direct is not None:
            self._direct["pending"] += 1

    def _answered(self, data: Any) -> bool:
        """Whether the handler answered ``data`` here: text, nothing waiting before it, writable, open."""
        direct, conn, transport = self._direct, self._conn, self._transport
        handler: Callable[[str], str | None] | None = direct.get("handler") if direct is not None else None
        if handler is None or conn is None or transport is None or direct is None or direct["pending"]:
            return False
        if self._paused or transport.is_closing() or conn.state is not State.OPEN:
            return False
        try:
            reply = handler(str(data, "utf-8"))
        except UnicodeDecodeError:
            return False  # the parent closes with 1007
        except Exception:  # never break the protocol: the endpoint meets the same failure
            log.exception("direct WebSocket handler failed; passing the message to the endpoint")
            return False
        if reply is None:
            return False
        conn.send_text(reply.encode())
        transport.write(b"".join(conn.data_to_send()))
        return True
