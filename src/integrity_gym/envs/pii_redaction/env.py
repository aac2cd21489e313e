"""The pii_redaction environment: redact personal data from a long document through a window."""

from __future__ import annotations

import itertools
import math
import os
import random
import re
import secrets
from bisect import bisect_left, insort
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from integrity_gym.core.env import Env, InvalidActionError, validate_config
from integrity_gym.core.extras import EnvExtras
from integrity_gym.core.seeding import PartitionChoice, partition_of, stable_id
from integrity_gym.core.spans import SpanUnion, StaticCoverage, iou
from integrity_gym.core.types import Grade, StepResult, WireModel
from integrity_gym.envs.pii_redaction import reward as rw
from integrity_gym.envs.pii_redaction import window
from integrity_gym.envs.pii_redaction.data import load_gold
from integrity_gym.envs.pii_redaction.generator import (
    DEFAULT_MIN_CHARS,
    GENERATOR_VERSION,
    document_id,
    generate_document,
)
from integrity_gym.envs.pii_redaction.grader import grade_redactions
from integrity_gym.envs.pii_redaction.matching import IncrementalMatcher
from integrity_gym.envs.pii_redaction.models import (
    LABELS,
    Document,
    Entity,
    Kind,
    Redaction,
    RedactionAction,
    RedactionObservation,
    RedactionState,
)

if TYPE_CHECKING:
    from integrity_gym.core.registry import TaskSpec

WINDOW_ENV_VAR = "PII_WINDOW_SIZE"
DEFAULT_WINDOW = 500
#: Actions without arguments, validated once.
_BARE_ACTIONS: dict[str, RedactionAction] = {
    kind: RedactionAction(action_type=kind) for kind in ("NEXT_CHUNK", "PREV_CHUNK", "SKIP", "FINISH")
}
#: The step result type, parametrised once (pydantic looks the parametrisation up on every use).
_Result = StepResult[RedactionObservation]
#: Items named per list in an explanation; the rest are counted.
_EXPLAINED = 8
_TEXT_ACTION = re.compile(r"^\s*(?P<type>[A-Za-z_]+)\s*(?:\(\s*(?P<args>[^)]*)\)|(?P<bare>(?:\s+\S+)*))\s*$")


class PiiConfig(WireModel):
    """Configuration of a pii_redaction episode."""

    kind: Kind = Field(description="Document family: contract, clinical or security.")
    window_size: int = Field(ge=100, le=1_000_000, description=f"Characters per window (env {WINDOW_ENV_VAR}).")
    min_chars: int | None = Field(None, ge=200, description="Minimum length of generated documents.")
    source: Literal["generated", "gold"] = Field("generated", description="Generated documents or the gold set.")
    partition: PartitionChoice = Field("eval", description="Partition of generated documents.")
    reward_preset: Literal["default", "reference"] = Field("default", description="Reward and grade formulas.")
    max_steps: int | None = Field(None, ge=1, description="Override of the task's step budget.")


def _window_from_environment() -> int:
    raw = os.environ.get(WINDOW_ENV_VAR)
    if raw is None or not raw.strip():
        return DEFAULT_WINDOW
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{WINDOW_ENV_VAR} must be a whole number of characters, got {raw!r}") from None


class PiiRedactionEnv(Env[RedactionAction, RedactionObservation, RedactionState]):
    """Scan a document window by window and redact every EMAIL, PHONE, SSN, NAME, ADDRESS and DOB.

    Offsets are absolute. Rewards are dense (see ``reward``); ``grade`` matches redactions to the
    gold entities one to one at IoU > 0.6.
    """

    env_name = "pii_redaction"
    extras = EnvExtras(
        agents="integrity_gym.agents.heuristic.pii_redaction",
        prompt="integrity_gym.agents.prompts.pii_redaction",
        redteam="integrity_gym.agents.redteam.pii_redaction",
        learned="integrity_gym.agents.redteam.learned.pii_redaction",
        view="view.js",
        profiles={"seed001": "integrity_gym.envs.pii_redaction.seed001"},
    )
    #: Its observation names no document (no id, no seed) and step info carries rewards only.
    ITEM_FIELDS = ()
    action_type = RedactionAction
    observation_type = RedactionObservation
    state_type = RedactionState
    #: Set by reset alone: the document (most of the state's bytes) and what picked it.
    static_state_fields = frozenset({"task_id", "seed", "episode_id", "config", "document"})
    action_help = (
        "Actions: REDACT start end LABEL (absolute offsets, end exclusive; labels "
        + " ".join(LABELS)
        + "), NEXT_CHUNK, PREV_CHUNK, SKIP, FINISH. Forms like REDACT(12,30,EMAIL) or JSON work too."
    )

    # ------------------------------------------------------------------ configuration
    def _configure(self, spec: TaskSpec, config: Mapping[str, Any]) -> None:
        values = dict(config)
        values.setdefault("window_size", _window_from_environment())
        self.config: PiiConfig = validate_config(PiiConfig, values)
        self.reward_config = rw.PRESETS[self.config.reward_preset]
        self.max_steps = self.config.max_steps or spec.max_steps

    # ------------------------------------------------------------------ reset
    def _reset(
        self, *, seed: int | None, scenario_id: str | int | None, options: dict[str, Any]
    ) -> RedactionObservation:
        unknown = set(options) - {"document", "source", "partition"}
        if unknown:
            raise ValueError(f"unknown reset option(s) {sorted(unknown)}; use document, source or partition")
        if options:
            self.config = validate_config(
                PiiConfig, {**self.config.model_dump(), **{k: v for k, v in options.items() if k != "document"}}
            )
        self._seed = secrets.randbelow(2**31) if seed is None else seed
        document = self._pick_document(self._seed, scenario_id, options.get("document"))
        self._start(document)
        return self._observation()

    def _pick_document(self, seed: int, scenario_id: str | int | None, custom: Any) -> Document:
        if custom is not None:
            return custom if isinstance(custom, Document) else Document.model_validate(custom)
        kind = self.config.kind
        if isinstance(scenario_id, int) or (self.config.source == "gold" and scenario_id is None):
            gold = load_gold(kind)
            index = seed % len(gold) if scenario_id is None else int(scenario_id)
            if not 0 <= index < len(gold):
                raise ValueError(f"gold index {index} is out of range: {kind} has {len(gold)} gold documents")
            return gold[index]
        if scenario_id is not None:
            return self._document_by_id(kind, str(scenario_id))
        for index in itertools.count():
            doc_id = document_id(kind, seed, index)
            if self.config.partition == "all" or partition_of(doc_id) == self.config.partition:
                return generate_document(kind, seed, index, min_chars=self.config.min_chars)
        raise AssertionError("unreachable")  # pragma: no cover

    def _document_by_id(self, kind: Kind, doc_id: str) -> Document:
        for doc in load_gold(kind):
            if doc.id == doc_id:
                return doc
        found = re.fullmatch(rf"{kind}-g{GENERATOR_VERSION}-s(\d+)-i(\d+)", doc_id)
        if not found:
            raise ValueError(
                f"unknown document id {doc_id!r}: expected a gold id or {kind}-g{GENERATOR_VERSION}-s<seed>-i<index>"
            )
        return generate_document(kind, int(found[1]), int(found[2]), min_chars=self.config.min_chars)

    def _decisions(self) -> int:
        """The task's budget of decisions, grown with a requested ``min_chars`` above the kind's default."""
        default = DEFAULT_MIN_CHARS[self.config.kind]
        return math.ceil(self.spec.max_steps * max(1.0, (self.config.min_chars or default) / default))

    def _start(self, document: Document) -> None:
        self.document = document
        gold = [(e.start, e.end, e.label) for e in document.entities]
        self._gold_starts = [e.start for e in document.entities]
        self._gold_max_len = max((e.end - e.start for e in document.entities), default=0)
        self._gold_cover = StaticCoverage((s, e) for s, e, _ in gold)
        self._non_pii = len(document.text) - self._gold_cover.total
        weights = rw.gold_weights(self.reward_config, [(e.label, e.text) for e in document.entities])
        self._matcher = IncrementalMatcher(gold, self.reward_config.match_iou, weights)
        self.max_steps = self.config.max_steps or window.step_budget(
            self._decisions(), len(document.text), self.config.window_size
        )
        self._union = SpanUnion()
        self._over_redacted = 0
        self._redactions: list[Redaction] = []
        self._spans: list[tuple[int, int]] = []
        self._by_start: list[tuple[int, int]] = []
        self._longest = 0
        self._cursor = 0
        self._log: list[str] = []
        self._trailing_skips = 0
        self._finished = False
        self._step_count = 0
        self._total_reward = 0.0
        self._episode_id = stable_id(self.spec.id, document.id, self._seed)
        # Redactions are the only thing Phi and the window's misses depend on besides the cursor:
        # both are kept until the next commit (a SKIP or a move recomputes nothing).
        self._phi = self._potential()
        self._phi_stale = False
        self._missed: tuple[int, int] | None = None  # (cursor, unmatched entities in its window)
        self._view: tuple[int, str] | None = None  # (cursor, masked window text)

    # ------------------------------------------------------------------ actions
    def parse_action(self, action: Any) -> RedactionAction:
        """Also accept text such as ``REDACT 12 30 EMAIL``, ``REDACT(12,30,EMAIL)`` or ``next_chunk``."""
        if type(action) is dict and len(action) == 1:
            # The commonest actions of a rollout ({"action_type": "SKIP"} ...): their one valid
            # value each, built once (actions are frozen).
            kind = action.get("action_type")
            if type(kind) is str and kind in _BARE_ACTIONS:
                return _BARE_ACTIONS[kind]
        if isinstance(action, str) and not action.lstrip().startswith("{"):
            return super().parse_action(_parse_text_action(action))
        return super().parse_action(action)

    def _step(self, action: RedactionAction) -> StepResult[RedactionObservation]:
        components: dict[str, float] = {}
        error: str | None = None
        kind = action.action_type
        if kind == "REDACT":
            error = self._redact(action, components)
        elif kind == "NEXT_CHUNK":
            missed = self._missed_in_window()
            length = len(self.document.text)
            seen = min(length, self._cursor + self.config.window_size)
            self._cursor = window.next_cursor(self._cursor, length, self.config.window_size)
            shown = max(0, min(length, self._cursor + self.config.window_size) - seen) / length
            components |= rw.next_chunk_reward(self.reward_config, missed=missed, shown=shown)
        elif kind == "PREV_CHUNK":
            self._cursor = window.prev_cursor(self._cursor, self.config.window_size)
        elif kind == "SKIP":
            self._trailing_skips += 1
            components |= rw.skip_reward(
                self.reward_config, missed=self._missed_in_window(), trailing_skips=self._trailing_skips
            )
        else:  # FINISH
            self._finished = True
            counts = self._matcher.counts()
            components |= rw.finish_reward(
                self.reward_config,
                all_matched=counts.matched == counts.gold,
                all_labelled=counts.label_correct == counts.gold,
            )
        if kind != "SKIP" and error is None:
            self._trailing_skips = 0
        return self._advance(str(action) if error is None else f"REJECTED {action}", components, error)

    def _reject(self, raw: Any, message: str) -> StepResult[RedactionObservation]:
        return self._advance("INVALID", rw.invalid_reward(self.reward_config), message)

    def _redact(self, action: RedactionAction, components: dict[str, float]) -> str | None:
        assert action.start is not None and action.end is not None and action.label is not None
        start, end = action.start, action.end
        lo, hi = self._redact_bounds()
        if end <= start or start < lo or end > hi:
            components |= rw.invalid_reward(self.reward_config)
            where = "the visible window" if self.reward_config.redact_scope == "window" else "the document"
            return f"REDACT({start},{end}) must satisfy {lo} <= start < end <= {hi} ({where})"
        duplicates = self._duplicates(start, end)
        if duplicates:
            components |= rw.duplicate_reward(self.reward_config, duplicates)
            return f"REDACT({start},{end}) repeats an earlier redaction (IoU > {self.reward_config.duplicate_iou})"
        best = self._matcher.best_iou(start, end)
        before = self._matcher.counts()
        new_matches = self._commit(Redaction(start=start, end=end, label=action.label))
        counts = self._matcher.counts()
        components |= rw.redact_reward(
            self.reward_config,
            new_matches=[s for _, s in new_matches],
            best_iou=best,
            gained=(counts.weight_correct - before.weight_correct) / counts.weight_total
            if counts.weight_total
            else 0.0,
            gold=counts.gold,
            false_positives=before.predictions - before.matched,
        )
        return None

    def _redact_bounds(self) -> tuple[int, int]:
        if self.reward_config.redact_scope == "document":
            return 0, len(self.document.text)
        return self._cursor, min(len(self.document.text), self._cursor + self.config.window_size)

    def _duplicates(self, start: int, end: int) -> int:
        # Only spans starting within one longest-span of ``start`` can overlap it.
        threshold = self.reward_config.duplicate_iou
        lo = bisect_left(self._by_start, (start - self._longest, -1))
        hi = bisect_left(self._by_start, (end, -1))
        return sum(1 for s, e in self._by_start[lo:hi] if e > start and iou(s, e, start, end) > threshold)

    def _commit(self, redaction: Redaction) -> list[tuple[int, float]]:
        """Record a redaction in every running structure; return the matcher's new matches."""
        start, end = redaction.start, redaction.end
        new_matches = self._matcher.add((start, end, redaction.label))
        for piece_start, piece_end in self._union.add(start, end):
            self._over_redacted += (piece_end - piece_start) - self._gold_cover.covered(piece_start, piece_end)
        self._redactions.append(redaction)
        self._spans.append((start, end))
        insort(self._by_start, (start, end))
        self._longest = max(self._longest, end - start)
        self._phi_stale = True
        self._missed = self._view = None
        return new_matches

    def _advance(
        self, log_entry: str, components: dict[str, float], error: str | None
    ) -> StepResult[RedactionObservation]:
        self._step_count += 1
        self._log.append(log_entry)
        if self._is_done():
            counts = self._matcher.counts()
            perfect = counts.label_correct == counts.gold  # a sum of float weights need not reach 1.0 exactly
            unmatched = 0.0 if perfect else 1.0 - counts.weight_correct / counts.weight_total
            components = components | rw.end_reward(self.reward_config, unmatched=max(0.0, unmatched))
        phi = self._phi
        if self._phi_stale:
            phi, self._phi_stale = self._potential(), False
        breakdown = dict.fromkeys(rw.COMPONENTS, 0.0)
        breakdown.update(components)
        breakdown["shaping"] = phi - self._phi
        self._phi = phi
        total = sum(breakdown.values())
        self._total_reward += total
        obs = self._observation()
        return _Result(
            observation=obs, reward=total, done=obs.done, info={"reward_breakdown": breakdown, "error": error}
        )

    # ------------------------------------------------------------------ derived quantities
    def _potential(self) -> float:
        counts = self._matcher.counts()
        return rw.potential(
            rw.f1_score(self.reward_config, counts),
            rw.label_accuracy(self.reward_config, counts),
            rw.utility(
                self.reward_config,
                over_redacted=self._over_redacted,
                non_pii=self._non_pii,
                redacted=self._union.total,
                length=len(self.document.text),
            ),
        )

    def _missed_in_window(self) -> int:
        """Unmatched entities in the window: wholly inside it, or overlapping it (reference)."""
        lo = self._cursor
        if self._missed is not None and self._missed[0] == lo:
            return self._missed[1]
        hi = min(len(self.document.text), lo + self.config.window_size)
        inside = self.reward_config.miss_scope == "inside"
        first = bisect_left(self._gold_starts, lo if inside else lo - self._gold_max_len)
        last = bisect_left(self._gold_starts, hi)
        entities = self.document.entities
        missed = sum(
            1
            for g in range(first, last)
            if g not in self._matcher.gold_to_pred and (entities[g].end <= hi if inside else entities[g].end > lo)
        )
        self._missed = (lo, missed)
        return missed

    def _is_done(self) -> bool:
        return self._finished or self._step_count >= self.max_steps

    # ------------------------------------------------------------------ views
    def _observation(self) -> RedactionObservation:
        length = len(self.document.text)
        window_end = min(length, self._cursor + self.config.window_size)
        if self._view is None or self._view[0] != self._cursor:
            masked = window.visible_text(self.document.text, self._cursor, self.config.window_size, self._union)
            self._view = (self._cursor, masked)
        # Built from values this env made, unvalidated: validating the list of every committed span
        # made each step cost linear in it (quadratic over an episode; benchmarks/pii_redaction.py).
        return RedactionObservation.model_construct(
            task_id=self.spec.id,
            done=self._is_done(),
            visible_text=self._view[1],
            cursor_position=self._cursor,
            window_size=self.config.window_size,
            document_length=length,
            redacted_spans=list(self._spans),
            progress_pct=window_end / length,
            previous_actions=self._log[-5:],
            step_count=self._step_count,
            steps_left=max(0, self.max_steps - self._step_count),
        )

    def render(self) -> str:
        """The window with the absolute offset of every line, then progress and recent actions."""
        obs = self._observation()
        lines = [
            f"window {obs.cursor_position}-{obs.cursor_position + len(obs.visible_text)} of "
            f"{obs.document_length} ({obs.progress_pct:.0%}), steps left {obs.steps_left}",
            "-" * 60,
        ]
        offset = obs.cursor_position
        for line in obs.visible_text.split("\n"):
            lines.append(f"{offset:>7} | {line}")
            offset += len(line) + 1
        lines.append("-" * 60)
        lines.append(
            f"redacted: {len(obs.redacted_spans)} span(s); last actions: {', '.join(obs.previous_actions) or '-'}"
        )
        return "\n".join(lines)

    def _state(self) -> RedactionState:
        return RedactionState(
            task_id=self.spec.id,
            seed=self._seed,
            episode_id=self._episode_id,
            step_count=self._step_count,
            done=self._is_done(),
            config=self.config.model_dump(),
            document=self.document,
            cursor_position=self._cursor,
            redactions=list(self._redactions),
            action_log=list(self._log),
            trailing_skips=self._trailing_skips,
            finished=self._finished,
            total_reward=self._total_reward,
        )

    def _load_state(self, state: RedactionState) -> None:
        self.config = validate_config(PiiConfig, state.config)
        self.reward_config = rw.PRESETS[self.config.reward_preset]
        self._seed = state.seed if state.seed is not None else 0
        self._start(state.document)
        for redaction in state.redactions:
            self._commit(redaction)
        self._phi, self._phi_stale = self._potential(), False
        self._episode_id = state.episode_id
        self._cursor = state.cursor_position
        self._log = list(state.action_log)
        self._trailing_skips = state.trailing_skips
        self._finished = state.finished
        self._step_count = state.step_count
        self._total_reward = state.total_reward

    def explain(self) -> str:
        """The grade, then what was missed, mislabelled and over-redacted, each named by its text and offsets."""
        grade = self._grade()
        b = grade.breakdown
        verdict = "reaches" if grade.success else "is below"
        lines = [
            f"Score {grade.score:.3f} {verdict} the threshold {grade.threshold:.2f}: F1 {b['f1']:.3f} "
            f"(precision {b['precision']:.3f}, recall {b['recall']:.3f}), label accuracy {b['label_accuracy']:.3f}, "
            f"utility {b['utility']:.3f}; {b['leaked_pii_chars']:.0f} PII characters left visible."
        ]
        entities = self.document.entities
        text = self.document.text
        pairs = self._matcher.gold_to_pred
        preds = self._matcher.preds
        missed = [e for g, e in enumerate(entities) if g not in pairs]
        relabel = [
            (e, preds[pairs[g]][2]) for g, e in enumerate(entities) if g in pairs and preds[pairs[g]][2] != e.label
        ]
        matched = set(pairs.values())
        spurious = [r for p, r in enumerate(self._redactions) if p not in matched]

        def listing(title: str, items: list[str]) -> None:
            if items:
                more = f"; and {len(items) - _EXPLAINED} more" if len(items) > _EXPLAINED else ""
                lines.append(f"{title} ({len(items)}): " + "; ".join(items[:_EXPLAINED]) + more + ".")

        listing("Missed", [f"{e.label} {e.text!r} at {e.start}-{e.end}" for e in missed])
        listing(
            "Wrong label", [f"{e.text!r} at {e.start}-{e.end} redacted as {got}, is {e.label}" for e, got in relabel]
        )
        listing("Matched no entity", [f"{text[r.start : r.end]!r} at {r.start}-{r.end} as {r.label}" for r in spurious])
        return "\n".join(lines)

    def _grade(self) -> Grade:
        return grade_redactions(self.document, self._redactions, self.reward_config, self.spec.success_threshold)

    # ------------------------------------------------------------------ agent hooks
    @classmethod
    def sample_action(cls, observation: RedactionObservation, rng: random.Random) -> RedactionAction:
        """Random action; a random REDACT lies inside the visible window."""
        kind = rng.choices(["REDACT", "NEXT_CHUNK", "PREV_CHUNK", "SKIP", "FINISH"], weights=[8, 5, 2, 3, 1])[0]
        if kind != "REDACT":
            return RedactionAction(action_type=kind)
        width = len(observation.visible_text)
        start = observation.cursor_position + rng.randrange(max(1, width - 1))
        end = min(observation.cursor_position + width, start + rng.randint(1, 40))
        return RedactionAction(action_type="REDACT", start=start, end=max(end, start + 1), label=rng.choice(LABELS))

    @classmethod
    def oracle_action(cls, state: RedactionState) -> RedactionAction:
        """Redact each gold entity exactly once it is in view; move on; FINISH when all are done."""
        done = {(r.start, r.end) for r in state.redactions}
        size = int(state.config["window_size"])
        lo, hi = state.cursor_position, state.cursor_position + size
        left = right = False
        for e in state.document.entities:
            if (e.start, e.end) in done:
                continue
            if lo <= e.start and e.end <= hi:
                return RedactionAction(action_type="REDACT", start=e.start, end=e.end, label=e.label)
            left, right = left or e.start < lo, right or e.start >= lo
        if right:
            return RedactionAction(action_type="NEXT_CHUNK")
        return RedactionAction(action_type="PREV_CHUNK" if left else "FINISH")

    @classmethod
    def noop_action(cls, observation: RedactionObservation) -> RedactionAction:
        """Finish at once without redacting anything."""
        return RedactionAction(action_type="FINISH")

    @classmethod
    def counterfactual(cls, state: RedactionState, rng: random.Random) -> RedactionState:
        """Relabel every gold entity and drop some: nothing the agent sees may change."""
        kept = [
            Entity(start=e.start, end=e.end, text=e.text, label=LABELS[(LABELS.index(e.label) + 1) % len(LABELS)])
            for e in state.document.entities
            if rng.random() < 0.5
        ]
        document = state.document.model_copy(update={"entities": tuple(kept)})
        return state.model_copy(update={"document": Document.model_validate(document.model_dump())})


def _parse_text_action(text: str) -> dict[str, Any]:
    found = _TEXT_ACTION.match(text)
    if not found:
        raise InvalidActionError(f"cannot read {text!r} as an action; try REDACT 12 30 EMAIL or NEXT_CHUNK")
    kind = found["type"].upper()
    raw_args = found["args"] if found["args"] is not None else (found["bare"] or "")
    args = [a for a in re.split(r"[\s,]+", raw_args.strip()) if a]
    if kind != "REDACT":
        if args:
            raise InvalidActionError(f"{kind} takes no arguments, got {' '.join(args)!r}")
        return {"action_type": kind}
    if len(args) != 3:
        raise InvalidActionError("REDACT needs start, end and label, e.g. REDACT 12 30 EMAIL")
    try:
        start, end = int(args[0]), int(args[1])
    except ValueError:
        raise InvalidActionError(f"REDACT offsets must be whole numbers, got {args[0]!r} and {args[1]!r}") from None
    return {"action_type": "REDACT", "start": start, "end": end, "label": args[2].upper()}
