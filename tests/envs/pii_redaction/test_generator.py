"""The document generator: validity, determinism, budgets, obfuscations and golden samples."""

from __future__ import annotations

import hashlib
import json
import math
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from integrity_gym.core.seeding import partition_of
from integrity_gym.envs.pii_redaction import generator
from integrity_gym.envs.pii_redaction.generator import (
    DEFAULT_MIN_CHARS,
    GENERATOR_VERSION,
    generate_document,
    golden_samples,
)
from integrity_gym.envs.pii_redaction.models import Document, Kind

KINDS: tuple[Kind, ...] = ("contract", "clinical", "security")
BUDGET = {"contract": 40, "clinical": 60, "security": 80}
GOLDEN = Path(__file__).parents[2] / "contract" / "golden" / "pii_redaction.json"
TEMPLATES = Path(generator.__file__).parent / "templates"


def oracle_steps(doc: Document, window: int = 500) -> int:
    """Steps an oracle needs: one REDACT per entity, the moves to the end, and FINISH."""
    stride = window // 2
    return len(doc.entities) + math.ceil(max(0, len(doc.text) - window) / stride) + 1


@pytest.mark.parametrize("kind", KINDS)
def test_thousand_documents_are_valid_and_fit_the_budget(kind: Kind) -> None:
    for index in range(1000):
        doc = generate_document(kind, 7, index)
        # Re-validate through the model, as a loader would.
        assert Document.model_validate(doc.model_dump(mode="json")) == doc
        assert doc.id == f"{kind}-g{GENERATOR_VERSION}-s7-i{index}"
        assert len(doc.text) >= DEFAULT_MIN_CHARS[kind]
        # At most half of a 200-character window: NEXT_CHUNK moves half a window, so every entity
        # lies wholly inside some window and can be redacted at any window size >= 200 (the
        # longest seen is 78 characters, a spoken phone number).
        assert all(0 < len(e.text) <= 100 and e.text == e.text.strip() for e in doc.entities), doc.id
        assert all(doc.text[e.start : e.end] == e.text for e in doc.entities)
        assert oracle_steps(doc) <= BUDGET[kind] - 5, (doc.id, oracle_steps(doc))


@pytest.mark.parametrize("kind", KINDS)
def test_entity_counts_and_lengths_stay_in_range(kind: Kind) -> None:
    docs = [generate_document(kind, 3, i) for i in range(200)]
    counts = [len(d.entities) for d in docs]
    low, high = {"contract": (8, 22), "clinical": (15, 30), "security": (14, 50)}[kind]
    assert low <= min(counts) and max(counts) <= high, (min(counts), max(counts))
    lengths = [len(d.text) for d in docs]
    # Eval agreements run longer (their sentences compose connectors, and they carry clauses without
    # personal data that reuse them): at most 1,987 characters over seed 3's first 400 documents.
    assert max(lengths) < DEFAULT_MIN_CHARS[kind] * (2.0 if kind == "contract" else 1.75)
    assert len({d.text for d in docs}) == len(docs)


@pytest.mark.parametrize("kind", KINDS)
def test_min_chars_is_honoured(kind: Kind) -> None:
    for min_chars in (1, 500, 2500, 12000):
        doc = generate_document(kind, 0, 1, min_chars=min_chars)
        assert len(doc.text) >= min_chars

    # Longer notes and case files carry more entities on average (each length draws a different
    # document); a longer contract only adds boilerplate and schedule lines.
    def total(min_chars: int) -> int:
        return sum(len(generate_document(kind, 0, i, min_chars=min_chars).entities) for i in range(5))

    if kind != "contract":
        assert total(12000) > total(1)


def test_same_inputs_same_document_and_different_inputs_differ() -> None:
    a = generate_document("clinical", 5, 9)
    assert generate_document("clinical", 5, 9) == a
    assert generate_document("clinical", 5, 10).text != a.text
    assert generate_document("clinical", 6, 9).text != a.text
    assert generate_document("clinical", 5, 9, min_chars=3001).text != a.text


def test_order_of_generation_does_not_matter() -> None:
    forward = [generate_document("security", 2, i) for i in range(6)]
    backward = [generate_document("security", 2, i) for i in reversed(range(6))]
    assert forward == backward[::-1]


def _digest(kinds: tuple[str, ...], count: int) -> str:
    h = hashlib.sha256()
    for kind in kinds:
        for i in range(count):
            h.update(generate_document(kind, 11, i).model_dump_json().encode())  # type: ignore[arg-type]
    return h.hexdigest()


def test_byte_identical_in_another_process() -> None:
    code = (
        "import hashlib\n"
        "from integrity_gym.envs.pii_redaction.generator import generate_document\n"
        "h = hashlib.sha256()\n"
        "for kind in ('contract', 'clinical', 'security'):\n"
        "    for i in range(20):\n"
        "        h.update(generate_document(kind, 11, i).model_dump_json().encode())\n"
        "print(h.hexdigest())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={"PYTHONHASHSEED": "12345"}
    )
    assert out.stdout.strip() == _digest(KINDS, 20)


def test_thread_safe() -> None:
    jobs = [(kind, i) for kind in KINDS for i in range(30)] * 2
    expected = {(k, i): generate_document(k, 4, i) for k, i in set(jobs)}
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda job: (job, generate_document(job[0], 4, job[1])), jobs))
    for job, doc in results:
        assert doc == expected[job]


def test_no_clock_reads_in_generator_code() -> None:
    sources = [Path(generator.__file__), *TEMPLATES.glob("*.py")]
    for path in sources:
        text = path.read_text()
        for forbidden in ("date.today", "datetime.now", "datetime.today", "time.time", "utcnow", "date_of_birth("):
            assert forbidden not in text, (path.name, forbidden)


MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*"
DATE_YEAR = re.compile(
    rf"\b\d{{1,2}}/\d{{1,2}}/(\d{{4}})\b|\b(?P<iso>\d{{4}})-\d{{2}}-\d{{2}}"
    rf"|{MONTH} \d{{1,2}}, (\d{{4}})|\d{{1,2}}[ -]{MONTH}[ -](\d{{4}})"
)


def test_dates_stay_in_fixed_bounds() -> None:
    years = set()
    for i in range(40):
        doc = generate_document(KINDS[i % 3], 0, i)
        years |= {int(y) for m in DATE_YEAR.finditer(doc.text) for y in m.groups() if y}
    assert len(years) > 20
    assert min(years) >= 1940 and max(years) <= 2025


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "poem", "seed": 0, "index": 0}, "unknown document kind"),
        ({"kind": "contract", "seed": 0, "index": -1}, "index must be >= 0"),
        ({"kind": "contract", "seed": "0", "index": 0}, "must be integers"),
        ({"kind": "contract", "seed": 0, "index": 0, "min_chars": 0}, "min_chars"),
        ({"kind": "contract", "seed": 0, "index": 0, "min_chars": 10**9}, "min_chars"),
    ],
)
def test_bad_arguments_raise_value_error(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        generate_document(**kwargs)  # type: ignore[arg-type]


def test_hard_documents_carry_every_obfuscation() -> None:
    texts = [e.text for i in range(200) for e in generate_document("security", 0, i).entities]
    checks = {
        "spelled digits": lambda t: re.search(r"\b(one|two|three|four|five|six|seven|eight|nine)\b", t),
        "oh for zero": lambda t: re.search(r"\boh\b", t),
        "at/dot words": lambda t: " at " in t and " dot " in t,
        "bracketed at": lambda t: "[at]" in t or "(at)" in t or "{at}" in t,
        "mixed digits and words": lambda t: re.search(r"\d-(one|two|three|four|five|six|seven|eight|nine|oh|zero)", t),
        "area code phrase": lambda t: t.startswith("area code "),
        "homoglyph": lambda t: any("\u0400" <= ch <= "\u04ff" for ch in t),
        "line break": lambda t: "\n" in t,
        "ordinal date": lambda t: re.search(r"\b\d{1,2}(st|nd|rd|th)\b|\bthe \w+(st|nd|rd|th) of\b", t),
        "spoken year": lambda t: "nineteen" in t or "two thousand" in t,
    }
    for name, check in checks.items():
        assert any(check(t) for t in texts), name


def test_distractors_are_present_but_not_entities() -> None:
    doc = generate_document("security", 0, 3)
    spans = [(e.start, e.end) for e in doc.entities]
    ips = [m for m in re.finditer(r"\b\d{1,3}(?:\.\d{1,3}){3}\b", doc.text)]
    macs = [m for m in re.finditer(r"\b[0-9a-f]{2}(?::[0-9a-f]{2}){5}\b", doc.text)]
    assert ips and macs
    for m in [*ips, *macs]:
        assert not any(s <= m.start() < e for s, e in spans)
    clinical = generate_document("clinical", 0, 3)
    # Record numbers under the train phrasings (MRN, Record no., our ref.) or the eval ones.
    assert re.search(r"MRN|Record no\.|our ref\.|(?i:hosp(?:ital)? (?:no|number|ref))|\| file \d", clinical.text)
    assert re.search(r"\b\d+ (mg|mcg|units)\b", clinical.text)


def test_golden_samples_match_the_committed_file() -> None:
    committed = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert golden_samples() == committed
    assert [s["id"] for s in committed] == [f"{k}-g{GENERATOR_VERSION}-s0-i{i}" for k in KINDS for i in range(2)]


# Markers of the held-out families (templates/heldout.py), which only eval documents may use.
HELD_OUT: dict[str, dict[str, re.Pattern[str]]] = {
    "security": {
        "EMAIL": re.compile(r" at[ -](?:sign|symbol) | period | underscore |%40"),
        "PHONE": re.compile(
            r"\b(?:double|triple|cinco|cuatro|siete|nueve|ocho|seis|tres|dos|uno|cero)\b|area code \S+$|%2B1"
        ),
        "SSN": re.compile(r" dash |^\d{9}$|^\d{3}[/._]\d{2}"),
        "DOB": re.compile(r"'\d\d$|Christmas|Halloween|Valentine|New Year|Fourth of July|April Fools|Patrick|^\d{8}$"),
        "ADDRESS": re.compile(
            r"^[a-z]+(?:-[a-z]+)? |P\.?O\.? [Bb]ox| (?:Trail|Loop|Crossing|Row|Cove|Bend|Pike|Square)\b"
        ),
        "NAME": re.compile(
            r"^[a-z]+(?: [a-z]+)+$|\+|%20|^(?:alpha|bravo|charlie|delta|echo|foxtrot|golf|hotel|india|juliet"
            r"|kilo|lima|mike|november|oscar|papa|quebec|romeo|sierra|tango|uniform|victor|whiskey|x-ray|yankee|zulu) "
        ),
    },
    "clinical": {
        "DOB": re.compile(r"^\d\d\.\d\d\.\d{4}$|^\d\d-\d\d-\d{4}$|^\d\d[A-Z]{3}\d{4}$|^\d{4}/\d\d/\d\d$"),
        "PHONE": re.compile(r"^\+(?:44|49|52|33|91) "),
        "ADDRESS": re.compile(r"^[a-z]+(?:-[a-z]+)? |P\.?O\.? [Bb]ox"),
        "NAME": re.compile(r"^[A-Z]+ [A-Z]+$"),
    },
}


@pytest.mark.parametrize("kind", ["clinical", "security"])
def test_held_out_families_appear_only_in_eval_documents(kind: Kind) -> None:
    seen: dict[str, set[str]] = {"train": set(), "eval": set()}
    for index in range(150):
        doc = generate_document(kind, 1, index)
        part = partition_of(doc.id)
        for e in doc.entities:
            pattern = HELD_OUT[kind].get(e.label)
            if pattern is not None and pattern.search(e.text):
                # casual lower-case names and addresses are also a shared family of the hard tier
                shared = kind == "security" and e.label in ("NAME", "ADDRESS") and e.text == e.text.lower()
                if part == "train":
                    assert shared, (doc.id, e.label, e.text)
                seen[part].add(e.label)
    assert seen["eval"] == set(HELD_OUT[kind]), seen["eval"]


def test_held_out_phone_split_over_two_messages_is_two_entities() -> None:
    for index in range(200):
        doc = generate_document("security", 2, index)
        if "hit enter too soon" in doc.text:
            assert partition_of(doc.id) == "eval"
            line = next(ln for ln in doc.text.splitlines() if "hit enter too soon" in ln)
            start = doc.text.index(line)
            inside = [e for e in doc.entities if start <= e.start < start + len(line)]
            assert [e.label for e in inside] == ["PHONE"]
            return
    raise AssertionError("no split phone number in 200 documents")


def test_shared_look_alikes_are_present_and_not_entities() -> None:
    role = re.compile(
        r"\b(?:support|billing|privacy|security|noreply|no-reply|help|records|appointments|dpo|alerts|"
        r"dataprotection|accounts|referrals|patientportal|donotreply)@[a-z]+\.(?:com|org|net)\b"
    )
    ids = re.compile(r"(?:RMA is|dispute number|voucher|transaction id on my statement is|refund batch) (\S+)")
    eponyms = re.compile(
        r"\b(Parkinson|Graves|Crohn|Bell|Addison|Barrett|Paget|Wilson|Cushing|Hodgkin|Baker) "
        r"(?:disease|palsy|esophagus|syndrome|lymphoma|cyst)"
    )
    found = {"role mailbox": 0, "id": 0, "eponym": 0, "eponym surname": 0, "dob cue trap": 0}
    for index in range(60):
        for kind in ("clinical", "security"):
            doc = generate_document(kind, 4, index)
            spans = [(e.start, e.end) for e in doc.entities]

            def free(start: int, end: int, spans: list[tuple[int, int]] = spans) -> bool:
                return not any(s < end and start < e for s, e in spans)

            for pattern, name in ((role, "role mailbox"), (ids, "id"), (eponyms, "eponym")):
                for m in pattern.finditer(doc.text):
                    group = 1 if pattern.groups else 0
                    assert free(m.start(group), m.end(group)), (doc.id, m.group(0))
                    found[name] += 1
            for m in eponyms.finditer(doc.text):
                if any(e.label == "NAME" and e.text == m.group(1) for e in doc.entities):
                    found["eponym surname"] += 1
            for m in re.finditer(
                r"name and date of birth\)? (?:completed|confirmed)[^.;]* on ([^;.]+?)(?: at |;)", doc.text
            ):
                assert free(m.start(1), m.end(1)), (doc.id, m.group(1))
                found["dob cue trap"] += 1
    assert all(found.values()), found
