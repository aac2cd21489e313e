"""Reasoning is graded from typed statements only and cannot be gamed."""

from __future__ import annotations

import itertools

import pytest

import integrity_gym
from integrity_gym.envs.information_integrity import rules
from integrity_gym.envs.information_integrity.data import find_gold
from integrity_gym.envs.information_integrity.models import DECISIONS, Scenario
from integrity_gym.envs.information_integrity.reasoning import (
    ReasoningScore,
    Statement,
    _alternation,
    grade_reasoning,
    parse_statements,
)

from .conftest import REASONINGS, TASK, generated_scenarios, gold_scenarios

SCENARIO = find_gold("hard_003")
ALL_IDS = [c.id for c in SCENARIO.claims] + [s.id for s in SCENARIO.sources]
GOOD = "claim_2 is false. src_1 refutes claim_2. src_5 refutes claim_2. harm is medium."


def ids(scenario: Scenario) -> list[str]:
    return [c.id for c in scenario.claims] + [s.id for s in scenario.sources]


def test_gold_statements_after_checking_score_one() -> None:
    gold = rules.gold_evidence(SCENARIO)
    assert gold.statements == ("claim_2 is false", "src_1 refutes claim_2", "src_5 refutes claim_2", "harm is medium")
    assert grade_reasoning(". ".join(gold.statements), SCENARIO, ALL_IDS).score == 1.0
    assert grade_reasoning(GOOD, SCENARIO, ALL_IDS).score == 1.0


def test_dumping_every_id_scores_zero() -> None:
    text = "Evidence considered: " + ", ".join(ALL_IDS) + ". " + " ".join(ALL_IDS * 3)
    assert grade_reasoning(text, SCENARIO, ALL_IDS).score == 0.0


def test_dumping_every_statement_combination_scores_zero() -> None:
    claims = [c.id for c in SCENARIO.claims]
    sources = [s.id for s in SCENARIO.sources]
    parts = [f"{s} {v} {c}" for s, c, v in itertools.product(sources, claims, ("supports", "refutes"))]
    parts += [f"{c} is {w}" for c, w in itertools.product(claims, ("true", "false", "misleading", "contested"))]
    assert grade_reasoning(". ".join(parts), SCENARIO, ALL_IDS).score == 0.0
    # Even under the statement cap, hedging both ways about a source that was read voids the reasoning.
    hedged = "src_1 supports claim_2. src_1 refutes claim_2. src_5 supports claim_2. src_5 refutes claim_2."
    assert grade_reasoning(hedged, SCENARIO, ALL_IDS).score == 0.0


def test_statements_about_unchecked_ids_void_the_reasoning() -> None:
    graded = grade_reasoning(GOOD, SCENARIO, ["claim_2", "src_1"])
    assert graded.score == 0.0 and "src_5" in graded.void and "never checked" in graded.void
    assert grade_reasoning("src_1 refutes claim_2", SCENARIO, ["claim_2"]).score == 0.0
    # The same statements about ids that were read do count.
    assert grade_reasoning("claim_2 is false. src_1 refutes claim_2", SCENARIO, ["claim_2", "src_1"]).score == 0.5


def test_misreporting_what_was_read_voids_the_reasoning() -> None:
    for wrong in (
        "src_3 refutes claim_2",
        "src_6 supports claim_1",
        "claim_1 is false",
        "src_2 is satire",
        "harm is low",
    ):
        graded = grade_reasoning(f"{GOOD} {wrong}.", SCENARIO, ALL_IDS)
        assert graded.score == 0.0 and "contradicts" in graded.void, wrong


def test_a_wrong_inference_lowers_precision_without_voiding() -> None:
    """The status of a claim with no verdict, and a source's age, are inferred; a mistake costs precision."""
    wrong = GOOD.replace("claim_2 is false", "claim_2 is unsupported")
    graded = grade_reasoning(wrong, SCENARIO, ALL_IDS)
    assert not graded.void and graded.precision == pytest.approx(2 / 4) and graded.recall == pytest.approx(2 / 4)
    assert graded.score == pytest.approx(0.25)
    dated = grade_reasoning(f"{GOOD} src_1 is outdated.", SCENARIO, ALL_IDS)  # src_1 is recent
    assert not dated.void and dated.recall == 1.0 and dated.precision == pytest.approx(4 / 5)
    assert "src_6 is outdated" in {
        s.text for s in grade_reasoning(f"{GOOD} src_6 is outdated.", SCENARIO, ALL_IDS).correct
    }
    prose = "The post is obviously false and harmful, the sources disagree, so I remove it."
    assert grade_reasoning(prose, SCENARIO, ALL_IDS).score == 0.0


def test_reasoning_that_cites_no_decisive_source_scores_zero() -> None:
    """A right conclusion with nothing read behind it is not an explanation."""
    graded = grade_reasoning("claim_2 is false. harm is medium.", SCENARIO, ALL_IDS)
    assert graded.score == 0.0 and graded.void.startswith("it cites no decisive source it checked")
    # Citing a source that was read but is not decisive (satire) does not count either.
    assert grade_reasoning("claim_2 is false. src_3 supports claim_2. harm is medium", SCENARIO, ALL_IDS).score == 0
    assert grade_reasoning("claim_2 is false. src_5 refutes claim_2. harm is medium", SCENARIO, ALL_IDS).score == 0.75


def test_a_harm_statement_earns_nothing_without_a_status_it_turns_into_the_decision() -> None:
    assert grade_reasoning("harm is medium", SCENARIO, ALL_IDS).score == 0.0
    alone = grade_reasoning("src_1 refutes claim_2. src_5 refutes claim_2. harm is medium", SCENARIO, ALL_IDS)
    assert alone.precision == pytest.approx(2 / 3) and alone.recall == pytest.approx(2 / 4)
    backed = grade_reasoning(GOOD, SCENARIO, ALL_IDS)
    assert "harm is medium" in {s.text for s in backed.correct}


@pytest.mark.parametrize(
    "text",
    [
        "Every source refutes every claim.",
        "All sources refute all claims, so every claim is false and harm is high.",
        "false misleading refutes supports contested unsupported satire outdated harm high src_1 claim_2",
    ],
)
def test_blanket_sentences_and_keyword_soup_score_zero(text: str) -> None:
    assert grade_reasoning(text, SCENARIO, ALL_IDS).score == 0.0


@pytest.mark.parametrize("decision", DECISIONS)
def test_stuffed_and_blanket_statements_score_zero_on_every_scenario(decision: str) -> None:
    """A status for every claim and a stance for every source, all pointing one way, after reading everything."""
    for scenario in gold_scenarios() + generated_scenarios(10):
        stuffed = REASONINGS["stuffed"](scenario, decision)  # type: ignore[arg-type]
        assert grade_reasoning(stuffed, scenario, ids(scenario)).score == 0.0, scenario.id
        stance = "supports" if decision == "allow" else "refutes"
        blanket = ". ".join(f"{s.id} {stance} {c.id}" for s in scenario.sources for c in scenario.claims)
        assert grade_reasoning(blanket, scenario, ids(scenario)).score == 0.0, scenario.id
        harm = f"harm is {scenario.harm}"
        assert grade_reasoning(harm, scenario, ids(scenario)).score == 0.0, scenario.id


def test_parser_is_case_insensitive_and_knows_synonyms() -> None:
    found = parse_statements(
        "SRC_1 contradicts Claim_2; claim_1 is partially true; Harm level is LOW", ["claim_1", "claim_2"], ["src_1"]
    )
    assert [s.text for s in found] == ["src_1 refutes claim_2", "claim_1 is misleading", "harm is low"]
    assert parse_statements("src_10 supports claim_1", ["claim_1"], ["src_1"]) == []


def test_length_cap_only_reads_the_first_characters() -> None:
    padded = "filler text. " * 250 + GOOD
    assert grade_reasoning(padded, SCENARIO, ALL_IDS).score == 0.0
    assert grade_reasoning(padded, SCENARIO, ALL_IDS, char_cap=5000).score == 1.0


def test_an_agent_that_dumps_ids_in_its_decision_scores_zero_reasoning_in_the_env() -> None:
    env = integrity_gym.make(TASK["hard"])
    env.reset(scenario_id="hard_003")
    for i in ALL_IDS:
        key = "claim_id" if i.startswith("claim") else "source_id"
        env.step({"type": "verify_claim" if key == "claim_id" else "check_source", key: i})
    env.step({"type": "decide", "decision": "remove", "reasoning": " ".join(ALL_IDS)})
    grade = env.grade()
    assert grade.breakdown["reasoning_depth"] == 0.0 and grade.breakdown["decision_correct"] == 1.0
    assert not grade.success


def test_multi_word_synonyms_match_any_separator_and_the_longest_wins() -> None:
    assert _alternation(["true", "partly true", "false"]) == r"partly[\s_-]+true|false|true"
    for text in ("claim_1 is partly true", "claim_1 is partly_true", "claim_1 is partly -  true"):
        assert parse_statements(text, ["claim_1"], []) == [Statement("status", "claim_1", "misleading")], text


def test_each_kind_of_statement_parses_to_its_canonical_form() -> None:
    text = "src_1 contradicts claim_2. Harm level is HIGH. src_3 is satire. claim_2 is false."
    assert parse_statements(text, ["claim_2"], ["src_1", "src_3"]) == [
        Statement("stance", "src_1|claim_2", "refutes"),
        Statement("harm", "harm", "high"),
        Statement("discount", "src_3", "satire"),
        Statement("status", "claim_2", "false"),
    ]


def test_a_true_satire_flag_is_a_correct_statement() -> None:
    assert SCENARIO.source("src_3").satire
    graded = grade_reasoning(f"{GOOD} src_3 is satire.", SCENARIO, ALL_IDS)
    assert graded.void == "" and graded.precision == 1.0
    assert "src_3 is satire" in {s.text for s in graded.correct}


def test_every_way_to_score_zero_says_which_it_is() -> None:
    """The full outcome, not only the score, for each early exit of the grader."""
    assert grade_reasoning("", SCENARIO, ALL_IDS) == ReasoningScore(0.0, 0.0, 0.0, (), (), False)
    # The cap is never below the gold explanation's length (4 here).
    over = grade_reasoning(f"{GOOD} src_6 is outdated.", SCENARIO, ALL_IDS, statement_cap=2)
    assert over == ReasoningScore(0.0, 0.0, 0.0, over.statements, (), True) and len(over.statements) == 5
    # Exactly at the cap is not over it.
    assert not grade_reasoning(f"{GOOD} src_6 is outdated.", SCENARIO, ALL_IDS, statement_cap=5).over_cap
    unread = grade_reasoning("src_1 refutes claim_2. src_5 refutes claim_9. src_6 supports claim_1", SCENARIO, [])
    why = "'src_1 refutes claim_2' cites src_1, claim_2, never checked or verified"
    # claim_9 is no claim of this scenario, so that sentence holds no statement and is named back.
    assert unread == ReasoningScore(0.0, 0.0, 0.0, unread.statements, (), False, why, ("src_5 refutes claim_9.",))
    assert len(unread.statements) == 2  # claim_9 is not a claim of this scenario, so not a statement
    no_source = grade_reasoning("claim_2 is false. harm is medium.", SCENARIO, ALL_IDS)
    assert no_source == ReasoningScore(
        0.0, 0.0, 0.0, no_source.statements, no_source.correct, False,
        "it cites no decisive source it checked: write its stance as a typed statement such as "
        "'src_1 refutes claim_2'",
    )  # fmt: skip
    assert len(no_source.statements) == 2
    assert [s.text for s in no_source.correct] == ["claim_2 is false", "harm is medium"]
    full = grade_reasoning(GOOD, SCENARIO, ALL_IDS)
    assert full.over_cap is False and full.void == "" and len(full.statements) == 4


def test_two_values_for_one_subject_cancel_each_other() -> None:
    """Saying a claim is both false and true states neither: the true half earns nothing."""
    both = grade_reasoning(f"{GOOD} claim_2 is true.", SCENARIO, ALL_IDS)
    assert "claim_2 is false" not in [s.text for s in both.correct]
    assert both.score < grade_reasoning(GOOD, SCENARIO, ALL_IDS).score


def test_a_status_or_a_discount_of_an_unread_id_voids_the_reasoning() -> None:
    status = grade_reasoning("claim_2 is false.", SCENARIO, ["src_1"])
    assert status.void == "'claim_2 is false' cites claim_2, never checked or verified"
    discount = grade_reasoning("src_6 is outdated.", SCENARIO, ["claim_2"])
    assert discount.void == "'src_6 is outdated' cites src_6, never checked or verified"
    # The harm level is shown to everyone: stating it cites nothing unread (it earns nothing alone, though).
    assert grade_reasoning("harm is medium.", SCENARIO, []).void == (
        "it cites no decisive source it checked: write its stance as a typed statement of the form "
        "'<source> supports|refutes <claim>'"
    )


def test_prose_is_named_back_as_not_understood_and_the_ids_it_names_are_said() -> None:
    """Prose about two read sources scores 0, and the grade says why instead of "cites no source"."""
    prose = "Both src_1 and src_5 say claim_2 is wrong; they are reliable. So I remove it."
    graded = grade_reasoning(prose, SCENARIO, ALL_IDS)
    assert graded.score == 0.0 and graded.statements == ()
    assert graded.void.startswith("it names src_1, src_5 but in no typed statement such as")
    assert graded.ignored == ("Both src_1 and src_5 say claim_2 is wrong;", "they are reliable.", "So I remove it.")
    mixed = grade_reasoning(f"{GOOD} Also src_5 looked trustworthy to me.", SCENARIO, ALL_IDS)
    assert mixed.score == 1.0 and mixed.ignored == ("Also src_5 looked trustworthy to me.",)


def test_the_explanation_shows_the_reasoning_and_what_was_not_understood() -> None:
    env = integrity_gym.make(TASK["easy"])
    obs = env.reset(seed=0)
    for claim in obs.claims:
        env.step({"type": "verify_claim", "claim_id": claim.id})
    for source in obs.available_sources:
        env.step({"type": "check_source", "source_id": source.id})
    named = obs.available_sources[0].id
    env.step({"type": "decide", "decision": "flag", "reasoning": f"I trust {named}. It seems right."})
    text = env.explain()
    assert f'Its reasoning: "I trust {named}. It seems right."' in text
    assert f"Not understood (no typed statement found, so not graded): 'I trust {named}.'; 'It seems right.'" in text
