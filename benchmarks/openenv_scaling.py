"""OpenEnv's public scaling harness, run unmodified against OpenEnv's server and ours; prints JSON.

What it measures: how many concurrent WebSocket sessions each server keeps busy when every step
blocks. The harness (``tests/test_scaling.py`` of burtenshaw/openenv-scaling) opens N sessions at
once to ``<url>/ws``; each sends ``reset``, then ``step`` with ``{"wait_seconds": W}``, then closes.
It records per session whether every reply came back (and was not ``{"type": "error"}``) within its
time-out, and per (N, W, repetition) the wall time and latency percentiles.

The two servers, each started here on 127.0.0.1 on a free port and stopped after its sweep:

* ``openenv``: OpenEnv 0.10.0's ``create_app`` serving the harness's own ``benchmark/`` environment
  (a step that ``time.sleep(wait_seconds)``), under uvicorn as the harness deploys it, with
  ``MAX_CONCURRENT_ENVS`` above the largest N. It runs in a venv of its own, built once and
  cached (``--openenv-venv``, default /tmp/openenv-0.10-venv): OpenEnv 0.10.0 is published as
  ``openenv`` (``openenv-core`` stops at 0.3), plus httpx, websockets, uvicorn and fastapi; the
  benchmark package is imported from the extracted harness through PYTHONPATH. The harness
  itself runs in the same venv.
* ``igym``: our server (``igym serve``, or ``python -m integrity_gym.server``, which takes the same
  options, while ``igym serve`` has no ``--extra-tasks``) with ``benchmarks/waiting_env.py``, the
  equivalent environment, at ``/`` (``--root waiting``) and ``--max-sessions`` above the largest N
  (``--igym-args``). ``check_env`` is run on the environment first.

The servers, the harness and this script get the open-files limit raised to its hard limit.
The harness is extracted to a temporary folder from the fetched repository (``--harness``: a git
directory, ``git archive HEAD``, or an already extracted folder) and never changed.

Printed: one JSON document. Per server and wait, per N: the median over repetitions of the
success rate, wall time, effective concurrency (N × wait / wall) and the harness's p50/p99 total
session latency, with the failed sessions' error types; the largest N whose median success rate
is at least 95 %; and, measured in the same run, the ratio ours/OpenEnv of that largest N and of
the effective concurrency at each N. The machine (Python, CPU count, ``nproc``, ``ulimit -n``, load)
is recorded too. Both servers and the client share this machine's cores; the servers run one after
the other, never at once. All traffic stays on 127.0.0.1, and every run is bounded in time.

    .venv/bin/python benchmarks/openenv_scaling.py                       # the full grid
    .venv/bin/python benchmarks/openenv_scaling.py --requests-grid 1,8,32,128 --reps 1
    .venv/bin/python benchmarks/openenv_scaling.py --servers igym --igym-args='--max-sessions 20000'

Progress and the harness's own output go to stderr; ``--output-dir`` keeps the harness's CSV/JSONL
and the server logs (default: a temporary folder, removed afterwards).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import functools
import json
import os
import platform
import resource
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_HARNESS = Path("/work/.mirror/burtenshaw+openenv-scaling/repo")
DEFAULT_VENV = Path("/tmp/openenv-0.10-venv")
#: OpenEnv 0.10.0 is on PyPI as ``openenv``; the harness and its benchmark env need the rest.
OPENENV_VERSION = "0.10.0"
OPENENV_REQUIREMENTS = (f"openenv=={OPENENV_VERSION}", "httpx", "websockets", "uvicorn", "fastapi")
#: The success rate at or above which a batch counts as served (the harness's reports use 95 %).
SUCCESS_FLOOR = 0.95
WAITING_TASKS = "benchmarks.waiting_env:SPEC"
SERVERS = ("openenv", "igym")
#: Seconds a server gets to answer /health after it starts.
START_TIMEOUT_S = 90.0


def log(message: str) -> None:
    print(f"[openenv_scaling] {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- machine and limits
def raise_nofile() -> None:
    """Raise this process's open-files limit to its hard limit (also the children's ``preexec_fn``)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def shell_output(command: str) -> str:
    done = subprocess.run(["sh", "-c", command], capture_output=True, text=True, check=False)
    return done.stdout.strip() or done.stderr.strip()


def machine(ulimit_before: str) -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "nproc": shell_output("nproc"),
        "ulimit_n": {"inherited": ulimit_before, "servers_and_harness": shell_output("ulimit -n")},
        "ulimit_hn": shell_output("ulimit -Hn"),
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }


# --------------------------------------------------------------------------- harness and venv
def extract_harness(source: Path, into: Path) -> tuple[Path, str | None]:
    """The harness's work tree: ``source`` itself if extracted, else ``git archive HEAD`` of it."""
    rev = subprocess.run(["git", "-C", str(source), "rev-parse", "HEAD"], capture_output=True, text=True, check=False)
    commit = rev.stdout.strip() if rev.returncode == 0 else None
    if (source / "tests" / "test_scaling.py").is_file():
        return source, commit
    if commit is None:
        raise SystemExit(f"--harness {source}: neither an extracted harness nor a git directory ({rev.stderr.strip()})")
    tree = into / "harness"
    tree.mkdir()
    archive = subprocess.run(["git", "-C", str(source), "archive", "HEAD"], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    if not (tree / "tests" / "test_scaling.py").is_file():
        raise SystemExit(f"--harness {source}: HEAD has no tests/test_scaling.py")
    return tree, commit


_VERSIONS = "import importlib.metadata as m, json, sys; print(json.dumps({p: m.version(p) for p in sys.argv[1:]}))"


def versions(python: Path | str, packages: Sequence[str], env: dict[str, str] | None = None) -> dict[str, str]:
    done = subprocess.run(
        [str(python), "-c", _VERSIONS, *packages], capture_output=True, text=True, check=False, env=env
    )
    if done.returncode != 0:
        return {}
    found: dict[str, str] = json.loads(done.stdout)
    return found


def ensure_openenv_venv(venv: Path) -> Path:
    """The venv's python, building the venv first unless it already has OpenEnv 0.10.0 and the rest."""
    python = venv / "bin" / "python"
    wanted = ["openenv", "httpx", "websockets", "uvicorn", "fastapi"]
    if python.exists():
        have = versions(python, wanted)
        if have.get("openenv") == OPENENV_VERSION and all(p in have for p in wanted):
            return python
    log(f"building {venv} with {' '.join(OPENENV_REQUIREMENTS)} (once; takes a few minutes)")
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *OPENENV_REQUIREMENTS],
        check=True,
        stdout=sys.stderr,
    )
    return python


# --------------------------------------------------------------------------- servers
def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class ServerPlan:
    """How to start one server under test."""

    name: str
    command: list[str]
    cwd: Path
    env: dict[str, str]
    port: int
    versions: dict[str, str]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def wait_ready(proc: subprocess.Popen[Any], url: str, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as reply:
                if reply.status == 200:
                    return True
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.25)
    return False


def stop(proc: subprocess.Popen[Any]) -> None:
    """Stop a process this script started: SIGINT (uvicorn's graceful stop), then SIGTERM, then SIGKILL."""
    steps = ((functools.partial(proc.send_signal, signal.SIGINT), 15.0), (proc.terminate, 5.0), (proc.kill, 5.0))
    for send, grace in steps:
        if proc.poll() is not None:
            return
        send()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace)


@contextlib.contextmanager
def running(
    plan: ServerPlan, log_path: Path, attempts: int, retry_wait_s: float
) -> Iterator[tuple[subprocess.Popen[Any], int]]:
    """Start the server (retrying a failed start), yield it and the attempts it took, stop it."""
    for attempt in range(1, attempts + 1):
        with log_path.open("ab") as out:
            out.write(f"--- attempt {attempt}: {shlex.join(plan.command)}\n".encode())
            out.flush()
            proc = subprocess.Popen(
                plan.command,
                cwd=plan.cwd,
                env=plan.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=raise_nofile,
            )
        if wait_ready(proc, plan.url, START_TIMEOUT_S):
            break
        stop(proc)
        log(f"{plan.name} did not start (attempt {attempt}/{attempts}):\n{tail(log_path)}")
        if attempt == attempts:
            raise RuntimeError(f"{plan.name} did not start after {attempts} attempts:\n{tail(log_path)}")
        log(f"retrying in {retry_wait_s:.0f} s")
        time.sleep(retry_wait_s)
    try:
        yield proc, attempt
    finally:
        stop(proc)


def openenv_plan(args: argparse.Namespace, harness: Path, python: Path) -> ServerPlan:
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(harness),
        "MAX_CONCURRENT_ENVS": str(args.max_concurrent_envs),
        "PORT": str(port),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    command = [str(python), "-m", "uvicorn", "benchmark.server.app:app", "--host", "127.0.0.1", "--port", str(port)]
    return ServerPlan("openenv", command, harness, env, port, versions(python, ["openenv", "uvicorn", "websockets"]))


def igym_serve_takes_extra_tasks(igym: Path) -> bool:
    if not igym.exists():
        return False
    done = subprocess.run([str(igym), "serve", "--help"], capture_output=True, text=True, check=False)
    return "--extra-tasks" in done.stdout


def igym_env() -> dict[str, str]:
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": str(REPO) + (os.pathsep + path if path else "")}


def igym_plan(args: argparse.Namespace) -> ServerPlan:
    port = free_port()
    python = Path(args.igym_python)
    igym = python.parent / "igym"
    options = ["--extra-tasks", WAITING_TASKS, "--tasks", "waiting/*", "--root", "waiting"]
    # Every harness session comes from this one address: the per-client quota and rate are off.
    options += ["--max-sessions-per-client", "0", "--session-rate", "0"]
    options += ["--host", "127.0.0.1", "--port", str(port), *shlex.split(args.igym_args)]
    if igym_serve_takes_extra_tasks(igym):
        command = [str(igym), "serve", *options]
    else:
        command = [str(python), "-m", "integrity_gym.server", *options]
    found = versions(python, ["integrity-gym", "uvicorn", "websockets"])
    return ServerPlan("igym", command, REPO, igym_env(), port, found)


_CHECK_ENV = (
    "import integrity_gym; from benchmarks.waiting_env import SPEC, WaitingEnv; "
    "integrity_gym.check_env(WaitingEnv(SPEC)); print(getattr(WaitingEnv, 'blocking', None))"
)


def check_waiting_env(python: str) -> dict[str, Any]:
    done = subprocess.run(
        [python, "-c", _CHECK_ENV], capture_output=True, text=True, check=False, cwd=REPO, env=igym_env()
    )
    if done.returncode != 0:
        return {"passed": False, "error": (done.stderr or done.stdout).strip()[-2000:]}
    return {"passed": True, "blocking": done.stdout.strip()}


# --------------------------------------------------------------------------- the harness
def run_harness(
    args: argparse.Namespace, harness: Path, python: Path, url: str, out: Path, log_path: Path
) -> tuple[list[str], int]:
    """Run ``tests/test_scaling.py`` unmodified against ``url``; its output goes to ``out`` and stderr."""
    command = [
        str(python),
        str(harness / "tests" / "test_scaling.py"),
        "--url",
        url,
        "--mode",
        "ws",
        "--requests-grid",
        args.requests_grid,
        "--wait-grid",
        args.wait_grid,
        "--reps",
        str(args.reps),
        "--output-dir",
        str(out),
    ]
    if args.timeout is not None:
        command += ["--timeout", str(args.timeout)]
    # Each session waits at most three time-outs (connect, reset, step); bound the whole sweep.
    per_session = 3 * (args.timeout if args.timeout is not None else 120.0)
    runs = len(parse_ints(args.requests_grid)) * len(parse_floats(args.wait_grid)) * args.reps
    bound = runs * (per_session + max(parse_floats(args.wait_grid)) + 30.0)
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    with log_path.open("w") as sink:
        proc = subprocess.Popen(
            command,
            cwd=harness,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            preexec_fn=raise_nofile,
        )
        assert proc.stdout is not None
        copier = threading.Thread(target=copy_lines, args=(proc.stdout, sink), daemon=True)
        copier.start()
        try:
            code = proc.wait(timeout=bound)
        except subprocess.TimeoutExpired:
            log(f"the harness ran past {bound:.0f} s: stopped")
            stop(proc)
            code = -1
        copier.join(timeout=10)
    return command, code


def copy_lines(source: IO[str], sink: IO[str]) -> None:
    for line in source:
        sink.write(line)
        sys.stderr.write("  | " + line)
    sys.stderr.flush()


# --------------------------------------------------------------------------- results
def parse_ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def parse_floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def median(values: Sequence[float]) -> float | None:
    return round(statistics.median(values), 4) if values else None


def read_results(out: Path) -> tuple[list[dict[str, str]], list[dict[str, Any]]]:
    summary, raw = out / "summary.csv", out / "raw.jsonl"
    rows = list(csv.DictReader(summary.open())) if summary.exists() else []
    sessions = [json.loads(line) for line in raw.open() if line.strip()] if raw.exists() else []
    return rows, sessions


def summarise(rows: list[dict[str, str]], sessions: list[dict[str, Any]], waits: list[float]) -> dict[str, Any]:
    """Per wait, per N: medians over repetitions; and the largest N served at ≥ 95 % success."""
    by_wait: dict[str, Any] = {}
    max_batch: dict[str, int | None] = {}
    for wait in waits:
        per_n: dict[str, Any] = {}
        sizes = sorted({int(r["num_requests"]) for r in rows if abs(float(r["wait_seconds"]) - wait) < 1e-9})
        for n in sizes:
            runs = [r for r in rows if int(r["num_requests"]) == n and abs(float(r["wait_seconds"]) - wait) < 1e-9]
            served = [r for r in runs if int(r["successful"]) > 0]
            walls = [float(r["total_wall_time"]) for r in runs]
            failed = [
                s
                for s in sessions
                if not s.get("success", True)
                and s.get("batch_size") == n
                and abs(float(s.get("wait_requested", -1)) - wait) < 1e-9
            ]
            errors = Counter(str(s.get("error_type")) for s in failed)
            per_n[str(n)] = {
                "reps": len(runs),
                "success_rate": median([int(r["successful"]) / n for r in runs]),
                "wall_s": median(walls),
                "effective_concurrency": median([n * wait / w for w in walls if w > 0]),
                "total_p50_s": median([float(r["total_p50"]) for r in served]),
                "total_p99_s": median([float(r["total_p99"]) for r in served]),
                "step_p50_s": median([float(r["step_p50"]) for r in served]),
                "unique_pids": max((int(r["unique_pids"]) for r in runs), default=0),
                "errors": dict(errors),
                "error_example": str(failed[0].get("error_message"))[:200] if failed else None,
            }
        ok = [int(n) for n, v in per_n.items() if v["success_rate"] is not None and v["success_rate"] >= SUCCESS_FLOOR]
        key = repr(wait)
        by_wait[key] = per_n
        max_batch[key] = max(ok) if ok else None
    return {"by_wait": by_wait, "max_batch_95": max_batch}


def compare(results: dict[str, Any], waits: list[float]) -> dict[str, Any] | None:
    """Ours over OpenEnv's, measured in this run: the largest batch served and each N's concurrency."""
    ours, theirs = results.get("igym", {}).get("summary"), results.get("openenv", {}).get("summary")
    if not ours or not theirs:
        return None
    out: dict[str, Any] = {"max_batch_ratio_igym_over_openenv": {}, "effective_concurrency_ratio_igym_over_openenv": {}}
    for wait in waits:
        key = repr(wait)
        a, b = ours["max_batch_95"].get(key), theirs["max_batch_95"].get(key)
        out["max_batch_ratio_igym_over_openenv"][key] = round(a / b, 4) if a and b else None
        ratios: dict[str, float | None] = {}
        for n, row in ours["by_wait"].get(key, {}).items():
            other = theirs["by_wait"].get(key, {}).get(n)
            x, y = row["effective_concurrency"], other["effective_concurrency"] if other else None
            ratios[n] = round(x / y, 4) if x is not None and y else None
        out["effective_concurrency_ratio_igym_over_openenv"][key] = ratios
    return out


# --------------------------------------------------------------------------- main
def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--harness", type=Path, default=DEFAULT_HARNESS, help="Harness git dir or extracted folder.")
    parser.add_argument("--openenv-venv", type=Path, default=DEFAULT_VENV, help="Cached venv with OpenEnv 0.10.0.")
    parser.add_argument("--servers", default=",".join(SERVERS), help="Comma-separated: openenv, igym.")
    parser.add_argument("--requests-grid", default="1,32,256,1024,4096", help="Concurrent sessions N.")
    parser.add_argument("--wait-grid", default="1.0", help="Seconds each step sleeps.")
    parser.add_argument("--reps", type=int, default=3, help="Repetitions per (N, wait).")
    parser.add_argument("--timeout", type=float, default=None, help="Harness --timeout (its default: 120 s).")
    parser.add_argument("--max-concurrent-envs", type=int, default=20000, help="OpenEnv's MAX_CONCURRENT_ENVS.")
    parser.add_argument(
        "--igym-args",
        default="--max-sessions 20000",
        help="Extra options for igym serve; write --igym-args='--opt value' (with =).",
    )
    parser.add_argument("--igym-python", default=sys.executable, help="Python of the venv with integrity-gym.")
    parser.add_argument("--start-attempts", type=int, default=3, help="Tries to start a server.")
    parser.add_argument("--retry-wait", type=float, default=120.0, help="Seconds between start attempts.")
    parser.add_argument("--output-dir", type=Path, default=None, help="Keep the harness's CSV/JSONL and logs here.")
    args = parser.parse_args(argv)
    unknown = set(args.servers.split(",")) - set(SERVERS)
    if unknown:
        parser.error(f"--servers: unknown {', '.join(sorted(unknown))}; choose from {', '.join(SERVERS)}")
    if not parse_ints(args.requests_grid) or not parse_floats(args.wait_grid) or args.reps < 1:
        parser.error("--requests-grid and --wait-grid need at least one value, --reps at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    ulimit_before = shell_output("ulimit -n")
    raise_nofile()
    waits = parse_floats(args.wait_grid)
    chosen = [s for s in SERVERS if s in args.servers.split(",")]
    work = Path(tempfile.mkdtemp(prefix="openenv_scaling_"))
    out_root = args.output_dir or work / "out"
    out_root.mkdir(parents=True, exist_ok=True)
    try:
        harness, commit = extract_harness(args.harness, work)
        python = ensure_openenv_venv(args.openenv_venv)
        report: dict[str, Any] = {
            "benchmark": "openenv_scaling",
            "measures": "concurrent WebSocket sessions (reset, step sleeping wait_seconds, close) served per "
            "server by OpenEnv's scaling harness, run unmodified",
            "machine": machine(ulimit_before),
            "harness": {"source": str(args.harness), "commit": commit, "python": str(python)},
            "grid": {
                "requests": parse_ints(args.requests_grid),
                "wait_seconds": waits,
                "reps": args.reps,
                "timeout_s": args.timeout if args.timeout is not None else 120.0,
                "success_floor": SUCCESS_FLOOR,
            },
            "servers": {},
        }
        for name in chosen:
            entry: dict[str, Any] = {}
            report["servers"][name] = entry
            if name == "igym":
                entry["check_env"] = check_waiting_env(args.igym_python)
            plan = openenv_plan(args, harness, python) if name == "openenv" else igym_plan(args)
            entry["command"] = shlex.join(plan.command)
            entry["versions"] = plan.versions
            out = out_root / name
            shutil.rmtree(out, ignore_errors=True)  # the harness appends to its files
            out.mkdir(parents=True)
            log(f"{name}: starting {entry['command']}")
            started = time.monotonic()
            try:
                with running(plan, out / "server.log", args.start_attempts, args.retry_wait) as (server, attempts):
                    entry["start_attempts"] = attempts
                    command, code = run_harness(args, harness, python, plan.url, out, out / "harness.log")
                    entry["server_alive_after"] = server.poll() is None
            except RuntimeError as exc:
                entry["started"], entry["error"] = False, str(exc)
                continue
            entry["started"] = True
            entry["harness_command"] = shlex.join(command)
            entry["harness_exit_code"] = code
            entry["sweep_s"] = round(time.monotonic() - started, 1)
            entry["load_avg_1m_after"] = round(os.getloadavg()[0], 2)
            entry["summary"] = summarise(*read_results(out), waits)
            entry["server_tracebacks"] = (out / "server.log").read_text(errors="replace").count("Traceback")
        report["comparison"] = compare(report["servers"], waits)
        report["machine"]["load_avg_1m_end"] = round(os.getloadavg()[0], 2)
        if args.output_dir:
            report["output_dir"] = str(args.output_dir)
        print(json.dumps(report, indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
