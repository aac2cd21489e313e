"""``DirectWebSocketProtocol``: text messages answered inside the protocol, exactly as through ASGI.

Each test serves the same application in-process under uvicorn twice: with the protocol ``igym
serve`` runs (``integrity_gym.server.ws:DirectWebSocketProtocol``) and with uvicorn's plain
``websockets-sansio`` one, whose messages all go through the endpoint's ``receive()``. The
transcripts must be equal byte for byte, and the direct protocol must really take its short path
(a uvicorn upgrade that renamed the hook would silently lose it).
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import uvicorn
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.client import ClientProtocol
from websockets.exceptions import ConnectionClosed
from websockets.frames import Frame
from websockets.http11 import Response
from websockets.sync.client import ClientConnection, connect
from websockets.uri import parse_uri

from integrity_gym.server import ServerConfig, create_app, direct_ws, serve, ws
from tests.server.servers import ServerProcess

DIRECT = "integrity_gym.server.ws:DirectWebSocketProtocol"
PLAIN = "websockets-sansio"
PII = "pii_redaction/gdpr_contract_easy-v4"


@contextmanager
def serving(ws_impl: str, **config: Any) -> Iterator[str]:
    """Serve a fresh app on a free port in a thread under uvicorn with ``ws_impl``; yield its ws:// base."""
    app = create_app(config=ServerConfig(tasks="pii_redaction/*", max_body_bytes=4096, **config))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, ws=ws_impl, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the in-process server did not start"
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"ws://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


class RawClient:
    """websockets' sans-I/O client protocol on a plain socket: the test decides when bytes move.

    ``queue_text``/``queue_binary`` only frame messages; ``pending`` hands over every queued byte
    (to write at once, or from another thread); ``replies`` reads until that many frames came.
    """

    def __init__(self, url: str, rcvbuf: int | None = None) -> None:
        uri = parse_uri(url)
        self.protocol = ClientProtocol(uri, max_size=None)
        self.sock = socket.socket()
        if rcvbuf is not None:  # before connecting, so the window is small from the start
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(30)
        self.sock.connect((uri.host, uri.port))
        self.protocol.send_request(self.protocol.connect())
        self.sock.sendall(self.pending())
        self.frames: list[Frame] = []
        handshake = False
        while not handshake:
            handshake = any(isinstance(e, Response) for e in self._read())

    def _read(self) -> list[object]:
        self.protocol.receive_data(self.sock.recv(1 << 16))
        events = self.protocol.events_received()
        self.frames += [e for e in events if isinstance(e, Frame)]
        return events

    def queue_text(self, message: Any) -> None:
        """Frame ``message`` (a JSON value) as a text message, without sending it yet."""
        self.protocol.send_text(json.dumps(message).encode())

    def queue_binary(self, data: bytes) -> None:
        """Frame ``data`` as a binary message, without sending it yet."""
        self.protocol.send_binary(data)

    def pending(self) -> bytes:
        """Every byte framed and not yet handed over."""
        return b"".join(self.protocol.data_to_send())

    def replies(self, count: int) -> list[Any]:
        """Read until ``count`` frames have come; return them parsed as JSON."""
        while len(self.frames) < count:
            self._read()
        return [json.loads(bytes(f.data)) for f in self.frames[:count]]

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.sock.close()


def _open(base: str) -> ClientConnection:
    return connect(f"{base}/pii_redaction/ws", proxy=None, open_timeout=10, close_timeout=5)


def _conversation(conn: ClientConnection) -> list[str]:
    """Every kind of message, good and bad, then a pipelined burst; the replies in order."""
    skip = json.dumps({"type": "step", "data": {"action_type": "SKIP"}})
    messages: list[str | bytes] = [
        '{"type": "grade"}',  # before any reset
        json.dumps({"type": "reset", "data": {"task": PII, "seed": 7}}),
        skip,
        '{"type": "step", "data": {"action_type": "REDACT", "start": 0, "end": 5, "label": "NAME"}}',
        '{"type": "step", "data": {"action_type": "JUMP"}}',
        '{"type": "step"}',
        "not json",
        "[1, 2]",
        '{"type": "dance"}',
        "{}",
        '{"type": "grade"}',  # mid-episode: refused
        '{"type": "state"}',
        '{"type": "reset", "data": {"seed": "one"}}',
        "[" * 200 + "]" * 200,  # nested too deep
        '{"type": "state", "pad": "' + "x" * 5000 + '"}',  # over max_body_bytes
        b'{"type": "state"}',  # binary JSON: accepted like text
        b"\xff\xfe",  # binary, not UTF-8
        '{"type": "step", "data": {"action_type": "FINISH"}}',
        skip,  # after the end
        '{"type": "grade"}',
    ]
    replies = []
    for message in messages:
        conn.send(message)
        replies.append(str(conn.recv(timeout=10)))
    conn.send(json.dumps({"type": "reset", "data": {"task": PII, "seed": 8}}))
    replies.append(str(conn.recv(timeout=10)))
    for _ in range(5):  # pipelined: all sent before any reply is read
        conn.send(skip)
    replies += [str(conn.recv(timeout=10)) for _ in range(5)]
    return replies


def _play(ws_impl: str) -> tuple[list[str], int | None]:
    with serving(ws_impl) as base, _open(base) as conn:
        replies = _conversation(conn)
        conn.send('{"type": "close"}')
        with pytest.raises(ConnectionClosed):
            conn.recv(timeout=10)
        return replies, conn.close_code


_EPISODE_ID = re.compile(r'"episode_id": ?"[0-9a-f-]{36}"')


def _count_endpoint_messages(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record each message uvicorn hands to the endpoint's queue (the ASGI path)."""
    seen: list[str] = []
    parent: Callable[[WebSocketsSansIOProtocol], None] = WebSocketsSansIOProtocol.send_receive_event_to_app

    def counting(self: WebSocketsSansIOProtocol) -> None:
        seen.append(self.curr_msg_data_type)
        parent(self)

    monkeypatch.setattr(WebSocketsSansIOProtocol, "send_receive_event_to_app", counting)
    return seen


def test_direct_replies_equal_the_asgi_path_byte_for_byte(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _count_endpoint_messages(monkeypatch)
    plain, plain_code = _play(PLAIN)
    plain_seen = list(seen)
    seen.clear()
    direct, direct_code = _play(DIRECT)
    # Each reset draws a random episode id: the same on both paths only once masked (each path shows one).
    masked = [[_EPISODE_ID.sub('"episode_id":"<episode>"', r) for r in replies] for replies in (plain, direct)]
    assert masked[0] == masked[1]
    assert sum(r.count("<episode>") for r in masked[1]) == sum(len(_EPISODE_ID.findall(r)) for r in direct) > 0
    assert direct_code == plain_code == 1000
    # Sanity of the transcript itself: real episodes, real errors, in order.
    kinds = [json.loads(r)["type"] for r in plain]
    assert [kinds.count(k) for k in ("observation", "error", "state", "grade")] == [11, 12, 2, 1]
    assert json.loads(plain[-1])["data"]["observation"]["step_count"] == 5
    # Under the plain protocol every message went through the endpoint's queue; under the direct
    # one only the two binary messages and the close did.
    assert len(plain_seen) == 27
    assert seen == ["bytes", "bytes", "text"]


def test_the_served_protocol_is_the_direct_one(monkeypatch: pytest.MonkeyPatch) -> None:
    captured: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: captured.update(k))
    serve(config=ServerConfig())
    assert captured["ws"] == DIRECT
    assert uvicorn.Config(app=lambda: None, ws=captured["ws"]).ws == DIRECT  # importable by uvicorn
    assert issubclass(uvicorn.importer.import_from_string(DIRECT), WebSocketsSansIOProtocol)


def test_a_handler_failure_is_answered_and_closes_as_on_the_asgi_path(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(text: str, *args: Any, **kwargs: Any) -> str | None:
        raise RuntimeError("a server bug")

    monkeypatch.setattr(ws, "_handle", broken)
    outcomes = []
    for impl in (PLAIN, DIRECT):
        with serving(impl) as base, _open(base) as conn:
            conn.send('{"type": "state"}')
            reply = json.loads(conn.recv(timeout=10))
            with pytest.raises(ConnectionClosed):
                conn.recv(timeout=10)
            outcomes.append((reply, conn.close_code))
    assert outcomes[0] == outcomes[1]
    reply, code = outcomes[1]
    assert reply["data"]["code"] == "EXECUTION_ERROR" and reply["data"]["error_type"] == "InternalError"
    assert code == ws.CLOSE_INTERNAL_ERROR


def test_a_reaped_session_is_closed_not_answered() -> None:
    with serving(DIRECT, session_ttl_s=0.3, reap_interval_s=0.05) as base, _open(base) as conn:
        conn.send(json.dumps({"type": "reset", "data": {"task": PII, "seed": 1}}))
        assert json.loads(conn.recv(timeout=10))["type"] == "observation"
        time.sleep(1.0)  # idle past the time-to-live: the reaper ends the session
        reply = json.loads(conn.recv(timeout=10))
        assert reply["data"]["code"] == "SESSION_ERROR"
        with pytest.raises(ConnectionClosed):
            conn.send('{"type": "state"}')
            conn.recv(timeout=10)
        assert conn.close_code == ws.CLOSE_GOING_AWAY


def test_a_message_queued_for_the_endpoint_is_answered_before_later_ones() -> None:
    """A binary message goes through the endpoint's queue: text arriving with it must wait its turn."""
    skip = {"type": "step", "data": {"action_type": "SKIP"}}
    with serving(DIRECT) as base, RawClient(f"{base}/pii_redaction/ws") as client:
        client.queue_text({"type": "reset", "data": {"task": PII, "seed": 3}})
        client.queue_binary(b'{"type": "state"}')
        for _ in range(3):
            client.queue_text(skip)
        client.sock.sendall(client.pending())  # one write: all five arrive together
        replies = client.replies(5)
    assert [r["type"] for r in replies] == ["observation", "state", "observation", "observation", "observation"]
    assert replies[1]["data"]["step_count"] == 0
    assert [r["data"]["observation"]["step_count"] for r in replies[2:]] == [1, 2, 3]


def test_the_installed_uvicorn_is_one_the_direct_protocol_was_checked_against() -> None:
    """Fails on a uvicorn release the short path was not checked against (it then answers through ASGI)."""
    first, past = (".".join(map(str, v)) for v in direct_ws.UVICORN_CHECKED)
    assert direct_ws.uvicorn_checked(uvicorn.__version__), (
        f"uvicorn {uvicorn.__version__} is outside direct_ws.UVICORN_CHECKED ({first} to before {past}): every "
        "connection answers through ASGI. Read uvicorn's protocols/websockets/websockets_sansio_impl.py (the hooks "
        "handle_connect, handle_text, handle_bytes and the attributes scope and conn), check "
        "DirectWebSocketProtocol against it, then widen UVICORN_CHECKED"
    )
    assert not direct_ws.uvicorn_checked("0.52.0") and not direct_ws.uvicorn_checked(past)
    assert not direct_ws.uvicorn_checked("1.0.0rc1")
    for hook in ("handle_connect", "handle_text", "handle_bytes", "connection_made", "pause_writing"):
        assert callable(getattr(WebSocketsSansIOProtocol, hook, None)), f"uvicorn has no {hook} any more"


def test_protocol_state_it_does_not_know_turns_the_short_path_off(caplog: pytest.LogCaptureFixture) -> None:
    """A uvicorn release keeping other state: the connection answers through ASGI, with a warning."""
    protocol = object.__new__(ws.DirectWebSocketProtocol)  # none of uvicorn's per-connection state
    protocol.scope = {"extensions": {}}  # type: ignore[typeddict-item]
    direct_ws._warned.clear()
    with caplog.at_level("WARNING", logger="integrity_gym.server.ws"):
        assert direct_ws._uvicorn_connection(protocol) is None
    assert "using ASGI" in caplog.text


def test_an_unchecked_uvicorn_answers_every_message_through_asgi(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _count_endpoint_messages(monkeypatch)
    monkeypatch.setattr(direct_ws, "UVICORN_CHECKED", ((0, 0), (0, 1)))
    with serving(DIRECT) as base, _open(base) as conn:
        conn.send(json.dumps({"type": "reset", "data": {"task": PII, "seed": 1}}))
        assert json.loads(conn.recv(timeout=10))["type"] == "observation"
        conn.send('{"type": "step", "data": {"action_type": "SKIP"}}')
        assert json.loads(conn.recv(timeout=10))["data"]["observation"]["step_count"] == 1
    assert seen == ["text", "text"]


def test_the_server_declines_permessage_deflate(server: ServerProcess) -> None:
    """A client offering compression (websockets' default, so OpenEnv's client) gets none."""
    url = server.url.replace("http://", "ws://") + "/pii_redaction/ws"
    with connect(url, proxy=None, open_timeout=10) as conn:  # compression="deflate" is the default
        conn.send(json.dumps({"type": "reset", "data": {"task": PII, "seed": 1}}))
        assert json.loads(conn.recv(timeout=10))["type"] == "observation"
        assert conn.protocol.extensions == []


def test_a_client_that_never_reads_cannot_make_the_server_buffer_without_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """Replies pile up only to the transport's high-water mark, then the server stops reading.

    Without the short path's check of the transport's ``writable`` flag, the server would read and
    answer every message while the client reads nothing, buffering every reply (megabytes here).
    """
    protocols: list[ws.DirectWebSocketProtocol] = []
    connect_as_usual = ws.DirectWebSocketProtocol.handle_connect

    def recording(self: ws.DirectWebSocketProtocol, event: Any) -> None:
        protocols.append(self)
        connect_as_usual(self, event)

    monkeypatch.setattr(ws.DirectWebSocketProtocol, "handle_connect", recording)
    count = 3000  # resets: about 0.9 KB of reply each
    with serving(DIRECT) as base, RawClient(f"{base}/pii_redaction/ws", rcvbuf=4096) as client:
        # Small kernel buffers on the server's side too, so replies queue in the transport.
        protocols[0].transport.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        for seed in range(count):
            client.queue_text({"type": "reset", "data": {"task": PII, "seed": seed}})
        sender = threading.Thread(target=client.sock.sendall, args=(client.pending(),), daemon=True)
        sender.start()  # blocks once the server stops reading: nothing is read here meanwhile
        time.sleep(2.0)
        buffered = protocols[0].transport.get_write_buffer_size()
        replies = client.replies(count)
        sender.join(timeout=30)
    assert buffered < 512 * 1024, f"{buffered} bytes of replies buffered for a client that reads nothing"
    assert all(r["type"] == "observation" for r in replies)
    assert len({r["data"]["observation"]["visible_text"] for r in replies}) > count // 2  # each its own episode


@pytest.mark.parametrize(
    ("config", "reset"),
    [
        ({"root": "pii_redaction"}, {"task": "gdpr_contract_easy"}),
        ({"profile": "seed001"}, {"task_id": "gdpr_contract_easy"}),
    ],
)
def test_the_root_and_a_seed_profile_take_the_short_path_too(
    monkeypatch: pytest.MonkeyPatch, config: dict[str, str], reset: dict[str, str]
) -> None:
    seen = _count_endpoint_messages(monkeypatch)
    with serving(DIRECT, **config) as base, connect(f"{base}/ws", proxy=None, open_timeout=10) as conn:
        conn.send(json.dumps({"type": "reset", "data": reset}))
        replies = [json.loads(conn.recv(timeout=10))]
        for _ in range(3):
            conn.send('{"type": "step", "data": {"action_type": "SKIP"}}')
            replies.append(json.loads(conn.recv(timeout=10)))
    assert [r["type"] for r in replies] == ["observation"] * 4
    assert seen == []  # no message went through the endpoint's queue
