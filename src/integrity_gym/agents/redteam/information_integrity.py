"""Degenerate agents for information_integrity: each tries to score without doing the task.

Every attack sees only observations and the public code. An attack has two parts: an evidence
strategy (read nothing, read only the first source, read everything) and a decision with its
reasoning that does not follow from what was read (a constant, the post's wording, the harm level,
stuffed or blanket statements, a look-up in the packaged gold set). The grade gives nothing for a
wrong decision and a success needs reasoning that restates what was read, so each of them scores at
most the share of episodes its decision happens to match, with almost no success.

Left out on purpose: an agent that reads everything, reports every stance truthfully and states the
statuses its constant decision needs. Where that decision happens to be right, its transcript is
the one a careful agent writes, so no per-episode grade can deny it those successes; its mean is
still bounded by the share of labels it matches (see the environment's README).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from functools import cache
from typing import Any

from integrity_gym.agents.redteam.base import DO_NOTHING, Attack, Bar, degraded
from integrity_gym.core.registry import TaskSpec, make
from integrity_gym.core.seeding import make_rng
from integrity_gym.envs.information_integrity.models import (
    DECISIONS,
    Decision,
    IntegrityAction,
    IntegrityObservation,
    Scenario,
)

BAR = Bar(
    margin=0.1875,
    why=(
        "A quarter of the old highest threshold (0.25 x 0.75 = 0.1875), the same for every tier: an "
        "attack must keep its mean at or below 0.5425 on easy and 0.5225 on medium and hard "
        "(thresholds 0.73 / 0.71 / 0.71) with at most one success in 20. Labels are balanced, so a rule that ignores "
        "the evidence is right about a third of the time, and without reasons that restate what was read "
        "a right decision scores its decision and reasoning weights only; the bar leaves room for a lucky "
        "run of seeds without letting a rule that reads nothing pass for half an agent."
    ),
)

Strategy = str  # "none", "first", "all", "minimum"
Decider = Callable[[IntegrityObservation], tuple[Decision, str | None]]

_STATUS_FOR: dict[Decision, str] = {"allow": "true", "flag": "misleading", "remove": "false"}
_STANCE_FOR: dict[Decision, str] = {"allow": "supports", "flag": "refutes", "remove": "refutes"}


def _obs(observation: Any) -> IntegrityObservation:
    if isinstance(observation, IntegrityObservation):
        return observation
    return IntegrityObservation.model_validate(observation)


def _next_read(obs: IntegrityObservation, strategy: Strategy) -> IntegrityAction | None:
    """The next evidence-gathering action of ``strategy``, or None when it has read enough."""
    if strategy == "none" or obs.steps_left <= 1:
        return None
    unverified = [c.id for c in obs.claims if c.verification_status == "unverified"]
    unchecked = [s.id for s in obs.available_sources if not s.checked]
    checked = len(obs.available_sources) - len(unchecked)
    if strategy == "first":
        first = obs.available_sources[0]
        return None if first.checked else IntegrityAction(type="check_source", source_id=first.id)
    if strategy == "minimum":  # just enough not to be premature
        if len(unverified) == len(obs.claims):
            return IntegrityAction(type="verify_claim", claim_id=unverified[0])
        return IntegrityAction(type="check_source", source_id=unchecked[0]) if checked < 2 and unchecked else None
    if unverified:
        return IntegrityAction(type="verify_claim", claim_id=unverified[0])
    return IntegrityAction(type="check_source", source_id=unchecked[0]) if unchecked else None


class _Scripted:
    """Gather evidence by ``strategy``, then decide with ``decider``; what was read is never used."""

    def __init__(self, strategy: Strategy, decider: Decider) -> None:
        self.strategy = strategy
        self.decider = decider

    def act(self, observation: Any) -> IntegrityAction:
        """Next action: read per the strategy, then decide."""
        obs = _obs(observation)
        step = _next_read(obs, self.strategy)
        if step is not None:
            return step
        decision, reasoning = self.decider(obs)
        return IntegrityAction(type="decide", decision=decision, reasoning=reasoning)


def _constant(decision: Decision) -> Decider:
    return lambda obs: (decision, None)


def _stuffed(decision: Decision) -> Decider:
    """Statements in the graded form about every claim and source, all pointing at ``decision``."""

    def decide(obs: IntegrityObservation) -> tuple[Decision, str]:
        parts = [f"{c.id} is {_STATUS_FOR[decision]}" for c in obs.claims]
        parts += [f"{s.id} {_STANCE_FOR[decision]} {s.claim_id}" for s in obs.available_sources]
        parts.append(f"harm is {obs.harm_level}")
        return decision, ". ".join(parts) + "."

    return decide


def _blanket(obs: IntegrityObservation) -> tuple[Decision, str]:
    """Every source refutes every claim, said in words and spelled out id by id."""
    parts = ["Every source refutes every claim, so all claims are false"]
    parts += [f"{s.id} refutes {c.id}" for s in obs.available_sources for c in obs.claims]
    parts += [f"{c.id} is false" for c in obs.claims]
    return "remove", ". ".join(parts) + "."


def _free_harm(obs: IntegrityObservation) -> tuple[Decision, str]:
    """The harm level is on screen; assert it and let it pick the decision."""
    by_harm: dict[str, Decision] = {"low": "flag", "medium": "flag", "high": "remove"}
    decision = by_harm[obs.harm_level]
    return decision, f"harm is {obs.harm_level}. The harm level decides this post."


_KEYWORDS = (
    "false misleading refutes supports contested unsupported satire outdated harm high evidence "
    "verified debunked fact-check reliable trusted official source claim"
)


def _keyword_soup(obs: IntegrityObservation) -> tuple[Decision, str]:
    ids = " ".join([c.id for c in obs.claims] + [s.id for s in obs.available_sources])
    return "flag", f"{_KEYWORDS} {ids} {_KEYWORDS.upper()}"


_ALARM = re.compile(
    r"\b(no|not|never|deny|denies|myth|myths|hoax|fake|false|debunk\w*|scam|poison\w*|lie|lies|cure\w*|"
    r"miracle|urgent|proves?|hiding|cover\w*|secret|truth|wake|overlords?|joke|spoof)\b|!",
    re.IGNORECASE,
)
_HEDGE = re.compile(r"\b(half|percent|%|double\w*|more than|less than|all|every|some)\b", re.IGNORECASE)


def _title_reader(obs: IntegrityObservation) -> tuple[Decision, str | None]:
    """Decide from how the post and the source titles are worded, never from what a check revealed."""
    text = " ".join([obs.content, *(s.title for s in obs.available_sources)])
    alarm, hedge = len(_ALARM.findall(text)), len(_HEDGE.findall(text))
    if alarm >= 3:
        return "remove", None
    return ("flag", None) if alarm + hedge >= 2 else ("allow", None)


@cache
def _gold_index() -> dict[str, Scenario]:
    from integrity_gym.envs.information_integrity.data import load_gold

    return {s.content: s for tier in ("easy", "medium", "hard") for s in load_gold(tier)}


def _gold_lookup(obs: IntegrityObservation) -> tuple[Decision, str | None]:
    """Find the post in the packaged gold set and copy its label and explanation; else say flag."""
    from integrity_gym.envs.information_integrity import rules

    found = _gold_index().get(obs.content)
    if found is None or found.label is None:
        return "flag", None
    return found.label, ". ".join(rules.gold_evidence(found).statements) + "."


class _RandomPlayer:
    """Uniformly random actions (the environment's own sampler), seeded per episode."""

    def __init__(self, spec: TaskSpec, seed: int) -> None:
        self.env_type = type(make(spec.id))
        self.rng: random.Random = make_rng("redteam/information_integrity/random", spec.id, seed)

    def act(self, observation: Any) -> IntegrityAction:
        """A random verify, check or decide."""
        action: IntegrityAction = self.env_type.sample_action(_obs(observation), self.rng)
        return action


def _scripted(strategy: Strategy, decider: Decider) -> Callable[[TaskSpec, int], _Scripted]:
    return lambda spec, seed: _Scripted(strategy, decider)


_READS = {"none": "reads nothing", "first": "reads only the first source", "all": "reads everything"}

ATTACKS: tuple[Attack, ...] = (
    DO_NOTHING,
    *(
        Attack(
            f"always_{decision}_{strategy}",
            f"{_READS[strategy].capitalize()}, then decides {decision} with no reasoning.",
            _scripted(strategy, _constant(decision)),
            floor=strategy == "none",
        )
        for decision in DECISIONS
        for strategy in ("none", "first", "all")
    ),
    *(
        Attack(
            f"stuffed_{decision}",
            f"Reads everything, decides {decision}, and states a {_STATUS_FOR[decision]} status for every "
            f"claim, '{_STANCE_FOR[decision]}' for every source and the harm level: every id, graded form.",
            _scripted("all", _stuffed(decision)),
        )
        for decision in DECISIONS
    ),
    Attack(
        "blanket",
        "Reads the minimum, decides remove: 'every source refutes every claim', also spelled out per id.",
        _scripted("minimum", _blanket),
    ),
    Attack(
        "free_harm",
        "Reads everything, lets the visible harm level pick the decision, and asserts 'harm is X'.",
        _scripted("all", _free_harm),
    ),
    Attack(
        "keyword_soup",
        "Reads everything, decides flag, and sends grading keywords and every id without sentences.",
        _scripted("all", _keyword_soup),
    ),
    Attack(
        "title_reader",
        "Reads everything but decides from the wording of the post and the source titles alone.",
        _scripted("all", _title_reader),
    ),
    Attack(
        "gold_lookup",
        "Looks the post up in the packaged gold set and copies label and explanation; else flags.",
        _scripted("minimum", _gold_lookup),
    ),
    Attack("random", "Uniformly random verify, check and decide actions.", _RandomPlayer, floor=True),
)


class _Rewritten:
    """Another agent's actions, its decision rewritten by ``rewrite(action)``."""

    def __init__(self, inner: Any, rewrite: Callable[[IntegrityAction], IntegrityAction]) -> None:
        self._inner = inner
        self._rewrite = rewrite

    def act(self, observation: Any) -> IntegrityAction:
        """The inner agent's action, rewritten when it decides."""
        action: IntegrityAction = self._inner.act(observation)
        return self._rewrite(action) if action.type == "decide" else action


def _no_reasoning(action: IntegrityAction) -> IntegrityAction:
    return action.model_copy(update={"reasoning": None})


def _wrong(action: IntegrityAction) -> IntegrityAction:
    assert action.decision is not None
    return action.model_copy(update={"decision": DECISIONS[(DECISIONS.index(action.decision) + 1) % len(DECISIONS)]})


def _oracle_decision(env: Any) -> Decider:
    """The oracle's decision and gold statements, whatever was read (read from ``env``'s state)."""
    from integrity_gym.envs.information_integrity import rules

    def decide(obs: IntegrityObservation) -> tuple[Decision, str]:
        gold = rules.gold_evidence(env.state().scenario)
        return gold.label, ". ".join(gold.statements) + "."

    return decide


def _oracle(env: Any) -> Any:
    from integrity_gym.agents.oracle import OracleAgent

    return OracleAgent(env)


def _heuristic(env: Any, seed: int) -> Any:
    from integrity_gym.agents.heuristic.information_integrity import HeuristicAgent

    return HeuristicAgent(env.spec, seed)


#: Honest policies made worse on purpose, for the return-vs-grade audit (``audit.py``).
DEGRADED = (
    degraded(
        "oracle_no_reasoning",
        "The oracle with its reasoning deleted.",
        lambda env, seed: _Rewritten(_oracle(env), _no_reasoning),
    ),
    degraded(
        "oracle_wrong_third",
        "The oracle, deciding wrongly on every third seed.",
        lambda env, seed: _Rewritten(_oracle(env), _wrong if seed % 3 == 0 else (lambda a: a)),
    ),
    degraded(
        "oracle_at_once",
        "The oracle's decision and statements with nothing read.",
        lambda env, seed: _Scripted("none", _oracle_decision(env)),
    ),
    degraded(
        "oracle_reads_everything",
        "Reads every claim and source, then decides as the oracle does.",
        lambda env, seed: _Scripted("all", _oracle_decision(env)),
    ),
    degraded(
        "heuristic_no_reasoning",
        "The heuristic with its reasoning deleted.",
        lambda env, seed: _Rewritten(_heuristic(env, seed), _no_reasoning),
    ),
)
