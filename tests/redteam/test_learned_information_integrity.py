"""information_integrity's learned attacks stay under the bar, and memory of earlier episodes buys nothing.

Mutations these tests kill: eval sources written in the training templates again (``source_words``
then decides from wording, 0.81 / 0.49 / 0.50 on the previous version); labels balanced within
blocks of three seeds (the memory agent then repeats each block's label); a post repeated across seeds.
"""

from __future__ import annotations

import statistics

import pytest

import integrity_gym
from integrity_gym.agents.redteam import run_attack
from integrity_gym.agents.redteam.base import play_once
from integrity_gym.agents.redteam.learned import as_attack, learned_for
from integrity_gym.agents.redteam.learned.information_integrity import _fit_memory, forgetful
from integrity_gym.envs.information_integrity import generator
from integrity_gym.envs.information_integrity.models import DECISIONS

pytest.importorskip("sklearn")

TASKS = integrity_gym.list_tasks("information_integrity/*")
LEARNED = learned_for("information_integrity")


@pytest.mark.parametrize("spec", TASKS, ids=[s.id for s in TASKS])
@pytest.mark.parametrize("learned", LEARNED, ids=[a.name for a in LEARNED])
def test_every_learned_attack_stays_under_the_bar(spec, learned) -> None:
    result = run_attack(spec, as_attack(spec, learned, range(300)), range(40))
    assert result.held, result


def _gain(spec, seeds: range) -> tuple[float, float]:
    """Mean grade gain of remembering over forgetting, and the half-width of its 95% interval (paired)."""
    build = _fit_memory(spec, ())
    remembered = [play_once(integrity_gym.make(spec.id), build(spec, s), s)[1].score for s in seeds]
    forgot = [play_once(integrity_gym.make(spec.id), forgetful(spec, s), s)[1].score for s in seeds]
    diffs = [a - b for a, b in zip(remembered, forgot, strict=True)]
    return statistics.fmean(diffs), 1.96 * statistics.stdev(diffs) / len(diffs) ** 0.5


@pytest.mark.parametrize("spec", TASKS, ids=[s.id for s in TASKS])
def test_remembering_every_earlier_episode_gains_nothing(spec) -> None:
    gain, half = _gain(spec, range(300))
    assert gain <= max(half, 0.02), (gain, half)


def test_the_memory_test_catches_labels_drawn_per_block(monkeypatch: pytest.MonkeyPatch) -> None:
    """A structure across seeds put back: one label drawn per block of three seeds."""

    def blocked(tier, partition, seed):
        return generator.make_rng("blocks", tier, partition, seed // 3).choice(DECISIONS)

    monkeypatch.setattr(generator, "_label", blocked)
    gain, half = _gain(TASKS[0], range(300))
    assert gain > max(half, 0.02) and gain > 0.05, (gain, half)  # about 0.10 on every tier
