"""``POST /information_integrity/collect`` against a real server with a corpus, and file options refused."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from integrity_gym.envs.information_integrity.collector import write_synthetic_corpus
from integrity_gym.envs.information_integrity.models import Scenario

from .servers import ServerProcess, start_server


@pytest.fixture(scope="module")
def corpus_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, Path]]:
    corpus = tmp_path_factory.mktemp("corpus")
    write_synthetic_corpus(corpus, 300, seed=1)
    server = start_server(["--corpus", str(corpus)], cli=True)
    try:
        yield server, corpus
    finally:
        server.stop()


def a_claim_in(corpus: Path) -> str:
    first = sorted(corpus.glob("*.jsonl"))[0].read_text().splitlines()[0]
    return str(json.loads(first)["title"])


@pytest.fixture
def http(server: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=30, trust_env=False) as client:
        yield client


def test_collect_builds_a_reviewable_scenario_from_the_servers_corpus(
    corpus_server: tuple[ServerProcess, Path],
) -> None:
    server, corpus = corpus_server
    reply = httpx.post(
        server.url + "/information_integrity/collect",
        json={"claim": a_claim_in(corpus), "limit": 4, "harm": "high"},
        timeout=60,
        trust_env=False,
    )
    assert reply.status_code == 200, reply.text
    scenario = Scenario.model_validate(reply.json())
    assert 2 <= len(scenario.sources) <= 4 and scenario.harm == "high"


def test_collect_rejects_bad_requests_clearly(corpus_server: tuple[ServerProcess, Path]) -> None:
    server, _ = corpus_server
    for body in ({}, {"claim": ""}, {"claim": "x", "limit": 1}, {"claim": "x", "harm": "extreme"}):
        reply = httpx.post(server.url + "/information_integrity/collect", json=body, timeout=30, trust_env=False)
        assert reply.status_code == 422 and reply.json()["code"] == "VALIDATION_ERROR", reply.text


def test_a_server_without_a_corpus_says_how_to_give_it_one(http: httpx.Client) -> None:
    reply = http.post("/information_integrity/collect", json={"claim": "the moon is made of cheese"})
    assert reply.status_code == 422 and "--corpus" in reply.json()["detail"]


def test_options_that_read_server_files_are_refused(http: httpx.Client, tmp_path: Path) -> None:
    secret = tmp_path / "scenario.json"
    secret.write_text('{"not": "a scenario"}')
    reply = http.post("/information_integrity/reset", json={"options": {"scenario_file": str(secret)}})
    assert reply.status_code == 422 and "not accepted remotely" in reply.json()["detail"]
