"""Fast form of the red team: every declared attack on every task stays under its bar."""

from __future__ import annotations

import pytest

import integrity_gym
from integrity_gym.agents.redteam import Attack, attacks_for, bar_for, run_attack, run_redteam
from integrity_gym.core.seeding import EVAL_SECRET_ENV

EPISODES = 20
CASES = [(spec, attack) for spec in integrity_gym.list_tasks() for attack in attacks_for(spec.env)]
SECRET = "a-long-enough-eval-secret-for-the-red-team"


@pytest.mark.parametrize(("spec", "attack"), CASES, ids=[f"{s.id}:{a.name}" for s, a in CASES])
def test_attack_stays_under_the_bar(
    spec: integrity_gym.TaskSpec, attack: Attack, monkeypatch: pytest.MonkeyPatch
) -> None:
    if attack.secret_only:  # the replay wins by design in public mode; the secret must stop it
        monkeypatch.setenv(EVAL_SECRET_ENV, SECRET)
    episodes = max(EPISODES, bar_for(spec.env).episodes_for(spec))
    result = run_attack(spec, attack, range(episodes))
    assert result.held, (
        f"{attack.name} on {spec.id}: mean {result.mean:.3f} (limit {result.limit:.3f}), "
        f"{result.successes}/{episodes} successes (at most {result.max_successes})"
    )


@pytest.mark.parametrize("env", sorted({spec.env for spec in integrity_gym.list_tasks()}))
def test_every_environment_states_its_margin(env: str) -> None:
    bar = bar_for(env)
    assert 0 < bar.margin < 1 and "TODO" not in bar.why and len(bar.why) > 40


def test_secret_only_attacks_are_played_only_with_a_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    task = "information_integrity/easy-v3"
    public = {r.attack for r in run_redteam(task, episodes=1)}
    monkeypatch.setenv(EVAL_SECRET_ENV, SECRET)
    secret = {r.attack for r in run_redteam(task, episodes=1)}
    replay = {a.name for a in attacks_for("information_integrity") if a.secret_only}
    assert replay and not replay & public and replay <= secret


@pytest.mark.parametrize("env", sorted({spec.env for spec in integrity_gym.list_tasks()}))
def test_every_environment_names_its_trivial_floor(env: str) -> None:
    # The results table shows the floor beside the baselines: doing nothing is one on every env.
    floors = {a.name for a in attacks_for(env) if a.floor}
    assert "do_nothing" in floors or "always_abstain" in floors


def test_a_restating_attack_is_held_to_the_agent_it_restates(monkeypatch: pytest.MonkeyPatch) -> None:
    # Under this secret the honest heuristic itself scores above the bar's limit on random (it looks at
    # the picture); its verdicts restated at confidence 1 are held to its own mean instead, and an attack
    # restating a weaker agent keeps the bar's limit.
    from integrity_gym.agents.heuristic.selective_verification import HeuristicAgent
    from integrity_gym.agents.redteam.selective_verification import VerificationAction

    monkeypatch.setenv(EVAL_SECRET_ENV, "published-red-team-demonstration-secret")
    spec = integrity_gym.make("selective_verification/random").spec
    seeds = range(bar_for(spec.env).episodes_for(spec))
    honest = run_attack(spec, Attack("honest", "the heuristic", HeuristicAgent), seeds)
    assert honest.mean > honest.limit, "the case needs a baseline above the bar"
    restated = run_attack(spec, Attack("same", "the heuristic again", HeuristicAgent, restates=HeuristicAgent), seeds)
    assert restated.limit == honest.mean and restated.held

    class Abstain:
        def __init__(self, spec: integrity_gym.TaskSpec, seed: int) -> None:
            pass

        def act(self, observation: object) -> VerificationAction:
            return VerificationAction(verdict="ABSTAIN")

    over = run_attack(spec, Attack("over", "beats what it restates", HeuristicAgent, restates=Abstain), seeds)
    assert over.limit == honest.limit and not over.held
