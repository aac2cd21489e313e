"""The seed documents' own clients, unmodified, against ``igym serve --profile``.

Seed 001's client (``client.py``, ``inference.py``) runs from its own source in
``../shared/peers/pii_redaction_env`` on openenv-core 0.3.0, in a venv of its own at
``PEER_PYTHON`` (never the project's: openenv-core and openenv cannot share one). Seed 000's
README curl requests are sent as written, with curl itself.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from tests.conftest import require_service
from tests.server.servers import ServerProcess, start_server

ROOT = Path(__file__).resolve().parents[2]
#: Seed 001's implementation, beside the checkout (../shared/peers) or, for a clone made elsewhere,
#: in the workspace's shared folder.
PEER = (
    next(
        (p for p in (ROOT.parent / "shared", Path("/work/shared")) if (p / "peers" / "pii_redaction_env").is_dir()),
        ROOT.parent / "shared",
    )
    / "peers"
    / "pii_redaction_env"
)
#: The venv with openenv-core 0.3.0, openai and python-dotenv (made by .ci/run).
PEER_PYTHON = Path("/tmp/igym-peer001-venv/bin/python")

_PLAY = """
import asyncio, json, sys
from client import RedactionEnv
from models import ActionType, RedactionAction

async def main(url):
    out = {}
    async with RedactionEnv(base_url=url) as env:
        first = await env.reset(task_id="gdpr_contract_easy")
        out["task_id"] = first.observation.task_id
        out["document_id"] = first.observation.document_id
        out["episode_id"] = (await env.state()).episode_id
        try:
            await env.grade()
            out["grade_before_end"] = "answered"
        except Exception as exc:
            out["grade_before_end"] = str(exc)
        obs = first.observation
        start = obs.visible_text.index(" ") + 1
        r = await env.step(RedactionAction(action_type=ActionType.REDACT, start=obs.cursor_position + start,
                                           end=obs.cursor_position + start + 4, label="NAME", confidence=0.35))
        out["redact_confidence"] = r.observation.metadata.get("confidence")
        out["redact_reward"] = r.reward
        steps = 1
        while not r.done and steps < 400:
            kind = ActionType.FINISH if r.observation.progress_pct >= 1.0 else ActionType.NEXT_CHUNK
            r = await env.step(RedactionAction(action_type=kind))
            steps += 1
        out["done"] = r.done
        out["grade"] = await env.grade()
    print(json.dumps(out))

asyncio.run(main(sys.argv[1]))
"""


def require_peer() -> None:
    require_service(PEER.is_dir(), f"seed 001's implementation at {PEER}")
    require_service(PEER_PYTHON.is_file(), f"a venv with openenv-core 0.3.0 at {PEER_PYTHON.parent.parent}")


@pytest.fixture(scope="module")
def seed001() -> Iterator[ServerProcess]:
    server = start_server(["--profile", "seed001"], admin_token=None)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def seed000() -> Iterator[ServerProcess]:
    server = start_server(["--profile", "seed000"], admin_token=None)
    yield server
    server.stop()


def test_seed001_client_plays_an_episode_and_grades_only_after_it(seed001: ServerProcess, tmp_path: Path) -> None:
    require_peer()
    proc = subprocess.run(
        [str(PEER_PYTHON), "-c", _PLAY, seed001.url],
        cwd=PEER,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(PEER), "NO_PROXY": "*"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert re.fullmatch(r"pii_redaction/gdpr_contract_easy-v\d+", out["task_id"])
    assert re.fullmatch(r"doc-[0-9a-f]{16}", out["document_id"])
    assert re.fullmatch(r"[0-9a-f-]{36}", out["episode_id"])  # State(episode_id, step_count) as openenv-core reads it
    assert "409" in out["grade_before_end"]
    assert out["redact_confidence"] == 0.35  # recorded, not rejected
    assert out["redact_reward"] is not None and out["redact_reward"] > -1.0  # judged as an action, not refused
    assert out["done"] is True
    assert 0.0 <= out["grade"]["score"] <= 1.0 and "breakdown" in out["grade"]


class _FakeLLM(BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint that always answers the same navigation action."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        content = json.dumps({"action_type": "NEXT_CHUNK", "confidence": 0.8})
        body = {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": "fake",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        }
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def test_seed001_inference_loop_plays_every_task(seed001: ServerProcess, tmp_path: Path) -> None:
    require_peer()
    llm = ThreadingHTTPServer(("127.0.0.1", 0), _FakeLLM)
    threading.Thread(target=llm.serve_forever, daemon=True).start()
    try:
        proc = subprocess.run(
            [str(PEER_PYTHON), str(PEER / "inference.py")],
            cwd=tmp_path,  # it writes outputs/ under the working folder
            capture_output=True,
            text=True,
            timeout=300,
            env={
                "PATH": "/usr/bin:/bin",
                "NO_PROXY": "*",
                "API_BASE_URL": f"http://127.0.0.1:{llm.server_address[1]}/v1",
                "HF_TOKEN": "test",
                "MODEL_NAME": "fake",
                "CONTAINER_BASE_URL": seed001.url,
            },
        )
    finally:
        llm.shutdown()
    assert proc.returncode == 0, proc.stderr[-3000:]
    ends = re.findall(r"\[END\] success=\w+ steps=(\d+) ", proc.stdout)
    assert len(ends) == 3, proc.stdout[-3000:]
    assert "[DEBUG]" not in proc.stdout, proc.stdout[-3000:]
    assert "action=ERROR" not in proc.stdout
    for task in ("gdpr_contract_easy", "hipaa_medical_medium", "security_logs_hard"):
        steps = re.search(rf"\[START\] task={task} .*?\n((?:\[STEP\].*\n)+)\[END\]", proc.stdout)
        assert steps is not None, proc.stdout[-3000:]
        assert steps.group(1).strip().splitlines()[-1].count("done=true") == 1  # the episode really ended


def _curl(*args: str) -> str:
    return subprocess.run(["curl", "-s", "--noproxy", "*", *args], capture_output=True, text=True, timeout=30).stdout


def test_seed000_readme_curl_requests_work_as_written(seed000: ServerProcess) -> None:
    require_service(shutil.which("curl") is not None, "curl")
    base = seed000.url
    easy = json.loads(
        _curl("-X", "POST", f"{base}/reset", "-H", "Content-Type: application/json", "-d", '{"difficulty": "easy"}')
    )
    assert re.fullmatch(r"information_integrity/easy-v\d+", easy["task_id"])
    by_index = json.loads(_curl("-X", "POST", f"{base}/reset", "-d", '{"difficulty": "medium", "scenario_id": 2}'))
    assert re.fullmatch(r"information_integrity/medium-v\d+", by_index["task_id"])
    by_id = json.loads(_curl("-X", "POST", f"{base}/reset", "-d", '{"difficulty": "hard", "scenario_id": "hard_001"}'))
    assert re.fullmatch(r"information_integrity/hard-v\d+", by_id["task_id"])

    session = easy["session_id"]
    check = json.loads(
        _curl(
            "-X",
            "POST",
            f"{base}/step",
            "-d",
            f'{{"session_id": "{session}", "action": {{"type": "check_source", "source_id": "src_001"}}}}',
        )
    )
    assert check["info"]["error"] is None and check["reward"] > 0
    assert any(s["id"] == "src_1" and s.get("stance") for s in check["observation"]["available_sources"])
    verify = json.loads(
        _curl(
            "-X",
            "POST",
            f"{base}/step",
            "-d",
            f'{{"session_id": "{session}", "action": {{"type": "verify_claim", "claim_id": "claim_001"}}}}',
        )
    )
    assert verify["info"]["error"] is None
    decide = json.loads(
        _curl(
            "-X",
            "POST",
            f"{base}/step",
            "-d",
            f'{{"session_id": "{session}", "action": {{"type": "decide", "decision": "remove"}}}}',
        )
    )
    assert decide["done"] is True
    assert json.loads(_curl(f"{base}/health"))["status"] == "healthy"
    assert any(t["env"] == "information_integrity" for t in json.loads(_curl(f"{base}/tasks")))
    assert json.loads(_curl(f"{base}/scenario/{session}"))["done"] is True
    assert json.loads(_curl("-X", "DELETE", f"{base}/session/{session}"))["closed"] is True


def test_root_keeps_the_prefixed_paths_and_validates(seed000: ServerProcess) -> None:
    """The prefixed paths still answer, and the root serves the environment's own OpenAPI document."""
    with httpx.Client(base_url=seed000.url, trust_env=False) as http:
        assert http.get("/information_integrity/health").json()["status"] == "healthy"
        doc = http.get("/openapi.json").json()
        assert doc["info"]["title"] == "integrity-gym: information_integrity"
        assert "/reset" in doc["paths"]
        assert http.get("/metadata").json()["name"] == "information_integrity"


def test_without_profile_padded_ids_and_confidence_are_refused() -> None:
    """The dialects are the profile's: the default server still judges them as malformed."""
    server = start_server(admin_token=None)
    try:
        with httpx.Client(base_url=server.url, trust_env=False) as http:
            assert http.post("/reset", json={}).status_code == 404  # nothing at the root without --root
            sid = http.post("/pii_redaction/reset", json={}).json()["session_id"]
            step = http.post(
                "/pii_redaction/step", json={"session_id": sid, "action": {"action_type": "SKIP", "confidence": 0.8}}
            ).json()
            assert step["info"]["error"] and "confidence" in step["info"]["error"]
    finally:
        server.stop()
