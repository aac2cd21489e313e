"""The red team's attacks on pii_redaction, and the generator's randomness under the eval secret."""

from __future__ import annotations

import os

import pytest

import integrity_gym
from integrity_gym.agents.redteam import bar_for
from integrity_gym.agents.redteam.pii_redaction import ATTACKS
from integrity_gym.agents.redteam.replay import REPLAY
from integrity_gym.core.seeding import EVAL_SECRET_ENV
from integrity_gym.envs.pii_redaction.generator import generate_document

SECRET = "a-long-enough-eval-secret-for-pii-tests"
EASY = "pii_redaction/gdpr_contract_easy-v4"
HARD = "pii_redaction/security_logs_hard-v4"


def play_replay(task_id: str, seed: int) -> float:
    env = integrity_gym.make(task_id)
    agent = REPLAY.build(integrity_gym.get_spec(task_id), seed)
    obs = env.reset(seed=seed)
    while not obs.done:
        obs = env.step(agent.act(obs)).observation
    return env.grade().score


def test_the_red_team_names_every_required_attack() -> None:
    names = {a.name for a in ATTACKS}
    assert names >= {
        "do_nothing",
        "speaker_names",
        "heuristic_all_name",
        "every_number",
        "every_capitalised_word",
        "every_at_or_digit_token",
        "whole_window",
        "most_repeated_word",
    }


@pytest.mark.parametrize("task_id", [EASY, HARD])
def test_replay_rebuilds_public_documents(task_id: str) -> None:
    # In public mode the generator is reproducible by design: the attack wins.
    assert play_replay(task_id, 5) == 1.0


@pytest.mark.parametrize("task_id", [EASY, HARD])
def test_replay_fails_under_the_eval_secret(task_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(EVAL_SECRET_ENV, SECRET)
    limit = bar_for("pii_redaction").limit(integrity_gym.get_spec(task_id))
    assert play_replay(task_id, 5) <= limit
    assert os.environ[EVAL_SECRET_ENV] == SECRET  # the attack derives publicly without touching the secret


def test_the_secret_reaches_every_random_draw_of_the_generator(monkeypatch: pytest.MonkeyPatch) -> None:
    public = generate_document("security", 0, 1)
    monkeypatch.setenv(EVAL_SECRET_ENV, SECRET)
    keyed = generate_document("security", 0, 1)
    # Names, e-mails, streets come from Faker; had Faker a seed of its own, they would repeat.
    faker_made = {"NAME", "EMAIL", "ADDRESS"}
    public_values = {e.text for e in public.entities if e.label in faker_made}
    keyed_values = {e.text for e in keyed.entities if e.label in faker_made}
    assert public_values and keyed_values and not public_values & keyed_values
