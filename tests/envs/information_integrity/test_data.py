"""Where episodes come from: the public gold set is for development, evaluation is generated."""

from __future__ import annotations

from collections import Counter

import pytest

import integrity_gym
from integrity_gym.agents.redteam import attacks_for, run_attack
from integrity_gym.core.seeding import EVAL_SECRET_ENV
from integrity_gym.envs.information_integrity import rules
from integrity_gym.envs.information_integrity.data import GOLD_VERSION, load_gold
from integrity_gym.envs.information_integrity.generator import generate
from integrity_gym.envs.information_integrity.models import DIFFICULTIES

from .conftest import TASK_IDS, gold_scenarios

SECRET = "a-long-enough-eval-secret-for-tests"


def test_default_episodes_are_generated_eval_items(task_id: str) -> None:
    env = integrity_gym.make(task_id)
    for seed in (0, 7):
        env.reset(seed=seed)
        scenario = env.state().scenario
        assert scenario.origin == "generated" and scenario.id == f"gen_{scenario.difficulty}_eval_{seed}"


def test_no_generated_post_repeats_a_gold_post() -> None:
    gold = {s.content for s in gold_scenarios()}
    for tier in DIFFICULTIES:
        for partition in ("train", "eval"):
            assert not gold & {generate(tier, seed, partition).content for seed in range(150)}


def test_the_gold_set_is_public_so_looking_it_up_wins_on_gold_and_nothing_on_eval() -> None:
    """Why gold scores are not evaluation scores: the look-up attack copies the packaged labels."""
    assert GOLD_VERSION == 2
    lookup = next(a for a in attacks_for("information_integrity") if a.name == "gold_lookup")
    spec = integrity_gym.get_spec(TASK_IDS[1])
    env = integrity_gym.make(spec.id, source="gold")
    wins = 0
    for seed in range(10):
        agent = lookup.build(spec, seed)
        obs = env.reset(seed=seed)
        while not env.done:
            obs = env.step(agent.act(obs)).observation
        wins += env.grade().breakdown["decision_correct"] == 1.0
    assert wins == 10
    assert run_attack(spec, lookup, range(12)).successes == 0  # default: generated eval items


def test_generator_randomness_is_keyed_by_the_eval_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every derivation goes through core.seeding, so the secret changes every item (and labels)."""
    public = {tier: [generate(tier, seed, "eval") for seed in range(24)] for tier in DIFFICULTIES}
    monkeypatch.setenv(EVAL_SECRET_ENV, SECRET)
    for tier in DIFFICULTIES:
        keyed = [generate(tier, seed, "eval") for seed in range(24)]
        assert all(k.content != p.content for k, p in zip(keyed, public[tier], strict=True))
        assert [k.label for k in keyed] != [p.label for p in public[tier]]
        assert keyed[5] == generate(tier, 5, "eval")  # same secret, same item
        assert all(k.label == rules.derive_label(k) for k in keyed)
        for block in range(0, 24, 3):  # still balanced in every block of three seeds
            assert Counter(k.label for k in keyed[block : block + 3]) == Counter(["allow", "flag", "remove"])
    # The gold set is a committed file: the same in both modes.
    assert load_gold("hard")[0].content == gold_scenarios()[20].content
