"""The container image, built as ``make image`` builds it, and the compose stack (docs/container.md).

Needs a docker daemon, debootstrap (only the first time: the base image is kept) and
docker-compose; skipped without them, a failure with IGYM_REQUIRE_SERVICES=1. One module-scoped
build serves every test. With the base image cached the module takes about 3-4 minutes on two
busy cores (the wheels and the three images about 2-3, the stack about half a minute).
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import integrity_gym
from tests.conftest import require_service
from tests.server.episodes import reference

ROOT = Path(__file__).resolve().parents[2]
IMAGE = "integrity-gym:latest"
PORT = 7860
SEED = 5
#: One task of each registered environment.
TASKS = {spec.env: spec.id for spec in reversed(integrity_gym.list_tasks())}
pytestmark = pytest.mark.slow


def _docker_ready() -> bool:
    if not (shutil.which("docker") and shutil.which("docker-compose") and shutil.which("make")):
        return False
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _run(*args: str, timeout: float = 120, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=env)
    assert proc.returncode == 0, (
        f"{' '.join(args)} exited {proc.returncode}:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}"
    )
    return proc.stdout


def _wait_healthy(url: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/health", timeout=2, trust_env=False).status_code == 200:
                return
        time.sleep(0.5)
    raise AssertionError(f"{url}/health did not answer 200 within {timeout_s:.0f} s")


@pytest.fixture(scope="module")
def image() -> str:
    require_service(_docker_ready(), "a docker daemon with docker-compose (apt-get install docker.io docker-compose)")
    has_base = subprocess.run(["docker", "image", "inspect", "igym-base:bookworm"], capture_output=True).returncode == 0
    require_service(has_base or shutil.which("debootstrap") is not None, "debootstrap, for the base image")
    # Test workers (pytest-xdist) each get this fixture: one build at a time, as they share
    # build/wheels; a later build reuses the earlier one's layers.
    lock = ROOT / "build" / ".image.lock"
    lock.parent.mkdir(exist_ok=True)
    with lock.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        _run("make", "--no-print-directory", "image", f"PYTHON={sys.executable}", timeout=1800)
    return IMAGE


@pytest.fixture(scope="module")
def container(image: str) -> Iterator[tuple[str, str]]:
    """The image running alone, published on a free port: (container id, base URL)."""
    port = _free_port()
    cid = _run("docker", "run", "--detach", "--publish", f"127.0.0.1:{port}:{PORT}", image).strip()
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_healthy(url)
        yield cid, url
    finally:
        subprocess.run(["docker", "rm", "--force", cid], capture_output=True, timeout=60)


def test_image_runs_as_a_non_root_user_with_a_healthcheck_on_7860(image: str, container: tuple[str, str]) -> None:
    config = json.loads(_run("docker", "image", "inspect", "--format", "{{json .Config}}", image))
    assert config["User"] == "igym"
    assert f"{PORT}/tcp" in config["ExposedPorts"]
    assert any(str(PORT) in part for part in config["Healthcheck"]["Test"])
    cid, _ = container
    assert _run("docker", "exec", cid, "id", "-u").strip() == "1000"
    # Docker runs the HEALTHCHECK itself: the container must turn healthy, not just be up.
    deadline = time.monotonic() + 120
    status = ""
    while time.monotonic() < deadline:
        status = _run("docker", "inspect", "--format", "{{.State.Health.Status}}", cid).strip()
        if status == "healthy":
            break
        time.sleep(1)
    assert status == "healthy"


def test_openenv_validate_passes_against_the_container(container: tuple[str, str]) -> None:
    require_service(importlib.util.find_spec("openenv") is not None, "the openenv package (extra 'openenv')")
    _, url = container
    cli = Path(sys.executable).with_name("openenv")
    for env_name in TASKS:
        out = _run(str(cli), "validate", "--url", f"{url}/{env_name}", timeout=120)
        assert "Verdict: PASS" in out, out


@pytest.mark.parametrize("env_name", sorted(TASKS))
def test_an_episode_through_the_container_matches_in_process(container: tuple[str, str], env_name: str) -> None:
    _, url = container
    _play_over_http(f"{url}/{env_name}", TASKS[env_name])


def _play_over_http(base: str, task_id: str) -> set[str]:
    """Play the reference episode of ``task_id`` over the stateful HTTP API; return who served it."""
    ref = reference(task_id, SEED)
    served: set[str] = set()
    with httpx.Client(timeout=30, trust_env=False) as http:
        reply = http.post(f"{base}/reset", json={"task": task_id, "seed": SEED})
        assert reply.status_code == 200, reply.text
        served.add(reply.headers.get("x-served-by", ""))
        body = reply.json()
        assert body["observation"] == json.loads(ref.seen[0])
        for action, want in zip(ref.actions, ref.seen[1:], strict=True):
            reply = http.post(f"{base}/step", json={"session_id": body["session_id"], "action": action})
            assert reply.status_code == 200, reply.text
            served.add(reply.headers.get("x-served-by", ""))
            stepped = reply.json()
            last_grade = stepped["info"].pop("grade", None)  # the server adds the grade to the last step
            assert stepped == json.loads(want)
        assert last_grade == json.loads(ref.grade)
        grade = http.get(f"{base}/grade/{body['session_id']}")
        assert grade.status_code == 200, grade.text
        assert grade.json() == json.loads(ref.grade)
    return served


@pytest.fixture(scope="module")
def stack(image: str) -> Iterator[str]:
    """compose.yaml with two server replicas behind the proxy; yields the entry point's URL."""
    port = _free_port()
    env = {**os.environ, "IGYM_PORT": str(port)}
    project = f"igymtest{os.getpid()}"
    compose = ("docker-compose", "--file", "compose.yaml", "--project-name", project)
    try:
        _run(*compose, "up", "--detach", "--scale", "igym=2", env=env, timeout=300)
        url = f"http://127.0.0.1:{port}"
        _wait_healthy(url)
        # Both replicas must be in the proxy's rotation before the session starts.
        deadline = time.monotonic() + 60
        seen: set[str] = set()
        while len(seen) < 2 and time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                reply = httpx.get(f"{url}/health", timeout=2, trust_env=False)
                if reply.status_code == 200:
                    seen.add(reply.headers.get("x-served-by", ""))
            time.sleep(0.2)
        assert len(seen) == 2, f"the proxy reached only {seen}"
        yield url
    finally:
        subprocess.run([*compose, "down", "--timeout", "5"], cwd=ROOT, capture_output=True, env=env, timeout=300)


def test_compose_session_continues_across_two_replicas(stack: str) -> None:
    task_id = TASKS["information_integrity"]
    served = _play_over_http(f"{stack}/information_integrity", task_id)
    # Round-robin: the session's requests were answered by both replicas (state in the shared Redis).
    assert len(served - {""}) == 2, served
