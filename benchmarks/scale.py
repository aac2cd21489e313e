"""Scale of ``igym serve`` on pii_redaction: idle-session memory, latency under load, HTTP stores; prints JSON.

Every server is ``python -m integrity_gym.server`` (``igym serve``'s options; it reads the
``IGYM_*`` variables first) serving ``pii_redaction/*`` on 127.0.0.1 on a free port, with
``--max-sessions 20000``, ``IGYM_MAX_SESSIONS_PER_CLIENT=0`` and ``IGYM_SESSION_RATE=0`` (every
client here is one address, which a per-client quota would refuse past its limit; each server's
``/health`` reply is recorded to show what it applied) and the open-files limit raised to its
hard limit, as this script's. Three sections (``--sections memory,latency,http``):

* ``memory``: a fresh server; resident memory (/proc) before and after opening 10,000 WebSockets
  (200 handshakes at a time, no compression, client pings off), each having done one ``reset``
  and then left idle: bytes per idle session, and what is left after they close.
* ``latency``: WebSocket clients at 1, 16, 64 and 256 at once, each its own connection and
  session, in a closed loop: ``step`` SKIP (the action ``benchmarks/server.py`` steps pii with),
  wait for the reply, step again, ``reset`` when ``done``. After a warm-up, a fixed window: the
  p50/p99 round trip of the steps in it (resets excluded), steps/s, and the server's CPU per step.
* ``http``: 16 connections, each ``POST /pii_redaction/reset`` once for a ``session_id`` then
  ``POST /pii_redaction/step`` in a loop (a new session when one is done; the finished one is
  deleted), against the memory store, a Redis store (our own ``redis-server`` on a free port,
  nothing saved) and the Redis store with ``--workers 2``; rounds interleaved, medians reported,
  with the ratio Redis/memory and Redis's commands per step. Twice: with one
  ``httpx.AsyncClient`` per connection (``trust_env=False``), and with a lean client (HTTP/1.1
  written by hand on asyncio streams), because httpx costs its client more CPU per request than
  the server spends answering it, so its figures say more about httpx than about the server.
  ``--http-baseline SRC`` adds the same three servers run from another version's ``src`` folder
  (e.g. ``git archive HEAD~3 src | tar -x -C /tmp/before``), interleaved with this version's, as
  ``<name>_before``: a before/after comparison measured in one run.

The load comes from two client processes (``multiprocessing``, spawned once; each an asyncio
loop, uvloop if installed, with its share of the connections), because one Python client
process saturates before the server does. Client and server share this machine's cores (and
whatever else it runs: ``machine.load_avg_1m`` is recorded), so each figure comes with the CPU
used in its window, in cores (CPU seconds per second), by the server (its workers included), the
clients, Redis, and the whole machine (``machine_busy_cores``; ``other_cores`` is the part none
of these accounts for): it shows where the cores went, and the server's CPU per step is the
steadier comparison. Figures are medians over rounds; every loop is bounded in count or time,
and every process started here is stopped in ``finally``.

    .venv/bin/python benchmarks/scale.py [--sections memory,latency,http] [--http-clients httpx,lean]
        [--http-baseline SRC] [--http-rounds N] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.metadata
import json
import multiprocessing
import os
import re
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from openenv_scaling import free_port, raise_nofile, stop, wait_ready
from server import PII_TASK, Server

REPO = Path(__file__).resolve().parents[1]
ENV = "pii_redaction"
SKIP = {"action_type": "SKIP"}
SERVER_ENV = {"IGYM_MAX_SESSIONS_PER_CLIENT": "0", "IGYM_SESSION_RATE": "0"}
MAX_SESSIONS = 20_000
CLIENT_PROCESSES = 2
OPEN_CONCURRENCY = 200
REDIS_SERVER = "/usr/bin/redis-server"
#: Seconds a client process gets to open its connections and answer "ready".
READY_TIMEOUT_S = 120.0


def log(message: str) -> None:
    print(f"[scale] {message}", file=sys.stderr, flush=True)


def event_loop_runner() -> tuple[Callable[[Coroutine[Any, Any, Any]], Any], str]:
    """``uvloop.run`` if uvloop is installed, else ``asyncio.run``; and which."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run, "asyncio"
    return uvloop.run, f"uvloop {importlib.metadata.version('uvloop')}"


# --------------------------------------------------------------------------- processes and /proc
def proc_stat(pid: int) -> list[str]:
    """The fields of /proc/<pid>/stat after the command name (state is [0], ppid [1], utime [11])."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (uvicorn's workers are children of its supervisor)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, IndexError):
                children.setdefault(int(proc_stat(int(entry))[1]), []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


def cpu_s(pids: list[int]) -> float:
    """User + system CPU seconds of these processes (Linux /proc); a process gone counts 0."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError, IndexError):
            fields = proc_stat(pid)
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def machine_busy_s() -> float:
    """CPU seconds all cores have spent busy since boot (/proc/stat: everything but idle and iowait)."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:9]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


@dataclass
class Igym:
    """An igym server under test, its log, and the /health reply it started with."""

    server: Server
    command: list[str]
    log_path: Path
    health: dict[str, Any]

    @property
    def url(self) -> str:
        return self.server.url

    def log_problems(self) -> dict[str, Any]:
        """Tracebacks and error lines the server logged."""
        text = self.log_path.read_text(errors="replace")
        lines = [line for line in text.splitlines() if "ERROR" in line or "Traceback" in line or " 500 " in line]
        return {"tracebacks": text.count("Traceback"), "error_lines": len(lines), "first_error_lines": lines[:5]}


def launch_igym(name: str, work: Path, options: list[str], stopping: list[Igym], source: Path | None = None) -> Igym:
    """Start ``python -m integrity_gym.server`` on a free port with the benchmark's settings (``stopping`` gets it).

    ``source``: a ``src`` folder of another version of integrity_gym to serve instead of this one's
    (first on ``PYTHONPATH``), to compare two versions in one run.
    """
    port = free_port()
    command = [sys.executable, "-m", "integrity_gym.server", "--host", "127.0.0.1", "--port", str(port)]
    command += ["--tasks", f"{ENV}/*", "--max-sessions", str(MAX_SESSIONS), *options]
    log_path = work / f"{name}.log"
    with log_path.open("ab") as out:
        proc = subprocess.Popen(
            command,
            cwd=REPO,
            env={**os.environ, **SERVER_ENV, **({} if source is None else {"PYTHONPATH": str(source)})},
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            preexec_fn=raise_nofile,
        )
    if source is not None:
        command = [f"PYTHONPATH={source}", *command]
    srv = Igym(Server(name, f"http://127.0.0.1:{port}", proc), command, log_path, {})
    stopping.append(srv)
    return srv


def await_igym(srv: Igym) -> Igym:
    """Wait for /health to answer; keep its reply (the limits the server applies)."""
    if not wait_ready(srv.server.proc, srv.url, 90.0):
        text = srv.log_path.read_text(errors="replace")
        raise RuntimeError(f"{srv.server.name} did not start: {shlex.join(srv.command)}\n{text}")
    port = int(srv.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"GET /health HTTP/1.0\r\nhost: 127.0.0.1\r\n\r\n")
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    srv.health = json.loads(reply.split(b"\r\n\r\n", 1)[1])
    for key in ("max_sessions_per_client", "session_rate"):
        if srv.health.get(key):
            log(f"warning: {srv.server.name} applies {key}={srv.health[key]} despite {SERVER_ENV}: may refuse sessions")
    if "--workers" in srv.command:
        time.sleep(1.0)  # /health answered from one worker: let the others come up too
    return srv


def start_igym(name: str, work: Path, options: list[str], stopping: list[Igym]) -> Igym:
    return await_igym(launch_igym(name, work, options, stopping))


@dataclass
class Redis:
    """Our own redis-server (no persistence) on a free port."""

    proc: subprocess.Popen[bytes]
    port: int

    def url(self, db: int) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def commands(self) -> int:
        """Commands Redis has processed since it started (``INFO stats``)."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as sock:
            sock.sendall(b"INFO stats\r\n")
            reply = sock.recv(65536)
            size = int(reply.split(b"\r\n", 1)[0].removeprefix(b"$"))  # a bulk string: $<size>\r\n<text>\r\n
            while len(reply) < len(str(size)) + size + 5 and (chunk := sock.recv(65536)):
                reply += chunk
        match = re.search(rb"total_commands_processed:(\d+)", reply)
        if match is None:
            raise RuntimeError(f"no total_commands_processed in INFO stats: {reply[:200]!r}")
        return int(match.group(1))


def start_redis() -> Redis:
    port = free_port()
    command = [REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and proc.poll() is None:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            if sock.recv(64).startswith(b"+PONG"):
                return Redis(proc, port)
        time.sleep(0.1)
    stop(proc)
    raise RuntimeError(f"redis-server did not start: {shlex.join(command)}")


# --------------------------------------------------------------------------- client processes
def client_main(conn: Connection) -> None:
    """A client process: run the jobs the parent sends (None ends it), one asyncio loop per job."""
    raise_nofile()
    run, _ = event_loop_runner()
    while True:
        job = conn.recv()
        if job is None:
            return
        try:
            result = run(run_job(job, conn))
        except BaseException as exc:  # report it; the parent decides
            conn.send(("error", f"{type(exc).__name__}: {exc}"))
        else:
            conn.send(("done", result))


async def run_job(job: dict[str, Any], conn: Connection) -> dict[str, Any]:
    """Open ``job["connections"]`` sessions, say ready, get the window, step in closed loops until it ends."""
    opener, stepper = (ws_open, ws_steps) if job["kind"] == "ws" else (http_open, http_steps)
    tally = Tally()
    gate = asyncio.Semaphore(OPEN_CONCURRENCY)

    async def opened(i: int) -> Any:
        async with gate:
            return await opener(job, job["seed0"] + i)

    async with asyncio.timeout(READY_TIMEOUT_S):
        sessions = await asyncio.gather(*(opened(i) for i in range(job["connections"])))
    conn.send(("ready", len(sessions)))
    t_start, t_end = conn.recv()  # blocking, before any step: nothing else runs yet
    try:
        async with asyncio.timeout(t_end - time.monotonic() + 30.0):
            await asyncio.gather(*(stepper(job, s, t_start, t_end, tally) for s in sessions))
    finally:
        closer = ws_close if job["kind"] == "ws" else http_close
        async with asyncio.timeout(30.0):
            await asyncio.gather(*(closer(job, s) for s in sessions), return_exceptions=True)
    return {"samples": tally.samples, "resets": tally.resets, "errors": dict(tally.errors), "example": tally.example}


@dataclass
class Tally:
    """What a client process's connections saw inside the window."""

    samples: list[float] = field(default_factory=list)
    resets: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    example: str | None = None

    def error(self, kind: str, text: str) -> None:
        self.errors[kind] += 1
        if self.example is None:
            self.example = text[:300]


def ws_reset(seed: int) -> str:
    return json.dumps({"type": "reset", "data": {"task": PII_TASK, "seed": seed}})


async def ws_open(job: dict[str, Any], seed: int) -> Any:
    from websockets.asyncio.client import connect

    ws = await connect(job["url"], proxy=None, compression=None, max_size=None, ping_interval=None)
    await ws.send(ws_reset(seed))
    reply = str(await ws.recv(decode=True))
    if not reply.startswith('{"type":"observation"'):
        await ws.close()
        raise RuntimeError(f"reset refused: {reply[:300]!r}")
    return (ws, seed)


async def ws_close(job: dict[str, Any], session: Any) -> None:
    await session[0].close()


def finished(reply: str | bytes) -> bool:
    """Whether a step reply says the episode is done (a substring test first: replies are mostly not)."""
    marker = '"done":true' if isinstance(reply, str) else b'"done":true'
    if marker not in reply:  # type: ignore[operator]
        return False
    data = json.loads(reply)
    return bool(data.get("data", data).get("done"))


async def ws_steps(job: dict[str, Any], session: Any, t_start: float, t_end: float, tally: Tally) -> None:
    ws, seed = session
    step = json.dumps({"type": "step", "data": SKIP})
    clock = time.monotonic
    while True:
        t0 = clock()
        await ws.send(step)
        reply = str(await ws.recv(decode=True))
        t1 = clock()
        if t1 >= t_end:
            return
        if not reply.startswith('{"type":"observation"'):
            message = json.loads(reply)
            tally.error(str(message.get("data", {}).get("code", message.get("type"))), reply)
            if t0 >= t_start and sum(tally.errors.values()) > 1000:
                return
            continue
        if t0 >= t_start:
            tally.samples.append(t1 - t0)
        if finished(reply):
            seed += 1_000_000
            await ws.send(ws_reset(seed))
            await ws.recv()
            if t0 >= t_start:
                tally.resets += 1


HEADERS = {"content-type": "application/json"}


class HttpxConnection:
    """One ``httpx.AsyncClient`` holding one keep-alive connection."""

    def __init__(self, url: str) -> None:
        import httpx

        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        self.client = httpx.AsyncClient(base_url=url, trust_env=False, timeout=30.0, limits=limits)

    async def call(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        headers = HEADERS if body is not None else None
        reply = await self.client.request(method, path, content=body, headers=headers)
        return reply.status_code, reply.content

    async def aclose(self) -> None:
        await self.client.aclose()


class LeanConnection:
    """HTTP/1.1 written by hand on asyncio streams: the client's share of each request kept small."""

    def __init__(self, url: str) -> None:
        self.host, port = url.removeprefix("http://").split(":")
        self.port = int(port)
        self.streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def call(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        if self.streams is None:
            self.streams = await asyncio.open_connection(self.host, self.port)
        reader, writer = self.streams
        payload = body or b""
        head = f"{method} {path} HTTP/1.1\r\nhost: {self.host}\r\ncontent-type: application/json\r\n"
        writer.write(f"{head}content-length: {len(payload)}\r\n\r\n".encode() + payload)
        reply = await reader.readuntil(b"\r\n\r\n")
        length = re.search(rb"(?i)\r\ncontent-length: *(\d+)", reply)
        if length is None:
            raise RuntimeError(f"a reply without content-length: {reply[:300]!r}")
        return int(reply[9:12]), await reader.readexactly(int(length.group(1)))

    async def aclose(self) -> None:
        if self.streams is not None:
            self.streams[1].close()
            with contextlib.suppress(OSError):
                await self.streams[1].wait_closed()


CONNECTIONS: dict[str, type[HttpxConnection | LeanConnection]] = {"httpx": HttpxConnection, "lean": LeanConnection}


async def http_open(job: dict[str, Any], seed: int) -> Any:
    conn: HttpxConnection | LeanConnection = CONNECTIONS[job["client"]](job["url"])
    try:
        session = await http_reset(conn, seed)
    except BaseException:
        await conn.aclose()
        raise
    return [conn, session, seed]


async def http_reset(conn: HttpxConnection | LeanConnection, seed: int) -> str:
    status, data = await conn.call("POST", f"/{ENV}/reset", json.dumps({"task": PII_TASK, "seed": seed}).encode())
    if status != 200:
        raise RuntimeError(f"reset: {status} {data[:300]!r}")
    session: str = json.loads(data)["session_id"]
    return session


async def http_close(job: dict[str, Any], state: Any) -> None:
    conn, session, _ = state
    try:
        await conn.call("DELETE", f"/{ENV}/session/{session}")
    finally:
        await conn.aclose()


async def http_steps(job: dict[str, Any], state: Any, t_start: float, t_end: float, tally: Tally) -> None:
    conn = state[0]
    clock = time.monotonic
    path = f"/{ENV}/step"
    body = json.dumps({"session_id": state[1], "action": SKIP}).encode()
    while True:
        t0 = clock()
        status, data = await conn.call("POST", path, body)
        t1 = clock()
        if t1 >= t_end:
            return
        done = False
        if status != 200:
            tally.error(f"http_{status}", data.decode(errors="replace"))
            done = status == 409 and b"EPISODE_FINISHED" in data
            if not done and sum(tally.errors.values()) > 1000:
                return
        elif t0 >= t_start:
            tally.samples.append(t1 - t0)
        if done or finished(data):
            await conn.call("DELETE", f"/{ENV}/session/{state[1]}")
            state[2] += 1_000_000
            state[1] = await http_reset(conn, state[2])
            body = json.dumps({"session_id": state[1], "action": SKIP}).encode()
            if t0 >= t_start:
                tally.resets += 1


class ClientPool:
    """``count`` spawned client processes, each fed jobs over a pipe; spawned when first needed."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.conns: list[Connection] = []
        self.procs: list[Any] = []

    def ensure(self) -> None:
        """Spawn the processes unless they are running."""
        if self.procs:
            return
        context = multiprocessing.get_context("spawn")
        for _ in range(self.count):
            parent, child = context.Pipe()
            proc = context.Process(target=client_main, args=(child,), daemon=True)
            proc.start()
            child.close()
            self.conns.append(parent)
            self.procs.append(proc)

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def close(self) -> None:
        """Ask each process to end (it does once its job is over), then terminate any still running."""
        for conn in self.conns:
            with contextlib.suppress(OSError):
                conn.send(None)
        for proc in self.procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.terminate()
                proc.join(timeout=5)
        for conn in self.conns:
            conn.close()
        self.conns, self.procs = [], []


def receive(conn: Connection, timeout_s: float, what: str) -> Any:
    if not conn.poll(timeout_s):
        raise RuntimeError(f"a client process sent nothing for {timeout_s:.0f} s ({what})")
    message = conn.recv()
    if message[0] == "error":
        raise RuntimeError(f"a client process failed ({what}): {message[1]}")
    return message[1]


def split(total: int, parts: int) -> list[int]:
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def drive(
    pool: ClientPool,
    job: dict[str, Any],
    connections: int,
    warm_s: float,
    window_s: float,
    watched: dict[str, list[int]],
    seed0: int,
    counters: dict[str, Callable[[], int]] | None = None,
) -> dict[str, Any]:
    """Run one closed-loop measurement over the pool: latency percentiles, steps/s, CPU per process group.

    ``counters`` are read at the window's edges too and reported per step (Redis commands).
    """
    counters = counters or {}
    pool.ensure()
    shares = split(connections, len(pool.conns))
    busy = [(conn, n) for conn, n in zip(pool.conns, shares, strict=True) if n]
    for i, (conn, n) in enumerate(busy):
        conn.send({**job, "connections": n, "seed0": seed0 + i * 100_000})
    for conn, _ in busy:
        receive(conn, READY_TIMEOUT_S + 10, "opening")
    t_start = time.monotonic() + warm_s
    t_end = t_start + window_s
    for conn, _ in busy:
        conn.send((t_start, t_end))
    watched = {**watched, "clients": [p for p, n in zip(pool.pids, shares, strict=True) if n]}
    time.sleep(max(0.0, t_start - time.monotonic()))
    cpu0 = {name: cpu_s(pids) for name, pids in watched.items()}
    count0 = {name: read() for name, read in counters.items()}
    busy0, w0 = machine_busy_s(), time.monotonic()
    time.sleep(max(0.0, t_end - time.monotonic()))
    cpu1 = {name: cpu_s(pids) for name, pids in watched.items()}
    busy1, wall = machine_busy_s(), time.monotonic() - w0
    count1 = {name: read() for name, read in counters.items()}
    results = [receive(conn, window_s + 90, "stepping") for conn, _ in busy]
    samples = sorted(s for r in results for s in r["samples"])
    steps = len(samples)
    errors: Counter[str] = Counter()
    for r in results:
        errors.update(r["errors"])
    out: dict[str, Any] = {
        "connections": connections,
        "steps": steps,
        "steps_per_s": round(steps / window_s, 1),
        "p50_ms": round(samples[steps // 2] * 1e3, 3) if steps else None,
        "p99_ms": round(samples[min(steps - 1, int(steps * 0.99))] * 1e3, 3) if steps else None,
        "resets": sum(r["resets"] for r in results),
    }
    for name in watched:
        used = cpu1[name] - cpu0[name]
        out[f"{name}_cores"] = round(used / wall, 3)
        out[f"{name}_cpu_us_per_step"] = round(used / steps * 1e6, 1) if steps else None
    for name in counters:
        out[f"{name}_per_step"] = round((count1[name] - count0[name]) / steps, 2) if steps else None
    # Everything the machine's cores did in the window, and the part no process here accounts for.
    out["machine_busy_cores"] = round((busy1 - busy0) / wall, 3)
    out["other_cores"] = round(max(0.0, out["machine_busy_cores"] - sum(out[f"{n}_cores"] for n in watched)), 3)
    if errors:
        out["errors"] = dict(errors)
        out["error_example"] = next((r["example"] for r in results if r["example"]), None)
    return out


def medians(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Median of every numeric figure over rounds, the per-round steps/s, and any errors summed."""
    out: dict[str, Any] = {"rounds": len(runs)}
    for key, value in runs[0].items():
        if key == "connections":
            out[key] = value
        elif isinstance(value, int | float) and not isinstance(value, bool):
            values = [r[key] for r in runs if r.get(key) is not None]
            out[key] = round(statistics.median(values), 3) if values else None
    out["steps_per_s_by_round"] = [r["steps_per_s"] for r in runs]
    errors: Counter[str] = Counter()
    for r in runs:
        errors.update(r.get("errors", {}))
    if errors:
        out["errors"] = dict(errors)
        out["error_example"] = next((r["error_example"] for r in runs if r.get("error_example")), None)
    return out


# --------------------------------------------------------------------------- sections
def measure_memory(work: Path, sessions: int, stopping: list[Igym]) -> dict[str, Any]:
    """RSS of a fresh server before and after ``sessions`` idle WebSockets (one reset each).

    Then all are closed and as many opened again: RSS after the second fill shows whether the
    first fill's memory is reused (RSS stays put) or leaks (it grows by as much again).
    """
    srv = start_igym("memory", work, [], stopping)
    url = srv.url.replace("http://", "ws://") + f"/{ENV}/ws"
    job = {"url": url}
    run, _ = event_loop_runner()
    proc = srv.server.proc

    async def go() -> dict[str, Any]:
        failures: Counter[str] = Counter()
        example: list[str] = []

        async def fill(seeds: range) -> list[Any]:
            gate, sockets = asyncio.Semaphore(OPEN_CONCURRENCY), []

            async def one(seed: int) -> None:
                async with gate:
                    try:
                        sockets.append(await ws_open(job, seed))
                    except Exception as exc:
                        failures[type(exc).__name__] += 1
                        example.append(f"{type(exc).__name__}: {exc}"[:300])

            async with asyncio.timeout(900):
                await asyncio.gather(*(one(seed) for seed in seeds))
            return sockets

        async def close_all(sockets: list[Any]) -> None:
            gate = asyncio.Semaphore(OPEN_CONCURRENCY)

            async def close(session: Any) -> None:
                async with gate:
                    await ws_close(job, session)

            async with asyncio.timeout(300):
                await asyncio.gather(*(close(s) for s in sockets), return_exceptions=True)

        warm = await fill(range(20))
        await asyncio.sleep(0.5)
        rss0, fds0, cpu0, t0 = srv.server.rss, open_fds(proc.pid), srv.server.cpu_s, time.monotonic()
        first = await fill(range(1000, 1000 + sessions))
        open_s, open_cpu = time.monotonic() - t0, srv.server.cpu_s - cpu0
        await asyncio.sleep(1.0)
        rss1, fds1 = srv.server.rss, open_fds(proc.pid)
        reported = await asyncio.to_thread(health_sessions, srv.url)
        client_bytes = client_rss()
        t1 = time.monotonic()
        await close_all(first)
        close_s = time.monotonic() - t1
        await asyncio.sleep(2.0)
        rss2, after_close = srv.server.rss, await asyncio.to_thread(health_sessions, srv.url)
        second = await fill(range(10**7, 10**7 + sessions))
        await asyncio.sleep(1.0)
        rss3 = srv.server.rss
        await close_all(second + warm)
        opened = len(first)
        row: dict[str, Any] = {
            "sessions_asked": sessions,
            "sessions_opened": opened,
            "open_concurrency": OPEN_CONCURRENCY,
            "open_s": round(open_s, 2),
            "opened_per_s": round(opened / open_s, 1) if open_s else None,
            "server_cpu_us_per_open": round(open_cpu / opened * 1e6) if opened else None,
            "server_rss_before_bytes": rss0,
            "server_rss_open_bytes": rss1,
            "bytes_per_session": round((rss1 - rss0) / opened) if opened else None,
            "server_fds_per_session": round((fds1 - fds0) / opened, 2) if opened else None,
            "health_sessions_while_open": reported,
            "close_s": round(close_s, 2),
            "server_rss_after_close_bytes": rss2,
            "health_sessions_after_close": after_close,
            "second_fill_opened": len(second),
            "server_rss_after_second_fill_bytes": rss3,
            "second_fill_growth_bytes_per_session": round((rss3 - rss1) / len(second)) if second else None,
            "client_rss_bytes": client_bytes,
        }
        if failures:
            row["failures"] = dict(failures)
            row["failure_example"] = example[0]
        return row

    try:
        row: dict[str, Any] = run(go())
        row["server_alive_after"] = proc.poll() is None
        return row
    finally:
        stop(proc)


def client_rss() -> int:
    with open("/proc/self/status") as f:
        line = next(line for line in f if line.startswith("VmRSS:"))
    return int(line.split()[1]) * 1024


def health_sessions(url: str) -> Any:
    import httpx

    return httpx.get(url + "/health", trust_env=False, timeout=30).json().get("sessions")


def measure_latency(
    work: Path, pool: ClientPool, levels: list[int], rounds: int, warm_s: float, window_s: float, stopping: list[Igym]
) -> dict[str, Any]:
    """Closed-loop WebSocket steps at each level of concurrent clients, levels interleaved round by round."""
    srv = start_igym("latency", work, [], stopping)
    url = srv.url.replace("http://", "ws://") + f"/{ENV}/ws"
    runs: dict[int, list[dict[str, Any]]] = {n: [] for n in levels}
    try:
        for r in range(rounds):
            for n in levels:
                log(f"latency: round {r + 1}/{rounds}, {n} clients")
                job = {"kind": "ws", "url": url}
                run = drive(
                    pool, job, n, warm_s, window_s, {"server": descendants(srv.server.proc.pid)}, seed0=r * 10_000_000
                )
                runs[n].append(run)
        alive = srv.server.proc.poll() is None
    finally:
        stop(srv.server.proc)
    return {
        "window_s": window_s,
        "warm_up_s": warm_s,
        "server_command": shlex.join(srv.command),
        "by_clients": {str(n): medians(v) for n, v in runs.items()},
        "server_alive_after": alive,
    }


def measure_http(
    work: Path,
    pool: ClientPool,
    clients: list[str],
    rounds: int,
    warm_s: float,
    window_s: float,
    stopping: list[Igym],
    redis: list[Redis],
    baseline: Path | None = None,
) -> dict[str, Any]:
    """HTTP /step with 16 connections: memory store, Redis store, Redis with 2 workers; rounds interleaved.

    With ``baseline`` (another version's ``src``), each of the three again from it, as ``<name>_before``.
    """
    connections = 16
    redis.append(start_redis())
    store = redis[-1]
    configs = {
        "memory": ["--sessions", "memory"],
        "redis": ["--sessions", store.url(0)],
        "redis_2_workers": ["--sessions", store.url(1), "--workers", "2"],
    }
    sources: dict[str, Path | None] = dict.fromkeys(configs)
    if baseline is not None:
        configs |= {
            "memory_before": ["--sessions", "memory"],
            "redis_before": ["--sessions", store.url(2)],
            "redis_2_workers_before": ["--sessions", store.url(3), "--workers", "2"],
        }
        sources |= dict.fromkeys(("memory_before", "redis_before", "redis_2_workers_before"), baseline)
    servers: dict[str, Igym] = {}
    for name, options in configs.items():  # started together, waited for one by one
        servers[name] = launch_igym(f"http_{name}", work, options, stopping, sources[name])
    for srv in servers.values():
        await_igym(srv)
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {c: {name: [] for name in configs} for c in clients}
    processes: dict[str, int] = {}
    try:
        for r in range(rounds):
            for client in clients:
                for name, srv in servers.items():
                    log(f"http: round {r + 1}/{rounds}, {client} client, {name}")
                    pids = descendants(srv.server.proc.pid)  # the supervisor and its workers
                    processes[name] = len(pids)
                    on_redis = name.startswith("redis")
                    watched = {"server": pids, **({"redis": [store.proc.pid]} if on_redis else {})}
                    job = {"kind": "http", "url": srv.url, "client": client}
                    counters = {"redis_commands": store.commands} if on_redis else {}
                    run = drive(pool, job, connections, warm_s, window_s, watched, r * 10_000_000, counters)
                    runs[client][name].append(run)
        alive = {name: srv.server.proc.poll() is None for name, srv in servers.items()}
    finally:
        for srv in servers.values():
            stop(srv.server.proc)
    result: dict[str, Any] = {
        "connections": connections,
        "window_s": window_s,
        "warm_up_s": warm_s,
        "clients": {
            "httpx": "one httpx.AsyncClient per connection (trust_env=False, one keep-alive connection)",
            "lean": "HTTP/1.1 written by hand on asyncio streams: how far the server goes when the client costs little",
        },
        "server_commands": {name: shlex.join(srv.command) for name, srv in servers.items()},
        "server_processes_counted": processes,
        "baseline_src": None if baseline is None else str(baseline),
        "redis_server": f"{REDIS_SERVER} --port {store.port} --save '' --appendonly no",
    }
    for client, by_config in runs.items():
        row: dict[str, Any] = {name: medians(rs) for name, rs in by_config.items()}

        def ratio(a: str, b: str, by_config: dict[str, list[dict[str, Any]]] = by_config) -> float | None:
            pairs = zip(by_config[a], by_config[b], strict=True)
            per_round = [x["steps_per_s"] / y["steps_per_s"] for x, y in pairs if y["steps_per_s"]]
            return round(statistics.median(per_round), 3) if per_round else None

        for tail in ("", "_before") if baseline is not None else ("",):
            row[f"ratio_redis_over_memory{tail}"] = ratio(f"redis{tail}", f"memory{tail}")
            row[f"ratio_redis_2_workers_over_memory{tail}"] = ratio(f"redis_2_workers{tail}", f"memory{tail}")
            row[f"ratio_redis_2_workers_over_redis{tail}"] = ratio(f"redis_2_workers{tail}", f"redis{tail}")
        if baseline is not None:
            row["ratio_redis_over_redis_before"] = ratio("redis", "redis_before")
            row["ratio_memory_over_memory_before"] = ratio("memory", "memory_before")
        result[client] = row
    result["server_alive_after"] = alive
    return result


# --------------------------------------------------------------------------- main
SECTIONS = ("memory", "latency", "http")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="A smoke run: fewer sessions, levels, rounds, seconds.")
    parser.add_argument("--sections", default=",".join(SECTIONS), help="Comma-separated: memory, latency, http.")
    parser.add_argument("--http-clients", default="httpx,lean", help="Comma-separated HTTP clients: httpx, lean.")
    parser.add_argument(
        "--http-baseline",
        type=Path,
        help="The src folder of another version (e.g. from git archive): the http section measures it too.",
    )
    parser.add_argument("--http-rounds", type=int, help="Rounds of the http section (default 5, 2 with --quick).")
    args = parser.parse_args()
    sections = [s for s in args.sections.split(",") if s]
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        parser.error(f"--sections: unknown {', '.join(sorted(unknown))}; choose from {', '.join(SECTIONS)}")
    if set(args.http_clients.split(",")) - set(CONNECTIONS) - {""}:
        parser.error(f"--http-clients: choose from {', '.join(CONNECTIONS)}")
    if args.quick:
        sessions, levels, lat_rounds, lat_warm, lat_window = 500, [1, 16], 1, 0.5, 2.0
        http_rounds, http_warm, http_window = 2, 0.3, 1.5
    else:
        sessions, levels, lat_rounds, lat_warm, lat_window = 10_000, [1, 16, 64, 256], 3, 2.0, 8.0
        http_rounds, http_warm, http_window = 5, 1.0, 6.0

    if args.http_rounds is not None:
        http_rounds = max(1, args.http_rounds)
    if args.http_baseline is not None and not (args.http_baseline / "integrity_gym").is_dir():
        parser.error(f"--http-baseline: {args.http_baseline} holds no integrity_gym package")
    nofile_before = resource_limit()
    raise_nofile()
    result: dict[str, Any] = {
        "benchmark": "scale",
        "machine": {
            "cpus": os.cpu_count(),
            "cpus_usable": len(os.sched_getaffinity(0)),
            "python": sys.version.split()[0],
            "load_avg_1m": round(os.getloadavg()[0], 2),
            "nofile": {"inherited": nofile_before, "raised": resource_limit()},
            "client_loop": event_loop_runner()[1],
            "client_processes": CLIENT_PROCESSES,
            "websockets": importlib.metadata.version("websockets"),
            "httpx": importlib.metadata.version("httpx"),
        },
        "settings": {
            "env": ENV,
            "task": PII_TASK,
            "action": SKIP,
            "server_env": SERVER_ENV,
            "max_sessions": MAX_SESSIONS,
            "quick": args.quick,
        },
    }
    started = time.monotonic()
    stopping: list[Igym] = []
    redis: list[Redis] = []
    pool = ClientPool(CLIENT_PROCESSES)
    work = Path(tempfile.mkdtemp(prefix="igym_scale_"))
    try:
        clients = [c for c in args.http_clients.split(",") if c]
        runs: dict[str, tuple[str, Callable[[ClientPool], dict[str, Any]]]] = {
            "memory": ("idle_ws_memory", lambda _: measure_memory(work, sessions, stopping)),
            "latency": (
                "ws_latency",
                lambda p: measure_latency(work, p, levels, lat_rounds, lat_warm, lat_window, stopping),
            ),
            "http": (
                "http_step",
                lambda p: measure_http(
                    work, p, clients, http_rounds, http_warm, http_window, stopping, redis, args.http_baseline
                ),
            ),
        }
        for section in SECTIONS:
            if section not in sections:
                continue
            key, measure = runs[section]
            log(f"{section}: starting")
            try:
                result[key] = measure(pool)
            except Exception as exc:  # recorded; the other sections still run
                log(f"{section} failed: {type(exc).__name__}: {exc}")
                result[key] = {"error": f"{type(exc).__name__}: {exc}"[:3000]}
                pool.close()  # its processes may be mid-job: fresh ones for the next section
    finally:
        pool.close()
        for srv in stopping:
            stop(srv.server.proc)
        for store in redis:
            stop(store.proc)
        result["server_logs"] = {srv.server.name: srv.log_problems() for srv in stopping}
        shown = ("store", "max_sessions", "max_sessions_per_client", "session_rate", "session_burst")
        result["health"] = {srv.server.name: {k: srv.health.get(k) for k in shown} for srv in stopping}
        for path in work.iterdir():
            path.unlink()
        work.rmdir()
    result["machine"]["load_avg_1m_end"] = round(os.getloadavg()[0], 2)
    result["seconds"] = round(time.monotonic() - started, 1)
    print(json.dumps(result, indent=2))


def resource_limit() -> str:
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return f"{soft}/{hard}"


if __name__ == "__main__":
    main()
