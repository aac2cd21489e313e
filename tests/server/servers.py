"""Start real server processes (uvicorn on 127.0.0.1, a free port) and real redis-server for tests."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import httpx

ADMIN_TOKEN = "test-admin-token"
#: Besides every registered task, servers in the tests also serve the tiny protocol-test env.
EXTRA_TASKS = "integrity_gym.server.minimal:MINIMAL_TASK"
_RUNNING = re.compile(r"Uvicorn running on (http://127\.0\.0\.1:\d+)")


@dataclass
class ServerProcess:
    """A running ``python -m integrity_gym.server``."""

    url: str
    proc: subprocess.Popen[str]
    log: list[str]

    def stop(self) -> None:
        """Terminate the server and wait for it."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def health(self) -> dict[str, object]:
        """The server's /health reply."""
        reply: dict[str, object] = httpx.get(self.url + "/health", timeout=5, trust_env=False).json()
        return reply


def start_server(
    args: Sequence[str] = (),
    *,
    admin_token: str | None = ADMIN_TOKEN,
    extra_env: dict[str, str] | None = None,
    cli: bool = False,
) -> ServerProcess:
    """Start a server on a free port (uvicorn picks it) and wait until it answers /health.

    ``cli=True`` starts it as ``igym serve`` (registered tasks only) instead of
    ``python -m integrity_gym.server`` (which also serves the minimal protocol-test task).
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("IGYM_") or k == "IGYM_REQUIRE_SERVICES"}
    if admin_token is not None:
        env["IGYM_ADMIN_TOKEN"] = admin_token
    env.update(extra_env or {})
    if "--session-rate" not in args:
        # Tests open sessions as fast as the machine goes: the per-client rate would make them depend
        # on its speed. Tests of the rate pass their own (test_fair_capacity.py).
        args = [*args, "--session-rate", "0"]
    if cli:
        cmd = [sys.executable, "-m", "integrity_gym", "serve", "--host", "127.0.0.1", "--port", "0", *args]
    else:
        cmd = [sys.executable, "-m", "integrity_gym.server", "--host", "127.0.0.1", "--port", "0"]
        cmd += ["--extra-tasks", EXTRA_TASKS, *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    log: list[str] = []
    deadline = time.monotonic() + 60
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        log.append(line)
        match = _RUNNING.search(line)
        if match:
            server = ServerProcess(match.group(1), proc, log)
            _drain(server)
            while time.monotonic() < deadline:  # with several workers, the port opens first
                try:
                    if httpx.get(server.url + "/health", timeout=5, trust_env=False).status_code == 200:
                        return server
                except httpx.HTTPError:
                    pass
                time.sleep(0.05)
            server.stop()
            break
    proc.kill()
    proc.wait()
    raise RuntimeError("server did not start:\n" + "".join(log))


def _drain(server: ServerProcess) -> None:
    """Keep reading the server's output in the background so its pipe never fills up."""
    import threading

    def pump() -> None:
        assert server.proc.stdout is not None
        for line in server.proc.stdout:
            server.log.append(line)

    threading.Thread(target=pump, daemon=True).start()


@contextmanager
def running_server(args: Sequence[str] = (), **kwargs: object) -> Iterator[ServerProcess]:
    """A server for the duration of a ``with`` block."""
    server = start_server(args, **kwargs)  # type: ignore[arg-type]
    try:
        yield server
    finally:
        server.stop()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def redis_available() -> bool:
    """True when redis-server and the redis Python package are installed."""
    try:
        import redis  # noqa: F401
    except ImportError:
        return False
    return shutil.which("redis-server") is not None


def start_redis(port: int | None = None) -> tuple[str, subprocess.Popen[bytes]]:
    """A throwaway redis-server on 127.0.0.1 (a free port unless given), without persistence.

    Returns its URL and process once it answers PING; the caller stops the process.
    """
    import redis

    for _ in range(5):
        chosen = port or free_port()
        proc = subprocess.Popen(
            ["redis-server", "--port", str(chosen), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = redis.Redis(host="127.0.0.1", port=chosen)
        deadline = time.monotonic() + 10
        try:
            while time.monotonic() < deadline and proc.poll() is None:
                try:
                    client.ping()
                    return f"redis://127.0.0.1:{chosen}/0", proc
                except redis.ConnectionError:
                    time.sleep(0.05)
        finally:
            client.close()
        stop_process(proc)  # the port was taken meanwhile: try another
    raise RuntimeError("could not start redis-server")


def stop_process(proc: subprocess.Popen[bytes]) -> None:
    """Terminate a process and wait for it."""
    if proc.poll() is None:
        proc.terminate()
        proc.wait(timeout=10)


@contextmanager
def running_redis() -> Iterator[str]:
    """A throwaway redis-server on a free loopback port, without persistence; yields its URL."""
    url, proc = start_redis()
    try:
        yield url
    finally:
        stop_process(proc)
