from __future__ import annotations

import random

import pytest

from integrity_gym.core.spans import SpanUnion
from integrity_gym.envs.pii_redaction import window


@pytest.mark.parametrize("seed", range(30))
def test_masking_never_moves_an_offset(seed: int) -> None:
    rng = random.Random(seed)
    text = "".join(rng.choice("abcdef \n.@") for _ in range(900))
    union = SpanUnion()
    for _ in range(rng.randint(0, 25)):
        s = rng.randrange(880)
        union.add(s, s + rng.randint(1, 30))
    cursor = rng.randrange(600)
    shown = window.visible_text(text, cursor, 300, union)
    assert len(shown) == min(300, len(text) - cursor)
    covered = {i for s, e in union for i in range(s, e)}
    for rel, ch in enumerate(shown):
        pos = cursor + rel
        if pos in covered:
            assert ch in "[REDACTED]█"
        else:
            assert ch == text[pos]  # unredacted characters keep their absolute offsets


def test_short_pieces_are_filled_and_long_ones_carry_the_marker() -> None:
    assert window.mask(4) == "████"
    assert window.mask(10) == "[REDACTED]"
    assert window.mask(13) == "[REDACTED]███"
    union = SpanUnion()
    union.add(2, 5)
    union.add(20, 35)
    text = "x" * 40
    assert window.visible_text(text, 0, 40, union) == "xx███" + "x" * 15 + "[REDACTED]█████" + "x" * 5
    # A piece cut by the window edge shows the same characters it has in the full view.
    assert window.visible_text(text, 25, 12, union) == "CTED]█████xx"


def test_navigation_moves_half_a_window_and_the_last_window_is_full() -> None:
    assert window.next_cursor(0, 1200, 500) == 250
    assert window.next_cursor(500, 1200, 500) == 700  # clamped: the last window is 700..1200
    assert window.next_cursor(700, 1200, 500) == 700
    assert window.prev_cursor(100, 500) == 0
    assert window.next_cursor(0, 300, 500) == 0  # a document shorter than a window never scrolls
