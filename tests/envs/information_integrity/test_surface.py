"""The eval partition is written in words training never shows, and an outlet's name says nothing.

Mutations these tests kill: eval sources, titles or posts drawn from the training phrasings; a
training word reused in an eval template; outlet names chosen by reliability band (or a band's
own name list, as in version 2); a stance word shared by both partitions' templates.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest

from integrity_gym.envs.information_integrity.generator import generate
from integrity_gym.envs.information_integrity.models import DIFFICULTIES
from integrity_gym.envs.information_integrity.surface import EVAL, TRAIN, Surface, frames

#: Words no phrasing can do without; everything else in a template belongs to one partition.
FUNCTION_WORDS = {"a", "and", "by", "for", "from", "in", "is", "it", "me", "of", "on", "that", "the", "this", "to"}


def _templates(surface: Surface) -> list[str]:
    pools = (surface.leads, surface.follow_ups, surface.satire)
    return [*surface.titles, *surface.openers, *surface.closers, *(t for d in pools for v in d.values() for t in v)]


def _words(surface: Surface) -> set[str]:
    return {w.lower() for t in _templates(surface) for w in re.findall(r"[A-Za-z']+", re.sub(r"\{\w+\}", "", t))}


def test_the_partitions_share_only_function_words() -> None:
    assert _words(TRAIN) & _words(EVAL) <= FUNCTION_WORDS
    assert not set(TRAIN.places) & set(EVAL.places) and not set(TRAIN.mastheads) & set(EVAL.mastheads)


@pytest.mark.parametrize("tier", DIFFICULTIES)
def test_no_eval_phrasing_occurs_in_training(tier: str) -> None:
    train = frames([generate(tier, seed, "train") for seed in range(300)])
    held = frames([generate(tier, seed, "eval") for seed in range(300)])
    for kind in train:
        assert not train[kind] & held[kind], kind


def test_an_outlet_name_tells_nothing_of_its_reliability() -> None:
    """Chi-square test of independence: the name's place word against a trusted reliability (>= 0.78)."""
    from scipy.stats import chi2_contingency

    table: dict[str, Counter[bool]] = {}
    for tier in DIFFICULTIES:
        for seed in range(200):
            for src in generate(tier, seed, "eval").sources:
                place = src.url.split("/")[2].split("-")[0]
                table.setdefault(place, Counter())[src.reliability >= 0.78] += 1
    counts = [[c[True], c[False]] for c in table.values()]
    assert len(counts) == len(EVAL.places)
    assert chi2_contingency(counts).pvalue > 1e-3


@pytest.mark.parametrize("tier", DIFFICULTIES)
def test_a_model_of_training_wording_cannot_read_eval_stances(tier: str) -> None:
    """Fitted on training sources' words, it does little better than naming the commonest stance on eval."""
    pytest.importorskip("sklearn")
    from integrity_gym.agents.redteam.learned.information_integrity import _text_model

    train = [src for seed in range(300) for src in generate(tier, seed, "train").sources]
    held = [src for seed in range(300) for src in generate(tier, seed, "eval").sources]
    model = _text_model().fit([s.text for s in train], [s.stance for s in train])
    accuracy = sum(p == s.stance for p, s in zip(model.predict([s.text for s in held]), held, strict=True)) / len(held)
    majority = Counter(s.stance for s in held).most_common(1)[0][1] / len(held)
    assert accuracy <= majority + 0.08, (accuracy, majority)  # 0.74-0.81 with version 2's shared templates
