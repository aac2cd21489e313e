"""A run says which mode its items were made in: public, or keyed by the eval secret."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from integrity_gym.bench.results import ResultsDB
from integrity_gym.bench.runner import BenchConfig, run_bench
from integrity_gym.core.seeding import EVAL_SECRET_ENV


@pytest.mark.parametrize("secret", [None, "a-long-enough-eval-secret-for-tests"])
def test_config_and_database_record_the_data_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, secret: str | None
) -> None:
    if secret:
        monkeypatch.setenv(EVAL_SECRET_ENV, secret)
    bench = BenchConfig.build(tasks="information_integrity/easy*", agent="heuristic", episodes=1)
    run_bench(bench=bench, out_dir=tmp_path / "run", db_path=tmp_path / "db.sqlite")
    mode = json.loads((tmp_path / "run" / "config.json").read_text())["data_mode"]
    if secret is None:
        assert mode == "public"
    else:
        assert mode.startswith("secret:") and secret not in mode
    with ResultsDB(tmp_path / "db.sqlite") as db:
        assert [run["data_mode"] for run in db.runs()] == [mode]
    assert secret is None or secret not in (tmp_path / "run" / "config.json").read_text()
