from __future__ import annotations

from pathlib import Path

from integrity_gym.bench.runner import BenchConfig, run_bench
from tests.bench.test_cli_bench import stable
from tests.server.servers import running_server

TASKS = "pii_redaction/gdpr*,information_integrity/easy*,selective_verification/text*"


def test_a_run_against_the_server_plays_the_same_episodes_as_in_process(tmp_path: Path) -> None:
    local = run_bench(bench=BenchConfig.build(tasks=TASKS, episodes=2, seed=21, max_steps=30), out_dir=tmp_path / "a")
    with running_server(cli=True) as server:
        bench = BenchConfig.build(tasks=TASKS, episodes=2, seed=21, max_steps=30, server=server.url, concurrency=3)
        remote = run_bench(bench=bench, out_dir=tmp_path / "b")
    assert remote.status == "complete" and all(r.error is None for r in remote.records)
    # The same episodes; only the explanation stays behind: the client has no explain call yet.
    a, b = ([stable(r.model_dump(mode="json")) | {"agent": 0, "explanation": None} for r in run.records]
            for run in (local, remote))  # fmt: skip
    assert a == b
    assert all(r.explanation for r in local.records) and not any(r.explanation for r in remote.records)
    assert remote.config.server == server.url and f"--server {server.url}" in remote.command
