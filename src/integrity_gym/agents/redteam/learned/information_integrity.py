"""Learned attacks on information_integrity: text models fitted on training scenarios, and memory.

Each model reads words only, never a checked field (stance, reliability, date, satire, a claim's
verdict), and applies no rule; whatever it says in its reasoning comes from its own predictions.
Training labels and stances come from the train partition, which is public (an RL learner sees
them through its rewards). With eval written in words training never shows (``surface``), a model
of the wording has nothing to carry over; a model that *did* carry over would be reading.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from integrity_gym.agents.redteam.information_integrity import _STATUS_FOR, _next_read, _obs
from integrity_gym.agents.redteam.learned import Learned, Overlap
from integrity_gym.core.registry import TaskSpec
from integrity_gym.core.seeding import make_rng
from integrity_gym.envs.information_integrity.generator import generate
from integrity_gym.envs.information_integrity.models import (
    DECISIONS,
    Decision,
    IntegrityAction,
    IntegrityObservation,
    Scenario,
)
from integrity_gym.envs.information_integrity.surface import frames


def _precheck_text(obs: IntegrityObservation) -> str:
    """What every observation shows before any check: the post, topic, claims, titles, harm, counts."""
    titles = " ".join(s.title for s in obs.available_sources)
    claims = " ".join(c.text for c in obs.claims)
    return f"{obs.content} {obs.topic} {claims} {titles} harm_{obs.harm_level} claims_{len(obs.claims)}"


def _scenario_precheck(s: Scenario) -> str:
    titles = " ".join(src.title for src in s.sources)
    claims = " ".join(c.text for c in s.claims)
    return f"{s.content} {s.topic} {claims} {titles} harm_{s.harm} claims_{len(s.claims)}"


def _train(spec: TaskSpec, seeds: Iterable[int]) -> list[Scenario]:
    """The public training scenarios of ``spec``'s tier (what the train partition's episodes show)."""
    tier = spec.config.get("difficulty", spec.tier)
    return [generate(tier, seed, "train") for seed in seeds]


def _text_model() -> Any:
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    return make_pipeline(TfidfVectorizer(ngram_range=(1, 2), min_df=2), LogisticRegression(C=4.0, max_iter=2000))


def _claim_statements(obs: IntegrityObservation, decision: Decision) -> list[str]:
    return [f"{c.id} is {_STATUS_FOR[decision]}" for c in obs.claims]


class _Reader:
    """Reads by ``strategy``, then decides and explains from its models, never from a field."""

    def __init__(self, strategy: str, decide: Callable[[IntegrityObservation], tuple[Decision, list[str]]]) -> None:
        self.strategy, self.decide = strategy, decide

    def act(self, observation: Any) -> IntegrityAction:
        obs = _obs(observation)
        step = _next_read(obs, self.strategy)
        if step is not None:
            return step
        decision, statements = self.decide(obs)
        return IntegrityAction(type="decide", decision=decision, reasoning=". ".join(statements) + ".")


def _fit_precheck(spec: TaskSpec, seeds: Iterable[int]) -> Callable[[TaskSpec, int], _Reader]:
    scenarios = _train(spec, seeds)
    model = _text_model().fit([_scenario_precheck(s) for s in scenarios], [s.label for s in scenarios])

    def decide(obs: IntegrityObservation) -> tuple[Decision, list[str]]:
        decision: Decision = model.predict([_precheck_text(obs)])[0]
        return decision, _claim_statements(obs, decision)

    return lambda spec, seed: _Reader("minimum", decide)


def _fit_source_words(spec: TaskSpec, seeds: Iterable[int]) -> Callable[[TaskSpec, int], _Reader]:
    scenarios = _train(spec, seeds)
    sources = [src for s in scenarios for src in s.sources]
    stance_model = _text_model().fit([src.text for src in sources], [src.stance for src in sources])

    def words(texts: Iterable[str], harm: str) -> str:
        return " ".join(texts) + f" harm_{harm}"

    decision_model = _text_model().fit(
        [words((src.text for src in s.sources), s.harm) for s in scenarios], [s.label for s in scenarios]
    )

    def decide(obs: IntegrityObservation) -> tuple[Decision, list[str]]:
        read = [s for s in obs.available_sources if s.checked and s.text]
        decision: Decision = decision_model.predict([words((s.text or "" for s in read), obs.harm_level)])[0]
        stances = stance_model.predict([s.text for s in read]) if read else []
        statements = [f"{s.id} {stance} {s.claim_id}" for s, stance in zip(read, stances, strict=True)]
        return decision, statements + _claim_statements(obs, decision)

    return lambda spec, seed: _Reader("all", decide)


class _Memory:
    """What the eval episodes played so far showed, and a contextual bandit over the decisions.

    A decide reward is positive exactly when the decision was right, so after each episode the
    memory knows the label, or one label it is not. For each context (a seed's place in its block
    of three with what is known of the seeds before it there; what is known of the previous seed;
    its parity) it keeps each decision's wins and tries, and decides by the best smoothed win rate
    in the most specific context tried at least three times (ties at random): any structure across
    seeds that rewards can show, it finds.
    """

    def __init__(self) -> None:
        self.known: dict[int, str] = {}  # seed -> its label, or "not <decision>" after a wrong one
        self.by_content: dict[str, Decision] = {}
        self.tries: dict[tuple[object, ...], dict[Decision, list[int]]] = {}

    def _contexts(self, seed: int) -> list[tuple[object, ...]]:
        block = tuple(self.known.get(s) for s in range(seed - seed % 3, seed))
        return [("block", seed % 3, block), ("previous", self.known.get(seed - 1)), ("parity", seed % 2)]

    def learn(self, seed: int, content: str, decision: Decision, right: bool) -> None:
        if right:
            self.by_content[content] = decision
        for context in self._contexts(seed):
            wins_tries = self.tries.setdefault(context, {d: [0, 0] for d in DECISIONS})[decision]
            wins_tries[0] += right
            wins_tries[1] += 1
        self.known[seed] = decision if right else f"not {decision}"

    def guess(self, seed: int, content: str) -> Decision:
        if content in self.by_content:
            return self.by_content[content]
        rng = make_rng("redteam/learned/information_integrity/memory", seed)
        for context in self._contexts(seed):
            stats = self.tries.get(context)
            if stats is not None and sum(t for _, t in stats.values()) >= 3:
                rate = {d: (w + 1) / (t + 2) for d, (w, t) in stats.items()}
                best = max(rate.values())
                return rng.choice([d for d in DECISIONS if rate[d] == best])
        explore: Decision = rng.choice(DECISIONS)
        return explore


class _Remembering:
    """Reads by ``strategy`` and decides what its memory of earlier episodes suggests; learns from rewards."""

    def __init__(self, memory: _Memory | None, seed: int, strategy: str = "minimum") -> None:
        self.memory = memory if memory is not None else _Memory()
        self.seed, self.strategy = seed, strategy
        self.decision: Decision | None = None
        self.content = ""

    def act(self, observation: Any) -> IntegrityAction:
        obs = _obs(observation)
        self.content = obs.content
        step = _next_read(obs, self.strategy)
        if step is not None:
            return step
        self.decision = self.memory.guess(self.seed, obs.content)
        # The statuses its decision needs: a memory of labels says nothing about what a source says.
        reasoning = ". ".join(_claim_statements(obs, self.decision)) + "."
        return IntegrityAction(type="decide", decision=self.decision, reasoning=reasoning)

    def observe(self, result: Any) -> None:
        if self.decision is not None and result.done:
            self.memory.learn(self.seed, self.content, self.decision, result.reward > 0)


def _fit_memory(spec: TaskSpec, seeds: Iterable[int]) -> Callable[[TaskSpec, int], _Remembering]:
    memory = _Memory()
    return lambda spec, seed: _Remembering(memory, seed)


def forgetful(spec: TaskSpec, seed: int) -> _Remembering:
    """The memory agent with nothing remembered: the arm a memory's gain is measured against."""
    return _Remembering(None, seed)


_FORMS = {
    "source": "checked source text (claim, topic, outlet masked)",
    "title": "source title (topic masked)",
    "post": "post around its claims",
    "domain": "outlet domain (name)",
}


def surface_overlap(spec: TaskSpec, n: int = 300) -> list[Overlap]:
    """Each kind of surface form over ``n`` train and ``n`` eval scenarios of ``spec``'s tier."""
    tier = spec.config.get("difficulty", spec.tier)
    train = frames(generate(tier, seed, "train") for seed in range(n))
    held = frames(generate(tier, seed, "eval") for seed in range(n))
    return [
        Overlap(
            spec.id,
            _FORMS[kind],
            len(train[kind]),
            len(held[kind]),
            sum(c for form, c in held[kind].items() if form in train[kind]) / sum(held[kind].values()),
        )
        for kind in _FORMS
    ]


LEARNED: tuple[Learned, ...] = (
    Learned(
        "precheck_words",
        "Logistic regression on word n-grams of what shows before any check (post, topic, claims, source "
        "titles, harm level, claim count); reads the minimum, says the statuses its decision needs.",
        _fit_precheck,
    ),
    Learned(
        "source_words",
        "Reads every source; one logistic regression on the checked texts' word n-grams (plus harm) decides, "
        "another predicts each source's stance from its text for the reasoning; never reads a checked field.",
        _fit_source_words,
    ),
    Learned(
        "memory",
        "Plays eval seeds in order and learns from each decide reward: repeats a post's label, and plays a "
        "contextual bandit over the decisions keyed by a seed's place in its block of three, what it knows of "
        "its predecessor and its parity.",
        _fit_memory,
        memory=True,
    ),
)
