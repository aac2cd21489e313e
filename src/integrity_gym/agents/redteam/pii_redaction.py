"""Degenerate agents for pii_redaction: each tries to score without doing the task.

Every attack sees only observations and the public code. Most of them share one skeleton
(:class:`_Sprayer`): in each window, redact what a cheap rule points at, spread the step budget
evenly over the windows still ahead, move on, and finish at the end of the document. The replay
attack, which rebuilds documents from the public generator, is shared by every environment
(``replay.py``); every random draw of the generator, Faker's included, is seeded through
``derive_seed``/``make_rng``, so the eval secret reaches all of it.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from typing import Any, cast

from integrity_gym.agents.heuristic.pii_redaction import HeuristicAgent
from integrity_gym.agents.redteam.base import DO_NOTHING, Attack, Bar, degraded
from integrity_gym.core.registry import TaskSpec
from integrity_gym.envs.pii_redaction.models import Label, RedactionAction, RedactionObservation

BAR = Bar(
    margin=0.1875,
    why=(
        "A quarter of the threshold (0.25 x 0.75 = 0.1875), the same for every tier: an attack must keep "
        "its mean at or below 0.5625, with at most one success in 20. Doing nothing already scores 0.25 "
        "(full utility), so the bar leaves a rule that skips the task little room above that floor, and "
        "keeps it far enough from success that no single document passes by luck."
    ),
)

Span = tuple[int, int, Label]


class _Sprayer:
    """Redact whatever ``spans`` points at in each window, within an even share of the budget."""

    def __init__(self, spec: TaskSpec, seed: int = 0) -> None:
        self.spec = spec
        self._tried: set[tuple[int, int]] = set()
        self._window = -1
        self._quota = 0

    def spans(self, obs: RedactionObservation) -> Iterable[Span]:
        """Absolute spans this rule would redact in the current window."""
        raise NotImplementedError

    def act(self, observation: RedactionObservation) -> RedactionAction:
        """Redact the next pointed-at span if the budget allows, else move on, else finish."""
        obs = observation
        if obs.step_count == 0:
            self._tried, self._window, self._quota = set(), -1, 0
        lo = obs.cursor_position
        hi = lo + len(obs.visible_text)
        if lo != self._window:
            # A new window: its share of the steps not needed to reach the end and finish.
            moves_left = math.ceil(max(0, obs.document_length - hi) / max(1, obs.window_size // 2))
            self._window, self._quota = lo, max(0, obs.steps_left - moves_left - 1) // (moves_left + 1)
        if self._quota > 0 and obs.steps_left > 1:
            taken = list(obs.redacted_spans)
            for start, end, label in self.spans(obs):
                if lo <= start < end <= hi and (start, end) not in self._tried:
                    if any(start < e and s < end for s, e in taken):
                        continue
                    self._tried.add((start, end))
                    self._quota -= 1
                    return RedactionAction(action_type="REDACT", start=start, end=end, label=label)
        if hi >= obs.document_length or obs.steps_left <= 1:
            return RedactionAction(action_type="FINISH")
        return RedactionAction(action_type="NEXT_CHUNK")


def _finditer(pattern: re.Pattern[str], obs: RedactionObservation, label: Label, group: int = 0) -> list[Span]:
    base = obs.cursor_position
    return [(base + m.start(group), base + m.end(group), label) for m in pattern.finditer(obs.visible_text)]


_SPEAKER = re.compile(
    r"(?m)^\[\d\d:\d\d:\d\d\] (?:(?P<a>[A-Za-z]+) \(agent\)|Agent (?P<b>[A-Za-z]+)|Support \((?P<c>[A-Za-z]+)\)):"
)


class SpeakerNames(_Sprayer):
    """Redact the name in each chat speaker tag (``[12:00:01] Amy (agent):``) as NAME."""

    def spans(self, obs: RedactionObservation) -> Iterable[Span]:
        """Speaker names in the window."""
        base = obs.cursor_position
        for m in _SPEAKER.finditer(obs.visible_text):
            group = next(g for g in ("a", "b", "c") if m.group(g))
            yield base + m.start(group), base + m.end(group), "NAME"


_NUMBER = re.compile(r"(?<![\w])\+?\d[\d\s().-]{3,}\d(?![\w])")


def _label_by_digits(text: str) -> Label:
    digits = sum(ch.isdigit() for ch in text)
    return "SSN" if digits == 9 else "DOB" if digits in (6, 8) else "PHONE"


class EveryNumber(_Sprayer):
    """Redact every run of digits (with separators), labelled by its digit count."""

    def spans(self, obs: RedactionObservation) -> Iterable[Span]:
        """Digit runs in the window."""
        base = obs.cursor_position
        for m in _NUMBER.finditer(obs.visible_text):
            yield base + m.start(), base + m.end(), _label_by_digits(m.group(0))


_CAPITALISED = re.compile(r"\b[A-Z][a-z]+(?: [A-Z][a-z]+)?\b")


class EveryCapitalised(_Sprayer):
    """Redact every capitalised word (or pair of words) as NAME."""

    def spans(self, obs: RedactionObservation) -> Iterable[Span]:
        """Capitalised words in the window."""
        return _finditer(_CAPITALISED, obs, "NAME")


_AT_OR_DIGIT = re.compile(r"\S*[@\d]\S*")


class EveryAtOrDigitToken(_Sprayer):
    """Redact every whitespace-separated token holding an ``@`` (EMAIL) or a digit (by digit count)."""

    def spans(self, obs: RedactionObservation) -> Iterable[Span]:
        """Tokens with ``@`` or digits in the window."""
        base = obs.cursor_position
        for m in _AT_OR_DIGIT.finditer(obs.visible_text):
            token = m.group(0).strip(".,;:!?\"'()[]{}<>")
            if not token:
                continue
            start = base + m.start() + m.group(0).index(token)
            yield start, start + len(token), "EMAIL" if "@" in token else _label_by_digits(token)


class WholeWindow(_Sprayer):
    """Redact each window whole (every character hidden), then move on."""

    def spans(self, obs: RedactionObservation) -> Iterable[Span]:
        """The visible window minus what is already redacted, as NAME."""
        lo, hi = obs.cursor_position, obs.cursor_position + len(obs.visible_text)
        cursor = lo
        for s, e in sorted(obs.redacted_spans):
            if e <= cursor or s >= hi:
                continue
            if s > cursor:
                yield cursor, s, "NAME"
            cursor = max(cursor, e)
        if cursor < hi:
            yield cursor, hi, "NAME"


_WORD = re.compile(r"\b[A-Za-z][A-Za-z'-]{2,}\b")


class MostRepeated(_Sprayer):
    """Redact every occurrence of the most repeated capitalised word seen so far, as NAME."""

    def __init__(self, spec: TaskSpec, seed: int = 0) -> None:
        super().__init__(spec, seed)
        self._counts: Counter[str] = Counter()
        self._seen: set[int] = set()

    def spans(self, obs: RedactionObservation) -> Iterable[Span]:
        """Occurrences of the most frequent capitalised word in the window."""
        if obs.step_count == 0:
            self._counts, self._seen = Counter(), set()
        base = obs.cursor_position
        for m in _WORD.finditer(obs.visible_text):
            if m.group(0)[0].isupper() and base + m.start() not in self._seen:
                self._seen.add(base + m.start())
                self._counts[m.group(0)] += 1
        if not self._counts:
            return []
        word = self._counts.most_common(1)[0][0]
        return [
            (base + m.start(), base + m.end(), "NAME") for m in re.finditer(rf"\b{re.escape(word)}\b", obs.visible_text)
        ]


class SpeakerNamesAndNumbers(_Sprayer):
    """Speaker names (cheap true positives, to pad precision) plus every run of digits."""

    def spans(self, obs: RedactionObservation) -> Iterable[Span]:
        """Speaker names first, then digit runs that overlap none of them."""
        names = list(SpeakerNames.spans(self, obs))  # type: ignore[arg-type]
        yield from names
        for start, end, label in EveryNumber.spans(self, obs):  # type: ignore[arg-type]
            if all(end <= s or start >= e for s, e, _ in names):
                yield start, end, label


class AllNamed:
    """The heuristic's spans, every one labelled NAME (does the label matter?)."""

    def __init__(self, spec: TaskSpec, seed: int = 0) -> None:
        self._inner = HeuristicAgent(spec, seed)

    def act(self, observation: RedactionObservation) -> RedactionAction:
        """The heuristic's action, relabelled NAME."""
        action = self._inner.act(observation)
        if action.action_type == "REDACT":
            return action.model_copy(update={"label": "NAME"})
        return action


def _attack(name: str, description: str, cls: Any) -> Attack:
    return Attack(name, description, lambda spec, seed: cls(spec, seed))


#: This environment's attacks (the replay attack every environment faces is in ``replay.py``).
ATTACKS: tuple[Attack, ...] = (
    DO_NOTHING,
    _attack("speaker_names", "Redact the name in every chat speaker tag, as NAME.", SpeakerNames),
    _attack(
        "speaker_names_and_every_number",
        "Speaker-tag names to pad precision with repeated true positives, plus every run of digits.",
        SpeakerNamesAndNumbers,
    ),
    _attack("heuristic_all_name", "The heuristic baseline's spans, all labelled NAME.", AllNamed),
    _attack("every_number", "Redact every run of digits, labelled by digit count.", EveryNumber),
    _attack("every_capitalised_word", "Redact every capitalised word as NAME.", EveryCapitalised),
    _attack("every_at_or_digit_token", "Redact every token with an @ or a digit.", EveryAtOrDigitToken),
    _attack("whole_window", "Redact every character of every window.", WholeWindow),
    _attack("most_repeated_word", "Redact every mention of the most repeated capitalised word.", MostRepeated),
)


class _PartialOracle:
    """The oracle on a copy of the state: only the entities ``keep`` selects, labels changed by ``relabel``."""

    def __init__(self, env: Any, keep: Any, relabel: Any = None) -> None:
        self._env = env
        self._keep = keep
        self._relabel = relabel

    def act(self, observation: RedactionObservation) -> RedactionAction:
        """The oracle's action on the reduced gold."""
        from integrity_gym.envs.pii_redaction.models import Document, Entity

        state = self._env.state()
        size = int(state.config["window_size"])
        entities = [e for i, e in enumerate(state.document.entities) if self._keep(i, e, size)]
        if self._relabel is not None:
            entities = [
                Entity(start=e.start, end=e.end, text=e.text, label=self._relabel(i, e.label))
                for i, e in enumerate(entities)
            ]
        document = Document.model_validate({**state.document.model_dump(), "entities": entities})
        action: RedactionAction = type(self._env).oracle_action(state.model_copy(update={"document": document}))
        return action


def _next_label(index: int, label: Label) -> Label:
    from integrity_gym.envs.pii_redaction.models import LABELS

    wrong = LABELS[(LABELS.index(label) + 1) % len(LABELS)]
    return cast(Label, wrong) if index % 3 == 0 else label


class _RelabelThird:
    """The heuristic with every third redaction given the wrong label."""

    def __init__(self, spec: TaskSpec, seed: int = 0) -> None:
        self._inner = HeuristicAgent(spec, seed)
        self._redactions = 0

    def act(self, observation: RedactionObservation) -> RedactionAction:
        """The heuristic's action; every third REDACT relabelled."""
        if observation.step_count == 0:
            self._redactions = 0
        action = self._inner.act(observation)
        if action.action_type == "REDACT" and action.label is not None:
            self._redactions += 1
            return action.model_copy(update={"label": _next_label(self._redactions - 1, action.label)})
        return action


#: Honest policies made worse on purpose, for the return-vs-grade audit (``audit.py``).
DEGRADED = (
    degraded(
        "oracle_skip_half",
        "The oracle, blind to every other entity.",
        lambda env, seed: _PartialOracle(env, lambda i, e, size: i % 2 == 0),
    ),
    degraded(
        "oracle_first_window",
        "The oracle on the first window only, then FINISH (never reads on).",
        lambda env, seed: _PartialOracle(env, lambda i, e, size: e.end <= size),
    ),
    degraded(
        "oracle_wrong_label_third",
        "The oracle with every third entity given the wrong label.",
        lambda env, seed: _PartialOracle(env, lambda i, e, size: True, _next_label),
    ),
    degraded(
        "heuristic_wrong_label_third",
        "The heuristic with every third redaction given the wrong label.",
        lambda env, seed: _RelabelThird(env.spec, seed),
    ),
)
