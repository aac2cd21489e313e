"""End to end: the llm agent plays every registered environment against a real tiny LLM."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from integrity_gym import list_tasks
from integrity_gym.agents.llm import LLMSettings
from integrity_gym.bench import local_llm
from integrity_gym.bench.results import ResultsDB
from integrity_gym.bench.runner import BenchConfig, run_bench


def test_the_llm_agent_completes_episodes_of_every_environment(
    tiny_llm_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PII_WINDOW_SIZE", "200")  # short prompts keep the test quick on two cores
    envs = sorted({s.env for s in list_tasks()})
    # One task per environment (its first), one episode each, at most two steps.
    tasks = ",".join(next(s.id for s in list_tasks(f"{env}/*")) for env in envs)
    settings = LLMSettings(api_base_url=tiny_llm_url, model_name=local_llm.MODEL_NAME, max_tokens=80, timeout_s=120,
                           retries=1, max_steps=2)  # fmt: skip
    bench = BenchConfig.build(tasks=tasks, agent="llm", episodes=1, seed=3, concurrency=2)
    result = run_bench(bench=bench, out_dir=tmp_path / "run", db_path=tmp_path / "db.sqlite", llm_settings=settings)
    assert result.status == "complete"
    records = [json.loads(line) for line in (tmp_path / "run" / "episodes.jsonl").read_text().splitlines()]
    assert sorted(r["env"] for r in records) == envs
    for r in records:
        assert r["error"] is None, r["error"]
        assert 1 <= r["steps"] <= 2 and r["grade"] is not None and 0.0 <= r["score"] <= 1.0
        assert r["truncated"] == (r["steps"] == 2 and not r["trajectory"][-1]["done"])
        for step in r["trajectory"]:
            call = step["llm"]
            assert call["prompt_tokens"] > 0 and call["completion_tokens"] > 0 and call["latency_s"] > 0
            assert call["parse"] in ("ok", "repaired", "malformed") and call["raw"]
            # A reply the adapter could not read was handed to the env, which rejected it.
            if call["parse"] == "malformed":
                assert step["error"]
        assert r["usage"]["llm_calls"] == r["steps"] and r["usage"]["prompt_tokens"] > 0
    # The schema is enforced by llama.cpp, so most replies parse; pictures fell back to text.
    calls = [s["llm"] for r in records for s in r["trajectory"]]
    assert sum(c["parse"] != "malformed" for c in calls) >= len(calls) // 2
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert set(summary["tasks"]) == set(tasks.split(",")) and summary["model"] == local_llm.MODEL_NAME
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["bench"]["llm"]["model_name"] == local_llm.MODEL_NAME and "api_key" not in config["bench"]["llm"]
    assert f"MODEL_NAME={local_llm.MODEL_NAME}" in summary["reproduce"]
    with ResultsDB(tmp_path / "db.sqlite") as db:
        (run,) = db.runs()
        assert run["model"] == local_llm.MODEL_NAME and run["status"] == "complete"
        episodes = db.episodes(result.run_id)
        assert len(episodes) == len(envs) and all(e["prompt_tokens"] > 0 for e in episodes)
