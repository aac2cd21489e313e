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
    # The gold set is a committed file: the same in both modes.
    assert load_gold("hard")[0].content == gold_scenarios()[20].content


@pytest.mark.parametrize("tier", DIFFICULTIES)
def test_labels_are_independent_of_the_neighbouring_items(tier: str) -> None:
    """An agent that remembers every earlier label (the decide reward names it) learns nothing from them.

    Version 1 balanced labels within blocks of three seeds: the label missing from the two before
    was right on every block's third item. Here each rule that reads earlier labels is right about
    a third of the time, within a 99.9% binomial bound.
    """
    n = 600
    labels = [generate(tier, seed, "eval").label for seed in range(n)]
    bound = 1 / 3 + 3.3 * (2 / 9 / n) ** 0.5
    # Where the two before differ, guess the third decision (what the blocks made certain).
    guesses = [
        (next(d for d in ("allow", "flag", "remove") if d not in labels[s - 2 : s]), labels[s])
        for s in range(2, n)
        if labels[s - 2] != labels[s - 1]
    ]
    assert sum(guess == label for guess, label in guesses) / len(guesses) < bound
    repeats = sum(labels[s] == labels[s - 1] for s in range(1, n)) / (n - 1)
    assert abs(repeats - 1 / 3) < 3.3 * (2 / 9 / n) ** 0.5  # neither avoided nor favoured
    assert all(abs(c / n - 1 / 3) < 0.07 for c in Counter(labels).values())  # balanced in expectation


def _source(stance: str, reliability: float, n: int) -> rules.SourceFact:
    return rules.SourceFact(
        id=f"src_{n}", claim_id="claim_1", title="t", url="u", text="x", stance=stance,  # type: ignore[arg-type]
        reliability=reliability, source_type="news", date="2024-01-01",  # type: ignore[arg-type]
    )  # fmt: skip


def test_a_balance_on_the_lean_boundary_is_decided_exactly() -> None:
    # In floats (-0.6 + 0.2) / 0.8 is -0.4999999999999999, which read as inconclusive.
    assert rules.weigh([_source("refutes", 0.6, 1), _source("supports", 0.2, 2)]) == (-0.5, "refuted")
    assert rules.weigh([_source("supports", 0.6, 1), _source("refutes", 0.2, 2)]) == (0.5, "supported")
    assert rules.weigh([_source("supports", 0.3, 1), _source("refutes", 0.1, 2)])[1] == "supported"
    assert rules.weigh([_source("supports", 0.29, 1), _source("refutes", 0.1, 2)])[1] == "inconclusive"
