"""The player every learned attack on pii_redaction shares: read the whole document, plan, walk back redacting."""

from __future__ import annotations

import math

from integrity_gym.core.registry import TaskSpec
from integrity_gym.envs.pii_redaction.models import Label, RedactionAction, RedactionObservation
from integrity_gym.envs.pii_redaction.window import last_cursor, stride

Span = tuple[int, int, Label]
Scored = tuple[float, int, int, Label]


class _Planner:
    """Read the document once, plan spans over the whole text, walk back redacting them within the budget."""

    def __init__(self, spec: TaskSpec, seed: int = 0) -> None:
        self.spec = spec
        self.seed = seed
        self._reset_episode()

    def _reset_episode(self) -> None:
        self._buffer: list[str] = []
        self._text = ""
        self._pending: list[Span] = []
        self._reading = True
        self.last_action: RedactionAction | None = None

    def plan(self, text: str) -> list[Scored]:
        """Scored absolute spans to redact in ``text`` (higher first when the budget is short)."""
        raise NotImplementedError

    def start_episode(self) -> None:
        """Called at every episode's first step (memory attacks use it)."""

    def act(self, observation: RedactionObservation) -> RedactionAction:
        """Read on to the end, then redact the planned spans window by window on the way back, then FINISH."""
        obs = observation
        if obs.step_count == 0:
            self._reset_episode()
            self.start_episode()
        lo = obs.cursor_position
        hi = lo + len(obs.visible_text)
        if self._reading:
            if len(self._buffer) < hi:
                self._buffer.extend(obs.visible_text[len(self._buffer) - lo :])
            if hi < obs.document_length:
                return self._do(RedactionAction(action_type="NEXT_CHUNK"))
            self._reading = False
            self._text = "".join(self._buffer)
            self._pending = self._budgeted(self.plan(self._text), obs)
        for i, (s, e, label) in enumerate(self._pending):
            if lo <= s and e <= hi:
                del self._pending[i]
                return self._do(RedactionAction(action_type="REDACT", start=s, end=e, label=label))
        if self._pending and obs.steps_left > 1 and lo > 0:
            return self._do(RedactionAction(action_type="PREV_CHUNK"))
        return self._do(RedactionAction(action_type="FINISH"))

    def _do(self, action: RedactionAction) -> RedactionAction:
        self.last_action = action
        return action

    def _budgeted(self, scored: list[Scored], obs: RedactionObservation) -> list[Span]:
        """The best spans that the steps left pay for (a REDACT each, the moves back, FINISH), none overlapping."""
        size, length = obs.window_size, obs.document_length
        top, step = last_cursor(length, size), stride(size)
        chosen: list[Span] = []
        lowest = length
        for _, s, e, label in sorted(scored, key=lambda t: (-t[0], t[1])):
            if e - s < 1 or e - s > step or any(s < ce and cs < e for cs, ce, _ in chosen):
                continue
            low = min(lowest, s)
            moves = 0 if low >= top else math.ceil((top - low) / step)
            if len(chosen) + 1 + moves + 1 > obs.steps_left:
                continue
            chosen.append((s, e, label))
            lowest = low
        return sorted(chosen, key=lambda t: -t[0])
