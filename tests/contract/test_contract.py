"""The contract every registered task honours, one parametrized test per task and property."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import integrity_gym
from integrity_gym.agents import make_agent
from integrity_gym.core import EpisodeFinishedError, check_env
from integrity_gym.core.checker import FORBIDDEN_OBSERVATION_KEYS
from integrity_gym.core.types import Grade

TASK_IDS = [spec.id for spec in integrity_gym.list_tasks()]
ENVS = sorted({spec.env for spec in integrity_gym.list_tasks()})
GOLDEN = Path(__file__).parent / "golden"


def play(task_id: str, agent_name: str, seed: int) -> tuple[float, list[str]]:
    """Play one episode; return the score and the JSON of everything the agent saw."""
    grade, seen = play_graded(task_id, agent_name, seed)
    return grade.score, seen


def play_graded(task_id: str, agent_name: str, seed: int) -> tuple[Grade, list[str]]:
    """Play one episode; return its grade and the JSON of everything the agent saw."""
    env = integrity_gym.make(task_id)
    agent = make_agent(agent_name, env, seed=seed)
    obs = env.reset(seed=seed)
    seen = [obs.model_dump_json()]
    while not env.done:
        result = env.step(agent.act(obs))
        obs = result.observation
        seen.append(result.model_dump_json())
    return env.grade(), seen


def test_there_are_tasks() -> None:
    assert len(TASK_IDS) >= 3


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_check_env(task_id: str) -> None:
    check_env(integrity_gym.make(task_id))


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_oracle_reaches_full_grade(task_id: str) -> None:
    for seed in range(3):
        score, _ = play(task_id, "oracle", seed)
        assert score == pytest.approx(1.0), f"seed {seed}"


@pytest.mark.parametrize("task_id", TASK_IDS)
@pytest.mark.parametrize("agent_name", ["noop", "random"])
def test_trivial_agents_stay_far_below_threshold(task_id: str, agent_name: str) -> None:
    # Far below means both: a mean score clearly under the threshold, and rare successes. (A
    # task may guarantee a floor payoff — selective verification pays 0.8 for abstaining — so
    # the mean alone cannot be far below everywhere; and a random answer to a one-step task is
    # confidently right about one time in five, so successes are bounded, not forbidden.)
    # Where a task states its trivial floor, "clearly under" is the lower half of the gap from the
    # floor to the threshold (selective verification's text task has only 0.015 of it).
    spec = integrity_gym.get_spec(task_id)
    threshold = spec.success_threshold
    limit = threshold - 0.05 if spec.floor is None else spec.floor + (threshold - spec.floor) / 2
    grades = [play_graded(task_id, agent_name, seed)[0] for seed in range(30)]
    mean = sum(g.score for g in grades) / len(grades)
    successes = sum(g.success for g in grades)
    assert mean < limit, f"{agent_name} averages {mean:.3f} against threshold {threshold} (limit {limit:.3f})"
    assert successes <= len(grades) // 3, f"{agent_name} succeeded in {successes} of {len(grades)} episodes"


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_observations_of_oracle_episodes_carry_no_ground_truth_keys(task_id: str) -> None:
    def keys(obj: Any) -> set[str]:
        if isinstance(obj, dict):
            return set(obj) | set().union(*(keys(v) for v in obj.values()))
        if isinstance(obj, list):
            return set().union(*(keys(v) for v in obj))
        return set()

    _, seen = play(task_id, "oracle", 0)
    for line in seen:
        assert not keys(json.loads(line)) & FORBIDDEN_OBSERVATION_KEYS


_CHILD = """
import sys
sys.path.insert(0, {tests!r})
from contract.test_contract import play
_, seen = play({task!r}, "random", 7)
print("\\n".join(seen))
"""


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_same_seed_same_episode_across_processes(task_id: str) -> None:
    code = _CHILD.format(tests=str(Path(__file__).parents[1]), task=task_id)
    runs = [
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        for _ in range(2)
    ]
    assert runs[0] == runs[1]
    assert runs[0] == "\n".join(play(task_id, "random", 7)[1]) + "\n"


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_stepping_after_done_raises_and_changes_nothing(task_id: str) -> None:
    env = integrity_gym.make(task_id)
    agent = make_agent("oracle", env)
    obs = env.reset(seed=1)
    while not env.done:
        obs = env.step(agent.act(obs)).observation
    state, grade = env.state().model_dump_json(), env.grade()
    cls = env.spec.env_class()
    for action in (cls.noop_action(obs), cls.oracle_action(env.state()), "garbage"):
        with pytest.raises(EpisodeFinishedError, match=r"has ended; call reset\(\)"):
            env.step(action)
    assert env.state().model_dump_json() == state
    assert env.grade() == grade


@pytest.mark.parametrize("env_name", ENVS)
def test_golden_samples_still_match(env_name: str) -> None:
    generator = importlib.import_module(f"integrity_gym.envs.{env_name}.generator")
    expected = json.loads((GOLDEN / f"{env_name}.json").read_text())
    assert json.loads(json.dumps(generator.golden_samples())) == expected


UNREADABLE = ["{not json", "DANCE", {"no": "such field"}, 42]


@pytest.mark.parametrize("task_id", TASK_IDS)
@pytest.mark.parametrize("action", UNREADABLE, ids=["broken_json", "unknown_word", "unknown_field", "number"])
def test_one_invalid_action_convention_on_every_task(task_id: str, action: Any) -> None:
    # A multi-step task charges a wasted step WASTED_STEP and changes nothing else; a one-step task
    # takes the unreadable reply as its answer, pays its lowest reward (0) and ends.
    from integrity_gym.core.env import WASTED_STEP

    env = integrity_gym.make(task_id)
    env.reset(seed=0)
    before = env.state().model_dump()
    result = env.step(action)
    if env.spec.max_steps == 1:
        assert result.reward == 0.0 and result.done and env.grade().score == 0.0
        return
    assert result.reward == pytest.approx(-WASTED_STEP) and not result.done and result.info["error"]
    after = env.state().model_dump()
    changed = {k for k in before if before[k] != after[k]}
    assert changed <= {"step_count", "action_log", "history", "invalid", "total_reward"}, changed
