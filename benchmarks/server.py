"""Server speed and scale, measured in one run on this machine; prints JSON.

Three servers run as separate processes on 127.0.0.1 (uvicorn, same settings), each serving the
same minimal environment (add an amount to a running total; a hidden target):

* ``ours``: ``python -m integrity_gym.server`` with ``integrity_gym.server.minimal``;
* ``openenv``: OpenEnv's own server (``openenv.core.env_server.create_fastapi_app``) with an
  equivalent OpenEnv ``Environment``;
* ``floor``: a bare Starlette app that parses each message, bumps a counter and answers the
  same JSON shape — the least any Python server on this stack can do per step.

Measured: WebSocket and HTTP steps/s on one connection and the server process's CPU
microseconds per step (from /proc); WebSocket steps/s with 8 connections stepping at once; memory per
idle session with 1,000 sessions open (ours, each environment in a fresh server process); p50/p99
step latency with 100 concurrent clients. Each figure is the median of several rounds, servers
interleaved round by round. All traffic stays on 127.0.0.1; every loop is bounded in count.

Besides the minimal environment (``--sections minimal``): pii_redaction over one WebSocket on
SKIP against seed 001's own server, started from ``../shared/peers/pii_redaction_env`` in its
venv with openenv-core 0.3.0 (``--sections pii``; measured with a client that reads its own
socket, ``LeanClient``, and again with websockets' threaded sync client), and bytes per idle session over HTTP and
WebSocket (from a client offering no compression and one offering permessage-deflate, as
OpenEnv's client does) for every
environment, each in a fresh server process (``--sections memory``).

The client runs on the same two cores as the server, so steps/s include the client's own cost
and whatever else the machine is doing (``machine.load_avg_1m`` is recorded): server CPU per step
is the steadier comparison.

    python benchmarks/server.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

import httpx
from websockets.sync.client import connect

_RUNNING = re.compile(r"Uvicorn running on (http://127\.0\.0\.1:\d+)")
MINIMAL_EXTRA = "integrity_gym.server.minimal:MINIMAL_TASK"


# --------------------------------------------------------------------------- servers under test
def ws_settings(ws_impl: str | None) -> dict[str, Any]:
    """uvicorn's WebSocket implementation: its default (None) or the one ``igym serve`` uses."""
    return {} if ws_impl is None else {"ws": ws_impl}


def serve_openenv(ws_impl: str | None) -> None:
    """OpenEnv's own server with an environment equivalent to integrity_gym.server.minimal."""
    import uvicorn
    from openenv.core.env_server import create_fastapi_app
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.types import Action, Observation, State

    class CountAction(Action):
        kind: str
        amount: int = 0

    class CountObservation(Observation):
        task_id: str = "minimal/count-v0"
        total: int = 0
        step_count: int = 0

    class CountEnv(Environment[CountAction, CountObservation, State]):
        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self) -> None:
            super().__init__()
            self._state = State(episode_id="-", step_count=0)
            self._total = 0
            self._target = 3

        def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> CountObservation:
            self._state = State(episode_id=str(seed), step_count=0)
            self._total = 0
            return CountObservation(total=0, step_count=0, done=False, reward=None)

        def step(self, action: CountAction, timeout_s: float | None = None, **kwargs: Any) -> CountObservation:
            before = abs(self._target - self._total)
            self._total += action.amount if action.kind == "ADD" else 0
            self._state.step_count += 1
            reward = float(before - abs(self._target - self._total))
            done = action.kind == "FINISH"
            return CountObservation(
                total=self._total,
                step_count=self._state.step_count,
                done=done,
                reward=reward,
                metadata={"reward_breakdown": {"progress": reward}, "error": None},
            )

        @property
        def state(self) -> State:
            return self._state

    app = create_fastapi_app(CountEnv, CountAction, CountObservation, max_concurrent_envs=2000)
    uvicorn.run(app, host="127.0.0.1", port=0, log_level="info", access_log=False, **ws_settings(ws_impl))


def serve_floor(ws_impl: str | None) -> None:
    """The floor: parse, bump a counter, answer the same shape. No validation, no sessions."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route, WebSocketRoute
    from starlette.websockets import WebSocket, WebSocketDisconnect

    def reply(message: dict[str, Any], count: int) -> str:
        amount = (message.get("data") or message.get("action") or {}).get("amount", 0)
        obs = {"task_id": "minimal/count-v0", "done": False, "total": count * amount, "step_count": count}
        data = {"observation": obs, "reward": 0.0, "done": False, "metadata": {}}
        return json.dumps({"type": "observation", "data": data})

    async def ws(websocket: WebSocket) -> None:
        await websocket.accept()
        count = 0
        try:
            while True:
                message = json.loads(await websocket.receive_text())
                count += 1
                await websocket.send_text(reply(message, count))
        except WebSocketDisconnect:
            pass

    counter = {"n": 0}

    async def step(request: Request) -> Response:
        message = json.loads(await request.body())
        counter["n"] += 1
        return Response(reply(message, counter["n"]), media_type="application/json")

    routes = [
        WebSocketRoute("/ws", ws),
        Route("/step", step, methods=["POST"]),
        Route("/reset", step, methods=["POST"]),
    ]
    app = Starlette(routes=routes)
    uvicorn.run(app, host="127.0.0.1", port=0, log_level="info", access_log=False, **ws_settings(ws_impl))


@dataclass
class Server:
    """A server process under test."""

    name: str
    url: str
    proc: subprocess.Popen[str]

    @property
    def cpu_s(self) -> float:
        """User + system CPU seconds the server process has used (Linux /proc)."""
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    @property
    def rss(self) -> int:
        """Resident memory of the server process in bytes (Linux /proc)."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            line = next(line for line in f if line.startswith("VmRSS:"))
        return int(line.split()[1]) * 1024

    def stop(self) -> None:
        """Terminate and wait."""
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def start(name: str, cmd: list[str], cwd: str | None = None) -> Server:
    """Start ``cmd`` and wait for uvicorn to report its address (it picks a free port)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=cwd)
    assert proc.stdout is not None
    log = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        log.append(line)
        match = _RUNNING.search(line)
        if match:
            threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()  # type: ignore[union-attr]
            return Server(name, match.group(1), proc)
    proc.kill()
    raise RuntimeError(f"{name} server did not start:\n{''.join(log)}")


# --------------------------------------------------------------------------- measurements
STEP_ACTION = {"kind": "ADD", "amount": 1}


def ws_path(server: Server) -> str:
    """WebSocket URL of the minimal environment on ``server``."""
    base = server.url.replace("http://", "ws://")
    return base + ("/minimal/ws" if server.name == "ours" else "/ws")


def measure_ws(server: Server, steps: int) -> tuple[float, float]:
    """Steps/s and server CPU µs/step over one WebSocket connection."""
    with connect(ws_path(server), proxy=None, compression=None, max_size=None) as ws:
        ws.send(json.dumps({"type": "reset", "data": {"seed": 1}}))
        ws.recv()
        message = json.dumps({"type": "step", "data": STEP_ACTION})
        for _ in range(50):  # warm up
            ws.send(message)
            ws.recv()
        cpu0, t0 = server.cpu_s, time.perf_counter()
        for _ in range(steps):
            ws.send(message)
            ws.recv()
        elapsed, cpu = time.perf_counter() - t0, server.cpu_s - cpu0
    return steps / elapsed, cpu / steps * 1e6


def measure_http(server: Server, steps: int) -> tuple[float, float]:
    """Steps/s and server CPU µs/step over one keep-alive HTTP connection (stdlib client: cheap)."""
    import http.client

    host, port = server.url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    headers = {"content-type": "application/json"}

    def post(path: str, body: str) -> bytes:
        conn.request("POST", path, body=body, headers=headers)
        response = conn.getresponse()
        data = response.read()
        if response.status != 200:
            raise RuntimeError(f"{server.name} {path}: {response.status} {data[:200]!r}")
        return data

    if server.name == "ours":
        session = json.loads(post("/minimal/reset", json.dumps({"seed": 1})))["session_id"]
        path, body = "/minimal/step", json.dumps({"session_id": session, "action": STEP_ACTION})
    else:
        post("/reset", json.dumps({"seed": 1}))
        path, body = "/step", json.dumps({"action": STEP_ACTION})
    for _ in range(50):
        post(path, body)
    cpu0, t0 = server.cpu_s, time.perf_counter()
    for _ in range(steps):
        post(path, body)
    elapsed, cpu = time.perf_counter() - t0, server.cpu_s - cpu0
    if server.name == "ours":
        conn.request("DELETE", f"/minimal/session/{session}")
        conn.getresponse().read()
    conn.close()
    return steps / elapsed, cpu / steps * 1e6


PII_TASK = "gdpr_contract_easy"
#: Seed 001's implementation and the venv with its openenv-core 0.3.0 (see tests/server/test_seed_clients.py).
PEER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "peers", "pii_redaction_env")
PEER_PYTHON = "/tmp/igym-peer001-venv/bin/python"


class LeanClient:
    """A blocking WebSocket client with no thread of its own: websockets' sans-I/O protocol on a socket.

    ``websockets.sync`` reads in a background thread, so every reply is handed between two
    threads (a GIL hand-off and a wake-up) before ``recv`` returns: on two shared cores that
    costs about as much as a whole step of a fast server and narrows every server's lead
    alike. This client reads the socket itself, so steps/s follow the server's own cost.
    """

    def __init__(self, url: str) -> None:
        import socket

        from websockets.client import ClientProtocol
        from websockets.http11 import Response
        from websockets.uri import parse_uri

        uri = parse_uri(url)
        self.sock = socket.create_connection((uri.host, uri.port), timeout=60)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.protocol = ClientProtocol(uri, max_size=None)
        self.protocol.send_request(self.protocol.connect())
        self._flush()
        while not any(isinstance(e, Response) for e in self._read()):
            pass
        if self.protocol.handshake_exc is not None:
            raise self.protocol.handshake_exc
        self._texts: list[str] = []
        self._parts: list[bytes] = []

    def _flush(self) -> None:
        for data in self.protocol.data_to_send():
            self.sock.sendall(data)

    def _read(self) -> list[Any]:
        data = self.sock.recv(1 << 16)
        if not data:
            raise ConnectionError("the server closed the connection")
        self.protocol.receive_data(data)
        events = self.protocol.events_received()
        self._flush()  # pongs and close replies
        return events

    def send(self, text: str) -> None:
        """Send one text message."""
        self.protocol.send_text(text.encode())
        self._flush()

    def recv(self) -> str:
        """Wait for the next text message."""
        from websockets.frames import Frame, Opcode

        while not self._texts:
            for event in self._read():
                if isinstance(event, Frame) and event.opcode in (Opcode.TEXT, Opcode.CONT):
                    self._parts.append(event.data)
                    if event.fin:
                        self._texts.append(b"".join(self._parts).decode())
                        self._parts = []
        return self._texts.pop(0)

    def close(self) -> None:
        """Close the WebSocket and the socket."""
        try:
            self.protocol.send_close(1000)
            self._flush()
        finally:
            self.sock.close()

    def __enter__(self) -> LeanClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def measure_pii_ws(server: Server, steps: int, client: str = "lean") -> tuple[float, float]:
    """pii_redaction over one WebSocket: SKIP every step, a new episode whenever one ends.

    Ours at ``/pii_redaction/ws`` (reset by ``task``); seed 001's server at ``/ws`` (``task_id``).
    ``client`` is ``lean`` (``LeanClient``), ``threaded`` (``websockets.sync``, no compression) or
    ``deflate`` (``websockets.sync`` offering permessage-deflate, its default and what OpenEnv's and
    seed 001's clients send: a server that accepts it compresses every reply). Every reply is
    parsed as JSON by the client either way. Returns steps/s and server CPU µs per step (resets
    included, as a training loop pays them).
    """
    ours = server.name != "seed001"
    path = "/pii_redaction/ws" if ours else "/ws"
    reset = json.dumps({"type": "reset", "data": {"task": PII_TASK} if ours else {"task_id": PII_TASK}})
    skip = json.dumps({"type": "step", "data": {"action_type": "SKIP"}})
    url = server.url.replace("http://", "ws://") + path
    compression = "deflate" if client == "deflate" else None
    opened = LeanClient(url) if client == "lean" else connect(url, proxy=None, compression=compression, max_size=None)
    with opened as ws:

        def run(count: int) -> None:
            ws.send(reset)
            ws.recv()
            for _ in range(count):
                ws.send(skip)
                if json.loads(ws.recv())["data"]["done"]:
                    ws.send(reset)
                    ws.recv()

        run(300)  # past the first episodes' one-off costs (imports, caches, allocator growth)
        cpu0, t0 = server.cpu_s, time.perf_counter()
        run(steps)
        elapsed, cpu = time.perf_counter() - t0, server.cpu_s - cpu0
    return steps / elapsed, cpu / steps * 1e6


def idle_ws_memory(server: Server, env: str, task: str, count: int, compression: str | None = None) -> dict[str, Any]:
    """Resident bytes per idle WebSocket session: RSS growth while ``count`` reset connections stay open.

    ``compression="deflate"`` offers permessage-deflate, as OpenEnv's client does (websockets'
    default): a server that accepts it keeps a compressor's state per connection.
    """
    from websockets.asyncio.client import connect as aconnect

    url = server.url.replace("http://", "ws://") + f"/{env}/ws"

    async def run() -> tuple[int, int, int]:
        sockets = []

        async def one(seed: int) -> None:
            ws = await aconnect(url, proxy=None, compression=compression, max_size=None)
            await ws.send(json.dumps({"type": "reset", "data": {"seed": seed, "task": task}}))
            await ws.recv()
            sockets.append(ws)

        for i in range(20):
            await one(i)
        await asyncio.sleep(0.2)
        rss0 = server.rss
        for i in range(count):
            await one(1000 + i)
        await asyncio.sleep(0.2)
        rss1 = server.rss
        for ws in sockets:
            await ws.close()
        return rss0, rss1, len(sockets) - 20

    rss0, rss1, opened = asyncio.run(run())
    return {"sessions": opened, "bytes_per_session": round((rss1 - rss0) / opened)}


def idle_session_memory(server: Server, env: str, task: str, count: int, budget_s: float = 1e9) -> dict[str, Any]:
    """Resident bytes per idle HTTP session: RSS growth while ``count`` sessions stay open.

    Stops opening sessions after ``budget_s`` seconds (slow resets) and reports how many were open.
    """
    with httpx.Client(base_url=server.url, trust_env=False, timeout=60) as http:
        warm = [http.post(f"/{env}/reset", json={"seed": i, "task": task}).json()["session_id"] for i in range(20)]
        for sid in warm:
            http.delete(f"/{env}/session/{sid}")
        rss0, t0 = server.rss, time.perf_counter()
        ids = []
        for i in range(count):
            if time.perf_counter() - t0 > budget_s:
                break
            reply = http.post(f"/{env}/reset", json={"seed": i, "task": task})
            reply.raise_for_status()
            ids.append(reply.json()["session_id"])
        reset_s = (time.perf_counter() - t0) / len(ids)
        rss1 = server.rss
        for sid in ids:
            http.delete(f"/{env}/session/{sid}")
    per_session = round((rss1 - rss0) / len(ids))
    return {"sessions": len(ids), "bytes_per_session": per_session, "reset_ms": round(reset_s * 1e3, 3)}


async def latency(
    server: Server,
    clients: int,
    steps: int,
    transport: str,
    env: str = "minimal",
    task: str | None = None,
    action: Any = STEP_ACTION,
) -> dict[str, float]:
    """p50/p99 step latency (ms) with ``clients`` clients stepping at once, each its own session."""
    from websockets.asyncio.client import connect as aconnect

    samples: list[float] = []
    reset = {"seed": 1} if task is None else {"seed": 1, "task": task}

    async def ws_client() -> None:
        path = ws_path(server) if env == "minimal" else server.url.replace("http://", "ws://") + f"/{env}/ws"
        async with aconnect(path, proxy=None, compression=None, max_size=None) as ws:
            await ws.send(json.dumps({"type": "reset", "data": reset}))
            await ws.recv()
            message = json.dumps({"type": "step", "data": action})
            for _ in range(steps):
                t0 = time.perf_counter()
                await ws.send(message)
                await ws.recv()
                samples.append(time.perf_counter() - t0)

    host, port = server.url.removeprefix("http://").split(":")

    async def request(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, method: str, path: str, body: bytes = b""
    ) -> bytes:
        head = f"{method} {path} HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n"
        writer.write(head.encode() + f"content-length: {len(body)}\r\n\r\n".encode() + body)
        status_and_headers = await reader.readuntil(b"\r\n\r\n")
        length = int(re.search(rb"(?i)content-length: *(\d+)", status_and_headers).group(1))  # type: ignore[union-attr]
        data = await reader.readexactly(length)
        if not status_and_headers.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(status_and_headers[:100] + data[:200])
        return data

    async def http_client() -> None:
        reader, writer = await asyncio.open_connection(host, int(port))
        session = json.loads(await request(reader, writer, "POST", f"/{env}/reset", json.dumps(reset).encode()))[
            "session_id"
        ]
        body = json.dumps({"session_id": session, "action": action}).encode()
        for _ in range(steps):
            t0 = time.perf_counter()
            await request(reader, writer, "POST", f"/{env}/step", body)
            samples.append(time.perf_counter() - t0)
        await request(reader, writer, "DELETE", f"/{env}/session/{session}")
        writer.close()

    t0 = time.perf_counter()
    await asyncio.gather(*((ws_client() if transport == "ws" else http_client()) for _ in range(clients)))
    elapsed = time.perf_counter() - t0
    samples.sort()
    return {
        "clients": clients,
        "steps": len(samples),
        "p50_ms": round(samples[len(samples) // 2] * 1e3, 3),
        "p99_ms": round(samples[min(len(samples) - 1, int(len(samples) * 0.99))] * 1e3, 3),
        "steps_per_s": round(len(samples) / elapsed, 1),
    }


def median_of(rounds: list[tuple[float, float]]) -> dict[str, float]:
    """Median steps/s and CPU µs/step over rounds."""
    return {
        "steps_per_s": round(statistics.median(r[0] for r in rounds), 1),
        "server_cpu_us_per_step": round(statistics.median(r[1] for r in rounds), 1),
        "rounds": len(rounds),
    }


#: The uvicorn WebSocket implementation the floor and "openenv_same_uvicorn" run: the one igym serve's
#: DirectWebSocketProtocol extends (its short path needs our endpoint, so other servers run the base).
BASE_WS = "websockets-sansio"
OURS_WS = "integrity_gym.server.ws:DirectWebSocketProtocol"  # what igym serve runs (server.app.serve)


def main() -> None:
    """Run every measurement and print one JSON document."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="Fewer steps, rounds and sessions (a smoke run).")
    parser.add_argument(
        "--sections",
        default="minimal,pii,memory",
        help="Comma-separated parts to run: minimal (vs OpenEnv and the floor), pii (vs seed 001's server), memory.",
    )
    parser.add_argument("--serve", choices=["openenv", "floor"], help=argparse.SUPPRESS)
    parser.add_argument("--ws-impl", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve == "openenv":
        serve_openenv(args.ws_impl)
        return
    if args.serve == "floor":
        serve_floor(args.ws_impl)
        return

    rounds, ws_steps, http_steps = (2, 300, 300) if args.quick else (5, 3000, 2000)
    sessions, lat_steps, memory_budget_s = (100, 5, 10.0) if args.quick else (1000, 30, 90.0)
    me = os.path.abspath(__file__)
    servers: dict[str, Server] = {}
    started = time.perf_counter()
    result: dict[str, Any] = {}
    sections = set(args.sections.split(","))
    result["machine"] = {"cpus": os.cpu_count(), "python": sys.version.split()[0], "load_avg_1m": os.getloadavg()[0]}
    try:
        if "minimal" in sections:
            measure_minimal(args, servers, result, rounds, ws_steps, http_steps, lat_steps, me)
        if "pii" in sections:
            # More rounds than the minimal section: each pii round is short and the peer's speed swings.
            result["pii_redaction_ws_skip"] = measure_pii(servers, 2 * rounds + 1, ws_steps)
        if "memory" in sections:
            result["idle_session_memory"] = measure_memory(servers, sessions, memory_budget_s)
        result["seconds"] = round(time.perf_counter() - started, 1)
    finally:
        for server in servers.values():
            server.stop()
    print(json.dumps(result, indent=2))


def measure_pii(servers: dict[str, Server], rounds: int, steps: int) -> dict[str, Any]:
    """pii_redaction on SKIP over one WebSocket: ours against seed 001's own server, interleaved."""
    if not (os.path.isdir(PEER) and os.path.exists(PEER_PYTHON)):
        return {"seed001": f"not measured: needs {PEER} and a venv with openenv-core==0.3.0 at {PEER_PYTHON}"}
    ours_cmd = [sys.executable, "-m", "integrity_gym.server", "--port", "0", "--tasks", "pii_redaction/*"]
    servers["ours"] = start("ours", ours_cmd)
    peer_cmd = [PEER_PYTHON, "-m", "uvicorn", "server.app:app", "--host", "127.0.0.1", "--port", "0"]
    servers["seed001"] = start("seed001", [*peer_cmd, "--log-level", "info", "--no-access-log"], cwd=PEER)
    clients = ("lean", "threaded", "deflate")
    runs: dict[str, dict[str, list[tuple[float, float]]]] = {c: {"ours": [], "seed001": []} for c in clients}
    for _ in range(rounds):
        for client in clients:
            for name in ("ours", "seed001"):
                runs[client][name].append(measure_pii_ws(servers[name], steps, client))
    for name in ("ours", "seed001"):
        servers.pop(name).stop()

    def summary(by_server: dict[str, list[tuple[float, float]]]) -> dict[str, Any]:
        out: dict[str, Any] = {name: median_of(r) for name, r in by_server.items()}
        out["steps_per_s_by_round"] = {name: [round(r[0]) for r in rs] for name, rs in by_server.items()}
        per_round = [a[0] / b[0] for a, b in zip(by_server["ours"], by_server["seed001"], strict=True)]
        out["ratio_by_round"] = [round(r, 2) for r in per_round]
        out["ratio_ours_over_seed001_steps_per_s"] = round(statistics.median(per_round), 2)
        cpu = [b[1] / a[1] for a, b in zip(by_server["ours"], by_server["seed001"], strict=True) if a[1]]
        out["ratio_seed001_over_ours_cpu_per_step"] = round(statistics.median(cpu), 2) if cpu else None
        return out

    result: dict[str, Any] = {
        "client": "LeanClient (websockets' sans-I/O protocol on a blocking socket, no thread); "
        "threaded_client: websockets.sync (reads in a background thread), no compression; "
        "threaded_client_offering_deflate: the same offering permessage-deflate, as OpenEnv's and seed 001's "
        "clients do (seed 001's server accepts it, ours declines it)",
        **summary(runs["lean"]),
        "threaded_client": summary(runs["threaded"]),
        "threaded_client_offering_deflate": summary(runs["deflate"]),
    }
    result["target_2.5x"] = result["ratio_ours_over_seed001_steps_per_s"] >= 2.5
    return result


def measure_memory(servers: dict[str, Server], sessions: int, budget_s: float) -> dict[str, Any]:
    """Bytes per idle session, over HTTP and WebSocket (plain and deflate), each in a fresh server process.

    A fresh process per measurement, so memory freed by an earlier one cannot be reused and hide
    the growth.
    """
    real_cmd = [sys.executable, "-m", "integrity_gym.server", "--port", "0", "--max-sessions", "5000"]
    lister = start("lister", real_cmd)
    tasks_by_env: dict[str, str] = {}
    for spec in httpx.get(lister.url + "/tasks", trust_env=False).json():
        tasks_by_env.setdefault(spec["env"], spec["id"])
    lister.stop()
    limits = {"pii_redaction": 50_000, "information_integrity": 50_000, "selective_verification": 120_000}
    memory: dict[str, Any] = {}
    for env, task in tasks_by_env.items():
        row: dict[str, Any] = {"task": task}
        transports = ("http", "ws", "ws_deflate")
        for transport in transports:
            servers["memory"] = fresh = start("memory", [*real_cmd, "--tasks", task])
            if transport == "http":
                row[transport] = idle_session_memory(fresh, env, task, sessions, budget_s=budget_s)
            else:
                deflate = "deflate" if transport == "ws_deflate" else None
                row[transport] = idle_ws_memory(fresh, env, task, sessions, compression=deflate)
            servers.pop("memory").stop()
        if env in limits:
            row["limit_bytes"] = limits[env]
            row["within_limit"] = all(row[t]["bytes_per_session"] <= limits[env] for t in transports)
        memory[env] = row
    return memory


def measure_minimal(
    args: argparse.Namespace,
    servers: dict[str, Server],
    result: dict[str, Any],
    rounds: int,
    ws_steps: int,
    http_steps: int,
    lat_steps: int,
    me: str,
) -> None:
    """The minimal environment on ours, OpenEnv's server and the floor (steps/s, CPU, latency)."""
    ours_cmd = [sys.executable, "-m", "integrity_gym.server", "--port", "0", "--tasks", "-"]
    servers["ours"] = start("ours", [*ours_cmd, "--extra-tasks", MINIMAL_EXTRA, "--max-sessions", "5000"])
    try:
        import openenv  # noqa: F401

        # As shipped (uvicorn's default WebSocket implementation), and on the protocol ours extends.
        servers["openenv"] = start("openenv", [sys.executable, me, "--serve", "openenv"])
        servers["openenv_same_uvicorn"] = start(
            "openenv_same_uvicorn", [sys.executable, me, "--serve", "openenv", "--ws-impl", BASE_WS]
        )
    except ImportError:
        result["openenv"] = "not installed (pip install 'integrity-gym[openenv]'): not measured"
    servers["floor"] = start("floor", [sys.executable, me, "--serve", "floor", "--ws-impl", BASE_WS])

    ws_rounds: dict[str, list[tuple[float, float]]] = {name: [] for name in servers}
    http_rounds: dict[str, list[tuple[float, float]]] = {name: [] for name in servers}
    for _ in range(rounds):
        for name, server in servers.items():
            ws_rounds[name].append(measure_ws(server, ws_steps))
            http_rounds[name].append(measure_http(server, http_steps))
    ws = {name: median_of(r) for name, r in ws_rounds.items()}
    http = {name: median_of(r) for name, r in http_rounds.items()}
    result.update(
        {
            "settings": {
                "rounds": rounds,
                "ws_steps_per_round": ws_steps,
                "http_steps_per_round": http_steps,
                "uvicorn_ws": {
                    "ours": OURS_WS,
                    "floor": BASE_WS,
                    "openenv": "uvicorn default",
                    "openenv_same_uvicorn": BASE_WS,
                },
                "note": "one client connection per measurement; medians over rounds; server CPU from /proc",
            },
            "websocket": ws,
            "http": http,
        }
    )

    def ratio(a: float, b: float) -> float:
        return round(a / b, 2) if b else float("nan")

    ratios: dict[str, float] = {
        "ws_floor_over_ours_steps_per_s": ratio(ws["floor"]["steps_per_s"], ws["ours"]["steps_per_s"]),
        "ws_ours_over_floor_cpu_per_step": ratio(
            ws["ours"]["server_cpu_us_per_step"], ws["floor"]["server_cpu_us_per_step"]
        ),
        "http_floor_over_ours_steps_per_s": ratio(http["floor"]["steps_per_s"], http["ours"]["steps_per_s"]),
    }
    targets: dict[str, bool | None] = {
        "ws_within_1.5x_of_floor": ratios["ws_floor_over_ours_steps_per_s"] <= 1.5,
        "ws_at_least_2x_openenv": None,
        "http_at_least_openenv": None,
    }
    if "openenv" in ws:
        for other in ("openenv", "openenv_same_uvicorn"):
            ratios[f"ws_ours_over_{other}_steps_per_s"] = ratio(ws["ours"]["steps_per_s"], ws[other]["steps_per_s"])
            ratios[f"ws_{other}_over_ours_cpu_per_step"] = ratio(
                ws[other]["server_cpu_us_per_step"], ws["ours"]["server_cpu_us_per_step"]
            )
            ratios[f"http_ours_stateful_over_{other}_stateless_steps_per_s"] = ratio(
                http["ours"]["steps_per_s"], http[other]["steps_per_s"]
            )
        targets["ws_at_least_2x_openenv"] = ratios["ws_ours_over_openenv_steps_per_s"] >= 2.0
        targets["http_at_least_openenv"] = ratios["http_ours_stateful_over_openenv_stateless_steps_per_s"] >= 1.0
    result["ratios"] = ratios
    result["targets"] = targets

    # Throughput when the server is the bottleneck: 8 connections stepping at once.
    saturated = {name: [] for name in servers}  # type: dict[str, list[float]]
    for _ in range(rounds):
        for name, server in servers.items():
            run = asyncio.run(latency(server, 8, ws_steps // 2, "ws"))
            saturated[name].append(run["steps_per_s"])
    sat = {name: round(statistics.median(v), 1) for name, v in saturated.items()}
    result["websocket_8_clients_steps_per_s"] = sat
    ratios["ws_8_clients_floor_over_ours"] = ratio(sat["floor"], sat["ours"])
    targets["ws_8_clients_within_1.5x_of_floor"] = ratios["ws_8_clients_floor_over_ours"] <= 1.5
    if "openenv" in sat:
        ratios["ws_8_clients_ours_over_openenv"] = ratio(sat["ours"], sat["openenv"])
        ratios["ws_8_clients_ours_over_openenv_same_uvicorn"] = ratio(sat["ours"], sat["openenv_same_uvicorn"])
        targets["ws_8_clients_at_least_2x_openenv"] = ratios["ws_8_clients_ours_over_openenv"] >= 2.0

    # Latency under 100 concurrent clients, each with its own session.
    lat: dict[str, Any] = {}
    for name, server in servers.items():
        lat[f"{name}_ws"] = asyncio.run(latency(server, 100, lat_steps, "ws"))
    lat["ours_http"] = asyncio.run(latency(servers["ours"], 100, lat_steps, "http"))
    result["latency_100_clients"] = lat

    for name in list(servers):
        servers.pop(name).stop()


if __name__ == "__main__":
    main()
