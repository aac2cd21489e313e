"""The pages without a browser: package data, offline-only files, the /web routes and explain's rule."""

from __future__ import annotations

import re
from importlib import resources

import pytest
from fastapi.testclient import TestClient

from integrity_gym.core.registry import get_spec
from integrity_gym.server import ServerConfig, create_app
from integrity_gym.web import CONTENT_SECURITY_POLICY, static_dir

PAGES = ("playground.html", "viewer.html")
#: The only absolute URL in the files: SVG's namespace name, which is never fetched.
NAMESPACES = {"http://www.w3.org/2000/svg"}


def test_static_files_are_package_data_found_by_importlib_resources() -> None:
    files = resources.files("integrity_gym.web").joinpath("static")
    names = {entry.name for entry in files.iterdir()}
    assert {*PAGES, "style.css", "render.js", "playground.js", "viewer.js"} <= names
    assert static_dir().is_dir()


@pytest.mark.parametrize("name", PAGES)
def test_every_file_a_page_loads_is_shipped(name: str) -> None:
    html = (static_dir() / name).read_text(encoding="utf-8")
    loaded = re.findall(r'(?:src|href)="static/([^"]+)"', html)
    assert len(loaded) >= 2, loaded
    for file in loaded:
        assert (static_dir() / file).is_file(), file
    scripts = [f for f in loaded if f.endswith(".js")]
    for script in scripts:  # and every module those scripts import
        for imported in re.findall(r'from "\./([^"]+)"', (static_dir() / script).read_text(encoding="utf-8")):
            assert (static_dir() / imported).is_file(), imported


def test_nothing_is_fetched_from_another_origin() -> None:
    for path in static_dir().iterdir():
        text = path.read_text(encoding="utf-8")
        urls = set(re.findall(r"(?:https?:)?//[A-Za-z0-9.-]+\.[A-Za-z]{2,}[^\s\"'`)]*", text))
        assert urls <= NAMESPACES, (path.name, urls - NAMESPACES)
        assert "@import" not in text and "url(http" not in text, path.name


@pytest.fixture
def client() -> TestClient:
    with TestClient(create_app(config=ServerConfig(admin_token="secret-token"))) as test_client:
        yield test_client


def test_web_serves_the_playground_under_its_policy(client: TestClient) -> None:
    moved = client.get("/web", follow_redirects=False)
    assert moved.status_code == 307 and moved.headers["location"] == "web/"
    assert client.get("/").json()["web"] == "/web/"  # the server's index points to it
    reply = client.get("/web/")
    assert reply.status_code == 200 and "integrity-gym playground" in reply.text
    assert reply.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert "default-src 'self'" in CONTENT_SECURITY_POLICY and "http" not in CONTENT_SECURITY_POLICY
    assert client.get("/web/static/render.js").status_code == 200
    assert client.get("/web/static/nothing.js").status_code == 404


def test_explain_only_once_the_episode_has_ended(client: TestClient) -> None:
    task = "pii_redaction/gdpr_contract_easy-v4"
    sid = client.post("/pii_redaction/reset", json={"task": task, "seed": 3}).json()["session_id"]
    early = client.get(f"/web/api/explain/pii_redaction/{sid}")
    assert early.status_code == 409 and early.json()["code"] == "EPISODE_NOT_DONE"
    step = client.post("/pii_redaction/step", json={"session_id": sid, "action": {"action_type": "FINISH"}})
    assert step.json()["done"] is True
    spec = get_spec(task)
    local = spec.env_class()(spec)
    local.reset(seed=3)
    local.step({"action_type": "FINISH"})
    reply = client.get(f"/web/api/explain/pii_redaction/{sid}")
    assert reply.status_code == 200 and reply.json() == {"explain": local.explain()}


def test_explain_names_unknown_sessions_and_environments(client: TestClient) -> None:
    missing = client.get("/web/api/explain/pii_redaction/no-such-session")
    assert missing.status_code == 404 and missing.json()["code"] == "SESSION_NOT_FOUND"
    other = client.get("/web/api/explain/no_such_env/abc")
    assert other.status_code == 404 and "choose one of" in other.json()["detail"]
    # A session of one environment is not found under another's name.
    sid = client.post("/information_integrity/reset", json={"seed": 0}).json()["session_id"]
    assert client.get(f"/web/api/explain/pii_redaction/{sid}").status_code == 404


def test_under_root_web_is_served_too() -> None:
    app = create_app(config=ServerConfig(root="pii_redaction"))
    with TestClient(app) as client:
        assert client.get("/web", follow_redirects=False).headers["location"] == "web/"
        assert "integrity-gym playground" in client.get("/web/").text
        sid = client.post("/reset", json={"seed": 0}).json()["session_id"]
        client.post("/step", json={"session_id": sid, "action": {"action_type": "FINISH"}})
        assert client.get(f"/web/api/explain/pii_redaction/{sid}").status_code == 200


def test_without_swagger_files_the_server_still_starts_and_says_how_to_get_the_docs_page(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import integrity_gym.server.app as server_app

    monkeypatch.setattr(server_app, "_swagger_dir", lambda: None)
    client = TestClient(create_app(config=ServerConfig(tasks="selective_verification/text*")))
    page = client.get("/docs")
    assert page.status_code == 200 and "fastapi-offline" in page.text and 'href="/openapi.json"' in page.text
    assert client.get("/openapi.json").status_code == 200
    assert client.get("/docs-assets/swagger-ui.css").status_code == 404
