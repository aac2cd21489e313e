"""A real server in this process that fails on purpose, and a TCP relay that can refuse connections.

``FaultyServer`` runs the real app (``create_app`` with the minimal task) under uvicorn in a
thread, behind a small ASGI layer that answers planned faults before the app sees the request (a
503 with Retry-After, a 429), or lets the app apply the request and then cuts the connection before
the reply. Over a WebSocket it can also let the app apply one message (``"WS step"``) and cut the
connection instead of sending the reply. It counts every request it receives per route, and every
WebSocket message per type, so a test can tell how often the client sent one. ``Relay`` forwards
TCP to that server and can be shut (connections refused) and reopened on the same port, or stalled
(connections hang unanswered), while the server and its sessions live on.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

import uvicorn

from integrity_gym.server.app import ServerConfig, create_app
from integrity_gym.server.minimal import MINIMAL_TASK
from tests.server.servers import ADMIN_TOKEN

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


@dataclass(frozen=True)
class Fault:
    """One planned failure: a refusal with ``status`` (and ``retry_after``), or a ``drop``."""

    status: int | None = None
    code: str = "SESSION_STORE_UNAVAILABLE"
    retry_after: str | None = None
    drop: bool = False


def route(scope: Scope) -> str:
    """``"POST /reset"``, ``"GET /state"``, ``"WS"``: the request's method and first path part after the env."""
    if scope["type"] == "websocket":
        return "WS"
    parts = scope["path"].strip("/").split("/")
    return f"{scope['method']} /{parts[1] if len(parts) > 1 else ''}"


class FaultyServer:
    """The real minimal-task server on 127.0.0.1, failing as planned with ``plan(route, *faults)``."""

    def __init__(self, *, max_sessions: int = 16) -> None:
        self.app = create_app([MINIMAL_TASK], ServerConfig(admin_token=ADMIN_TOKEN, max_sessions=max_sessions))
        self.faults: defaultdict[str, list[Fault]] = defaultdict(list)
        self.seen: Counter[str] = Counter()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def url(self) -> str:
        """The server's base URL."""
        return f"http://127.0.0.1:{self.port}"

    def plan(self, key: str, *faults: Fault) -> None:
        """Fail the next requests to ``key`` (e.g. ``"POST /reset"``; ``"WS step"``: a message) as listed, in order."""
        self.faults[key].extend(faults)

    def clear(self) -> None:
        """Forget planned faults and counts."""
        self.faults.clear()
        self.seen.clear()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        key = route(scope)
        self.seen[key] += 1
        fault = self.faults[key].pop(0) if self.faults[key] else None
        if fault is None and scope["type"] == "websocket":
            await self.app(scope, *self._watch(receive, send))
        elif fault is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":  # accept, then close before any reply
            await receive()
            await send({"type": "websocket.accept"})
            await send({"type": "websocket.close", "code": 1011})
        elif fault.drop:
            await self.app(scope, receive, _swallow)  # the server applies the request ...
            # ... and the reply is cut short: headers promise a body that never comes.
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"100")]})
        else:
            body = json.dumps({"code": fault.code, "detail": f"planned {fault.status}"}).encode()
            headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
            if fault.retry_after is not None:
                headers.append((b"retry-after", fault.retry_after.encode()))
            await send({"type": "http.response.start", "status": fault.status, "headers": headers})
            await send({"type": "http.response.body", "body": body})

    def _watch(self, receive: Receive, send: Send) -> tuple[Receive, Send]:
        """Count each WebSocket message by type (``"WS step"``); for one planned to fail, the app
        applies it and the connection is cut (close code 1011) instead of the reply."""
        cut = pending = False

        async def watched_receive() -> MutableMapping[str, Any]:
            nonlocal pending
            if cut:
                return {"type": "websocket.disconnect", "code": 1011}
            message = await receive()
            if message["type"] == "websocket.receive" and message.get("text"):
                with contextlib.suppress(ValueError, AttributeError):
                    key = f"WS {json.loads(message['text']).get('type')}"
                    self.seen[key] += 1
                    if self.faults[key]:
                        pending = self.faults[key].pop(0).drop
            return message

        async def watched_send(message: MutableMapping[str, Any]) -> None:
            nonlocal cut
            if cut:
                return
            if pending and message["type"] == "websocket.send":
                cut = True
                await send({"type": "websocket.close", "code": 1011})
                return
            await send(message)

        return watched_receive, watched_send

    def start(self) -> FaultyServer:
        """Serve on a free port until ``stop``."""
        config = uvicorn.Config(self, host="127.0.0.1", port=0, log_config=None, log_level="critical")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        while not self._server.started:
            if not self._thread.is_alive():
                raise RuntimeError("the in-process server did not start")
            self._thread.join(0.01)
        self.port = self._server.servers[0].sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        """Shut the server down."""
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(10)


async def _swallow(message: MutableMapping[str, Any]) -> None:
    return None


class Relay:
    """Forwards TCP from its own port to ``target_port``; ``shut`` refuses connections, ``open`` resumes."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self._listener: socket.socket | None = None
        self._conns: list[socket.socket] = []
        self._pumps: list[threading.Thread] = []
        self._acceptor: threading.Thread | None = None
        self._stalled: list[socket.socket] = []
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        """The relay's base URL."""
        return f"http://127.0.0.1:{self.port}"

    def open(self) -> None:
        """Listen (on the same port as before, after ``shut`` or ``stall``)."""
        self.unstall()
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        for attempt in range(50):  # the freed port may still be held a moment (a closing connection)
            try:
                listener.bind(("127.0.0.1", self.port))
                break
            except OSError:
                if self.port == 0 or attempt == 49:
                    raise
                time.sleep(0.02)
        listener.listen(16)
        listener.settimeout(0.05)
        self.port = listener.getsockname()[1]
        self._listener = listener
        self._acceptor = threading.Thread(target=self._accept, args=(listener,), daemon=True)
        self._acceptor.start()

    def shut(self) -> None:
        """Stop listening and cut every relayed connection: new connections are refused."""
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(OSError):  # stops listening now, even while accept() waits
                listener.shutdown(socket.SHUT_RDWR)
            if self._acceptor is not None:
                self._acceptor.join(5)
            listener.close()
        with self._lock:
            conns, self._conns = self._conns, []
            pumps, self._pumps = self._pumps, []
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        for pump in pumps:  # once they are done, no thread holds a socket open
            pump.join(5)
        for conn in conns:
            conn.close()

    def stall(self) -> None:
        """Cut every relayed connection and let new ones hang in the connect (a full accept queue)."""
        self.shut()
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(0)
        self._stalled = [listener]
        for _ in range(3):  # never accepted: once the queue is full, further connects get no answer
            filler = socket.socket()
            filler.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                filler.connect(("127.0.0.1", self.port))
            self._stalled.append(filler)

    def unstall(self) -> None:
        """Close what ``stall`` opened."""
        stalled, self._stalled = self._stalled, []
        for sock in stalled:
            sock.close()

    def _accept(self, listener: socket.socket) -> None:
        while self._listener is listener:
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.settimeout(None)
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            pumps = [
                threading.Thread(target=_pump, args=(client, upstream), daemon=True),
                threading.Thread(target=_pump, args=(upstream, client), daemon=True),
            ]
            with self._lock:
                self._conns += [client, upstream]
                self._pumps += pumps
            for pump in pumps:
                pump.start()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while chunk := source.recv(65536):
            sink.sendall(chunk)
    except OSError:
        pass
    for sock in (source, sink):
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
