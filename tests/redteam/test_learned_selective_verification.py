"""Learned attacks on selective_verification stay under the bar, memory gains nothing, and a picture's
global statistics say nothing about a claim beyond its words.

What each test kills (each was run against the mutation, see the environment's README):

* ``test_learned_attack_stays_under_the_bar``: the version-2 pictures (a background per kind of place,
  objects in their emoji's colours): fitted on the same 600 train episodes, ``picture_stats`` scored
  0.921 on random (limit 0.878) and 0.917 on popular (limit 0.916) there.
* ``test_memory_gains_nothing_over_its_wiped_self``: pictures asked about again within the played
  seeds (version 2 walked POPE blocks of 64 pictures: on random-v2 the memory gained 0.013, lower
  95% bound 0.001, over these 200 seeds); ``test_the_memory_check_sees_neighbours_that_share_a_picture``
  plays version 1's interleaving of ``all`` (three neighbours on one picture and slot) and requires the
  same check to see the gain, so the check has the power to fail.
* ``test_picture_statistics_add_nothing_to_the_claim``: objects drawn in their glyph's own colours
  (the claim plus global statistics then beat the claim alone by a Brier gain of 0.08 on balanced,
  lower bound 0.067, at 1,000 items).
* ``test_present_and_absent_pictures_look_alike_globally``: the same mutation (the claimed glyph's
  colour signature then differs by 0.83 standard deviations between present and absent).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import pytest

import integrity_gym
from integrity_gym.agents.heuristic.selective_verification import BlindAgent
from integrity_gym.agents.redteam import bar_for, run_attack, score_of
from integrity_gym.agents.redteam.base import play_once
from integrity_gym.agents.redteam.learned import Learned, as_attack, learned_for
from integrity_gym.agents.redteam.learned.selective_verification import (
    LEARNED,
    memory_attack,
    picture_features,
)
from integrity_gym.core.registry import TaskSpec, get_spec, make
from integrity_gym.envs.selective_verification import generator

SV = integrity_gym.list_tasks("selective_verification/*")
BAR = bar_for("selective_verification")
#: Train episodes per fit here: fewer than the module's TRAIN_EPISODES (1,000) for speed, and enough:
#: fitted on 600, picture_stats broke the bar on the version-2 pictures (see the module docstring).
TRAIN = 600
CASES = [(spec, learned) for spec in SV for learned in LEARNED if learned.applies(spec)]


def test_every_task_faces_a_learned_attack_and_memory() -> None:
    assert learned_for("selective_verification") == LEARNED
    names = {learned.name for learned in LEARNED}
    assert {"picture_stats", "claim_words", "memory"} <= names
    for spec in SV:
        applied = {learned.name for learned in LEARNED if learned.applies(spec)}
        assert "memory" in applied and len(applied) >= 2, spec.id


@pytest.mark.parametrize(("spec", "learned"), CASES, ids=[f"{s.id}:{x.name}" for s, x in CASES])
def test_learned_attack_stays_under_the_bar(spec: TaskSpec, learned: Learned) -> None:
    attack = as_attack(spec, learned, range(0 if learned.memory else TRAIN))
    result = run_attack(spec, attack, range(max(20, BAR.episodes_for(spec))))
    assert result.held, f"{attack.name} on {spec.id}: mean {result.mean:.3f} over the limit {result.limit:.3f}"


# ---------------------------------------------------------------------- memory
MEMORY_SEEDS = range(200)


def _scores(spec: TaskSpec, build: Callable[[TaskSpec, int], Any], seeds: Iterable[int]) -> np.ndarray:
    return np.array([score_of(spec, play_once(make(spec.id), build(spec, seed), seed)[1]) for seed in seeds])


def _gain_interval(spec: TaskSpec) -> tuple[float, float]:
    """Mean gain of the memory agent over the same agent wiped before every episode, and its 95% half-width."""
    remembered = _scores(spec, memory_attack(spec), MEMORY_SEEDS)
    wiped = _scores(spec, memory_attack(spec, remember=False), MEMORY_SEEDS)
    gain = remembered - wiped
    half = 1.96 * gain.std(ddof=1) / np.sqrt(len(gain)) if gain.any() else 0.0
    return float(gain.mean()), float(half)


@pytest.mark.parametrize("spec", SV, ids=[s.id for s in SV])
def test_memory_gains_nothing_over_its_wiped_self(spec: TaskSpec) -> None:
    # One-sided: remembering may cost (it chases noise), it must not pay.
    mean, half = _gain_interval(spec)
    assert mean - half <= 0.0, f"memory gains {mean:.4f} ± {half:.4f} on {spec.id}"


def _v1_locate(self: generator.GeneratedSource, index: int) -> tuple[str, int, int]:
    """Version 1's ``all``: sampler index % 3 on POPE item index // 3, in blocks of 64 pictures."""
    sampler, pope_index = generator.POPE_SPLITS[index % 3], index // 3
    block, rest = divmod(pope_index, generator.QUESTIONS_PER_IMAGE * 64)
    return sampler, self._image_number(block * 64 + rest % 64), rest // 64


def test_the_memory_check_sees_neighbours_that_share_a_picture(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = get_spec("selective_verification/all")
    BlindAgent(spec)  # the claim prior is fitted (and cached) on the real generator first
    monkeypatch.setattr(generator.GeneratedSource, "_locate", _v1_locate)
    mean, half = _gain_interval(spec)
    assert mean - half > 0.0, f"the v1 interleaving should pay memory: {mean:.4f} ± {half:.4f}"


# ---------------------------------------------------------------------- global statistics
ITEMS = 1000


@pytest.fixture(scope="module")
def statistics() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per task: [claim prior log-odds, category, global picture statistics...] and the labels, eval items."""
    out = {}
    for name in ("balanced", "popular"):
        env = integrity_gym.make(f"selective_verification/{name}", num_tasks=ITEMS)
        blind = BlindAgent(env.spec)
        rows, labels = [], []
        for seed in range(ITEMS):
            obs = env.reset(seed=seed)
            p = min(max(blind.probability(obs), 1e-3), 1 - 1e-3)
            rows.append([np.log(p / (1 - p)), *picture_features(obs.image or "", obs.claim)])
            labels.append(env.state().item.label)
        out[name] = (np.array(rows), np.array(labels, dtype=int))
    return out


def _cross_validated(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.model_selection import StratifiedKFold

    p = np.zeros(len(y))
    for train, test in StratifiedKFold(5, shuffle=True, random_state=0).split(x, y):
        model = HistGradientBoostingClassifier(
            max_iter=150, learning_rate=0.06, max_leaf_nodes=15, min_samples_leaf=10, l2_regularization=1.0,
            categorical_features=[1], random_state=0,
        )  # fmt: skip
        p[test] = model.fit(x[train], y[train]).predict_proba(x[test])[:, 1]
    return p


@pytest.mark.parametrize("task", ["balanced", "popular"])
def test_picture_statistics_add_nothing_to_the_claim(
    task: str, statistics: dict[str, tuple[np.ndarray, np.ndarray]]
) -> None:
    # The same learner, cross-validated on eval items, with the claim alone (its train prior and the
    # object's name) and with the picture's global statistics as well: per item, the Brier score the
    # statistics save. Its 95% interval must reach zero.
    x, y = statistics[task]
    claim_only = _cross_validated(x[:, :2], y)
    with_statistics = _cross_validated(x, y)
    gain = (claim_only - y) ** 2 - (with_statistics - y) ** 2
    half = 1.96 * gain.std(ddof=1) / np.sqrt(len(gain))
    assert gain.mean() - half <= 0.0, f"global statistics save {gain.mean():.4f} ± {half:.4f} of Brier on {task}"


#: Columns of ``picture_features`` (shifted by one for the prior in front) an agent could read at a glance.
_GLANCE = {
    "mean red": 130,
    "mean green": 131,
    "mean blue": 132,
    "off-background share": 139,
    "PNG bytes": 140,
    "claimed glyph's colour signature": 142,
    "claimed glyph's grey signature": 145,
}
#: Largest standardised difference allowed between present and absent (0.2 SD; one standard error
#: at 1,000 items is 0.063; the largest measured is 0.14, and glyph colours give 0.83).
TOLERANCE = 0.2


def test_present_and_absent_pictures_look_alike_globally(statistics: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
    # balanced: every object is true half the time, so a difference here is the picture's, not the name's.
    x, y = statistics["balanced"]
    assert x.shape[1] == 154  # the columns above are those of this layout
    assert abs(y.mean() - 0.5) < 0.05
    for name, column in _GLANCE.items():
        present, absent = x[y == 1, column], x[y == 0, column]
        d = (present.mean() - absent.mean()) / np.sqrt((present.var() + absent.var()) / 2)
        assert abs(d) < TOLERANCE, f"{name}: present and absent differ by {d:.3f} SD"
