"""Sealed evaluations (issue 22): a real ``--sealed`` server refuses every way of choosing an item.

Real server processes (``servers.py``) with ``IGYM_EVAL_SECRET`` set, spoken to with plain httpx
and websockets. Each test names the mutation of the server it kills (what would make it fail).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from typing import Any

import httpx
import hypothesis
import pytest
import schemathesis
from fastapi.testclient import TestClient
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from starlette.routing import Route
from websockets.sync.client import connect

from integrity_gym.agents.redteam import server_probes
from integrity_gym.core.registry import get_spec
from integrity_gym.server import ServerConfig, create_app
from tests.conftest import require_service
from tests.server.servers import (
    ADMIN_TOKEN,
    ServerProcess,
    redis_available,
    running_redis,
    running_server,
    start_server,
)

SECRET = "sealed-test-secret-0123456789"
SECRET_ENV = {"IGYM_EVAL_SECRET": SECRET}
ADMIN = {"authorization": f"Bearer {ADMIN_TOKEN}"}
#: Task names without their version (other work bumps versions; the server resolves the newest).
SV, II, PII = "selective_verification/text", "information_integrity/hard", "pii_redaction/gdpr_contract_easy"
ENV_OF = {SV: "selective_verification", II: "information_integrity", PII: "pii_redaction"}


@pytest.fixture(scope="module")
def sealed() -> Iterator[ServerProcess]:
    server = start_server(["--sealed"], extra_env=SECRET_ENV)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    with httpx.Client(trust_env=False, timeout=60) as client:
        yield client


def open_evaluation(
    http: httpx.Client, url: str, tasks: list[str], episodes: int, repeat_of: str | None = None
) -> dict[str, Any]:
    body = {"tasks": tasks, "episodes": episodes, "repeat_of": repeat_of}
    # Replaying handed-out items is the evaluator's call: repeat_of needs the admin token.
    reply = http.post(f"{url}/evaluations", json=body, headers=ADMIN if repeat_of else {})
    assert reply.status_code == 201, reply.text
    data: dict[str, Any] = reply.json()
    return data


def handles(evaluation: dict[str, Any], task: str) -> list[str]:
    return [e["handle"] for e in evaluation["episodes"] if e["task_id"].startswith(task + "-v")]


def start(http: httpx.Client, url: str, env: str, handle: str) -> dict[str, Any]:
    reply = http.post(f"{url}/{env}/reset", json={"handle": handle})
    assert reply.status_code == 200, reply.text
    data: dict[str, Any] = reply.json()
    return data


def code(reply: httpx.Response) -> tuple[int, str]:
    return reply.status_code, reply.json().get("code")


def item_of(state: dict[str, Any]) -> str:
    """The id of the item a (full) state plays."""
    for path in (("item", "item_id"), ("document", "id"), ("scenario", "id")):
        node: Any = state
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, str):
            return node
    raise AssertionError(f"no item id in the state of {state['task_id']}")


# --------------------------------------------------------------------------- starting the server
def test_a_sealed_server_refuses_to_start_without_the_eval_secret() -> None:
    """Kills: dropping the secret check of ``serve``/``create_app`` (the server would start)."""
    with pytest.raises(RuntimeError) as refused:
        start_server(["--sealed"], cli=True)
    assert "IGYM_EVAL_SECRET" in str(refused.value)
    with pytest.raises(ValueError, match="IGYM_EVAL_SECRET"):
        create_app(config=ServerConfig(sealed=True))
    assert ServerConfig.from_env({"IGYM_SEALED": "1"}).sealed
    assert not ServerConfig.from_env({}).sealed


def test_evaluations_are_not_found_on_a_server_that_is_not_sealed() -> None:
    """Kills: serving evaluations without --sealed, or a generic 404 without the message."""
    with running_server([], extra_env=SECRET_ENV) as server:
        reply = httpx.post(f"{server.url}/evaluations", json={"tasks": ["*"], "episodes": 1}, trust_env=False)
        assert reply.status_code == 404
        assert reply.json()["detail"] == "this server is not sealed; start it with igym serve --sealed"
        refused = httpx.post(f"{server.url}/pii_redaction/reset", json={"handle": "a" * 32}, trust_env=False)
        assert code(refused) == (422, "VALIDATION_ERROR")


# --------------------------------------------------------------------------- evaluations
def test_an_evaluation_hands_out_handles_and_checks_its_request(sealed: ServerProcess, http: httpx.Client) -> None:
    """Kills: a handle that is guessable or shared, lost counts, unchecked tasks or counts."""
    evaluation = open_evaluation(http, sealed.url, [SV, "information_integrity/*"], 3)
    assert evaluation["data_mode"].startswith("secret:") and evaluation["expires_in_s"] == 86400
    tasks = [e["task_id"] for e in evaluation["episodes"]]
    assert len(tasks) == 3 * 4 and [e["index"] for e in evaluation["episodes"][:3]] == [0, 1, 2]
    assert len({e["handle"] for e in evaluation["episodes"]}) == 12
    assert all(len(e["handle"]) >= 32 for e in evaluation["episodes"])
    for body in (
        {"tasks": ["no_such_env/*"], "episodes": 1},
        {"tasks": [SV], "episodes": 0},
        {"tasks": [SV], "episodes": 10_001},
        {"tasks": [], "episodes": 1},
        {"tasks": [SV], "episodes": True},
    ):
        reply = http.post(f"{sealed.url}/evaluations", json=body)
        assert code(reply) == (422, "VALIDATION_ERROR"), body
    unknown = http.post(f"{sealed.url}/evaluations", json={"tasks": ["no_such_env/*"], "episodes": 1})
    assert "choose among" in unknown.json()["detail"] and "pii_redaction/" in unknown.json()["detail"]
    status = http.get(f"{sealed.url}/evaluations/{evaluation['evaluation_id']}").json()
    assert not status["closed"] and {e["status"] for e in status["episodes"]} == {"pending"}
    assert "grade" not in status["episodes"][0]
    assert code(http.get(f"{sealed.url}/evaluations/no-such-evaluation")) == (404, "EVALUATION_NOT_FOUND")


def test_every_reset_that_chooses_an_item_is_refused_over_http(sealed: ServerProcess, http: httpx.Client) -> None:
    """Kills: any reset path that honours seed, scenario_id, options, task or difficulty when sealed."""
    evaluation = open_evaluation(http, sealed.url, [SV, II, PII], 1)
    probes: dict[str, list[dict[str, Any]]] = {
        "selective_verification": [{"scenario_id": "sv-text-0"}, {"scenario_id": 5}, {"options": {}}],
        "information_integrity": [
            {"scenario_id": "gen_hard_eval_5"},
            {"task": II, "scenario_id": "gen_hard_eval_5"},
            {"options": {"scenario_file": "/etc/hostname"}},
            {"options": {"scenario": {"id": "mine"}}},
            {"options": {"partition": "train"}},
        ],
        "pii_redaction": [{"scenario_id": "contract-g1-s5-i0"}, {"options": {"document": {"text": "x"}}}],
    }
    for task, env in ENV_OF.items():
        handle = handles(evaluation, task)[0]
        bodies: list[dict[str, Any]] = [{}, {"seed": 5}, {"task": task}, {"difficulty": "hard"}, *probes[env]]
        bodies += [{"handle": handle, **b} for b in bodies if b]
        for body in bodies:
            reply = http.post(f"{sealed.url}/{env}/reset", json=body)
            assert code(reply) == (403, "SEALED"), (env, body, reply.text)
            assert "POST /evaluations" in reply.json()["detail"]
        empty = http.post(f"{sealed.url}/{env}/reset", content=b"")  # curl -X POST, no body
        assert code(empty) == (403, "SEALED")
        start(http, sealed.url, env, handle)  # no refusal used the handle up


def test_the_fastapi_reset_route_is_sealed_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """Kills: sealing only the fast /reset route (its FastAPI twin documents it and answers without it)."""
    monkeypatch.setenv("IGYM_EVAL_SECRET", SECRET)
    app = create_app(config=ServerConfig(sealed=True, admin_token=ADMIN_TOKEN, tasks="selective_verification/text*"))
    app.router.routes[:] = [
        r for r in app.router.routes if not (type(r) is Route and r.path.endswith(("/reset", "/step")))
    ]
    with TestClient(app) as client:
        evaluation = client.post("/evaluations", json={"tasks": [SV], "episodes": 1}).json()
        handle = evaluation["episodes"][0]["handle"]
        for body in ({}, {"seed": 1}, {"handle": handle, "seed": 1}, {"scenario_id": 3}):
            assert code(client.post("/selective_verification/reset", json=body)) == (403, "SEALED")  # type: ignore[arg-type]
        reply = client.post("/selective_verification/reset", json={"handle": handle})
        assert reply.status_code == 200 and reply.json()["observation"]["item_id"] == ""
        again = client.post("/selective_verification/reset", json={"handle": handle})
        assert code(again) == (409, "HANDLE_USED")  # type: ignore[arg-type]


def test_a_handle_starts_once_in_its_own_environment(sealed: ServerProcess, http: httpx.Client) -> None:
    """Kills: a handle usable twice, an unknown handle accepted, a handle started in another env (or used up by it)."""
    evaluation = open_evaluation(http, sealed.url, [SV, PII], 1)
    sv, pii = handles(evaluation, SV)[0], handles(evaluation, PII)[0]
    assert code(http.post(f"{sealed.url}/pii_redaction/reset", json={"handle": sv})) == (422, "VALIDATION_ERROR")
    assert code(http.post(f"{sealed.url}/pii_redaction/reset", json={"handle": "x" * 32})) == (404, "HANDLE_NOT_FOUND")
    start(http, sealed.url, "selective_verification", sv)
    for env, handle in (("selective_verification", sv),):
        assert code(http.post(f"{sealed.url}/{env}/reset", json={"handle": handle})) == (409, "HANDLE_USED")
    with connect(f"{sealed.url.replace('http', 'ws')}/selective_verification/ws") as ws:
        ws.send(json.dumps({"type": "reset", "data": {"handle": sv}}))
        assert json.loads(ws.recv())["data"]["code"] == "HANDLE_USED"
    start(http, sealed.url, "pii_redaction", pii)


def test_websocket_resets_are_sealed_and_its_episodes_hide_the_item(sealed: ServerProcess, http: httpx.Client) -> None:
    """Kills: a WebSocket reset honouring seed/scenario_id/options, WS state or grade before the close,
    an item id in a WS observation, WS steps after the close."""
    evaluation = open_evaluation(http, sealed.url, [SV, II], 1)
    sv, ii = handles(evaluation, SV)[0], handles(evaluation, II)[0]
    ws_url = sealed.url.replace("http", "ws")
    with connect(f"{ws_url}/information_integrity/ws") as ws:
        for data in (
            {},
            {"seed": 5},
            {"scenario_id": "gen_hard_eval_5"},
            {"task": II, "scenario_id": "gen_hard_eval_5"},
            {"options": {"scenario_file": "/etc/hostname"}},
            {"handle": ii, "seed": 5},
            {"handle": ii, "scenario_id": "gen_hard_eval_5"},
        ):
            ws.send(json.dumps({"type": "reset", "data": data}))
            reply = json.loads(ws.recv())
            assert reply["type"] == "error" and reply["data"]["code"] == "SEALED", (data, reply)
        ws.send(json.dumps({"type": "reset", "data": {"handle": ii}}))
        first = json.loads(ws.recv())
        assert first["type"] == "observation" and first["data"]["metadata"]["task_id"].startswith(II)
        for kind in ("state", "grade"):
            ws.send(json.dumps({"type": kind}))
            assert json.loads(ws.recv())["data"]["code"] == "SEALED_UNTIL_CLOSED"
        ws.send(json.dumps({"type": "step", "data": {"type": "verify_claim", "claim_id": "claim_1"}}))
        assert json.loads(ws.recv())["type"] == "observation"
        with connect(f"{ws_url}/selective_verification/ws") as other:
            other.send(json.dumps({"type": "reset", "data": {"handle": sv}}))
            assert json.loads(other.recv())["data"]["observation"]["item_id"] == ""
            other.send(json.dumps({"type": "step", "data": {"verdict": "SUPPORTED", "confidence": 0.9}}))
            done = json.loads(other.recv())["data"]
            assert done["done"] and done["observation"]["item_id"] == ""
            assert (
                "correct" not in done["metadata"]["trace_metrics"]
                and "brier_sum" not in done["metadata"]["trace_metrics"]
            )
        closed = http.post(f"{sealed.url}/evaluations/{evaluation['evaluation_id']}/close").json()
        ws.send(json.dumps({"type": "step", "data": {"type": "decide", "decision": "flag"}}))
        assert json.loads(ws.recv())["data"]["code"] == "EVALUATION_CLOSED"
    result = {e["task_id"].split("-v")[0]: e for e in closed["episodes"]}
    assert result[II]["status"] == "running" and result[II]["steps"] == 1 and result[II]["grade"] is not None
    assert result[SV]["status"] == "finished" and result[SV]["steps"] == 1 and result[SV]["explanation"]


def test_grade_explain_and_state_wait_for_the_close(sealed: ServerProcess, http: httpx.Client) -> None:
    """Kills: grade (GET or POST), explain, state or collect answered to a non-admin before the close;
    the admin locked out; the close not grading, not releasing, not closing sessions, or not idempotent."""
    evaluation = open_evaluation(http, sealed.url, [SV, II], 2)
    sv, ii = handles(evaluation, SV), handles(evaluation, II)
    session = start(http, sealed.url, "selective_verification", sv[0])["session_id"]
    step = http.post(
        f"{sealed.url}/selective_verification/step",
        json={"session_id": session, "action": {"verdict": "REFUTED", "confidence": 0.8}},
    ).json()
    assert step["done"]
    running = start(http, sealed.url, "information_integrity", ii[0])["session_id"]
    for sid, env in ((session, "selective_verification"), (running, "information_integrity")):
        for reply in (
            http.get(f"{sealed.url}/{env}/grade/{sid}"),
            http.post(f"{sealed.url}/{env}/grade", json={"session_id": sid}),
            http.post(f"{sealed.url}/{env}/grade", json={}),
            http.get(f"{sealed.url}/{env}/state/{sid}"),
            http.get(f"{sealed.url}/{env}/state", params={"session_id": sid}),
            http.get(f"{sealed.url}/web/api/explain/{env}/{sid}"),
        ):
            assert code(reply) == (403, "SEALED_UNTIL_CLOSED"), reply.request.url
        scenario = http.get(f"{sealed.url}/{env}/scenario/{sid}").json()
        assert set(scenario) == {"session_id", "task_id", "step_count", "done", "episode_id", "observation"}
    assert http.get(f"{sealed.url}/selective_verification/grade/{session}", headers=ADMIN).status_code == 200
    assert http.get(f"{sealed.url}/selective_verification/state/{session}", headers=ADMIN).status_code == 200
    assert http.get(f"{sealed.url}/web/api/explain/selective_verification/{session}", headers=ADMIN).status_code == 200
    collect = http.post(f"{sealed.url}/information_integrity/collect", json={"claim": "the bridge opened in 1932"})
    assert code(collect) == (403, "SEALED")
    admin_view = http.get(f"{sealed.url}/evaluations/{evaluation['evaluation_id']}", headers=ADMIN).json()
    assert admin_view["episodes"][0]["grade"] is not None and admin_view["episodes"][0]["status"] == "finished"
    plain_view = http.get(f"{sealed.url}/evaluations/{evaluation['evaluation_id']}").json()
    assert [e["status"] for e in plain_view["episodes"]] == ["finished", "pending", "running", "pending"]
    assert all("grade" not in e for e in plain_view["episodes"])

    closed = http.post(f"{sealed.url}/evaluations/{evaluation['evaluation_id']}/close")
    assert closed.status_code == 200
    results = closed.json()["episodes"]
    assert [e["status"] for e in results] == ["finished", "pending", "running", "pending"]
    assert (
        results[0]["grade"]
        == http.get(f"{sealed.url}/evaluations/{evaluation['evaluation_id']}", headers=ADMIN).json()["episodes"][0][
            "grade"
        ]
    )
    assert results[0]["steps"] == 1 and "REFUTED" in results[0]["explanation"]
    assert (
        results[2]["steps"] == 0
        and results[2]["grade"]["score"] == 0.0
        and "rule's decision" in results[2]["explanation"]
    )
    assert results[1] == {**results[1], "steps": None, "grade": None, "explanation": None}
    assert http.post(f"{sealed.url}/evaluations/{evaluation['evaluation_id']}/close").json() == closed.json()
    assert http.get(f"{sealed.url}/evaluations/{evaluation['evaluation_id']}").json()["closed"]
    # Sessions of a closed evaluation are closed; its handles no longer start.
    gone = http.post(
        f"{sealed.url}/information_integrity/step",
        json={"session_id": running, "action": {"type": "decide", "decision": "flag"}},
    )
    assert code(gone) == (404, "SESSION_NOT_FOUND")
    assert code(http.post(f"{sealed.url}/selective_verification/reset", json={"handle": sv[1]})) == (
        409,
        "EVALUATION_CLOSED",
    )


def test_nothing_a_client_sees_names_the_item(sealed: ServerProcess, http: httpx.Client) -> None:
    """Kills: an env's ITEM_FIELDS emptied, sealed replies not passed through seal_observation/seal_info,
    a seed, episode id or document/scenario id in any reset, step or scenario reply."""
    evaluation = open_evaluation(http, sealed.url, [SV, II, PII], 1)
    for task, env in ENV_OF.items():
        first = start(http, sealed.url, env, handles(evaluation, task)[0])
        sid = first["session_id"]
        state = http.get(f"{sealed.url}/{env}/state/{sid}", headers=ADMIN).json()
        secrets_ = {str(state["seed"]), state["episode_id"], item_of(state)}
        assert int(state["seed"]) >= 2**32  # drawn by the server, not a small searchable seed
        seen = [json.dumps(first)]
        action = {
            "selective_verification": {"verdict": "ABSTAIN"},
            "information_integrity": {"type": "decide", "decision": "flag"},
            "pii_redaction": {"action_type": "FINISH"},
        }[env]
        seen.append(http.post(f"{sealed.url}/{env}/step", json={"session_id": sid, "action": action}).text)
        seen.append(http.get(f"{sealed.url}/{env}/scenario/{sid}").text)
        for text in seen:
            for secret in secrets_:
                assert secret not in text, (env, secret)
        if env == "selective_verification":
            assert first["observation"]["item_id"] == ""


def _items(http: httpx.Client, url: str, evaluation: dict[str, Any], task: str) -> list[str]:
    """The item each of the evaluation's episodes of ``task`` plays (started, read with the admin token, ended)."""
    env = ENV_OF[task]
    found = []
    for handle in handles(evaluation, task):
        sid = start(http, url, env, handle)["session_id"]
        found.append(item_of(http.get(f"{url}/{env}/state/{sid}", headers=ADMIN).json()))
        http.delete(f"{url}/{env}/session/{sid}")
    return found


def test_two_evaluations_never_share_an_item_and_a_repeat_reuses_them(
    sealed: ServerProcess, http: httpx.Client
) -> None:
    """Kills: no record of items handed out (selective_verification has 1,000 items: 2 x 150 draws
    without it collide almost surely), a repeat drawing afresh or reordering, a repeat of other tasks/counts."""
    first = open_evaluation(http, sealed.url, [SV, II], 150)
    second = open_evaluation(http, sealed.url, [SV, II], 150)
    a, b = _items(http, sealed.url, first, SV), _items(http, sealed.url, second, SV)
    assert len(set(a)) == 150 and len(set(b)) == 150 and not set(a) & set(b)
    a_ii, b_ii = _items(http, sealed.url, first, II)[:5], _items(http, sealed.url, second, II)[:5]
    assert not set(a_ii) & set(b_ii)
    repeat = open_evaluation(http, sealed.url, [SV, II], 150, repeat_of=first["evaluation_id"])
    assert _items(http, sealed.url, repeat, SV) == a
    assert _items(http, sealed.url, repeat, II)[:5] == a_ii
    # An agent that learned its evaluation's id cannot reopen its items: repeat_of is the admin's.
    same = {"tasks": [SV, II], "episodes": 150, "repeat_of": first["evaluation_id"]}
    assert code(http.post(f"{sealed.url}/evaluations", json=same)) == (403, "ADMIN_TOKEN_REQUIRED")
    for body in (
        {"tasks": [SV], "episodes": 150, "repeat_of": first["evaluation_id"]},
        {"tasks": [SV, II], "episodes": 149, "repeat_of": first["evaluation_id"]},
    ):
        assert code(http.post(f"{sealed.url}/evaluations", json=body, headers=ADMIN)) == (422, "VALIDATION_ERROR")
    missing = {"tasks": [SV], "episodes": 1, "repeat_of": "no-such-evaluation"}
    assert code(http.post(f"{sealed.url}/evaluations", json=missing, headers=ADMIN)) == (404, "EVALUATION_NOT_FOUND")
    for evaluation in (first, second, repeat):
        http.post(f"{sealed.url}/evaluations/{evaluation['evaluation_id']}/close")


def test_capacity_and_expiry_of_evaluations(monkeypatch: pytest.MonkeyPatch) -> None:
    """Kills: no max_evaluations (no 503), a closed evaluation still counting, an evaluation never expiring."""
    monkeypatch.setenv("IGYM_EVAL_SECRET", SECRET)
    config = ServerConfig(
        sealed=True, tasks="selective_verification/text*", max_evaluations=2, evaluation_ttl_s=1.0, reap_interval_s=0.1
    )
    with TestClient(create_app(config=config)) as client:
        body = {"tasks": [SV], "episodes": 1}
        first = client.post("/evaluations", json=body).json()
        assert client.post("/evaluations", json=body).status_code == 201
        full = client.post("/evaluations", json=body)
        assert code(full) == (503, "CAPACITY_REACHED") and full.json()["max_evaluations"] == 2  # type: ignore[arg-type]
        client.post(f"/evaluations/{first['evaluation_id']}/close")
        assert client.post("/evaluations", json=body).status_code == 201
        time.sleep(1.5)
        gone = client.get(f"/evaluations/{first['evaluation_id']}")
        assert code(gone) == (404, "EVALUATION_NOT_FOUND")  # type: ignore[arg-type]
        assert client.post("/evaluations", json=body).status_code == 201


def test_the_redis_store_keeps_evaluations_across_a_restart() -> None:
    """Kills: evaluations kept in the process only (a restarted server forgets them and their handles),
    a record of items handed out that does not survive, handles reusable after a restart."""
    require_service(redis_available(), "redis-server and the redis package")
    with running_redis() as redis_url:
        args = ["--sealed", "--sessions", redis_url]
        server = start_server(args, extra_env=SECRET_ENV)
        with httpx.Client(trust_env=False, timeout=60) as client:
            try:
                evaluation = open_evaluation(client, server.url, [SV], 3)
                hs = handles(evaluation, SV)
                finished = start(client, server.url, "selective_verification", hs[0])["session_id"]
                client.post(
                    f"{server.url}/selective_verification/step",
                    json={"session_id": finished, "action": {"verdict": "SUPPORTED", "confidence": 0.9}},
                )
                running = start(client, server.url, "selective_verification", hs[1])["session_id"]
                item = item_of(client.get(f"{server.url}/selective_verification/state/{running}", headers=ADMIN).json())
            finally:
                server.proc.kill()
                server.stop()
            server = start_server(args, extra_env=SECRET_ENV)
            try:
                view = client.get(f"{server.url}/evaluations/{evaluation['evaluation_id']}").json()
                assert [e["status"] for e in view["episodes"]] == ["finished", "running", "pending"]
                used = client.post(f"{server.url}/selective_verification/reset", json={"handle": hs[0]})
                assert code(used) == (409, "HANDLE_USED")
                state = client.get(f"{server.url}/selective_verification/state/{running}", headers=ADMIN).json()
                assert item_of(state) == item
                later = open_evaluation(client, server.url, [SV], 100)
                assert item not in _items(client, server.url, later, SV)
                results = client.post(f"{server.url}/evaluations/{evaluation['evaluation_id']}/close").json()
                assert [e["status"] for e in results["episodes"]] == ["finished", "running", "pending"]
                assert results["episodes"][0]["grade"] is not None and results["episodes"][1]["steps"] == 0
                assert results["episodes"][1]["grade"] is not None and results["episodes"][2]["grade"] is None
            finally:
                server.stop()


# --------------------------------------------------------------------------- the probes
PROBE_TASKS = {"selective_verification": SV, "information_integrity": II, "pii_redaction": PII}


def test_every_probe_fails_on_the_sealed_server_and_does_no_better(sealed: ServerProcess, http: httpx.Client) -> None:
    """Kills: any sealed refusal removed (the probe gets an answer); an attack that still scores more than
    the same play without probing, on the same items (a repeat of the evaluation)."""
    tasks = [SV, II, PII]
    attacked = open_evaluation(http, sealed.url, tasks, 3)
    baseline = open_evaluation(http, sealed.url, tasks, 3, repeat_of=attacked["evaluation_id"])
    taken = {task: 0 for task in tasks}
    played: list[tuple[str, int]] = []
    for name, (env, probe) in server_probes.PROBES.items():
        task = PROBE_TASKS[env]
        index = taken[task]
        taken[task] += 1
        result = probe(sealed.url, handles(attacked, task)[index])
        assert not result.succeeded and not result.learned, (name, result)
        assert result.refusals, name
        assert set(result.refusals) <= {"SEALED", "HANDLE_USED", "SEALED_UNTIL_CLOSED"}, (name, result.refusals)
        server_probes.fallback(sealed.url, handles(baseline, task)[index], env)
        played.append((task, index))
    scores = {}
    for evaluation in (attacked, baseline):
        results = http.post(f"{sealed.url}/evaluations/{evaluation['evaluation_id']}/close").json()["episodes"]
        scores[evaluation["evaluation_id"]] = {
            (e["task_id"].split("-v")[0], e["index"]): e["grade"]["score"] for e in results if e["grade"]
        }
    for key in played:
        assert scores[attacked["evaluation_id"]][key] <= scores[baseline["evaluation_id"]][key] + 1e-9, key


def test_probes_1_2_and_5_work_against_a_server_that_is_not_sealed() -> None:
    """The control: the same probes learn the truth from an unsealed server that holds the secret.

    Kills: a probe that could never succeed (then its failure on the sealed server would prove nothing).
    """
    with running_server([], extra_env=SECRET_ENV) as server, httpx.Client(trust_env=False, timeout=60) as client:
        sv = {"task": SV, "seed": 5}
        first = server_probes.second_session(server.url, sv)
        state = client.get(f"{server.url}/selective_verification/state/{first.session_id}", headers=ADMIN).json()
        assert first.succeeded and first.learned["label"] == state["item"]["label"]
        assert first.rewards == [1.0] > server_probes.fallback(server.url, sv, "selective_verification").rewards

        ii = {"task": II, "seed": 5}
        second = server_probes.seed_search(server.url, ii)
        state = client.get(f"{server.url}/information_integrity/state/{second.session_id}", headers=ADMIN).json()
        assert (
            second.succeeded
            and second.learned["seed"] == 5
            and second.learned["decision"] == state["scenario"]["label"]
        )

        fifth = server_probes.scenario_by_name(server.url, ii)
        state = client.get(f"{server.url}/information_integrity/state/{fifth.session_id}", headers=ADMIN).json()
        assert fifth.succeeded and fifth.learned["scenario_id"] == "gen_hard_eval_5"
        assert fifth.learned["decision"] == state["scenario"]["label"]


def test_a_small_item_pool_is_handed_out_once_then_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Kills: an item (``seed % num_items``) handed out twice, exhaustion not refused (409), a refused request
    that still used up items."""
    monkeypatch.setenv("IGYM_EVAL_SECRET", SECRET)
    base = get_spec(SV)
    tiny = base.model_copy(update={"name": "tiny_text", "config": {**base.config, "num_tasks": 5}})
    app = create_app(tasks=[tiny], config=ServerConfig(sealed=True, admin_token=ADMIN_TOKEN))
    with TestClient(app) as client:
        seen = []
        for count in (2, 2):
            evaluation = client.post("/evaluations", json={"tasks": [tiny.id], "episodes": count}).json()
            for episode in evaluation["episodes"]:
                sid = client.post("/selective_verification/reset", json={"handle": episode["handle"]}).json()[
                    "session_id"
                ]
                seen.append(client.get(f"/selective_verification/state/{sid}", headers=ADMIN).json()["index"])
        refused = client.post("/evaluations", json={"tasks": [tiny.id], "episodes": 2})
        assert code(refused) == (409, "ITEMS_EXHAUSTED")  # type: ignore[arg-type]
        last = client.post("/evaluations", json={"tasks": [tiny.id], "episodes": 1}).json()["episodes"][0]
        sid = client.post("/selective_verification/reset", json={"handle": last["handle"]}).json()["session_id"]
        seen.append(client.get(f"/selective_verification/state/{sid}", headers=ADMIN).json()["index"])
    assert sorted(seen) == [0, 1, 2, 3, 4]


def test_a_seed_client_profile_is_sealed_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """Kills: the seed001 dialect's resets (task_id) honoured, its document_id shown, its POST /grade answered."""
    monkeypatch.setenv("IGYM_EVAL_SECRET", SECRET)
    config = ServerConfig(sealed=True, tasks="pii_redaction/*", profile="seed001")
    with TestClient(create_app(config=config)) as client:
        task = client.get("/tasks").json()[0]["id"]
        assert code(client.post("/reset", json={"task_id": task})) == (403, "SEALED")  # type: ignore[arg-type]
        handle = client.post("/evaluations", json={"tasks": [task], "episodes": 1}).json()["episodes"][0]["handle"]
        assert code(client.post("/reset", json={"task_id": task, "handle": handle})) == (403, "SEALED")  # type: ignore[arg-type]
        first = client.post("/reset", json={"handle": handle}).json()
        assert first["observation"]["document_id"] == ""
        step = client.post("/step", json={"session_id": first["session_id"], "action": {"action_type": "FINISH"}})
        assert step.json()["done"] and step.json()["observation"]["document_id"] == ""
        with client.websocket_connect("/ws") as ws:
            ws.send_text(json.dumps({"type": "reset", "data": {"task_id": task}}))
            assert json.loads(ws.receive_text())["data"]["code"] == "SEALED"
        assert code(client.post("/grade", json={})) == (403, "SEALED_UNTIL_CLOSED")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- the sealed OpenAPI document
def _sealed_app() -> Any:
    previous = os.environ.get("IGYM_EVAL_SECRET")
    os.environ["IGYM_EVAL_SECRET"] = SECRET
    try:
        tasks = [get_spec(SV), get_spec(II)]
        return create_app(tasks=tasks, config=ServerConfig(sealed=True, admin_token=ADMIN_TOKEN, max_sessions=64))
    finally:
        if previous is None:
            del os.environ["IGYM_EVAL_SECRET"]
        else:
            os.environ["IGYM_EVAL_SECRET"] = previous


SEALED_APP = _sealed_app()
#: As tests/server/test_schema.py: every response documented, none a 5xx; fixed seed, no cache.
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
CONFIG = SchemathesisConfig.from_dict({"seed": 0, "cache": {"enabled": False}})
SEALED_SCHEMA = schemathesis.openapi.from_asgi("/openapi.json", SEALED_APP, config=CONFIG).include(
    path_regex=r"^/(evaluations|selective_verification/(reset|step|grade|state|scenario)|information_integrity/collect)"
)


def test_the_sealed_document_names_the_new_routes() -> None:
    """Kills: the evaluation routes or the sealed error codes left out of /openapi.json."""
    doc = SEALED_APP.openapi()
    assert {"/evaluations", "/evaluations/{evaluation_id}", "/evaluations/{evaluation_id}/close"} <= set(doc["paths"])
    assert doc["paths"]["/evaluations"]["post"]["tags"] == ["evaluations"]
    assert "201" in doc["paths"]["/evaluations"]["post"]["responses"]
    reset = doc["paths"]["/selective_verification/reset"]["post"]["responses"]
    assert {"403", "404", "409"} <= set(reset) and "SEALED" in reset["403"]["description"]
    assert "handle" in json.dumps(doc["components"]["schemas"]["SelectiveVerificationResetRequest"])


@pytest.fixture
def eval_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IGYM_EVAL_SECRET", SECRET)


@SEALED_SCHEMA.parametrize()
@hypothesis.settings(
    max_examples=5,
    derandomize=True,
    deadline=None,
    database=None,
    phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate],
    suppress_health_check=list(hypothesis.HealthCheck),
)
def test_the_sealed_routes_answer_as_documented(case: Any, eval_secret: None) -> None:
    """Kills: a sealed answer (403/404/409, 201) missing from the document, or any 5xx."""
    case.call_and_validate(checks=CHECKS)
