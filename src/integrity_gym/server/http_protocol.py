"""``HeadTimeoutProtocol``: uvicorn's httptools protocol, closing connections whose request head never comes.

uvicorn times nothing between a connection's opening and the end of its request head (its
keep-alive timer runs only between requests, and any byte received cancels it), so a client can
hold a connection, and a file descriptor, for ever by sending nothing or a header a byte at a
time. This protocol gives:

* a new connection ``connect_idle_timeout_s`` (``IGYM_CONNECT_IDLE_TIMEOUT``, 60 s) to begin its
  first request. Generous on purpose: a client opening thousands of connections at once writes
  its handshakes long after the kernel accepted them (OpenEnv's scaling harness, at 16,384
  sessions on two cores, writes some more than 20 s late);
* every request head, the WebSocket handshake's included, ``header_timeout_s``
  (``IGYM_HEADER_TIMEOUT``, 10 s) from its first byte to its end: a head trickled a byte at a time
  is cut off.

Past either the client gets a 408 ``REQUEST_TIMEOUT`` and the connection is closed. The body has
its own limit, applied by ``security.BodyLimitMiddleware`` under any server.

What it relies on: ``HttpToolsProtocol``'s parser callbacks ``on_message_begin`` and
``on_headers_complete`` (called for every request, upgrades included), its ``loop`` and
``transport``. ``igym serve`` runs it; tests/server/test_timeouts.py checks both timeouts against
a real server.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from integrity_gym.server.config import ENV_NAMES, ServerConfig

log = logging.getLogger("integrity_gym.server")


@functools.cache
def timeout_s(setting: str) -> float:
    """A timeout of this process (``connect_idle_timeout_s``, ``header_timeout_s``), read once from its variable.

    ``serve`` writes the variables for its workers; unset, the setting's default.
    """
    raw = os.environ.get(ENV_NAMES[setting], "")
    return float(raw) if raw else float(ServerConfig.model_fields[setting].default)


def timeout_reply(what: str, seconds: float) -> bytes:
    """A complete ``408`` response closing the connection, its JSON body naming the limit."""
    body = json.dumps(
        {
            "detail": f"{what} was not received within {seconds:g}s; send the whole request promptly "
            "(the server's --header-timeout and --body-timeout set the limits)",
            "code": "REQUEST_TIMEOUT",
        }
    ).encode()
    head = (
        b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\n"
        b"content-length: " + str(len(body)).encode() + b"\r\n\r\n"
    )
    return head + body


class HeadTimeoutProtocol(HttpToolsProtocol):
    """uvicorn's httptools HTTP protocol with a time limit on every request head (see the module)."""

    _head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: Any) -> None:
        """Start as the parent does, and give the first request its time to begin."""
        super().connection_made(transport)
        self._arm("connect_idle_timeout_s", "the first request")

    def on_message_begin(self) -> None:
        """A request's first byte: its head must be complete in time."""
        super().on_message_begin()
        self._disarm()
        self._arm("header_timeout_s", "the request head")

    def on_headers_complete(self) -> None:
        """The head arrived in time: the request (or the WebSocket upgrade) goes on as usual."""
        self._disarm()
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        """Stop the timer, then close as the parent does."""
        self._disarm()
        super().connection_lost(exc)

    def _arm(self, setting: str, what: str) -> None:
        seconds = timeout_s(setting)
        self._head_timer = self.loop.call_later(seconds, self._timed_out, what, seconds)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _timed_out(self, what: str, seconds: float) -> None:
        self._head_timer = None
        if self.transport.is_closing():
            return
        log.info("closed a connection from %s: %s not received within %gs", self.client, what, seconds)
        self.transport.write(timeout_reply(what, seconds))
        self.transport.close()
