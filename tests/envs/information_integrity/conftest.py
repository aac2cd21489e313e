from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

import integrity_gym
from integrity_gym.core.registry import latest_task_id
from integrity_gym.core.seeding import EVAL_SECRET_ENV
from integrity_gym.core.types import Grade
from integrity_gym.envs.information_integrity import rules
from integrity_gym.envs.information_integrity.data import load_gold
from integrity_gym.envs.information_integrity.env import CORPUS_ENV_VAR, InformationIntegrityEnv
from integrity_gym.envs.information_integrity.generator import generate
from integrity_gym.envs.information_integrity.grader import EpisodeRecord, Grader, GraderFactory
from integrity_gym.envs.information_integrity.models import DECISIONS, DIFFICULTIES, Decision, Scenario

#: The current version of each tier's task, and the list of them.
TASK = {tier: latest_task_id("information_integrity", tier) for tier in DIFFICULTIES}
TASK_IDS = list(TASK.values())
#: The success thresholds: threshold_between(floor, ceiling) of each task (see tasks.py).
THRESHOLDS = {"easy": 0.73, "medium": 0.71, "hard": 0.71}


def gold_scenarios() -> list[Scenario]:
    return [s for tier in DIFFICULTIES for s in load_gold(tier)]


def generated_scenarios(n: int = 60) -> list[Scenario]:
    return [generate(tier, seed, part) for tier in DIFFICULTIES for part in ("train", "eval") for seed in range(n)]


@pytest.fixture(params=TASK_IDS)
def task_id(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def action(item: str) -> dict[str, str]:
    """The verify or check action for a claim or source id."""
    if item.startswith("claim"):
        return {"type": "verify_claim", "claim_id": item}
    return {"type": "check_source", "source_id": item}


def start(scenario: Scenario, **config: Any) -> InformationIntegrityEnv:
    env = integrity_gym.make(latest_task_id("information_integrity", scenario.difficulty), **config)
    assert isinstance(env, InformationIntegrityEnv)
    env.reset(seed=0, options={"scenario": scenario})
    return env


#: Reasonings sent with a decision: none, the best possible one (the oracle's own statements),
#: and statements that do not follow from what was read. ``every_subset`` and ``every_count`` also
#: take ``"read"``: the gold statements about what the episode read (``read_gold_text``).
def _gold_text(scenario: Scenario, decision: Decision) -> str:
    return ". ".join(rules.gold_evidence(scenario).statements) + "."


def _stuffed_text(scenario: Scenario, decision: Decision) -> str:
    status = {"allow": "true", "flag": "misleading", "remove": "false"}[decision]
    stance = "supports" if decision == "allow" else "refutes"
    parts = [f"{c.id} is {status}" for c in scenario.claims]
    parts += [f"{s.id} {stance} {s.claim_id}" for s in scenario.sources]
    return ". ".join([*parts, f"harm is {scenario.harm}"]) + "."


REASONINGS: dict[str, Callable[[Scenario, Decision], str | None]] = {
    "none": lambda scenario, decision: None,
    "gold": _gold_text,
    "stuffed": _stuffed_text,
}


def read_gold_text(scenario: Scenario, read: Collection[str]) -> str | None:
    """The gold statements that cite only ids in ``read`` (the harm statement with any of them).

    The ``"read"`` reasoning of ``every_subset`` and ``every_count``: what an honest agent can say
    after reading part of the evidence, worth 0.5 or more on some partial reads and 1.0 on full ones.
    """
    ids = {c.id for c in scenario.claims} | {s.id for s in scenario.sources}
    kept = [
        statement
        for statement in rules.gold_evidence(scenario).statements
        if all(word in read for word in statement.split() if word in ids)
    ]
    if all(statement.startswith("harm is") for statement in kept):
        return None
    return ". ".join(kept) + "."


@dataclass(frozen=True)
class Outcome:
    """One enumerated episode: the evidence read, the decision, its reasoning, what it returned."""

    evidence: tuple[str, ...]
    decision: Decision
    reasoning: str
    total: float
    env: InformationIntegrityEnv
    breakdown: dict[str, float]  # the decide step's reward components

    @property
    def grade(self) -> Grade:
        return self.env.grade()


def _decide(env: InformationIntegrityEnv, evidence: tuple[str, ...], reasonings: Sequence[str]) -> Iterator[Outcome]:
    """Each decision with each reasoning; ``env`` itself is used up by the last one."""
    cases = list(itertools.product(DECISIONS, reasonings))
    for i, (decision, name) in enumerate(cases):
        leaf = env if i == len(cases) - 1 else copy.deepcopy(env)
        text = read_gold_text(env.scenario, evidence) if name == "read" else REASONINGS[name](env.scenario, decision)
        result = leaf.step({"type": "decide", "decision": decision, "reasoning": text})
        yield Outcome(evidence, decision, name, leaf.state().total_reward, leaf, result.info["reward_breakdown"])


def every_subset(scenario: Scenario, reasonings: Sequence[str] = ("none",), **config: Any) -> Iterator[Outcome]:
    """Play every subset of claims and sources (claims first, in listing order), then each decision.
    The environment is played for real; a copy of it is taken at each node, so each subset costs
    one step beyond its parent's. Each outcome keeps its own finished environment, for its grade.
    """
    ids = [c.id for c in scenario.claims] + [s.id for s in scenario.sources]

    def walk(env: InformationIntegrityEnv, index: int, taken: tuple[str, ...]) -> Iterator[Outcome]:
        if index == len(ids):
            yield from _decide(env, taken, reasonings)
            return
        child = copy.deepcopy(env)
        child.step(action(ids[index]))
        yield from walk(env, index + 1, taken)
        yield from walk(child, index + 1, (*taken, ids[index]))

    yield from walk(start(scenario, **config), 0, ())


def every_count(scenario: Scenario, reasonings: Sequence[str] = ("none",), **config: Any) -> Iterator[Outcome]:
    """Play k claims and m sources for every (k, m), claims first and sources first, then decide.

    Step rewards depend on how many ids were read and in which order of kinds, not on which ids
    (exploration rewards never look at hidden facts), so this covers every strategy's return.
    """
    claims = [c.id for c in scenario.claims]
    sources = [s.id for s in scenario.sources]
    for first, second in ((claims, sources), (sources, claims)):
        outer = start(scenario, **config)
        for i in range(len(first) + 1):
            inner = copy.deepcopy(outer)
            for j in range(len(second) + 1):
                yield from _decide(copy.deepcopy(inner), tuple(first[:i] + second[:j]), reasonings)
                if j < len(second):
                    inner.step(action(second[j]))
            if i < len(first):
                outer.step(action(first[i]))


def strategies(scenario: Scenario) -> dict[str, list[str]]:
    """Named evidence-gathering strategies an agent could follow, as lists of ids to read."""
    claims = [c.id for c in scenario.claims]
    sources = [s.id for s in scenario.sources]
    gold = rules.gold_evidence(scenario)
    return {
        "nothing": [],
        "first_source": sources[:1],
        "minimum": claims[:1] + sources[:2],
        "decisive": list(gold.claims) + list(gold.sources),
        "everything": claims + sources,
        "all_claims_no_sources": claims,
        "sources_only": sources,
    }


#: The oracle and three degraded versions of it: its reasoning deleted, reading every claim and
#: source before deciding with the gold decision and statements, and those with nothing read.
ORACLE_VARIANTS = ("oracle", "no_reasoning", "reads_everything", "at_once")


def play_oracle(scenario: Scenario, variant: str, **config: Any) -> tuple[float, InformationIntegrityEnv]:
    """Play ``variant`` of the oracle (``make_agent("oracle", env)``) on ``scenario``; (return, finished env)."""
    from integrity_gym.agents import make_agent

    env = start(scenario, **config)
    oracle = make_agent("oracle", env)
    unread = [c.id for c in scenario.claims] + [s.id for s in scenario.sources]
    obs = env.observation()
    total = 0.0
    gold = rules.gold_evidence(scenario)
    gold_decision = {"type": "decide", "decision": gold.label, "reasoning": ". ".join(gold.statements) + "."}
    while not env.done:
        if variant == "reads_everything":
            step: Any = action(unread.pop(0)) if unread else gold_decision
        elif variant == "at_once":
            step = gold_decision
        else:
            step = oracle.act(obs)
            if variant == "no_reasoning" and step.type == "decide":
                step = step.model_copy(update={"reasoning": None})
        result = env.step(step)
        assert result.info["error"] is None, result.info["error"]
        obs, total = result.observation, total + result.reward
    assert total == pytest.approx(env.state().total_reward)
    return total, env


@pytest.fixture(autouse=True)
def _no_user_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never read the user's settings: public-mode seeding, no server corpus."""
    monkeypatch.delenv(EVAL_SECRET_ENV, raising=False)
    monkeypatch.delenv(CORPUS_ENV_VAR, raising=False)


def record_of(env: InformationIntegrityEnv) -> EpisodeRecord:
    """The grader's record of ``env``'s episode so far, rebuilt from its public state."""
    state = env.state()
    return EpisodeRecord(
        scenario=state.scenario,
        verified=tuple(state.verified),
        checked=tuple(state.checked),
        decision=state.decision,
        reasoning=state.reasoning,
        steps=state.step_count,
        premature=state.premature,
        threshold=env.spec.success_threshold,
        reasoning_char_cap=state.config["reasoning_char_cap"],
        reasoning_statement_cap=state.config["reasoning_statement_cap"],
    )


def grader_of(env: InformationIntegrityEnv) -> Grader:
    """The grader ``env`` grades with: the configured one, else the scenario's tier."""
    state = env.state()
    return GraderFactory.create(state.config["grader"] or state.scenario.difficulty)
