"""`igym bench --server URL --sealed` against a real sealed server: a whole evaluation, end to end.

Mutations these tests kill: the runner resetting by seed on a sealed server (refused, the run fails);
grades taken before the close (the server refuses them); the close not merged into the records (no
scores); the run not marked sealed (config, database, report); a sealed run resumed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from integrity_gym.bench.results import ResultsDB
from integrity_gym.bench.runs import load_run
from integrity_gym.report.markdown import write_markdown
from tests.server.servers import ServerProcess, start_server
from tests.server.test_sealed import SECRET_ENV

TASKS = "information_integrity/easy,pii_redaction/gdpr_contract_easy,selective_verification/text"


@pytest.fixture(scope="module")
def sealed() -> Iterator[ServerProcess]:
    server = start_server(["--sealed"], extra_env=SECRET_ENV)
    yield server
    server.stop()


def igym(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "integrity_gym", *args], capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("agent", ["heuristic", "random"])
def test_a_sealed_run_plays_the_servers_items_and_records_the_released_grades(
    sealed: ServerProcess, tmp_path: Path, agent: str
) -> None:
    out, db = tmp_path / "run", tmp_path / "db.sqlite"
    result = igym("bench", "--server", sealed.url, "--sealed", "--tasks", TASKS, "--agent", agent,
                  "--episodes", "3", "--out", str(out), "--db", str(db), "--echo", "none")  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    config = json.loads((out / "config.json").read_text())
    assert config["data_mode"].startswith("sealed:") and config["evaluation"]["id"]
    records = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert len(records) == 9 and all(r["grade"] is not None and r["score"] is not None for r in records)
    assert all(r["explanation"] for r in records)  # released with the grades at the close
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["tasks"]) == {r["task_id"] for r in records}
    with ResultsDB(db) as results:
        [run] = results.runs()
        assert run["data_mode"] == config["data_mode"] and len(results.episodes(run["run_id"])) == 9
    # The evaluation is closed: its handles start nothing any more.
    status = __import__("httpx").get(f"{sealed.url}/evaluations/{config['evaluation']['id']}", trust_env=False)
    assert status.json()["closed"] is True
    # The report says the run was sealed.
    loaded = load_run(out)
    assert loaded.sealed and loaded.label.endswith("[sealed]")
    page = write_markdown([loaded], tmp_path / "results.md", tmp_path / "figures")
    assert "drawn for this run by a sealed server" in page.read_text()
    # A sealed run cannot be resumed: its handles were handed out once.
    resumed = igym("bench", "--resume", str(out), "--no-db")
    assert resumed.returncode == 2 and "sealed evaluation" in " ".join(resumed.stdout.split())


def test_a_sealed_server_refuses_an_unsealed_run(sealed: ServerProcess, tmp_path: Path) -> None:
    """Without --sealed the runner resets by seed, which a sealed server refuses before any episode."""
    result = igym("bench", "--server", sealed.url, "--tasks", "information_integrity/easy", "--episodes", "1",
                  "--out", str(tmp_path / "run"), "--no-db")  # fmt: skip
    assert result.returncode == 2 and "SEALED" in " ".join(result.stdout.split())


def test_sealed_needs_a_server_and_one_epoch() -> None:
    for args in (["--sealed"], ["--sealed", "--server", "http://127.0.0.1:9", "--epochs", "2"]):
        result = igym("bench", *args, "--tasks", "information_integrity/easy", "--no-db")
        assert result.returncode == 2 and "sealed:" in " ".join(result.stdout.split())


def test_the_redteam_table_of_server_probes(tmp_path: Path) -> None:
    """`igym redteam --server-probes` plays every probe on a sealed server it starts; each is refused and does
    no better than not probing, and the unsealed control shows the probes work (those that can on one item)."""
    out = tmp_path / "redteam.md"
    result = igym("redteam", "--tasks", "information_integrity/easy*", "--episodes", "1", "--no-audit",
                  "--server-probes", "--markdown", str(out))  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    text = out.read_text()
    assert "## Probes of the evaluator (a sealed server)" in text
    from integrity_gym.agents.redteam.server_probes import PROBES

    for name in PROBES:
        row = next(line for line in text.splitlines() if line.startswith(f"| {name} |"))
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[2] == "0/3" and cells[-1] == "yes" and float(cells[4]) <= float(cells[5]), row
        if name in ("second_session", "seed_search", "scenario_by_name", "explain_probe"):
            assert cells[6] == "3/3", row  # the control: against an unsealed server the probe learns the answer
