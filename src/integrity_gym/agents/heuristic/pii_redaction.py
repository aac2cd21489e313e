"""Heuristic baseline for pii_redaction: regular expressions plus obfuscation-aware patterns.

The agent sees only observations. It normalises Cyrillic look-alike letters (one code point each,
so offsets hold), reads spelled-out and mixed digit/word numbers, ``at``/``dot`` and bracketed
e-mails, and spoken or ordinal dates, and it remembers the names it has found so later mentions
("Ms. Alvarez", "Alvarez reports ...") are redacted too. When the step budget pays for the return
trip it reads the whole document first, then walks back redacting, so a name learned late (a chat
speaker, a patient named at the end) is redacted everywhere; otherwise it redacts in one pass
(:class:`ScanningAgent`, which the ``presidio`` agent shares).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

from integrity_gym.envs.pii_redaction.models import Label, RedactionAction, RedactionObservation
from integrity_gym.envs.pii_redaction.window import moves_to_end, prev_cursor

Candidate = tuple[int, int, Label]

_CONFUSABLES = str.maketrans(
    "аеосрхуіАВЕКМНОРСТХ",
    "aeocpxyiABEKMHOPCTX",
)

_DIGIT_WORD = r"(?:zero|oh|one|two|three|four|five|six|seven|eight|nine)"
_DIGIT_NAMES = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
_WORD_VALUES = {w: i for i, w in enumerate(_DIGIT_NAMES)}
_WORD_VALUES["oh"] = 0
_NUM_TOKEN = rf"(?:\b\d{{1,4}}\b|\b{_DIGIT_WORD}\b)"
_NUM_SEP = r"(?:\s*(?:,|\.\.\.|-)?\s*(?:(?:and\s+)?then\s+|number\s+is\s+)?)"
_SPOKEN_NUMBER = re.compile(rf"(?i)(?:\barea\s+code\s+)?{_NUM_TOKEN}(?:{_NUM_SEP}{_NUM_TOKEN})+")

_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
_TLD = r"(?:com|net|org|edu|gov|io|me|co|us|info|biz)"
_AT_BRACKET = r"\s*[\[\(\{]\s*at\s*[\]\)\}]\s*"
_DOT_BRACKET = r"\s*[\[\(\{]\s*dot\s*[\]\)\}]\s*"
_EMAIL_BRACKETED = re.compile(
    rf"(?i)[A-Za-z0-9._%+-]+{_AT_BRACKET}[A-Za-z0-9-]+(?:(?:{_DOT_BRACKET}|\.)[A-Za-z0-9-]+)*(?:{_DOT_BRACKET}|\.){_TLD}\b"
)
_EMAIL_WORDS = re.compile(
    rf"(?i)\b[A-Za-z0-9._%+-]+(?:\s+dot\s+[A-Za-z0-9_%+-]+)*\s+at\s+[A-Za-z0-9-]+(?:\s+dot\s+[A-Za-z0-9-]+)*\s+dot\s+{_TLD}\b"
)

_PHONE = re.compile(
    r"(?<![\w.+-])(?:\+1[ .-]?)?(?:\(\d{3}\)|\d{3})(?:[ .-]|\s)?\d{3}(?:[ .-]|\s)\d{4}(?![\w-]|\.\d)"
    r"|(?<![\w+])\+1\d{10}\b"
)
_SSN = re.compile(r"(?<![\w-])\d{3}-\d{2}-\d{4}(?![\w-])|(?<![\w.-])\d{3} \d{2} \d{4}(?![\w.-])")

_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?"
    r"|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
)
_ORD_WORD = (
    r"(?:(?:twenty|thirty)-)?(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth)|tenth|eleventh|"
    r"twelfth|thirteenth|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|thirtieth"
)
_SMALL = r"(?:one|two|three|four|five|six|seven|eight|nine)"
_NUM_WORDS = (
    rf"(?:(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)(?:-{_SMALL})?|ten|eleven|twelve|thirteen|"
    rf"fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|{_SMALL}|oh[- ]{_SMALL})"
)
_YEAR_WORDS = rf"(?:nineteen(?:\s+{_NUM_WORDS})?|two\s+thousand(?:\s+{_SMALL})?)"
_YEAR = rf"(?:\d{{4}}|{_YEAR_WORDS})"
_DATES = re.compile(
    rf"(?i)\bthe\s+(?:{_ORD_WORD})\s+of\s+{_MONTH},?\s+{_YEAR}"
    rf"|\b{_MONTH}\s+the\s+(?:{_ORD_WORD}),?\s+{_YEAR}"
    rf"|\b{_MONTH}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}\b"
    rf"|\b\d{{1,2}}(?:st|nd|rd|th)?(?:\s+of)?[\s-]+{_MONTH}[\s,-]+\d{{4}}\b"
    rf"|\b{_NUM_WORDS}\s+slash\s+{_NUM_WORDS}\s+slash\s+{_NUM_WORDS}\b"
    r"|(?<![\d/.-])\d{1,2}/\d{1,2}/(?:\d{4}|\d{2})(?![\d/])"
    r"|(?<![\w.-])\d{4}-\d{2}-\d{2}(?![\dT:])"
)
_BIRTH_CUE = re.compile(r"(?i)\b(?:dob|d\.o\.b|date of birth|birth\s*date|born|birthday|birth)\b")
# Ids are never phones or SSNs, whatever their shape: a reference word just before the number
# (optionally "number", "id" ..., and "on my statement") marks one.
_REFERENCE_CUE = re.compile(
    r"(?i)\b(?:order|tracking|confirmation|ticket|case|reference|ref|invoice|receipt|card|account|serial|"
    r"policy|claim|po|voucher|batch|dispute|rma|transaction|txn|refund)\b(?:\s+(?:number|no\.?|code|id|#))?"
    r"(?:\s+(?:on|in|from)\s+(?:my|the|your)\s+\w+)?(?:\s+(?:is|was))?\s*[:#]?\s*$"
)
# An organisation's line, not a person's: "Pharmacy (tel.", "fax", "nurse advice line", "call us on".
_ORG_LINE_CUE = re.compile(
    r"(?i)(?:\(\s*tel\.?|\bfax|\b(?:support|advice|help|nurse|service|scheduling|main|office|switchboard)\s+"
    r"(?:line|desk|number)|\bteam's\s+direct\s+line|\bcall\s+us\s+(?:on|at)|\boverflow\s+to|"
    r"\b(?:Group|Practice|Pharmacy|Apothecary|Clinic|Center|Hospital)\s+at)\s*(?:is\s+)?[:(]?\s*$"
)
# Shared and role mailboxes are not personal data; a person's own address is.
_ROLE_MAILBOXES = frozenset(
    """
    admin alerts appointments billing contact dataprotection dpo help helpdesk hr info legal noreply
    no-reply notifications office postmaster privacy records referrals sales security support team
    """.split()  # noqa: SIM905
)
# A known surname followed by one of these is an eponym or a place (Graves disease, Brook Street).
_NOT_A_PERSON_AFTER = (
    r"(?! (?:cyst|esophagus|disease|syndrome|thyroiditis|palsy|catheter|sign|lymphoma|ulcer|fracture|"
    r"procedure|maneuver|Street|Avenue|Road|Lane|Drive|Park|Medical|Clinic|Pharmacy|Family|Health))"
)

_STREET = (
    r"(?:Street|St\.?|Avenue|Ave\.?|Road|Rd\.?|Lane|Ln\.?|Drive|Dr\.?|Court|Ct\.?|Boulevard|Blvd\.?|Way|"
    r"Place|Pl\.?|Terrace|Ter\.?|Circle|Cir\.?|Parkway|Pkwy\.?|Highway|Hwy\.?)"
)
_ADDRESS = re.compile(
    rf"\b\d{{1,5}}[ \t]+(?:[A-Z][a-z]+[ \t]+){{1,3}}{_STREET}(?![a-z])"
    r"(?:,?\s+(?:Apt\.?|Unit|Suite|#)\s*\d+[A-Z]?)?"
    r"(?:,?\s+(?:[A-Z][a-z]+\s?){1,3},?\s+[A-Z]{2}\s+\d{5}(?:-\d{4})?)?"
)

_TOKEN = r"[A-Z][a-z]+(?:['-][A-Z]?[a-z]+)*"
_FULL = rf"{_TOKEN}(?: [A-Z]\.)?(?: {_TOKEN}){{1,2}}"
_ONE_OR_MORE = rf"{_TOKEN}(?:(?: [A-Z]\.)? {_TOKEN}){{0,2}}"
_RELATIONS = r"(?:wife|husband|partner|son|daughter|brother|sister|mother|father|spouse|friend)"
_NAME_PATTERNS = tuple(
    re.compile(p)
    for p in (
        rf"\b(?:Mr|Mrs|Ms|Miss|Dr|Prof)\.? (?P<n>{_ONE_OR_MORE})",
        rf"(?i:\b(?:patient(?: name)?|name|provider|attending(?: physician)?|pcp|dictated by|signed by|by|cc|re|"
        rf"tenant|contractor|consultant|recipient|participant|seller|guarantor|emergency contact|next of kin|contact|"
        rf"customer|account holder|patient)):[ \t]*(?P<n>{_FULL}|[A-Z]{{2,}}, {_TOKEN})",
        rf"/s/ (?P<n>{_FULL})",
        rf"_{{3,}}\s+(?P<n>{_FULL})",
        rf"(?P<n>{_FULL}),? M\.?D\.?\b",
        rf"(?i:represented by|acting through|signing officer|my name is|this is|talking to|thanks|thank you|"
        rf"it's|it is|holder is|the account is|go to|referring|patient,)\s+"
        rf"(?P<n>{_ONE_OR_MORE})",
        rf"\b(?i:{_RELATIONS}),? (?P<n>{_ONE_OR_MORE})",
        rf"(?P<n>{_FULL}), of \d",
        rf"(?P<n>{_FULL}) \((?i:{_RELATIONS}|sister|brother)\)",
        rf"(?:\band|\(2\)) (?P<n>{_FULL}),? (?:residing|of)\b",
        rf"(?m)^[ \t]*(?P<n>{_FULL})[ \t]*\n[ \t]*(?:Address|Email|E-mail|Phone|Tel)\b",
        rf"(?:new=|customer |display_name=)\"(?P<n>{_FULL})\"",
        rf"\b(?:Dear|Daughter|Son|Hi|Hello) (?P<n>{_ONE_OR_MORE})",
        # Form fields: "Homeowner: Jane Doe", "Client: Jane Doe | ...".
        rf"(?m)^[ \t]*[A-Z][A-Za-z/ -]{{1,30}}:[ \t]+(?P<n>{_FULL})[ \t]*(?=$|\(|,|\||<|[ \t]{{2,}})",
        # A role noun right before a name: "the project lead, Jane Doe," "analyst Jane Doe".
        rf"(?i:\b(?:lead|manager|recruiter|tutor|admin|administrator|analyst|owner|nurse|officer|coordinator|"
        rf"signatory|engineer|director|counsel|agent|clinician|resident|therapist|pharmacist))[ ,]+"
        rf"(?P<n>{_ONE_OR_MORE})",
        # Sign-offs: "Sincerely,\n\nJane Doe".
        rf"(?i:sincerely|regards|best|thanks|cheers|respectfully),?[ \t]*\n(?:[ \t]*\n)?[ \t]*(?P<n>{_ONE_OR_MORE})",
        rf"\bby (?P<n>{_FULL})",
        rf"\bI, (?P<n>{_FULL}),",
        rf"(?P<n>{_FULL}) \([A-Z][a-z]+\)",
        rf"(?m)^\[[\d:]+\] (?:Agent|Support|Helpdesk|Analyst) \(?(?P<n>{_TOKEN})\)?:",
    )
)
# Words that mark an organisation or a place, not a person.
_ORG = frozenset(
    """
    Inc LLC Ltd Corp Co Company Group Partners Partnership Laboratory Laboratories Lab Labs Clinic Hospital
    Center Centre Institute University College School Services Systems Solutions Software Analytics Bank
    Health Care Medical Media Holdings Robotics Logistics Networks Cloud Data Works Dynamics Department
    Renovation Outfitters Conservancy Learning Pediatrics Practice Imaging Airlines Air Mobile Support
    """.split()  # noqa: SIM905
)
_SPELLED_NAME = re.compile(r"(?<![\w-])[A-Z](?:-[A-Z]){2,}(?![\w-])")
# Capitalised words that are not names (trimmed from the ends of a name match).
_STOP = frozenset(
    """
    Address Admitted Agent Agreement Allergies Also And Are Assessment Avenue Background Boulevard
    Bring But By Bye Can Cardiology Care Center Chest Circle Clinic Co Community Company Consultant
    Contacts Contractor Corp Could Court Customer Date Day Dear December Department Discharged Done
    Dr Drive Effective Email Emergency Endocrinology Family February Fine Follow For Friday From
    Glad Good Great Group Guarantor Health Hello Her Here Hi His History Hold Home Hospital How
    Imaging Inc Internal Into Is It Its January July Just Kin LLC Labs Lane Legal Let Ltd March
    Medical Medicine Miss Mobile Monday Mr Mrs Ms My Name Nephrology Next No None Not Notices
    November Now Number Nursing October Oh Ok Okay Onto Or Our Parkway Participant Patient Phone
    Physical Place Plan Please Practice Preferred Prof Pulmonology Reason Recipient Regional Return
    Review Right Road Same Saturday Schedule Section Security Seller Send September Signatures
    Signed So Social Sorry Still Street Sunday Support Sure Tenant Terrace Thank Thanks That The
    Their Then There These They This Those Thursday Title Tuesday Understood Valley Vendor Was Way
    We Wednesday Welcome Well Were What When Where Whereof Which Who With Witness Yes You Your
    """.split()  # noqa: SIM905
)
_TRAILING_STOP = frozenset(
    """
    Address Agreement Co Company Corp Date Email Inc LLC Ltd Phone Schedule Section Signed Title
    Transcribed
    """.split()  # noqa: SIM905
)
_PRIORITY: dict[str, int] = {"EMAIL": 0, "SSN": 1, "PHONE": 1, "DOB": 2, "ADDRESS": 3, "NAME": 4}


def normalise(text: str) -> str:
    """Replace Cyrillic look-alike letters by their Latin twins (same length, same offsets)."""
    return text.translate(_CONFUSABLES)


def _digits_in(phrase: str) -> tuple[int, bool]:
    body = re.sub(r"(?i)^area\s+code\s+", "", phrase)
    count, has_word = 0, False
    for token in re.findall(r"(?i)\d+|[a-z]+", body):
        if token.isdigit():
            count += len(token)
        elif token.lower() in _WORD_VALUES:
            count += 1
            has_word = True
    return count, has_word


def _masked(segment: str) -> bool:
    return "█" in segment or "[REDACTED]" in segment


def _reference_before(text: str, start: int) -> bool:
    before = text[max(0, start - 40) : start]
    return _REFERENCE_CUE.search(before) is not None or _ORG_LINE_CUE.search(before) is not None


def _role_mailbox(address: str) -> bool:
    local = re.split(r"(?i)@|\s*[\[\(\{]\s*at\s*[\]\)\}]\s*|\s+at\s+", address, maxsplit=1)[0]
    return local.casefold() in _ROLE_MAILBOXES


def _spoken_numbers(text: str) -> Iterable[Candidate]:
    for m in _SPOKEN_NUMBER.finditer(text):
        phrase = m.group(0)
        if _reference_before(text, m.start()):
            continue
        count, has_word = _digits_in(phrase)
        area = phrase.lower().startswith("area")
        if not (has_word or area):
            continue
        if count in (10, 11):
            yield m.start(), m.end(), "PHONE"
        elif count == 9:
            yield m.start(), m.end(), "SSN"


def _dates(text: str) -> Iterable[Candidate]:
    cues = [c.end() for c in _BIRTH_CUE.finditer(text)]
    previous_end = 0
    for m in _DATES.finditer(text):
        # A birth cue shortly before the date, with no other date in between.
        if any(previous_end <= c <= m.start() <= c + 90 and not _masked(text[c : m.start()]) for c in cues):
            yield m.start(), m.end(), "DOB"
        previous_end = m.end()


def _trim_name(text: str, start: int, end: int) -> tuple[int, int] | None:
    tokens = list(re.finditer(r"\S+", text[start:end]))
    while tokens and (tokens[0].group(0) in _STOP or len(tokens[0].group(0)) < 2):
        tokens.pop(0)
    while tokens and (tokens[-1].group(0) in _TRAILING_STOP or len(tokens[-1].group(0)) < 2):
        tokens.pop()
    if not tokens or any(t.group(0).rstrip(".,") in _ORG for t in tokens):
        return None
    return start + tokens[0].start(), start + tokens[-1].end()


def _names(text: str, known: set[str]) -> Iterable[Candidate]:
    found: list[tuple[int, int]] = []
    for pattern in _NAME_PATTERNS:
        for m in pattern.finditer(text):
            span = _trim_name(text, m.start("n"), m.end("n"))
            if span:
                found.append(span)
    for start, end in found:
        for token in re.findall(_TOKEN, text[start:end]):
            if len(token) >= 3 and token not in _STOP:
                known.add(token)
        if re.fullmatch(rf"[A-Z]{{2,}}, {_TOKEN}", text[start:end]):
            known.add(text[start:end].split(",")[0].title())
        yield start, end, "NAME"
    if known:
        alternatives = "|".join(sorted((re.escape(k) for k in known), key=len, reverse=True))
        for m in re.finditer(
            rf"(?<!St\. )\b(?:{alternatives})(?:(?: [A-Z]\.)? (?:{alternatives}))*\b{_NOT_A_PERSON_AFTER}", text
        ):
            yield m.start(), m.end(), "NAME"
    for m in _SPELLED_NAME.finditer(text):
        yield m.start(), m.end(), "NAME"


def detect(text: str, known_names: set[str] | None = None) -> list[Candidate]:
    """Find PII in ``text``: non-overlapping ``(start, end, label)`` spans, sorted by start.

    ``known_names`` collects name tokens found so far (updated in place) so later mentions of the
    same person are found too.
    """
    known = known_names if known_names is not None else set()
    norm = normalise(text)
    candidates: list[Candidate] = []
    for pattern in (_EMAIL, _EMAIL_BRACKETED, _EMAIL_WORDS):
        candidates += [(m.start(), m.end(), "EMAIL") for m in pattern.finditer(norm) if not _role_mailbox(m.group(0))]
    numbers: tuple[tuple[re.Pattern[str], Label], ...] = ((_PHONE, "PHONE"), (_SSN, "SSN"))
    for pattern, label in numbers:
        found = [m for m in pattern.finditer(norm) if not _reference_before(norm, m.start())]
        candidates += [(m.start(), m.end(), label) for m in found]
    candidates += _spoken_numbers(norm)
    candidates += _dates(norm)
    candidates += [(m.start(), m.end(), "ADDRESS") for m in _ADDRESS.finditer(norm)]
    dates = [(m.start(), m.end()) for m in _DATES.finditer(norm)]
    candidates += [n for n in _names(norm, known) if not any(n[0] < e and s < n[1] for s, e in dates)]
    # Longest first, then by label priority; keep spans that overlap nothing already kept.
    candidates.sort(key=lambda c: (-(c[1] - c[0]), _PRIORITY[c[2]], c[0]))
    kept: list[Candidate] = []
    for cand in candidates:
        if all(cand[1] <= k[0] or cand[0] >= k[1] for k in kept):
            kept.append(cand)
    return sorted(kept)


def value_key(text: str) -> str:
    """A redacted value as the grade groups mentions: case-folded letters and digits only."""
    return re.sub(r"[^0-9a-z]", "", normalise(text).casefold())


class ScanningAgent:
    """Walks the window over a document and redacts the spans that :meth:`find` returns.

    Subclasses supply ``find(text)``. The agent keeps the text of every window it has seen, as
    first seen (before its own redactions masked it), so cues just left of the window still count.

    *Single pass* (the default, and the fallback when the step budget is tight): redact each match
    lying wholly inside the window, leave matches in the window's right half for the next window
    (where they have context on both sides), move on, finish at the end. *Read ahead*
    (``read_ahead = True``): cross the document once without redacting, run ``find`` on the whole
    text, then walk back with PREV_CHUNK redacting every match on the way, so a name learned late
    (a chat speaker, a patient named in the last paragraph) is redacted in the first lines too.
    """

    #: Read the whole document before redacting, when the step budget allows the return trip.
    read_ahead = False
    #: Characters per redaction the budget must leave room for after a return trip. The heuristic
    #: matches about one span per 100 (easy) to 250 (hard) characters of generated documents; a
    #: tighter budget, as at narrow windows, keeps the single pass, which needs no return trip.
    #: A plan that still does not fit drops the mentions of its most repeated values first.
    chars_per_redaction = 150

    def __init__(self, spec: Any = None, seed: int = 0) -> None:
        self.spec = spec
        self.seed = seed
        self._reset(0)

    def find(self, text: str) -> list[Candidate]:
        """Non-overlapping ``(start, end, label)`` spans of PII in ``text`` (offsets into ``text``)."""
        raise NotImplementedError

    def _reset(self, length: int) -> None:
        self._text = [" "] * length
        self._seen = bytearray(length)
        self._tried: set[tuple[int, int]] = set()
        self._mode = "single"
        self._plan: list[Candidate] = []

    def _remember(self, obs: RedactionObservation) -> None:
        pos = obs.cursor_position
        for offset, char in enumerate(obs.visible_text):
            if not self._seen[pos + offset]:
                self._text[pos + offset], self._seen[pos + offset] = char, 1

    def candidates(self, obs: RedactionObservation) -> list[Candidate]:
        """Matches this window should redact now in a single pass (inside it, not yet tried)."""
        lo = obs.cursor_position
        hi = lo + len(obs.visible_text)
        context_lo = max(0, lo - obs.window_size)
        text = "".join(self._text[context_lo:hi])
        reaches_end = hi >= obs.document_length
        half = lo + max(1, obs.window_size // 2)
        out = []
        for start, end, label in self.find(text):
            s, e = start + context_lo, end + context_lo
            if s < lo or e > hi or (s, e) in self._tried:
                continue
            if not reaches_end and s >= half:
                continue  # seen again, with context on both sides, in the next window
            if any(s < re_ and rs < e for rs, re_ in obs.redacted_spans):
                continue
            out.append((s, e, label))
        return out

    def _route(self, obs: RedactionObservation, spans: list[Candidate]) -> dict[Candidate, int]:
        """PREV_CHUNK moves from here until each span lies wholly inside the window (unreachable: left out)."""
        cursor, moves, where = obs.cursor_position, 0, {}
        left = sorted(spans, key=lambda c: -c[0])
        while left:
            hi = min(obs.document_length, cursor + obs.window_size)
            for span in [c for c in left if cursor <= c[0] and c[1] <= hi]:
                where[span] = moves
                left.remove(span)
            if cursor == 0:
                break
            cursor, moves = prev_cursor(cursor, obs.window_size), moves + 1
        return where

    def _make_plan(self, obs: RedactionObservation) -> None:
        """After the read: every match in the whole document, trimmed to the steps left."""
        text = "".join(self._text)
        where = self._route(obs, self.find(text))
        plan = sorted(where)
        mentions: dict[str, int] = {}
        for start, end, _ in plan:
            mentions[value_key(text[start:end])] = mentions.get(value_key(text[start:end]), 0) + 1
        # One step stays for FINISH. When the rest cannot pay for the trip and every redaction,
        # drop mentions of the most repeated value first: the grade splits a value's weight over
        # its mentions, so such a mention is worth least.
        while plan and max(where[c] for c in plan) + len(plan) > obs.steps_left - 1:
            drop = max(plan, key=lambda c: (mentions[value_key(text[c[0] : c[1]])], where[c], -c[0]))
            mentions[value_key(text[drop[0] : drop[1]])] -= 1
            plan.remove(drop)
        self._plan = plan

    def act(self, observation: RedactionObservation) -> RedactionAction:
        """Redact the next planned or visible match, else move, else finish."""
        obs = observation
        if obs.done or obs.steps_left <= 1:
            return RedactionAction(action_type="FINISH")
        if obs.step_count == 0 or len(self._text) != obs.document_length:
            # A new episode: forget what an earlier one showed, and choose how to walk.
            self._reset(obs.document_length)
            decisions = obs.steps_left - moves_to_end(obs.document_length, obs.window_size)
            spare = decisions - moves_to_end(obs.document_length, obs.window_size) - 1
            if self.read_ahead and spare * self.chars_per_redaction >= obs.document_length:
                self._mode = "read"
        self._remember(obs)
        lo, hi = obs.cursor_position, obs.cursor_position + len(obs.visible_text)
        if self._mode == "read":
            if hi < obs.document_length:
                return RedactionAction(action_type="NEXT_CHUNK")
            self._mode = "return"
            self._make_plan(obs)
        if self._mode == "return":
            here = [c for c in self._plan if lo <= c[0] and c[1] <= hi]
            if here:
                start, end, label = here[0]
                self._plan.remove(here[0])
                return RedactionAction(action_type="REDACT", start=start, end=end, label=label)
            if self._plan and lo > 0:
                return RedactionAction(action_type="PREV_CHUNK")
            return RedactionAction(action_type="FINISH")
        moves_left = math.ceil(max(0, obs.document_length - hi) / max(1, obs.window_size // 2))
        found = self.candidates(obs)
        if found and obs.steps_left > moves_left + 1:
            start, end, label = found[0]
            self._tried.add((start, end))
            return RedactionAction(action_type="REDACT", start=start, end=end, label=label)
        if hi >= obs.document_length:
            return RedactionAction(action_type="FINISH")
        return RedactionAction(action_type="NEXT_CHUNK")


class HeuristicAgent(ScanningAgent):
    """Offline regex-and-cue baseline that reads ahead; stateful per episode (reused agents reset)."""

    read_ahead = True

    def _reset(self, length: int) -> None:
        super()._reset(length)
        self._known: set[str] = set()

    def find(self, text: str) -> list[Candidate]:
        """:func:`detect`, remembering the names found for later mentions."""
        return detect(text, self._known)


#: The agents ``--agent NAME`` builds for this environment (``EnvExtras.agents``).
AGENTS = {"heuristic": HeuristicAgent}
