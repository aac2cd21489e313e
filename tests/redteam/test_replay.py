"""The replay attack: rebuild an eval episode from the public code and a seed, then look up its truth.

In public mode it works (that is what makes published results reproducible); with the eval
secret set, no episode an attacker can build from the code matches the one being played.
"""

from __future__ import annotations

import pytest

import integrity_gym
from integrity_gym.agents.redteam import run_attack
from integrity_gym.agents.redteam.replay import REPLAY
from integrity_gym.core.seeding import EVAL_SECRET_ENV, data_mode

TASK_IDS = [spec.id for spec in integrity_gym.list_tasks()]
SECRET = "a-long-enough-eval-secret-for-tests"
SEARCHED = 40  # seeds the attacker tries for each played one


def first_observation(task_id: str, seed: int) -> str:
    env = integrity_gym.make(task_id)
    return env.reset(seed=seed).model_dump_json()


def attacker_table(task_id: str) -> set[str]:
    """What an attacker without the secret can build: public-mode episodes of many seeds."""
    return {first_observation(task_id, seed) for seed in range(SEARCHED)}


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_public_mode_episodes_can_be_rebuilt(task_id: str) -> None:
    table = attacker_table(task_id)
    assert all(first_observation(task_id, seed) in table for seed in (3, 17))


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_secret_mode_episodes_cannot_be_rebuilt(task_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    table = attacker_table(task_id)
    monkeypatch.setenv(EVAL_SECRET_ENV, SECRET)
    played = [first_observation(task_id, seed) for seed in range(10)]
    assert not set(played) & table
    # Same secret, same episode: results stay reproducible by whoever holds the secret.
    assert played[3] == first_observation(task_id, 3)
    monkeypatch.setenv(EVAL_SECRET_ENV, SECRET + "-other")
    assert first_observation(task_id, 3) != played[3]


def test_data_mode_names_the_mode_without_the_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    assert data_mode() == "public"
    monkeypatch.setenv(EVAL_SECRET_ENV, SECRET)
    mode = data_mode()
    assert mode.startswith("secret:") and SECRET not in mode
    monkeypatch.setenv(EVAL_SECRET_ENV, SECRET + "-other")
    assert data_mode() not in (mode, "public")
    monkeypatch.setenv(EVAL_SECRET_ENV, "short")
    with pytest.raises(ValueError, match="at least 16 characters"):
        data_mode()


def replay_grades(task_id: str, seeds: tuple[int, ...]) -> list[float]:
    """The realized grade of each replay episode (not ``run_attack``'s figure, which on selective
    verification's text task is the expected grade and so would hide a leaked label)."""
    spec = integrity_gym.get_spec(task_id)
    grades = []
    for seed in seeds:
        env = integrity_gym.make(task_id)
        agent = REPLAY.build(spec, seed)
        obs = env.reset(seed=seed)
        while not env.done:
            obs = env.step(agent.act(obs)).observation
        grades.append(env.grade().score)
        env.close()
    return grades


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_the_replay_attack_wins_in_public_mode_only(task_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = integrity_gym.get_spec(task_id)
    # Public mode: the rebuilt episode's truth is the played one's, so every episode is sure and right.
    assert replay_grades(task_id, (3, 17)) == pytest.approx([1.0, 1.0])
    monkeypatch.setenv(EVAL_SECRET_ENV, SECRET)
    secret = replay_grades(task_id, (3, 17))
    assert max(secret) < 1.0 and sum(secret) / len(secret) < spec.success_threshold
    assert run_attack(spec, REPLAY, [3, 17]).mean < spec.success_threshold
