"""A fourth environment, registered from outside the package, goes through every tool unchanged.

The toy environment is a folder (``tests/digits/``: its models, env, grader, agents' hooks, its
own heuristic and page view) registered the way a plugin's ``TASKS`` are, then checked by
``check_env``, played by the benchmark runner (random, oracle and its own heuristic), served over
HTTP and WebSocket with its page view, and reported on. Kills: any tool that looks environments
up by name in a table of the three built-ins (the runner's agents, the server's routes, dialects
and page views, the report's figures); tests/web/test_fourth_env_view.py draws its view in a browser.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from integrity_gym.bench.runner import BenchConfig, run_bench
from integrity_gym.bench.runs import load_run
from integrity_gym.core import checker, registry
from integrity_gym.server import ServerConfig, create_app
from tests.digits import TASKS
from tests.digits.env import SPEC


@pytest.fixture
def toy_registered(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The default registry with the toy's ``TASKS`` added, as an ``integrity_gym.tasks`` entry point would."""
    fresh = registry.Registry()
    for spec in [*registry.default_registry().all(), *TASKS]:
        fresh.register(spec)
    monkeypatch.setattr(registry, "_default", fresh)
    yield


def test_check_env_passes_the_toy(toy_registered: None) -> None:
    checker.check_env(registry.make(SPEC.id))


@pytest.mark.usefixtures("toy_registered")
def test_bench_serve_and_report_take_the_toy(tmp_path: Path) -> None:
    from integrity_gym.report.page import write_report

    runs = {}
    for agent in ("random", "oracle", "heuristic"):
        out = tmp_path / agent
        result = run_bench(bench=BenchConfig.build(tasks=SPEC.id, agent=agent, episodes=4), out_dir=out)
        assert result.status == "complete" and result.summaries[SPEC.id].episodes == 4
        runs[agent] = load_run(out)
    assert result.summaries[SPEC.id].mean_score == 1.0  # its own heuristic, declared in ToyEnv.extras
    with pytest.raises(ValueError, match=r"unknown agent 'blind'; choose one of .*heuristic"):  # one line
        run_bench(bench=BenchConfig.build(tasks=SPEC.id, agent="blind", episodes=1), out_dir=tmp_path / "h")
    page = write_report(list(runs.values()), tmp_path / "report")
    assert SPEC.id in page.read_text(encoding="utf-8")

    with TestClient(create_app(tasks=[SPEC], config=ServerConfig(tasks=SPEC.id))) as client:
        reset = client.post("/toy/reset", json={"seed": 3}).json()
        sid = reset["session_id"]
        for index in range(3):
            step = client.post("/toy/step", json={"session_id": sid, "action": {"op": "look", "index": index}})
            assert step.status_code == 200 and step.json()["info"]["error"] is None
        seen = step.json()["observation"]["seen"]
        done = client.post(
            "/toy/step", json={"session_id": sid, "action": {"op": "answer", "value": sum(seen.values())}}
        )
        assert done.json()["done"] is True
        assert client.get(f"/toy/grade/{sid}").json()["score"] == 1.0
        with client.websocket_connect("/toy/ws") as ws:
            ws.send_text(json.dumps({"type": "reset", "data": {"seed": 3}}))
            assert json.loads(ws.receive_text())["type"] == "observation"
        assert client.get("/web/").status_code == 200  # the playground lists it among the tasks
        view = client.get("/web/static/views/toy.js")  # its page view, served from its folder
        assert view.status_code == 200 and "data-digit" in view.text
        assert view.headers["content-type"].startswith("text/javascript")
        assert client.get("/web/static/views/nothing.js").status_code == 404
        assert SPEC.id in {t["id"] for t in client.get("/tasks").json()}


def test_an_environment_without_a_heuristic_says_so(toy_registered: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from integrity_gym.agents.base import make_agent
    from integrity_gym.core.extras import EnvExtras

    env = registry.make(SPEC.id)
    monkeypatch.setattr(type(env), "extras", EnvExtras())
    with pytest.raises(ValueError, match="no heuristic agent for environment 'toy'"):
        make_agent("heuristic", env)
    with TestClient(create_app(tasks=[SPEC], config=ServerConfig(tasks=SPEC.id))) as client:
        assert client.get("/web/static/views/toy.js").status_code == 404  # no view declared: the JSON tree
