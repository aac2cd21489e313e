"""Building blocks of the document generator: a span-tracking text builder, people, distractors.

Every document is assembled piece by piece with :class:`Builder`, which records the offsets of
each personal-data piece as it is appended, so the gold offsets are correct by construction.
Values come from a private ``random.Random`` and a per-thread Faker instance that is re-seeded for
every document, so a document depends only on the seed parts it was built from.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from functools import lru_cache
from itertools import accumulate
from random import Random
from typing import Any, Generic, NamedTuple, TypeVar, cast

from faker import Faker

from integrity_gym.envs.pii_redaction.models import Entity, Label

# Fixed date bounds: generated documents never depend on the day they are generated.
DOB_FIRST = date(1940, 1, 1)
DOB_LAST = date(2006, 12, 31)
EVENT_FIRST = date(2019, 1, 1)
EVENT_LAST = date(2025, 12, 31)

MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip


class E(NamedTuple):
    """A personal-data value to place in a template: its label and its exact characters."""

    label: Label
    text: str


Slot = str | E
T = TypeVar("T")


@dataclass(frozen=True)
class Frames(Generic[T]):
    """The line templates of one family: those training documents use, and a disjoint set for eval.

    Every template that puts personal data on a line (the sentence or section phrasing around the
    values) has a train form and, written separately, an eval form that no training document
    shows; the labels, the value generators and the grading are the same for both. A document
    takes ``of(held_out)``, ``held_out`` being whether its id falls in the eval partition, so a
    system that memorised where the values sit in training lines meets new lines at evaluation.
    """

    train: tuple[T, ...]
    eval: tuple[T, ...]

    def __post_init__(self) -> None:
        if "«" in repr(self.train):
            raise ValueError("training templates are fixed text: only eval templates vary («a|b» groups)")

    def of(self, held_out: bool) -> tuple[T, ...]:
        """The templates of the document's partition."""
        return self.eval if held_out else self.train


_SLOT = re.compile(r"\{(\w+)\}")


@lru_cache(maxsize=4096)
def _pieces(template: str) -> tuple[str, ...]:
    """``template`` split into text, slot name, text, ..., text (templates are few and reused)."""
    return tuple(_SLOT.split(template))


_GROUP = re.compile(r"«([^«»]*)»")

#: Shared alternatives of the eval templates, used as ``«@name»``: how a form writes a field's cue
#: and what separates it from the value. Every entry may itself hold groups.
LEXICON: dict[str, tuple[str, ...]] = {}


def _cases(*phrases: str) -> tuple[str, ...]:
    """Each phrase as written, in capitals and in lower case (forms write their cues all three ways)."""
    return tuple(dict.fromkeys(f for p in phrases for f in (p, p.upper(), p.lower())))


LEXICON.update(
    name=_cases("Name", "Full name", "Printed name", "Name in full", "Signatory", "Party", "Individual",
                "Legal name", "Person", "Holder", "Given and family name", "Known as"),
    addr=_cases("Residence", "Home address", "Residential address", "Address of record", "Domicile",
                "Street address", "Postal address", "Mailing address", "Address on file", "Lives at",
                "Permanent address", "Usual address", "Home", "Abode"),
    email=_cases("E-mail", "Email", "Mail", "E-mail address", "Email addr.", "Personal e-mail", "Private mail",
                 "Mailbox", "Inbox", "Electronic mail", "E-post", "Mail to", "Reply-to"),
    phone=_cases("Mobile", "Phone", "Telephone", "Tel.", "Cell", "Cell phone", "Mobile no.", "Phone no.",
                 "Contact number", "Direct line", "Number", "Ph.", "Landline", "Home phone", "Daytime phone",
                 "Tel. no.", "Call"),
    dob=_cases("Born", "Date of birth", "Birth date", "Birthdate", "D.o.b.", "Born on", "Birthday", "Date born",
               "Year and day of birth", "Natal date"),
    ssn=_cases("SSN", "Social Security No.", "Social Security number", "SS number", "SSA no.", "Soc. Sec. No.",
               "Taxpayer SSN", "SS#", "Soc. sec."),
    qual=("", "", "", "", " (home)", " (private)", " (current)", " (main)", " [primary]", " (on file)",
          " (as given)", " (verified)", " (personal)", " (updated)", " (preferred)", " (own)", " [self]",
          " (confirmed)", " (stated)", " [declared]", " (latest)"),
    sep=(": ", " : ", ":  ", " - ", " – ", " — ", " = ", " .... ", " ..... ", " | ", " > ", " :: ", " / ",
         "\t", ":\t", " ~ ", " » ", " -> ", " … ", " --- ", ": - ", " · ", "; ", " => "),
)  # fmt: skip


# Prose: the words right before and after a value come from pools shared by every label (and by
# non-personal values), so they say little about what follows; the value's kind is named further
# away ('the Tenant's e-mail, on file as: ...'). Each eval sentence draws them anew.
LEXICON.update(
    to=("«sent|addressed|delivered|forwarded|directed|copied|routed|passed on|mailed|posted|issued|handed|put "
        "through|referred|made out|marked|written» «to|care of|c/o|attn.|for» («per|see|via|from» {system})",),
    at=("«reached|contacted|reachable|found|available|contactable|best reached|usually reached|traceable|"
        "accessible|answering» «at|on|via|through|using|under» (per {system})",),
    as_=("«listed|recorded|given|shown|noted|entered|registered|confirmed|logged|filed|identified|described|named|"
         "known|documented|referred to|mentioned|verified|checked|indexed|booked in|enrolled|held|kept» «in|on|under|"
         "via|by» {system} as",
         "«per|according to|as in|from|see» {system}:", "(record {system})", "- {system}:", "in {system}:",
         "«listed|recorded|noted|entered» as («per|in|see» {system})"),
    after=(".", ".", ";", ",", " -", " (see file).", " (on record).", ", as stated.", ", per the file.",
           " (checked).", " for now.", ", confirmed.", ", noted.", " (unchanged).", ", as given.", " (current).",
           " - noted.", ", per records.", " (latest).", "; checked.", " at present.", " (as supplied).",
           " (no change).", " - verified.", " (ok).", ", on file.", "; see record.", " (reported).",
           " (valid).", " (as of today).", ", again.", " (stated).", " - per form.", " [checked]."),
)  # fmt: skip

# Chat: how a customer leads into a value ('hmm... mine is ...', 'ok - try ...') and trails off after it;
# logs: generic field names that carry personal and other values alike ('target=', 'arg=').
LEXICON.update(
    chat=("«it's|its|sure|ok|okay|yes|yeah|yep|right|fine|so|well|hmm|uh|um|ah|erm|alright|sure thing|no problem|"
          "of course|got it|one sec|let me see|hang on|hold on|wait|lemme check|ok so|oh|yea|k|kk|np|right so|sec|mm|"
          "uhh|ehm|heh|lol ok|haha ok|ugh ok|fine ok»«, | - |! |: | — | |.. |, um »«it's |its |try |use |is |mine: |"
          "so |»",),
    cafter=("", "", "", "", " thanks", " I think", " iirc", " lol", " ty", "?", "!", " if that helps", " (i think)",
            "...", " cheers", " pls", " right?", " btw", " :)", " ok?", " fwiw", " thx", " anyway", " yeah"),
    kv=("subject=", "target=", "value=", "arg=", "param=", "who=", "for=", "to=", "ref=", "key=", "input=", "entry=",
        "item=", "data=", "field=", "attr=", "object=", "principal=", "match=", "term=", "q=", "id=", "src=", "dst=",
        "peer=", "actor=", "res=", "user=", "acct=", "name=", "v=", "arg0=", "ctx=", "hint=", "tag=", "via="),
)  # fmt: skip

# Lines a document may or may not carry (shifting every line after them).
LEXICON.update(
    opt=("", "", "", "", "\n", "Status: final\n", "Copy: original\n", "Confidential\n", "Version: executed\n",
         "Page 1 of 3\n", "Classification: internal\n", "Language: English\n", "Original on file\n",
         "Scanned copy\n", "Printed copy\n", "Retention: 7 years\n", "Distribution: restricted\n"),
)  # fmt: skip

# A form's field: its cue, perhaps a qualifier, and a separator ('Mobile (private) :: ') or a dot
# leader to the value's column ('Mobile ............ '), which every field of the form shares.
LEXICON.update(ind=("", "", "", " ", "  ", "   ", "    ", "     ", "      ", "\t", "\t "))
LEXICON.update(lead=tuple(f" {'.' * n} " for n in range(10, 19)) + tuple(f" {'. ' * n}" for n in range(6, 10)))
LEXICON.update(
    {
        f"f_{key}": (f"«@{key}»«@qual»«@sep»", f"«@{key}»«@qual»«@lead»", f"«@{key}»«@lead»")
        for key in ("name", "addr", "email", "phone", "dob", "ssn")
    }
)


_PREAMBLE = (
    "", "", "CONFIDENTIAL", "Internal use only", "Printed copy", "Scanned copy", "Copy for records", "Page 1",
    "-----", "Status: final", "Exported from the records system", "Classification: restricted", "(original on file)",
    "Do not forward", "File copy", "Retention: 7 years", "Distribution: restricted", "Reprinted on request",
)  # fmt: skip


def preamble(b: Builder, rng: Random) -> None:
    """Start an eval document with none to eleven document-control lines, so no line sits at a fixed line number."""
    for line in rng.sample(_PREAMBLE, rng.randrange(12)):
        b.text(line + "\n")


def vary(rng: Random, template: str) -> str:
    """``template`` with every ``«a|b|c»`` group replaced by one alternative drawn by ``rng``.

    Groups may nest (the innermost are drawn first) and ``«@name»`` draws an entry of
    :data:`LEXICON`. Only eval templates hold groups: each eval line is composed anew from its
    parts, so the text around a value rarely repeats from one eval document to the next.
    """
    while "«" in template:
        template = _GROUP.sub(lambda m: _alternative(rng, m.group(1)), template)
    return template


def _alternative(rng: Random, group: str) -> str:
    if group.startswith("@") and "|" not in group:
        return pick(rng, LEXICON[group[1:]])
    return pick(rng, group.split("|"))


class Builder:
    """Appends text and entities, keeping entity offsets exact.

    Given ``rng`` (eval documents), every template's ``«a|b»`` groups are drawn as it is filled.
    """

    def __init__(self, rng: Random | None = None) -> None:
        self._parts: list[str] = []
        self._length = 0
        self.entities: list[Entity] = []
        self._rng = rng

    def __len__(self) -> int:
        return self._length

    def text(self, value: str) -> None:
        """Append plain (non-personal) text."""
        self._parts.append(value)
        self._length += len(value)

    def entity(self, label: Label, value: str) -> None:
        """Append one personal-data value as a gold entity."""
        if not value or len(value) >= 200:
            raise ValueError(f"entity {value!r} must have 1 to 199 characters")
        self.entities.append(Entity(start=self._length, end=self._length + len(value), label=label, text=value))
        self.text(value)

    def add(self, value: Slot) -> None:
        """Append a plain string or an :class:`E`."""
        if isinstance(value, E):
            self.entity(value.label, value.text)
        else:
            self.text(value)

    def fill(self, template: str, ctx: dict[str, Slot]) -> None:
        """Append ``template`` with each ``{key}`` replaced by ``ctx[key]`` (entities tracked)."""
        if "«" in template:
            if self._rng is None:
                raise ValueError(f"template {template[:40]!r} has «» groups but the builder draws none")
            template = vary(self._rng, template)
            pieces = tuple(_SLOT.split(template))
        else:
            pieces = _pieces(template)
        self.text(pieces[0])
        for i in range(1, len(pieces), 2):
            key = pieces[i]
            if key not in ctx:
                raise KeyError(f"template slot {key!r} has no value")
            self.add(ctx[key])
            self.text(pieces[i + 1])

    def result(self) -> tuple[str, tuple[Entity, ...]]:
        """Return the finished text and its entities."""
        return "".join(self._parts), tuple(self.entities)


_local = threading.local()


def faker_for(seed: int) -> Faker:
    """Return this thread's en_US Faker generator, re-seeded with ``seed`` (never shared across threads).

    The generator itself, not the ``Faker`` proxy around it: with one locale the proxy only
    forwards to it, but it looks every attribute up in Python, a sixth of a document's
    generation time. It answers the same provider methods (hence the type) and draws the same
    values (tests/envs/pii_redaction/test_faker_draws.py).
    """
    fake = getattr(_local, "faker", None)
    if fake is None:
        fake = Faker("en_US").factories[0]
        for provider in fake.providers:
            if getattr(provider, "__use_weighting__", False):
                provider.random_element = _cumulative_draw(provider.random_element, provider.generator)
        _local.faker = fake
    fake.seed_instance(seed)
    return cast(Faker, fake)


#: OrderedDict id -> (the dict, its keys, their cumulative weights), computed once per table.
_CUMULATIVE: dict[int, tuple[OrderedDict[Any, float], tuple[Any, ...], list[float]]] = {}


def _cumulative_draw(original: Callable[..., Any], generator: Any) -> Callable[..., Any]:
    """Faker's weighted ``random_element`` with the cumulative weights of each table kept.

    Faker draws from a weighted table (first names, surnames: hundreds of entries) with
    ``random.choices(keys, weights=values)``, which sums every weight again on each draw: most of
    a document's generation time. ``random.choices(keys, cum_weights=...)`` with those same sums
    draws the same element from the same single ``random()`` call, so documents do not change
    (tests/envs/pii_redaction/test_faker_draws.py compares both over many seeds). A plain
    sequence is drawn with ``random.choice`` directly, as Faker ends up doing.
    """

    def random_element(elements: Any = ("a", "b", "c")) -> Any:
        kind = type(elements)
        if kind is tuple or kind is list or kind is str:
            return generator.random.choice(elements)  # what Faker does for a plain sequence
        if kind is not OrderedDict:
            return original(elements)
        entry = _CUMULATIVE.get(id(elements))
        if entry is None or entry[0] is not elements:
            entry = (elements, tuple(elements), list(accumulate(elements.values())))
            _CUMULATIVE[id(elements)] = entry
        return generator.random.choices(entry[1], cum_weights=entry[2])[0]

    return random_element


def pick(rng: Random, items: Sequence[T]) -> T:
    """Return one item of ``items`` chosen by ``rng``."""
    # Random.choice draws exactly as items[rng.randrange(len(items))] (one _randbelow(len)), faster.
    return rng.choice(items)


def between(rng: Random, first: date, last: date) -> date:
    """Return a date in ``[first, last]``."""
    return first + timedelta(days=rng.randrange((last - first).days + 1))


def event_date(rng: Random) -> date:
    """A non-birth date (signing, admission, log time) in the fixed event range."""
    return between(rng, EVENT_FIRST, EVENT_LAST)


def ordinal(n: int) -> str:
    """1 -> '1st', 22 -> '22nd'."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def fmt_date(d: date, style: int) -> str:
    """Format a date in one of seven common written styles."""
    styles = (
        f"{d.month:02d}/{d.day:02d}/{d.year}",
        f"{MONTHS[d.month - 1]} {d.day}, {d.year}",
        f"{d.isoformat()}",
        f"{d.day} {MONTHS[d.month - 1]} {d.year}",
        f"{d.month}/{d.day}/{d.year}",
        f"{MONTHS[d.month - 1][:3]} {d.day}, {d.year}",
        f"{d.day:02d}-{MONTHS[d.month - 1][:3]}-{d.year}",
    )
    return styles[style % len(styles)]


_STREET_BASES = (
    "Oak", "Maple", "Cedar", "Pine", "Elm", "Walnut", "Chestnut", "Willow", "Birch", "Hickory",
    "Lake", "Hill", "Park", "Main", "Church", "Mill", "River", "Sunset", "Highland", "Spring",
    "Ridge", "Meadow", "Forest", "Valley", "Orchard", "Harbor", "Prospect", "Franklin", "Lincoln",
    "Jefferson", "Madison", "Washington", "Adams", "Grant", "Union", "Liberty", "Center", "Market",
)  # fmt: skip
_SUFFIXES = (
    ("Street", "St."), ("Avenue", "Ave."), ("Road", "Rd."), ("Lane", "Ln."), ("Drive", "Dr."),
    ("Court", "Ct."), ("Boulevard", "Blvd."), ("Way", "Way"), ("Place", "Pl."), ("Terrace", "Ter."),
    ("Circle", "Cir."), ("Parkway", "Pkwy."),
)  # fmt: skip
_UNITS = ("Apt. {n}", "Apt {n}", "Unit {n}", "#{n}", "Suite {n}")
AREA_CODES = (
    "201", "206", "212", "213", "215", "224", "248", "267", "303", "305", "312", "317", "339",
    "347", "360", "402", "404", "408", "412", "415", "425", "469", "503", "510", "512", "516",
    "520", "559", "602", "608", "612", "614", "617", "646", "650", "702", "713", "718", "720",
    "732", "773", "802", "816", "857", "901", "917", "919", "949", "971", "978",
)  # fmt: skip
EMAIL_DOMAINS = (
    "gmail.com", "yahoo.com", "hotmail.com", "outlook.com", "icloud.com", "aol.com",
    "protonmail.com", "fastmail.com", "mail.com", "comcast.net", "verizon.net", "example.org",
)  # fmt: skip


@dataclass(frozen=True)
class Person:
    """A fictional person and every piece of personal data the templates may mention."""

    first: str
    last: str
    gender: str
    email_local: str
    email_domain: str
    phone_digits: str
    street: str
    unit: str
    city: str
    state: str
    zipcode: str
    dob: date
    ssn: str

    @property
    def name(self) -> str:
        """First and last name."""
        return f"{self.first} {self.last}"

    @property
    def email(self) -> str:
        """Plain e-mail address."""
        return f"{self.email_local}@{self.email_domain}"

    @property
    def title(self) -> str:
        """Courtesy title matching the person's gender."""
        return "Mr." if self.gender == "m" else "Ms."

    def phone(self, style: int) -> str:
        """The phone number in one of five common written styles."""
        a, b, c = self.phone_digits[:3], self.phone_digits[3:6], self.phone_digits[6:]
        styles = (f"({a}) {b}-{c}", f"{a}-{b}-{c}", f"{a}.{b}.{c}", f"+1 {a} {b} {c}", f"+1 ({a}) {b}-{c}")
        return styles[style % len(styles)]

    def ssn_text(self) -> str:
        """SSN as AAA-GG-SSSS."""
        return f"{self.ssn[:3]}-{self.ssn[3:5]}-{self.ssn[5:]}"

    def street_line(self) -> str:
        """Street address with the unit, if any."""
        return f"{self.street}, {self.unit}" if self.unit else self.street

    def address(self, sep: str = ", ") -> str:
        """Full address on one line (``sep`` is ', ') or on two (``sep`` is a newline)."""
        return f"{self.street_line()}{sep}{self.city}, {self.state} {self.zipcode}"


_KIN = {
    "m": ("husband", "son", "brother", "father", "partner", "friend"),
    "f": ("wife", "daughter", "sister", "mother", "partner", "friend"),
}


def relation(rng: Random, person: Person) -> str:
    """A family or household relation that fits ``person``'s gender."""
    return pick(rng, _KIN[person.gender])


def make_person(
    rng: Random,
    fake: Faker,
    *,
    dob_first: date = DOB_FIRST,
    dob_last: date = DOB_LAST,
    last: str | None = None,
    fictional: bool = False,
) -> Person:
    """Draw a fictional person; Faker supplies names and places, ``rng`` everything else.

    ``last`` fixes the surname (for surnames that are also ordinary words or eponyms). With
    ``fictional`` (eval documents) the first name and surname come from :func:`fictional_first`
    and :func:`fictional_surname` instead of Faker's lists, which training documents draw from:
    eval names are made up, combinatorial and practically never repeat from one document to the next.
    """
    gender = pick(rng, ("m", "f"))
    if fictional:
        first = fictional_first(rng, gender)
        last = fictional_surname(rng) if last is None else last
    else:
        first = fake.first_name_male() if gender == "m" else fake.first_name_female()
        last = fake.last_name() if last is None else last
    f, ln = first.lower(), last.lower()
    local = pick(
        rng,
        (f"{f}.{ln}", f"{f[0]}{ln}", f"{f}_{ln}{rng.randrange(10, 99)}", f"{f}{ln}", f"{f}.{ln[0]}", f"{ln}.{f}"),
    )
    full, abbr = pick(rng, _SUFFIXES)
    if fictional:  # eval streets are named after made-up words too ('4344 Drosimth Terrace')
        base = fictional_surname(rng) if rng.random() < 0.5 else fictional_place_surname(rng)
    elif rng.random() < 0.3:
        base = fake.last_name()
    else:
        base = pick(rng, _STREET_BASES)
    street = f"{rng.randrange(1, 9900)} {base} {full if rng.random() < 0.7 else abbr}"
    unit = pick(rng, _UNITS).format(n=rng.randrange(1, 40)) if rng.random() < 0.3 else ""
    area = pick(rng, AREA_CODES)
    phone = f"{area}{rng.randrange(200, 999)}{rng.randrange(10000):04d}"
    group = rng.randrange(1, 899)
    group = group + 1 if group == 666 else group
    ssn = f"{group:03d}{rng.randrange(1, 99):02d}{rng.randrange(1, 9999):04d}"
    return Person(
        first=first,
        last=last,
        gender=gender,
        email_local=local,
        email_domain=pick(rng, EMAIL_DOMAINS),
        phone_digits=phone,
        street=street,
        unit=unit,
        city=fake.city(),
        state=fake.state_abbr(include_territories=False, include_freely_associated_states=False),
        zipcode=fake.zipcode(),
        dob=between(rng, dob_first, dob_last),
        ssn=ssn,
    )


# Made-up names of the eval partition: syllables put together, never a name of Faker's en_US lists
# (what training documents use), so an eval name is new to a system fitted on training documents
# and, drawn from tens of thousands, rarely recurs between eval documents.
_ONSETS = (
    "B", "Br", "C", "Ch", "Cl", "D", "Dr", "F", "Fr", "G", "Gr", "H", "J", "K", "Kr", "L", "M", "N", "P",
    "Pr", "R", "S", "Sh", "St", "T", "Th", "Tr", "V", "W", "Z", "Al", "El", "Or", "Is", "Ul", "Ev",
)  # fmt: skip
_VOWELS = ("a", "e", "i", "o", "u", "a", "e", "o")
_MIDDLES = (
    "l", "n", "r", "v", "s", "m", "d", "b", "rv", "lv", "nd", "st", "rc", "lm", "sh", "z", "rn", "nt", "ld",
    "sk", "th", "ll", "ss", "tt",
)  # fmt: skip
_FIRST_ENDS = {
    "f": ("a", "ia", "ine", "elle", "etta", "ora", "ise", "wen", "yn", "issa", "ara", "ie", "anne", "ena"),
    "m": ("an", "or", "en", "us", "ick", "o", "ard", "in", "el", "ett", "on", "ias", "ert", "ric"),
}
_CODAS = (
    "rk", "nt", "ss", "ld", "th", "x", "ck", "rn", "st", "lt", "nd", "sk", "ft", "mb", "ng", "rth", "lk", "ns",
    "rd", "ph", "lm", "rv", "dge", "tch", "sh", "rl", "lf", "mp", "nk", "wk", "ll", "rg", "ct", "pt", "rz", "vn",
)  # fmt: skip
_SURNAME_ENDS = ("", "", "", "", "e", "er", "on", "ey", "a", "o", "y", "es", "is", "en")


@lru_cache(maxsize=1)
def _training_names() -> frozenset[str]:
    """Every first name and surname Faker's en_US lists hold (lower case): what eval names avoid."""
    from faker.providers.person.en_US import Provider

    lists = (Provider.first_names_male, Provider.first_names_female, Provider.last_names)
    return frozenset(name.lower() for names in lists for name in names)


def _syllables(rng: Random, ends: Sequence[str], avoid: Sequence[str] = ()) -> str:
    while True:
        name = f"{pick(rng, _ONSETS)}{pick(rng, _VOWELS)}{pick(rng, _MIDDLES)}{pick(rng, ends)}"
        if name.lower() not in _training_names() and name not in avoid:
            return name


def fictional_first(rng: Random, gender: str) -> str:
    """A made-up first name ('Torvan', 'Bralvine'), never one of Faker's."""
    return _syllables(rng, _FIRST_ENDS[gender])


def fictional_surname(rng: Random) -> str:
    """A made-up surname ('Kelvarkson', 'Drosimth'), never one of Faker's; its ending varies as much as its start."""
    while True:
        name = (
            f"{pick(rng, _ONSETS)}{pick(rng, _VOWELS)}{pick(rng, _MIDDLES)}{pick(rng, _VOWELS)}"
            f"{pick(rng, _CODAS)}{pick(rng, _SURNAME_ENDS)}"
        )
        if name.lower() not in _training_names():
            return name


_PLACE_HEADS = (
    "Ash", "Birch", "Fern", "Heather", "Moss", "Thorn", "Bramble", "Holly", "Alder", "Rowan", "Hazel", "Linden",
    "Sedge", "Reed", "Bracken", "Gorse", "Yew", "Sloe", "Elder", "Larch", "Rush", "Flint", "Chalk", "Slate",
    "Marl", "Clay", "Peat", "Wren", "Finch", "Lark", "Heron", "Kestrel", "Otter", "Badger", "Stoat", "Teal",
)  # fmt: skip
_PLACE_TAILS = (
    "brook", "field", "ford", "hill", "mere", "wood", "gate", "dale", "ley", "combe", "stead", "well", "worth",
    "thorpe", "haven", "moor", "bank", "croft", "holm", "hurst", "marsh", "shaw", "wick", "bourne", "cliffe",
)  # fmt: skip


def system_name(rng: Random) -> str:
    """The made-up records system an eval document cites ('crm-zolmonka'): one per document, not personal data."""
    kind = pick(rng, ("reg", "crm", "ehr", "rec", "db", "hub", "file", "dir", "kb", "ops"))
    return f"{kind}-{fictional_surname(rng).lower()}"


def fictional_place_surname(rng: Random) -> str:
    """A made-up surname that is also a place word ('Fernbrook', 'Slatecombe'), never one of Faker's."""
    while True:
        name = f"{pick(rng, _PLACE_HEADS)}{pick(rng, _PLACE_TAILS)}"
        if name.lower() not in _training_names():
            return name


def fictional_nickname(first: str, rng: Random) -> str:
    """A familiar form of a made-up first name: its first syllable and an ending ('Torvan' -> 'Torry')."""
    head = re.match(r"[^aeiou]*[aeiou]+[^aeiou]?", first)
    stem = head.group(0) if head else first[:3]
    return f"{stem}{pick(rng, ('y', 'ie', 'o', 'i', 'sy', 'ko'))}"


_BRAND_A = (
    "Blue", "Bright", "Harbor", "Summit", "Vector", "North", "Silver", "Granite", "Clear", "Cobalt",
    "Iron", "Pioneer", "Keystone", "Lumen", "Orbit", "Quarry", "Redwood", "Tandem", "Union", "Vista",
)  # fmt: skip
_BRAND_B = (
    "Systems", "Labs", "Analytics", "Logistics", "Health", "Networks", "Software", "Partners",
    "Dynamics", "Works", "Cloud", "Data", "Solutions", "Holdings", "Robotics", "Media",
)  # fmt: skip
_PRODUCTS = (
    "Atlas", "Beacon", "Cascade", "Drift", "Ember", "Falcon", "Glacier", "Helix", "Ion", "Juniper",
    "Kestrel", "Lattice", "Meridian", "Nimbus", "Onyx", "Prism", "Quill", "Relay", "Sable", "Tern",
)  # fmt: skip


def company(rng: Random, fake: Faker) -> str:
    """A company name (never personal data even when it contains a surname)."""
    if rng.random() < 0.4:
        return str(fake.company())
    suffix = pick(rng, ("Inc.", "LLC", "Corp.", "Ltd.", "Co."))
    return f"{pick(rng, _BRAND_A)}{pick(rng, ('', ' '))}{pick(rng, _BRAND_B)} {suffix}"


def brand(rng: Random) -> str:
    """A one-word brand for company or site names."""
    return f"{pick(rng, _BRAND_A)}{pick(rng, ('', '', 'ly', 'io'))}"


def product(rng: Random) -> str:
    """A product name with a version number."""
    return f"{pick(rng, _PRODUCTS)} {pick(rng, ('Pro', 'Cloud', 'Server', 'Suite', 'Edge'))} {version(rng)}"


def version(rng: Random) -> str:
    """A software version like 'v4.12.3'."""
    return f"{pick(rng, ('v', ''))}{rng.randrange(1, 12)}.{rng.randrange(0, 20)}.{rng.randrange(0, 30)}"


def code(rng: Random, prefix: str, digits: int) -> str:
    """A reference code like 'INC-004821'."""
    return f"{prefix}-{rng.randrange(10 ** (digits - 1), 10**digits)}"


def money(rng: Random, low: int, high: int) -> str:
    """An amount like '$12,500.00'."""
    return f"${rng.randrange(low, high) * 50:,}.00"


def ipv4(rng: Random) -> str:
    """An IPv4 address from a private or documentation range."""
    kind = rng.randrange(4)
    if kind == 0:
        return f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"
    if kind == 1:
        return f"192.168.{rng.randrange(256)}.{rng.randrange(1, 255)}"
    if kind == 2:
        return f"172.{rng.randrange(16, 32)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"
    return f"{pick(rng, ('203.0.113', '198.51.100', '192.0.2'))}.{rng.randrange(1, 255)}"


def mac(rng: Random) -> str:
    """A MAC address."""
    return ":".join(f"{rng.randrange(256):02x}" for _ in range(6))


def hostname(rng: Random) -> str:
    """An internal host name."""
    role = pick(rng, ("web", "api", "auth", "db", "cache", "worker", "edge", "mq"))
    return f"{role}-{rng.randrange(1, 30):02d}.{pick(rng, ('prod', 'stage', 'eu1', 'us2'))}.internal"


def hexid(rng: Random, n: int) -> str:
    """A lower-case hexadecimal id of ``n`` characters."""
    return "".join(pick(rng, "0123456789abcdef") for _ in range(n))


_ROLE_BOXES = (
    "support", "billing", "privacy", "security", "noreply", "no-reply", "help", "records",
    "appointments", "info", "accounts", "abuse", "referrals", "pharmacy",
)  # fmt: skip


def org_domain(rng: Random) -> str:
    """An organisation's e-mail domain, like 'summitlabs.com'."""
    return f"{pick(rng, _BRAND_A).lower()}{pick(rng, _BRAND_B).lower()}.{pick(rng, ('com', 'org', 'net'))}"


def role_mailbox(rng: Random, domain: str, boxes: Sequence[str] = _ROLE_BOXES) -> str:
    """A shared mailbox of an organisation ('billing@summitlabs.com'): not personal data."""
    return f"{pick(rng, boxes)}@{domain}"


def org_phone(rng: Random) -> str:
    """An organisation's switchboard, helpline or fax number: phone-shaped, not personal data."""
    area = pick(rng, ("800", "833", "844", "855", "866", "877", "888", *AREA_CODES[:12]))
    b, c = rng.randrange(200, 999), rng.randrange(10000)
    return pick(rng, (f"({area}) {b}-{c:04d}", f"{area}-{b}-{c:04d}", f"{area}.{b}.{c:04d}", f"1-{area}-{b}-{c:04d}"))
