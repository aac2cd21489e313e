"""The sliding window: cursor movement and the masked view of redacted text.

Masking replaces every redacted character one for one, so lengths and absolute offsets never
move. A redacted piece of 10 or more characters reads ``[REDACTED]`` followed by ``█`` up to
its length; a shorter piece is ``█`` only (the marker would not fit without shifting text).
Overlapping or touching redactions are masked as one piece.
"""

from __future__ import annotations

import math

from integrity_gym.core.spans import SpanUnion

MARKER = "[REDACTED]"
FILL = "█"


def mask(length: int) -> str:
    """Return the mask of a redacted piece of ``length`` characters."""
    if length >= len(MARKER):
        return MARKER + FILL * (length - len(MARKER))
    return FILL * length


def stride(window_size: int) -> int:
    """Cursor step of NEXT_CHUNK and PREV_CHUNK: half a window (at least one character)."""
    return max(1, window_size // 2)


def last_cursor(document_length: int, window_size: int) -> int:
    """Largest cursor: the last window is a full window, not a sliver."""
    return max(0, document_length - window_size)


def next_cursor(cursor: int, document_length: int, window_size: int) -> int:
    """Cursor after NEXT_CHUNK."""
    return min(cursor + stride(window_size), last_cursor(document_length, window_size))


def prev_cursor(cursor: int, window_size: int) -> int:
    """Cursor after PREV_CHUNK."""
    return max(0, cursor - stride(window_size))


def moves_to_end(document_length: int, window_size: int) -> int:
    """NEXT_CHUNK steps that carry the first window to the last one."""
    return math.ceil(last_cursor(document_length, window_size) / stride(window_size))


def step_budget(decisions: int, document_length: int, window_size: int) -> int:
    """Step budget of an episode: ``decisions`` plus the moves that cross the document once.

    ``decisions`` counts redactions and FINISH; the NEXT_CHUNK steps needed to cross the document
    at this window size come on top, so a narrow window never leaves an exact agent short of
    steps. Both depend only on public sizes, never on the gold entities.
    """
    return decisions + moves_to_end(document_length, window_size)


def visible_text(text: str, cursor: int, window_size: int, redacted: SpanUnion) -> str:
    """Return the window at ``cursor`` with redacted pieces masked (cost grows with the window only)."""
    end = min(len(text), cursor + window_size)
    out: list[str] = []
    pos = cursor
    for start, stop in redacted.pieces_in(cursor, end):
        out.append(text[pos:start])
        piece_start, piece_end = redacted.piece_containing(start)
        out.append(mask(piece_end - piece_start)[start - piece_start : stop - piece_start])
        pos = stop
    out.append(text[pos:end])
    return "".join(out)
