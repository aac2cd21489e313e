"""Baselines: balanced constant policies, the heuristic, the oracle, determinism across processes."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import pytest

import integrity_gym
from integrity_gym.agents import make_agent
from integrity_gym.agents.heuristic.information_integrity import HeuristicAgent
from integrity_gym.envs.information_integrity.generator import generate, golden_samples


def run(task_id: str, agent_name: str, seeds: range, **config: object) -> dict[str, float | None]:
    env = integrity_gym.make(task_id, **config)
    grades = []
    for seed in seeds:
        agent = make_agent(agent_name, env, seed=seed)
        obs = env.reset(seed=seed)
        while not env.done:
            obs = env.step(agent.act(obs)).observation
        grades.append(env.grade())
    return type(env).summarize(grades)


@pytest.mark.parametrize("decision", ["allow", "flag", "remove"])
def test_always_the_same_decision_scores_about_one_third(task_id: str, decision: str) -> None:
    env = integrity_gym.make(task_id)
    grades = []
    n = 300
    for seed in range(n):
        obs = env.reset(seed=seed)
        for claim in obs.claims[:1]:
            env.step({"type": "verify_claim", "claim_id": claim.id})
        env.step({"type": "decide", "decision": decision})
        grades.append(env.grade())
    accuracy = type(env).summarize(grades)["decision_accuracy"]
    # Each item draws its label on its own: balanced in expectation (a 99.9% binomial bound).
    assert accuracy is not None and abs(accuracy - 1 / 3) < 3.3 * (2 / 9 / n) ** 0.5


def test_oracle_scores_one_on_every_gold_scenario(task_id: str) -> None:
    summary = run(task_id, "oracle", range(10), source="gold")
    assert summary["decision_accuracy"] == 1.0 and summary["success_rate"] == 1.0


def test_heuristic_beats_random_and_often_succeeds(task_id: str) -> None:
    heuristic = run(task_id, "heuristic", range(150))  # 60 seeds leave the hard tier's gap to sampling luck
    random_ = run(task_id, "random", range(150))
    assert heuristic["decision_accuracy"] is not None and random_["decision_accuracy"] is not None
    assert heuristic["decision_accuracy"] > random_["decision_accuracy"] + 0.3
    assert heuristic["success_rate"] is not None and random_["success_rate"] is not None
    assert heuristic["success_rate"] > max(0.3, random_["success_rate"] + 0.25)


def test_heuristic_reads_only_the_observation(task_id: str) -> None:
    """It is built from the spec alone and accepts a plain JSON dict observation."""
    env = integrity_gym.make(task_id)
    agent = HeuristicAgent(env.spec, seed=0)
    obs = env.reset(seed=4)
    while not env.done:
        obs = env.step(agent.act(json.loads(obs.model_dump_json()))).observation
    assert env.state().decision is not None


_CHILD = """
import hashlib, json
from integrity_gym.envs.information_integrity.generator import generate, golden_samples
blob = json.dumps([golden_samples()] + [generate("hard", s, "eval").model_dump(mode="json") for s in range(20)])
print(hashlib.sha256(blob.encode()).hexdigest())
"""


def test_generation_is_identical_across_processes() -> None:
    outs = {subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, check=True).stdout.strip()
            for _ in range(2)}  # fmt: skip
    blob = json.dumps([golden_samples()] + [generate("hard", s, "eval").model_dump(mode="json") for s in range(20)])
    assert outs == {hashlib.sha256(blob.encode()).hexdigest()}


def test_generated_hard_scenarios_cover_the_hardness_axes() -> None:
    hard = [generate("hard", s, "train") for s in range(90)]
    assert any(src.satire for s in hard for src in s.sources)
    assert any((s.as_of - src.date).days > 3 * 365 for s in hard for src in s.sources)
    assert any(len(s.claims) == 3 for s in hard)
    assert any(c.verdict == "unknown" for s in hard for c in s.claims)
    assert any(src.id != f"src_{i + 1}" for s in hard for i, src in enumerate(s.sources))
    from integrity_gym.envs.information_integrity import rules

    statuses = {a.status for s in hard for a in rules.aggregate(s).claims}
    assert statuses == {"true", "false", "misleading", "contested", "unsupported"}
