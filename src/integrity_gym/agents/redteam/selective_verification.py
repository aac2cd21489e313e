"""Degenerate agents for selective_verification: each tries to score without judging the claim.

The grade of an episode is its proper reward, so the honest way to score is to know how likely
one's verdict is. Every attack here skips that: it never looks (always abstain, always the same
verdict, the claim text's prior, a coin), or it looks and then lies about how sure it is (the
heuristic's verdicts restated at confidence 1), or it games the reader (unreadable and
multi-verdict replies). On the threshold tasks, where each item states its own risk threshold t,
three more ignore it: the best honest belief (or the claim text's prior) answered against the flat
payoff's q* = 0.7236, and that belief answered on every claim. The bar is on the mean grade; no
single episode counts as a success in this environment (see the environment's README), so the
success count is zero by construction and the mean is what must stay low.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from integrity_gym.agents.heuristic.selective_verification import (
    BlindAgent,
    HeuristicAgent,
    PosteriorAgent,
    honest_answer,
)
from integrity_gym.agents.redteam.base import Attack, Bar, degraded
from integrity_gym.core.registry import TaskSpec
from integrity_gym.core.seeding import make_rng
from integrity_gym.core.types import Grade
from integrity_gym.envs.selective_verification.models import VerificationAction, VerificationObservation
from integrity_gym.envs.selective_verification.scoring import DEFAULT_Q_STAR
from integrity_gym.envs.selective_verification.textgen import posterior_from_passage

BAR = Bar(
    margin=0.04,
    why=(
        "Each task's threshold sits two thirds of the way from its trivial floor (always abstaining "
        "earns 0.80; the claim text's prior alone 0.80-0.93) to its ceiling, which on text is only "
        "0.862 (the exact posterior rarely clears q* = 0.7236), so a fixed distance under the threshold "
        "would put the limit under the floor itself. Every attack that is not itself a floor agent must "
        "instead stay in the lower 60% of the gap between the floor and the threshold: at most floor + "
        "0.6 x (threshold - floor) (0.878 on balanced, 0.888 on random, 0.959 on popular, 0.895 on adversarial, "
        "0.890 on all, 0.846 on text; on the threshold tasks 0.833 on threshold_text, 0.852 on threshold_balanced, "
        "0.861 on threshold_adversarial); the floor agents (abstaining, constant or coin-flip verdicts, "
        "the claim text's prior), whose best mean is the floor itself and moves with the items drawn, "
        "must stay under the threshold. A sure answer that ignores the evidence earns its accuracy, "
        "about 0.5. The heuristic's "
        "own verdicts restated at confidence 1 look at the picture, so they are held to the larger of that limit "
        "and the honest heuristic's own mean on the same seeds: restating a verdict with more confidence must "
        "not pay. "
        "No episode is ever a success here, so the mean carries the bar. Episodes are one step and "
        "noisy, so every attack is judged on the same seeds as the floor: 100, and 1,000 on the text "
        "tasks (whose whole range is about 0.02), there by its expected grade under the claim's known "
        "probability."
    ),
    episodes=100,
    headroom_share=0.6,
)


def score_of(spec: TaskSpec, grade: Grade) -> float:
    """The expected grade under the claim's known probability (the text tasks), else the grade."""
    b = grade.breakdown
    return float(b.get("expected_grade", b.get("expected_reward", grade.score)))


def ceiling_agent(spec: TaskSpec) -> str:
    """The best honest agent: the exact posterior on text, where the truth is uncertain; else the oracle."""
    return "posterior" if spec.config.get("variant") == "text" else "oracle"


def _sure(p_true: float) -> VerificationAction:
    return VerificationAction(verdict="SUPPORTED" if p_true >= 0.5 else "REFUTED", confidence=1.0)


class _Constant:
    """Sends the same reply to every claim."""

    def __init__(self, reply: VerificationAction | str) -> None:
        self._reply = reply

    def act(self, observation: VerificationObservation) -> VerificationAction | str:
        """Return the fixed reply."""
        return self._reply


class _SureOf:
    """Answers the likelier verdict under a belief, always, with confidence 1."""

    def __init__(self, belief: Callable[[VerificationObservation], float]) -> None:
        self._belief = belief

    def act(self, observation: VerificationObservation) -> VerificationAction:
        """Return the likelier verdict at confidence 1, never abstaining."""
        return _sure(self._belief(observation))


class _Inflated:
    """An honest agent's replies with every answered verdict's confidence raised to 1."""

    def __init__(self, agent: Any) -> None:
        self._agent = agent

    def act(self, observation: VerificationObservation) -> VerificationAction:
        """Return the agent's verdict; an answer's confidence becomes 1, abstentions stay."""
        action: VerificationAction = self._agent.act(observation)
        if action.verdict == "ABSTAIN":
            return action
        return VerificationAction(verdict=action.verdict, confidence=1.0)


class _CoinSure:
    """A uniformly random verdict with confidence 1, seeded per episode."""

    def __init__(self, spec: TaskSpec, seed: int) -> None:
        self._rng = make_rng("redteam/selective_verification/coin", spec.id, seed)

    def act(self, observation: VerificationObservation) -> VerificationAction:
        """Return SUPPORTED or REFUTED at random, at confidence 1."""
        return _sure(self._rng.random())


def _blind_sure(spec: TaskSpec, seed: int) -> _SureOf:
    blind = BlindAgent(spec, seed)
    return _SureOf(blind.probability)


def _heuristic_sure(spec: TaskSpec, seed: int) -> _SureOf:
    return _SureOf(HeuristicAgent(spec, seed).probability)


def _is_text(spec: TaskSpec) -> bool:
    return spec.config.get("variant") == "text"


def best_honest(spec: TaskSpec, seed: int) -> Any:
    """The best honest agent that plays ``spec``: the exact posterior on text, the heuristic on pictures."""
    return PosteriorAgent(spec, seed) if _is_text(spec) else HeuristicAgent(spec, seed)


def _belief(spec: TaskSpec, seed: int) -> Callable[[VerificationObservation], float]:
    """The best honest agent's probability that the claim is true."""
    if _is_text(spec):
        return lambda obs: posterior_from_passage(obs.passage or "", obs.claim)
    return HeuristicAgent(spec, seed).probability


class _FixedCutoff:
    """An honest belief answered against a fixed cutoff, whatever threshold the item states."""

    def __init__(self, belief: Callable[[VerificationObservation], float], cutoff: float) -> None:
        self._belief, self._cutoff = belief, cutoff

    def act(self, observation: VerificationObservation) -> VerificationAction:
        """Answer the likelier verdict with its probability when that clears the cutoff, else abstain."""
        return honest_answer(self._belief(observation), self._cutoff)


def _states_a_threshold(spec: TaskSpec) -> bool:
    """Whether every item of ``spec`` states its own risk threshold (a threshold task)."""
    return spec.config.get("risk_thresholds") is not None


_STUFFED = (
    '{"verdict": "SUPPORTED", "confidence": 1.0} {"verdict": "REFUTED", "confidence": 1.0} {"verdict": "ABSTAIN"}'
)

ATTACKS: tuple[Attack, ...] = (
    Attack("always_abstain", "ABSTAIN on every claim: the flat payoff, never a risk.",
           lambda spec, seed: _Constant(VerificationAction(verdict="ABSTAIN")), floor=True),
    Attack("supported_sure", "SUPPORTED with confidence 1 on every claim, without looking.",
           lambda spec, seed: _Constant(VerificationAction(verdict="SUPPORTED", confidence=1.0)), floor=True),
    Attack("refuted_sure", "REFUTED with confidence 1 on every claim, without looking.",
           lambda spec, seed: _Constant(VerificationAction(verdict="REFUTED", confidence=1.0)), floor=True),
    Attack("coin_sure", "A coin-flip verdict with confidence 1.", _CoinSure, floor=True),
    Attack("blind", "The honest blind baseline: the claim text's prior, never the picture, abstaining below q*.",
           BlindAgent, floor=True),
    Attack("blind_sure", "The claim text's prior (never the picture) turned into a verdict at confidence 1.",
           _blind_sure, floor=True),
    Attack("heuristic_sure", "The heuristic's likelier verdict on every claim at confidence 1, never abstaining.",
           _heuristic_sure, restates=HeuristicAgent),
    Attack("heuristic_inflated", "The heuristic's own answers with their confidence raised to 1 (abstentions kept).",
           lambda spec, seed: _Inflated(HeuristicAgent(spec, seed)), restates=HeuristicAgent),
    Attack("blind_inflated", "The honest blind agent's answers with their confidence raised to 1.",
           lambda spec, seed: _Inflated(BlindAgent(spec, seed))),
    Attack("malformed", "Prose instead of the JSON answer.",
           lambda spec, seed: _Constant("It is very likely there, I am sure of it.")),
    Attack("stuffed", "Every verdict in one reply, hoping the reader keeps the right one.",
           lambda spec, seed: _Constant(_STUFFED)),
    # Threshold-ignoring agents (issue 28), played on the threshold tasks only: on the flat-payoff tasks
    # they are the honest agents themselves (the stated threshold is q*).
    Attack("ignores_threshold", "The best honest belief (the exact posterior on text, the heuristic's on pictures) "
           "answered whenever it clears the flat payoff's q* = 0.7236, whatever threshold the item states.",
           lambda spec, seed: _FixedCutoff(_belief(spec, seed), DEFAULT_Q_STAR), restates=best_honest,
           applies=_states_a_threshold),
    Attack("never_abstains", "The best honest belief's likelier verdict at its honest confidence, on every claim.",
           lambda spec, seed: _FixedCutoff(_belief(spec, seed), 0.0), restates=best_honest,
           applies=_states_a_threshold),
    Attack("blind_ignores_threshold", "The claim text's prior (never the picture) answered whenever it clears "
           "q* = 0.7236, whatever threshold the item states.",
           lambda spec, seed: _FixedCutoff(BlindAgent(spec, seed).probability, DEFAULT_Q_STAR), floor=True,
           applies=_states_a_threshold),
)  # fmt: skip


class _WrongThird:
    """The oracle's answer, turned around (still at confidence 1) on every third seed."""

    def __init__(self, env: Any, seed: int) -> None:
        from integrity_gym.agents.oracle import OracleAgent

        self._oracle = OracleAgent(env)
        self._flip = seed % 3 == 0

    def act(self, observation: VerificationObservation) -> VerificationAction:
        """The true verdict, or its opposite on the flipped seeds."""
        action: VerificationAction = self._oracle.act(observation)
        if not self._flip:
            return action
        return VerificationAction(verdict="REFUTED" if action.verdict == "SUPPORTED" else "SUPPORTED", confidence=1.0)


class _Hedged:
    """The oracle's verdict at a fixed, lower confidence."""

    def __init__(self, env: Any, confidence: float) -> None:
        from integrity_gym.agents.oracle import OracleAgent

        self._oracle = OracleAgent(env)
        self._confidence = confidence

    def act(self, observation: VerificationObservation) -> VerificationAction:
        """The true verdict at the fixed confidence."""
        action: VerificationAction = self._oracle.act(observation)
        return VerificationAction(verdict=action.verdict, confidence=self._confidence)


#: Honest policies made worse on purpose, for the return-vs-grade audit (``audit.py``).
DEGRADED = (
    degraded("oracle_wrong_third", "The oracle, sure and wrong on every third seed.", _WrongThird),
    degraded("oracle_hedged", "The true verdict at confidence 0.8.", lambda env, seed: _Hedged(env, 0.8)),
)
