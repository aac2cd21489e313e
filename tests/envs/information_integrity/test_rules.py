"""The published labelling rule, and that every stored label is its output."""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter

import pytest

from integrity_gym.envs.information_integrity import rules
from integrity_gym.envs.information_integrity.data import load_gold
from integrity_gym.envs.information_integrity.generator import generate
from integrity_gym.envs.information_integrity.models import DIFFICULTIES, ClaimFact, Scenario, SourceFact

from .conftest import generated_scenarios, gold_scenarios

AS_OF = dt.date(2026, 6, 1)


def source(
    i: int, stance: str, rel: float, *, days: int = 30, satire: bool = False, claim: str = "claim_1"
) -> SourceFact:
    return SourceFact(
        id=f"src_{i}", claim_id=claim, title="t", url="u", text="x", stance=stance, reliability=rel,  # type: ignore[arg-type]
        source_type="news", date=AS_OF - dt.timedelta(days=days), satire=satire,
    )  # fmt: skip


def scenario(verdict: str, sources: list[SourceFact], harm: str = "medium") -> Scenario:
    return Scenario(
        id="t", difficulty="easy", topic="t", content="c", harm=harm, as_of=AS_OF,  # type: ignore[arg-type]
        claims=(ClaimFact(id="claim_1", text="c", verdict=verdict, confidence=0.5),),  # type: ignore[arg-type]
        sources=tuple(sources),
    )  # fmt: skip


@pytest.mark.parametrize("tier", DIFFICULTIES)
def test_gold_labels_are_balanced_so_no_constant_decision_does_well(tier: str) -> None:
    labels = Counter(s.label for s in load_gold(tier))
    assert sum(labels.values()) >= 10
    assert set(labels) == {"allow", "flag", "remove"}
    assert max(labels.values()) <= 0.4 * sum(labels.values()), labels


@pytest.mark.parametrize("tier", DIFFICULTIES)
def test_the_visible_harm_level_alone_decides_badly(tier: str) -> None:
    """Harm is shown and is a policy input (low harm is never remove), but it does not give the label away.

    The best decision rule that reads only what every observation shows before any check (harm,
    number of claims and of sources) is fitted on 600 training scenarios and scored on 600 eval
    ones, as a learner would meet it; about 0.40 on every tier, against a third for a constant.
    """
    key = lambda s: (s.harm, len(s.claims), len(s.sources))  # noqa: E731
    counts: dict[tuple[str, int, int], Counter[str]] = {}
    for s in (generate(tier, seed, "train") for seed in range(600)):
        counts.setdefault(key(s), Counter())[str(s.label)] += 1
    rule = {k: c.most_common(1)[0][0] for k, c in counts.items()}
    scored = [generate(tier, seed, "eval") for seed in range(600)]
    accuracy = sum(rule.get(key(s), "flag") == s.label for s in scored) / len(scored)
    assert accuracy < 0.45  # 0.40 + 2.5 binomial sd at n = 600
    by_harm: dict[str, Counter[str]] = {}
    for s in load_gold(tier):
        by_harm.setdefault(s.harm, Counter())[str(s.label)] += 1
    assert sum(c.most_common(1)[0][1] for c in by_harm.values()) <= 6


#: Words and patterns that give a source's stance, reliability or satire away before it is checked.
TELLTALE = re.compile(
    r"\b(admits?|deny|denies|denied|confirm(s|ed)?|debunk\w*|myths?|hoax|fake|cgi|false|true|truth|lies?|"
    r"proves?|proof|perfect|miracle|scam|cures?|poison\w*|warning|rumou?r|secret|hail\w*|success|surge|"
    r"slump|tumble|fume|blame|urge|caution|no|not|never|nobody|everything|aliens?|robots?|overlords?|"
    r"jokes?|spoof|parody|satire|comic|column|sketch|forum|thread|opinion|fan|blog|post|says?|say)\b"
    r"|\b(19|20)\d\d\b|[!?]{2,}",
    re.IGNORECASE,
)


def test_gold_and_generated_titles_are_neutral() -> None:
    # The topic line is the same for every source of a scenario, so it cannot tell them apart.
    titles = [
        (s.id, src.title.replace(s.topic, "").replace(s.topic[:1].upper() + s.topic[1:], ""))
        for s in gold_scenarios() + generated_scenarios(30)
        for src in s.sources
    ]
    leaks = [(i, t) for i, t in titles if TELLTALE.search(t)]
    assert not leaks, leaks
    # The test can fail: the titles the issue quoted are caught.
    assert TELLTALE.search("Dam admits everything, say fish") and TELLTALE.search("Kestrel staff deny any signal")


def test_generated_titles_do_not_depend_on_the_stance() -> None:
    """Each generated title template is used for sources of every stance (they are drawn blind)."""
    templates: dict[str, set[str]] = {}
    for s in generated_scenarios(40):
        topic = s.topic[:1].upper() + s.topic[1:]
        for src in s.sources:
            shape = src.title.replace(s.topic, "{topic}").replace(topic, "{Topic}")
            templates.setdefault(shape, set()).add("satire" if src.satire else src.stance)
    assert len(templates) >= 3
    assert all(stances == {"supports", "refutes", "neutral", "satire"} for stances in templates.values()), templates


def test_every_scenario_has_sources_that_disagree() -> None:
    """So a blanket statement ('every source refutes every claim') is always false somewhere."""
    for s in gold_scenarios() + generated_scenarios(100):
        assert len({(src.stance, src.satire) for src in s.sources}) > 1, s.id


def test_every_gold_label_is_the_rule_output() -> None:
    for s in gold_scenarios():
        assert s.label == rules.decide(rules.aggregate(s)), s.id


def test_every_generated_label_is_the_rule_output() -> None:
    for s in generated_scenarios(100):
        assert s.label == rules.decide(rules.aggregate(s)), s.id


def test_gold_ids_are_unique_and_gold_evidence_is_enough_to_decide() -> None:
    ids = [s.id for s in gold_scenarios()]
    assert len(ids) == len(set(ids))
    for s in gold_scenarios() + generated_scenarios(30):
        gold = rules.gold_evidence(s)
        assert len(gold.claims) >= 1 and len(gold.sources) >= 2, s.id


def test_satire_and_outdated_sources_do_not_count() -> None:
    base = [source(1, "refutes", 0.9), source(2, "refutes", 0.85)]
    assert rules.derive_label(scenario("unknown", base)) == "remove"
    with_traps = [*base, source(3, "supports", 0.95, days=4 * 365), source(4, "supports", 0.99, satire=True)]
    agg = rules.aggregate(scenario("unknown", with_traps))
    assert agg.claims[0].usable_sources == ("src_1", "src_2")
    assert rules.decide(agg) == "remove"


def test_trusted_sources_on_both_sides_make_a_claim_contested() -> None:
    s = scenario("unknown", [source(1, "supports", 0.8), source(2, "refutes", 0.9), source(3, "refutes", 0.9)])
    assert rules.aggregate(s).claims[0].status == "contested"
    assert rules.derive_label(s) == "flag"


def test_a_known_verdict_wins_over_the_sources() -> None:
    s = scenario("true", [source(1, "refutes", 0.9), source(2, "refutes", 0.9)])
    assert rules.derive_label(s) == "allow"
    assert (
        rules.derive_label(scenario("partially_true", [source(1, "supports", 0.9), source(2, "refutes", 0.8)]))
        == "flag"
    )


@pytest.mark.parametrize(
    ("status", "harm", "decision"),
    [
        ("false", "low", "flag"), ("false", "medium", "remove"), ("false", "high", "remove"),
        ("misleading", "high", "flag"), ("contested", "low", "flag"),
        ("unsupported", "low", "allow"), ("unsupported", "medium", "allow"), ("unsupported", "high", "flag"),
        ("true", "high", "allow"),
    ],
)  # fmt: skip
def test_policy_table(status: str, harm: str, decision: str) -> None:
    assert rules.decision_for(status, harm) == decision  # type: ignore[arg-type]


def test_weak_sources_are_outweighed_and_thin_evidence_is_unsupported() -> None:
    s = scenario("unknown", [source(1, "supports", 0.3), source(2, "refutes", 0.9), source(3, "refutes", 0.8)])
    assert rules.aggregate(s).claims[0].evidence == "refuted"
    thin = scenario("unknown", [source(1, "supports", 0.6), source(2, "refutes", 0.55)], harm="high")
    assert rules.aggregate(thin).claims[0].status == "unsupported"
    assert rules.derive_label(thin) == "flag"


def test_a_wrong_stored_label_is_refused_naming_the_field() -> None:
    s = scenario("false", [source(1, "refutes", 0.9), source(2, "refutes", 0.9)]).model_copy(update={"label": "allow"})
    with pytest.raises(ValueError, match="label"):
        rules.check_scenario(s)


def test_a_label_resting_on_fewer_than_two_sources_is_refused() -> None:
    s = scenario("false", [source(1, "refutes", 0.9), source(2, "supports", 0.2)])
    with pytest.raises(ValueError, match="sources"):
        rules.check_scenario(s)


#: Per status, which sources explain it (the label's claim, built by hand): for a false or true
#: claim the sources on its side only, for a contested one the trusted ones on both sides, for a
#: misleading one the credible ones, for an unsupported one every source taking a side; the
#: harm level belongs to the explanation of a false or unsupported claim.
DECISIVE = [
    ("true", [source(1, "supports", 0.8), source(2, "supports", 0.6), source(3, "refutes", 0.7)], "medium",
     ("claim_1 is true", "src_1 supports claim_1", "src_2 supports claim_1")),
    ("false", [source(1, "supports", 0.8), source(2, "refutes", 0.6), source(3, "refutes", 0.7)], "medium",
     ("claim_1 is false", "src_2 refutes claim_1", "src_3 refutes claim_1", "harm is medium")),
    ("unknown", [source(1, "supports", 0.8), source(2, "refutes", 0.9), source(3, "refutes", 0.9),
                 source(4, "supports", 0.55)], "medium",
     ("claim_1 is contested", "src_1 supports claim_1", "src_2 refutes claim_1", "src_3 refutes claim_1")),
    ("partially_true", [source(1, "supports", 0.8), source(2, "refutes", 0.5), source(3, "refutes", 0.3)], "medium",
     ("claim_1 is misleading", "src_1 supports claim_1", "src_2 refutes claim_1")),
    ("unknown", [source(1, "supports", 0.5), source(2, "refutes", 0.5)], "high",
     ("claim_1 is unsupported", "src_1 supports claim_1", "src_2 refutes claim_1", "harm is high")),
]  # fmt: skip


@pytest.mark.parametrize(("verdict", "sources", "harm", "statements"), DECISIVE)
def test_the_decisive_sources_of_each_status(
    verdict: str, sources: list[SourceFact], harm: str, statements: tuple[str, ...]
) -> None:
    gold = rules.gold_evidence(scenario(verdict, sources, harm))
    assert gold.statements == statements
    assert gold.claims == ("claim_1",)
    assert gold.sources == tuple(s.split()[0] for s in statements if s.startswith("src_"))


def test_the_balance_is_the_reliability_weighted_mean_stance() -> None:
    # Neutral sources do not count; supports +1, refutes -1, each weighed by its reliability.
    sources = [source(1, "supports", 0.75), source(2, "refutes", 0.25), source(3, "neutral", 0.8)]
    assert rules.weigh(sources) == (0.5, "supported")  # (0.75 - 0.25) / 1.0, exactly the lean
    assert rules.weigh([source(1, "refutes", 0.75), source(2, "supports", 0.25)]) == (-0.5, "refuted")
    assert rules.weigh([source(1, "supports", 0.4), source(2, "refutes", 0.2)]) == (0.333333, "inconclusive")
    assert rules.weigh([source(1, "neutral", 0.9)]) == (0.0, "inconclusive")
    assert rules.weigh([]) == (0.0, "inconclusive")


def test_trusted_starts_at_the_trusted_reliability_and_stale_after_the_stale_age() -> None:
    at = rules.TRUSTED_RELIABILITY
    assert rules.weigh([source(1, "supports", at), source(2, "refutes", at)])[1] == "contested"
    assert rules.weigh([source(1, "supports", at), source(2, "refutes", at - 0.01)])[1] != "contested"
    assert not rules.is_outdated(source(1, "supports", 0.9, days=rules.STALE_AFTER_DAYS), AS_OF)
    assert rules.is_outdated(source(1, "supports", 0.9, days=rules.STALE_AFTER_DAYS + 1), AS_OF)


def test_a_contested_claim_rests_on_every_trusted_source_from_the_trusted_reliability_up() -> None:
    at = rules.TRUSTED_RELIABILITY
    s = scenario("unknown", [source(1, "supports", at), source(2, "refutes", 0.9), source(3, "supports", at - 0.01)])
    assert rules.aggregate(s).claims[0].status == "contested"
    assert rules.gold_evidence(s).sources == ("src_1", "src_2")
