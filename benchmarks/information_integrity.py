"""Speed of information_integrity: in-process episodes/s and DataCollector index/query times.

Prints one JSON object. Every time is the median of several repeats measured in this run:
episodes/s per task and agent (scenario generation included, since every reset generates), the
time to index a 5,000-document JSONL corpus into SQLite FTS5, the median query time over 50
claims, and one DataCollector scenario build.
"""

from __future__ import annotations

import datetime as dt
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import integrity_gym
import timing
from integrity_gym.agents import make_agent
from integrity_gym.envs.information_integrity.collector import (
    DataCollector,
    LocalCorpusBackend,
    write_synthetic_corpus,
)
from integrity_gym.envs.information_integrity.generator import generate

REPEATS = 5
EPISODES = 100
CORPUS_DOCS = 5000
QUERIES = 50


def median_seconds(fn: Callable[[], Any], repeats: int = REPEATS) -> float:
    return timing.median_seconds(fn, repeats)


def episodes(task_id: str, agent_name: str, n: int) -> None:
    env = integrity_gym.make(task_id)
    for seed in range(n):
        agent = make_agent(agent_name, env, seed=seed)
        obs = env.reset(seed=seed)
        while not env.done:
            obs = env.step(agent.act(obs)).observation
        env.grade()


def main() -> None:
    out: dict[str, Any] = {"repeats": REPEATS, "episodes_per_repeat": EPISODES, "episodes_per_second": {}}
    for tier in ("easy", "medium", "hard"):
        task_id = f"information_integrity/{tier}-v1"
        for agent in ("heuristic", "oracle", "random"):
            seconds = median_seconds(lambda t=task_id, a=agent: episodes(t, a, EPISODES))
            out["episodes_per_second"][f"{task_id} {agent}"] = round(EPISODES / seconds, 1)
    generation = median_seconds(lambda: [generate("hard", s, "train") for s in range(EPISODES)])
    out["hard_scenarios_generated_per_second"] = round(EPISODES / generation, 1)

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "corpus"
        written = write_synthetic_corpus(folder, CORPUS_DOCS)
        backends: list[LocalCorpusBackend] = []
        index_seconds = median_seconds(lambda: backends.append(LocalCorpusBackend(folder)))
        backend = backends[-1]
        claims = [generate("medium", s, "train").claims[0].text for s in range(QUERIES)]
        query_times = []
        hits = 0
        for claim in claims:
            start = time.perf_counter()
            hits += len(backend.search(claim, 10))
            query_times.append(time.perf_counter() - start)
        collector = DataCollector(backend)
        build = median_seconds(lambda: collector.build_scenario(claims[0], as_of=dt.date(2026, 6, 1)))
        for b in backends:
            b.close()
    out["collector"] = {
        "documents": written,
        "index_seconds_median": round(index_seconds, 4),
        "documents_indexed_per_second": round(written / index_seconds, 1),
        "queries": QUERIES,
        "query_ms_median": round(1000 * statistics.median(query_times), 3),
        "query_ms_max": round(1000 * max(query_times), 3),
        "mean_hits_per_query": round(hits / QUERIES, 2),
        "build_scenario_ms_median": round(1000 * build, 3),
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
