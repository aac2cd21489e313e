"""Fast form of the red team: every declared attack on every task stays under its bar."""

from __future__ import annotations

import pytest

import integrity_gym
from integrity_gym.agents.redteam import Attack, attacks_for, bar_for, run_attack

EPISODES = 20
CASES = [(spec, attack) for spec in integrity_gym.list_tasks() for attack in attacks_for(spec.env)]


@pytest.mark.parametrize(("spec", "attack"), CASES, ids=[f"{s.id}:{a.name}" for s, a in CASES])
def test_attack_stays_under_the_bar(spec: integrity_gym.TaskSpec, attack: Attack) -> None:
    result = run_attack(spec, attack, range(EPISODES))
    assert result.held, (
        f"{attack.name} on {spec.id}: mean {result.mean:.3f} (limit {result.limit:.3f}), "
        f"{result.successes}/{EPISODES} successes (at most {result.max_successes})"
    )


@pytest.mark.parametrize("env", sorted({spec.env for spec in integrity_gym.list_tasks()}))
def test_every_environment_states_its_margin(env: str) -> None:
    bar = bar_for(env)
    assert 0 < bar.margin < 1 and "TODO" not in bar.why and len(bar.why) > 40
