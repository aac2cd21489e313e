"""Reasoning is graded from typed statements only and cannot be gamed."""

from __future__ import annotations

import itertools

import integrity_gym
from integrity_gym.envs.information_integrity import rules
from integrity_gym.envs.information_integrity.data import find_gold
from integrity_gym.envs.information_integrity.reasoning import grade_reasoning, parse_statements

SCENARIO = find_gold("hard_003")
ALL_IDS = [c.id for c in SCENARIO.claims] + [s.id for s in SCENARIO.sources]


def test_gold_statements_after_checking_score_one() -> None:
    gold = rules.gold_evidence(SCENARIO)
    text = ". ".join(gold.statements)
    assert grade_reasoning(text, SCENARIO, ALL_IDS).score == 1.0


def test_dumping_every_id_scores_zero() -> None:
    text = "Evidence considered: " + ", ".join(ALL_IDS) + ". " + " ".join(ALL_IDS * 3)
    assert grade_reasoning(text, SCENARIO, ALL_IDS).score == 0.0


def test_dumping_every_statement_combination_scores_zero() -> None:
    claims = [c.id for c in SCENARIO.claims]
    sources = [s.id for s in SCENARIO.sources]
    parts = [f"{s} {v} {c}" for s, c, v in itertools.product(sources, claims, ("supports", "refutes"))]
    parts += [f"{c} is {w}" for c, w in itertools.product(claims, ("true", "false", "misleading", "contested"))]
    assert grade_reasoning(". ".join(parts), SCENARIO, ALL_IDS).score == 0.0
    # Even under the statement cap, hedging both ways makes every hedged statement wrong.
    hedged = "src_1 supports claim_2. src_1 refutes claim_2. src_5 supports claim_2. src_5 refutes claim_2."
    assert grade_reasoning(hedged, SCENARIO, ALL_IDS).score == 0.0


def test_statements_about_unchecked_sources_do_not_count() -> None:
    gold = ". ".join(rules.gold_evidence(SCENARIO).statements)
    assert grade_reasoning(gold, SCENARIO, ["claim_2"]).score < grade_reasoning(gold, SCENARIO, ALL_IDS).score
    assert grade_reasoning("src_1 refutes claim_2", SCENARIO, ["claim_2"]).score == 0.0


def test_wrong_statements_lower_precision_and_prose_does_not_count() -> None:
    good = "claim_2 is false. src_1 refutes claim_2. src_5 refutes claim_2. harm is low."
    assert grade_reasoning(good, SCENARIO, ALL_IDS).score == 1.0
    noisy = good + " src_3 refutes claim_2."  # src_3 is satire that supports
    assert 0.0 < grade_reasoning(noisy, SCENARIO, ALL_IDS).score < 1.0
    prose = "The post is obviously false and harmful, the sources disagree, so I remove it."
    assert grade_reasoning(prose, SCENARIO, ALL_IDS).score == 0.0


def test_parser_is_case_insensitive_and_knows_synonyms() -> None:
    found = parse_statements(
        "SRC_1 contradicts Claim_2; claim_1 is partially true; Harm level is LOW", ["claim_1", "claim_2"], ["src_1"]
    )
    assert [s.text for s in found] == ["src_1 refutes claim_2", "claim_1 is misleading", "harm is low"]
    assert parse_statements("src_10 supports claim_1", ["claim_1"], ["src_1"]) == []


def test_length_cap_only_reads_the_first_characters() -> None:
    good = "claim_2 is false. src_1 refutes claim_2. src_5 refutes claim_2. harm is low."
    padded = "filler text. " * 250 + good
    assert grade_reasoning(padded, SCENARIO, ALL_IDS).score == 0.0
    assert grade_reasoning(padded, SCENARIO, ALL_IDS, char_cap=5000).score == 1.0


def test_an_agent_that_dumps_ids_in_its_decision_scores_zero_reasoning_in_the_env() -> None:
    env = integrity_gym.make("information_integrity/hard-v0")
    env.reset(scenario_id="hard_003")
    for i in ALL_IDS:
        key = "claim_id" if i.startswith("claim") else "source_id"
        env.step({"type": "verify_claim" if key == "claim_id" else "check_source", key: i})
    env.step({"type": "decide", "decision": "flag", "reasoning": " ".join(ALL_IDS)})
    assert env.grade().breakdown["reasoning_depth"] == 0.0
