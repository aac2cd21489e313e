"""Deterministic grading of the reasoning sent with a decision.

Only *typed statements* count; bare ids, prose, keyword lists and sentences quantified over
"every source" or "all claims" earn nothing:

- ``<source> supports <claim>`` / ``<source> refutes <claim>`` (``contradicts`` = refutes),
- ``<claim> is <status>`` with status true, false, misleading (= partially true), contested,
  unsupported,
- ``<source> is satire`` / ``<source> is outdated``,
- ``harm is low|medium|high``.

The reasoning is *void* (scores 0) when any statement cites an id the agent never checked or
verified (it asserts something it did not read), or contradicts what the agent did read: a
checked source's stance or satire flag, a verified claim's known verdict, or the harm level shown in
the observation. Blanket statements over every source or claim always fall under one of the two,
whenever the scenario's sources disagree, as those of every gold and generated scenario do
(tested). A reasoning that names no decisive source it checked (say, only "claim_1 is false")
also scores 0: a conclusion with nothing read behind it explains nothing. Otherwise the score is
``recall × precision``: recall over the gold statements (``rules.gold_evidence``), precision over
every statement made; a wrong inference (say, the status of a claim with no verdict) lowers
precision. A harm statement is correct only next to a correct status statement that the harm turns
into the decision (a false or unsupported claim), so "harm is high" on its own earns nothing;
statements that contradict each other are all wrong. Only the first ``char_cap`` characters are
read, and more than ``statement_cap`` statements (or than the gold explanation has, if that is
more) score 0, so dumping every combination cannot pay.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from integrity_gym.envs.information_integrity import rules
from integrity_gym.envs.information_integrity.models import Scenario

_STATUS_WORDS = {
    "true": "true",
    "false": "false",
    "misleading": "misleading",
    "partially_true": "misleading",
    "partially true": "misleading",
    "partly true": "misleading",
    "contested": "contested",
    "unsupported": "unsupported",
    "inconclusive": "unsupported",
}
_STANCE_WORDS = {"supports": "supports", "refutes": "refutes", "contradicts": "refutes"}


@dataclass(frozen=True)
class Statement:
    """One parsed statement in canonical form: (kind, subject, value)."""

    kind: str  # "stance", "status", "discount", "harm"
    subject: str  # "src_1|claim_1", "claim_1", "src_1" or "harm"
    value: str

    @property
    def text(self) -> str:
        """Canonical text, the form used by ``rules.GoldEvidence.statements``."""
        if self.kind == "stance":
            source, claim = self.subject.split("|")
            return f"{source} {self.value} {claim}"
        if self.kind == "harm":
            return f"harm is {self.value}"
        return f"{self.subject} is {self.value}"


@dataclass(frozen=True)
class ReasoningScore:
    """Outcome of grading one reasoning text."""

    score: float
    recall: float
    precision: float
    statements: tuple[Statement, ...]
    correct: tuple[Statement, ...]
    over_cap: bool
    #: Why the reasoning is void ("" if it is not): the first unfounded or contradicting statement.
    void: str = ""
    #: Sentences of the reasoning in which no typed statement was found (prose the grade does not read).
    ignored: tuple[str, ...] = ()


def _alternation(words: Collection[str]) -> str:
    return "|".join(re.escape(w).replace(r"\ ", r"[\s_-]+") for w in sorted(words, key=len, reverse=True))


# One compiled grammar for every scenario: ids are matched generically and then looked up, so no
# pattern is built per scenario.
_ID = r"(?<![A-Za-z0-9_-])[A-Za-z][A-Za-z0-9_-]*(?![A-Za-z0-9_-])"
_END = r"(?![A-Za-z0-9_-])"
_PATTERNS = (
    ("stance", re.compile(rf"(?P<s>{_ID})\s+(?P<v>{_alternation(_STANCE_WORDS)})\s+(?P<c>{_ID})", re.IGNORECASE)),
    (
        "status",
        re.compile(rf"(?P<c>{_ID})\s+is\s+(?:now\s+)?(?P<v>{_alternation(_STATUS_WORDS)}){_END}", re.IGNORECASE),
    ),
    ("discount", re.compile(rf"(?P<s>{_ID})\s+is\s+(?P<v>satire|outdated){_END}", re.IGNORECASE)),
    ("harm", re.compile(rf"(?<![A-Za-z0-9_-])harm(?:\s+level)?\s+is\s+(?P<v>low|medium|high){_END}", re.IGNORECASE)),
)


def parse_statements(text: str, claim_ids: Collection[str], source_ids: Collection[str]) -> list[Statement]:
    """Find the typed statements in ``text`` (case-insensitive), in order of appearance."""
    if not text:
        return []
    claims = {c.lower(): c for c in claim_ids}
    sources = {s.lower(): s for s in source_ids}
    found: list[tuple[int, Statement]] = []
    for kind, pattern in _PATTERNS:
        for m in pattern.finditer(text):
            groups = m.groupdict()
            source = sources.get(groups["s"].lower()) if groups.get("s") else None
            claim = claims.get(groups["c"].lower()) if groups.get("c") else None
            value = re.sub(r"[\s_-]+", " ", m["v"].lower())
            if kind == "stance" and source and claim:
                found.append((m.start(), Statement(kind, f"{source}|{claim}", _STANCE_WORDS[value])))
            elif kind == "status" and claim:
                found.append((m.start(), Statement(kind, claim, _STATUS_WORDS[value])))
            elif kind == "discount" and source:
                found.append((m.start(), Statement(kind, source, value)))
            elif kind == "harm":
                found.append((m.start(), Statement(kind, "harm", value)))
    found.sort(key=lambda pair: pair[0])
    return [s for _, s in found]


_SENTENCE = re.compile(r"(?<=[.;!?])\s+|\n+")


def unread_sentences(text: str, claim_ids: Collection[str], source_ids: Collection[str]) -> tuple[str, ...]:
    """The sentences of ``text`` that hold no typed statement: what the grade could not understand."""
    return tuple(
        sentence.strip()
        for sentence in _SENTENCE.split(text or "")
        if sentence.strip(" .;!?\t") and not parse_statements(sentence, claim_ids, source_ids)
    )


def _no_decisive_source(text: str, scenario: Scenario, seen: set[str]) -> str:
    """Why a reasoning with no correct stance of a decisive source earns nothing, naming what it did say."""
    gold = rules.gold_evidence(scenario)
    decisive = [s for s in gold.sources if s in seen]
    named = [s for s in decisive if re.search(rf"(?<![A-Za-z0-9_-]){re.escape(s)}(?![A-Za-z0-9_-])", text, re.I)]
    example = next((st for st in gold.statements if st.split(" ")[0] in decisive), None)
    form = f" such as '{example}'" if example else " of the form '<source> supports|refutes <claim>'"
    if named:
        return f"it names {', '.join(named)} but in no typed statement{form} (prose around an id is not read)"
    return f"it cites no decisive source it checked: write its stance as a typed statement{form}"


def _is_true(statement: Statement, scenario: Scenario, agg: rules.Aggregate) -> bool:
    if statement.kind == "stance":
        source_id, claim_id = statement.subject.split("|")
        source = scenario.source(source_id)
        return source.claim_id == claim_id and source.stance == statement.value
    if statement.kind == "status":
        return any(a.claim_id == statement.subject and a.status == statement.value for a in agg.claims)
    if statement.kind == "discount":
        source = scenario.source(statement.subject)
        if statement.value == "satire":
            return source.satire
        return rules.is_outdated(source, scenario.as_of)
    return statement.value == scenario.harm


def _cited(statement: Statement) -> list[str]:
    if statement.kind == "stance":
        return statement.subject.split("|")
    return [] if statement.kind == "harm" else [statement.subject]


def _read_directly(statement: Statement, scenario: Scenario) -> bool:
    """True if the statement restates something shown to the agent rather than inferring it.

    A source's stance and satire flag are shown by ``check_source``, the harm level by every
    observation, and a claim's status by ``verify_claim`` when its verdict is known. The status of a
    claim without a verdict is an inference from the sources, and whether a source is outdated is
    worked out from its date; both may honestly be wrong.
    """
    if statement.kind == "status":
        return scenario.claim(statement.subject).verdict != "unknown"
    if statement.kind == "discount":
        return statement.value == "satire"
    return True


def _void_reason(statements: list[Statement], scenario: Scenario, agg: rules.Aggregate, seen: set[str]) -> str:
    for s in statements:
        unseen = [i for i in _cited(s) if i not in seen]
        if unseen:
            return f"'{s.text}' cites {', '.join(unseen)}, never checked or verified"
        if _read_directly(s, scenario) and not _is_true(s, scenario, agg):
            return f"'{s.text}' contradicts what the agent was shown"
    return ""


def _harm_backed(statements: tuple[Statement, ...]) -> bool:
    """A harm statement counts only next to a status the harm level turns into a decision."""
    return any(s.kind == "status" and s.value in ("false", "unsupported") for s in statements)


def grade_reasoning(
    text: str | None,
    scenario: Scenario,
    seen: Collection[str],
    *,
    char_cap: int = 2000,
    statement_cap: int = 20,
) -> ReasoningScore:
    """Score ``text`` against the scenario's gold statements; ``seen`` = ids checked or verified."""
    claim_ids = [c.id for c in scenario.claims]
    source_ids = [s.id for s in scenario.sources]
    read = (text or "")[:char_cap]
    statements = parse_statements(read, claim_ids, source_ids)
    ignored = unread_sentences(read, claim_ids, source_ids)
    unique = list(dict.fromkeys(statements))
    if not unique:
        why = _no_decisive_source(read, scenario, set(seen)) if read.strip() else ""
        return ReasoningScore(0.0, 0.0, 0.0, (), (), False, why, ignored)
    gold = set(rules.gold_evidence(scenario).statements)
    # A complete explanation of an unusually large user scenario must never exceed the cap.
    if len(unique) > max(statement_cap, len(gold)):
        return ReasoningScore(0.0, 0.0, 0.0, tuple(unique), (), True, "", ignored)
    agg = rules.aggregate(scenario)
    void = _void_reason(unique, scenario, agg, set(seen))
    if void:
        return ReasoningScore(0.0, 0.0, 0.0, tuple(unique), (), False, void, ignored)
    values: dict[tuple[str, str], set[str]] = {}
    for s in unique:
        values.setdefault((s.kind, s.subject), set()).add(s.value)
    sound = tuple(s for s in unique if len(values[(s.kind, s.subject)]) == 1 and _is_true(s, scenario, agg))
    correct = tuple(s for s in sound if s.kind != "harm" or _harm_backed(sound))
    hit = {s.text for s in correct} & gold
    if not any(s.kind == "stance" for s in correct if s.text in hit):
        why = _no_decisive_source(read, scenario, set(seen))
        return ReasoningScore(0.0, 0.0, 0.0, tuple(unique), correct, False, why, ignored)
    recall = len(hit) / len(gold)  # hit is not empty, so neither is gold
    precision = len(correct) / len(unique)
    return ReasoningScore(round(recall * precision, 10), recall, precision, tuple(unique), correct, False, "", ignored)
