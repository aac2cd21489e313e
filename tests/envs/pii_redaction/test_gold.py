"""The hand-written gold set: loads, validates, has enough documents and a sensible label mix."""

from __future__ import annotations

from collections import Counter

import pytest

from integrity_gym.envs.pii_redaction.data import load_gold, parse_markup
from integrity_gym.envs.pii_redaction.models import LABELS, Kind

KINDS: tuple[Kind, ...] = ("contract", "clinical", "security")


@pytest.mark.parametrize("kind", KINDS)
def test_gold_loads_with_enough_valid_documents(kind: Kind) -> None:
    docs = load_gold(kind)
    assert len(docs) >= 10
    assert [d.id for d in docs] == [f"gold-{kind}-{i:02d}" for i in range(1, len(docs) + 1)]
    for doc in docs:
        assert doc.kind == kind
        assert doc.entities, doc.id
        assert all(doc.text[e.start : e.end] == e.text for e in doc.entities)
        assert all(len(e.text) < 200 for e in doc.entities)
        assert "{{" not in doc.text and "}}" not in doc.text
        assert len(doc.text) >= 500, doc.id  # at least two windows of 500 with stride 250


@pytest.mark.parametrize("kind", KINDS)
def test_gold_fits_the_step_budget(kind: Kind) -> None:
    budget = {"contract": 40, "clinical": 60, "security": 80}[kind]
    for doc in load_gold(kind):
        moves = -(-max(0, len(doc.text) - 500) // 250)
        assert len(doc.entities) + moves + 1 <= budget - 5, doc.id


def test_gold_is_cached() -> None:
    assert load_gold("contract") is load_gold("contract")


def test_label_mix_is_sensible() -> None:
    every = Counter(e.label for kind in KINDS for d in load_gold(kind) for e in d.entities)
    assert set(every) == set(LABELS)
    for kind in KINDS:
        counts = Counter(e.label for d in load_gold(kind) for e in d.entities)
        assert counts["NAME"] >= 10 and counts["PHONE"] >= 5 and counts["EMAIL"] >= 3 and counts["DOB"] >= 3, kind
        assert sum(counts.values()) >= 50, kind
    clinical = Counter(e.label for d in load_gold("clinical") for e in d.entities)
    assert clinical["NAME"] > clinical["EMAIL"]


def test_titles_stay_outside_name_spans() -> None:
    for kind in KINDS:
        for doc in load_gold(kind):
            for e in doc.entities:
                assert not e.text.startswith(("Mr.", "Mrs.", "Ms.", "Dr.", "Miss ")), (doc.id, e.text)
                assert e.text == e.text.strip(), (doc.id, e.text)


def test_security_gold_has_hard_obfuscations() -> None:
    texts = [e.text for d in load_gold("security") for e in d.entities]
    assert any("\n" in t for t in texts), "an entity across a line break"
    assert any(any("\u0400" <= ch <= "\u04ff" for ch in t) for t in texts), "a homoglyph"
    assert any(" dot " in t or "[dot]" in t or "(dot)" in t or " DOT " in t for t in texts), "an at/dot e-mail"
    assert any(t.startswith("area code") for t in texts), "area-code phrasing"
    assert any(" oh " in f" {t} " or "oh-" in t for t in texts), "oh for zero"


def test_gold_distractors_are_not_entities() -> None:
    for doc in load_gold("security"):
        for e in doc.entities:
            assert "INC-" not in e.text and "SUP-" not in e.text
    text = " ".join(d.text for d in load_gold("clinical"))
    assert "MRN" in text and "mg" in text


@pytest.mark.parametrize(
    ("markup", "message"),
    [
        ("no header here", "no '=== NN ===' document header"),
        ("stray\n=== 1 ===\nx", "must be '#' comments"),
        ("=== 1 ===\n{{PASSPORT|X1}}", "unknown label"),
        ("=== 1 ===\n{{NAME| Ann}}", "spaces at its ends"),
        ("=== 1 ===\n{{NAME|Ann}\nmore", "unbalanced"),
        ("=== 1 ===\na\n=== 1 ===\nb", "appears twice"),
        ("=== 1 ===\n\n", "empty"),
    ],
)
def test_bad_markup_raises_clear_errors(markup: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_markup("contract", markup)


def test_markup_offsets_and_line_breaks() -> None:
    (doc,) = parse_markup("security", "# note\n=== 3 ===\n\nCall {{PHONE|four one\nfive}} or {{EMAIL|a@b.co}}.\n\n")
    assert doc.id == "gold-security-03"
    assert doc.text == "Call four one\nfive or a@b.co."
    assert [(e.label, e.start, e.end) for e in doc.entities] == [("PHONE", 5, 18), ("EMAIL", 22, 28)]


def test_unknown_kind_raises() -> None:
    with pytest.raises(ValueError, match="unknown document kind"):
        load_gold("poem")  # type: ignore[arg-type]
