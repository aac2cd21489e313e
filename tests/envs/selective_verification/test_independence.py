"""Items of the interleaved split are independent of their neighbours: nothing to learn from memory."""

from __future__ import annotations

from collections import Counter
from itertools import pairwise

from integrity_gym.envs.selective_verification.generator import POPE_SPLITS, GeneratedSource


def test_neighbouring_items_of_all_show_other_pictures_and_draw_their_own_sampler() -> None:
    # Version 1 played sampler i % 3 on POPE item i // 3: items 3k..3k+2 showed one picture and one
    # question slot, and an agent that remembered whether the claim had changed scored 0.934.
    source = GeneratedSource("all", partition="eval")
    n = 300
    drafts = [source.draft(i) for i in range(n)]
    assert all(a.image_id != b.image_id for a, b in pairwise(drafts))
    assert len({d.item_id for d in drafts}) == n
    by_position = sum(d.split == POPE_SPLITS[i % 3] for i, d in enumerate(drafts)) / n
    assert abs(by_position - 1 / 3) < 3.3 * (2 / 9 / n) ** 0.5  # the sampler is not the index's residue
    assert all(abs(c / n - 1 / 3) < 0.1 for c in Counter(d.split for d in drafts).values())
    same = sum(a.label == b.label for a, b in pairwise(drafts)) / (n - 1)
    assert abs(same - 1 / 2) < 3.3 * (1 / 4 / n) ** 0.5  # a label says nothing about the next one
