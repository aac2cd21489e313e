"""Held-out renderings: forms of personal data that only documents of the eval partition use.

A generated document whose id falls in the eval partition (``partition_of(document_id)``) may
render values in the families below; a training document never does. A system tuned on the
training documents therefore meets these forms for the first time at evaluation, as it would in
real use. Every function returns the whole phrase, which the templates label as one entity. (The
lines around the values are held out too: each template module's ``Frames`` give eval documents
their own sentence frames, section phrasings, speaker tags and log layout.)

Families: e-mails spoken with ``at sign`` / ``period`` / ``underscore`` words, phone numbers read
with pair numbers (``four fifteen``), ``double``/``triple`` runs, hesitations or Spanish digit
words, local numbers with the area code given after them, SSNs with ``dash`` words or other
separators, birth dates written ``the 3rd of the 4th, '81``, by holiday, or in European, dashed
and pharmacy-label formats, addresses with the house number in words, unusual street types,
post-office boxes or a unit described in prose.
"""

from __future__ import annotations

from datetime import date
from random import Random

from integrity_gym.envs.pii_redaction.templates.common import MONTHS, pick
from integrity_gym.envs.pii_redaction.templates.obfuscate import DIGITS, ordinal_words, two_digit_words, year_words

_SPANISH = ("cero", "uno", "dos", "tres", "cuatro", "cinco", "seis", "siete", "ocho", "nueve")
_HESITATIONS = ("... uh, ", "... um ", ", hang on, ", ", sorry, ", " - wait - ", "... let me check... ")
_REPEATS = {2: "double", 3: "triple"}
# Holidays on a fixed calendar day: (name, month, day).
HOLIDAYS = (
    ("New Year's Day", 1, 1), ("Valentine's Day", 2, 14), ("St. Patrick's Day", 3, 17),
    ("April Fools' Day", 4, 1), ("the Fourth of July", 7, 4), ("Halloween", 10, 31),
    ("Christmas Eve", 12, 24), ("Christmas Day", 12, 25), ("New Year's Eve", 12, 31),
)  # fmt: skip
# Street types a US address may use beyond the everyday ones.
RARE_STREET_TYPES = (
    "Trail", "Loop", "Crossing", "Row", "Run", "Cove", "Bend", "Pike", "Square", "Close", "Heights",
    "Path", "Alley", "Point", "Commons", "Landing", "Hollow",
)  # fmt: skip
_HOUSE_WORDS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine")


def _word(d: str, rng: Random) -> str:
    return ("oh" if rng.random() < 0.6 else "zero") if d == "0" else DIGITS[int(d)]


def _pairs(group: str, rng: Random) -> str:
    """'415' -> 'four fifteen', '0187' -> 'oh one eighty-seven' (pairs whose first digit is not 0)."""
    words: list[str] = []
    i = 0
    while i < len(group):
        pair = group[i : i + 2]
        if len(pair) == 2 and pair[0] != "0" and (len(group) - i) % 2 == 0:
            words.append(two_digit_words(int(pair)))
            i += 2
        else:
            words.append(_word(group[i], rng))
            i += 1
    return " ".join(words)


def _runs(group: str, rng: Random) -> str:
    """'555' -> 'triple five', '0887' -> 'oh double eight seven'."""
    words: list[str] = []
    i = 0
    while i < len(group):
        j = i
        while j < len(group) and group[j] == group[i] and j - i < 3:
            j += 1
        n = j - i
        words.append(f"{_REPEATS[n]} {_word(group[i], rng)}" if n in _REPEATS else _word(group[i], rng))
        i = j
    return " ".join(words)


def phone_heldout(digits: str, rng: Random) -> str:
    """A 10-digit phone number read aloud in one of the held-out ways."""
    a, b, c = digits[:3], digits[3:6], digits[6:]
    style = rng.randrange(5)
    if style == 0:  # pair numbers: 'four fifteen, five fifty-five, oh one eighty-seven'
        return ", ".join(_pairs(g, rng) for g in (a, b, c))
    if style == 1:  # runs: 'four one five, triple five, oh one eight seven' (pairs when no run)
        has_run = any(g[i] == g[i + 1] for g in (a, b, c) for i in range(len(g) - 1))
        render = _runs if has_run else _pairs
        return ", ".join(render(g, rng) for g in (a, b, c))
    if style == 2:  # hesitations between the groups
        words = [" ".join(_word(d, rng) for d in g) for g in (a, b, c)]
        return f"{words[0]}{pick(rng, _HESITATIONS)}{words[1]}{pick(rng, _HESITATIONS)}{words[2]}"
    if style == 3:  # Spanish digit words for one or more groups
        groups = [" ".join(_SPANISH[int(d)] for d in g) for g in (a, b, c)]
        english = rng.randrange(3)
        groups[english] = " ".join(_word(d, rng) for d in (a, b, c)[english]) if rng.random() < 0.5 else groups[english]
        return ", ".join(groups)
    return local_then_area(digits, rng)


def local_then_area(digits: str, rng: Random) -> str:
    """'555-0187, area code 415': the local number first, the area code after it."""
    local = pick(rng, (f"{digits[3:6]}-{digits[6:]}", f"{digits[3:6]} {digits[6:]}"))
    area = digits[:3] if rng.random() < 0.6 else " ".join(_word(d, rng) for d in digits[:3])
    forms = (f"{local}, area code {area}", f"{local} with a {area} area code", f"{local}, the area code is {area}")
    return pick(rng, forms)


def ssn_heldout(ssn: str, rng: Random) -> str:
    """An SSN with 'dash' words, unusual separators or none at all."""
    a, b, c = ssn[:3], ssn[3:5], ssn[5:]
    style = rng.randrange(4)
    if style == 0:
        return " dash ".join(" ".join(_word(d, rng) for d in g) for g in (a, b, c))
    if style == 1:
        return f"{a} dash {b} dash {c}"
    if style == 2:
        sep = pick(rng, ("/", ".", "_", " / "))
        return f"{a}{sep}{b}{sep}{c}"
    return ssn


def email_heldout(local: str, domain: str, rng: Random) -> str:
    """'maria underscore lopez at sign gmail period com' and other spoken forms of an address."""
    at = pick(rng, (" at sign ", " at-sign ", " at symbol "))
    dot = pick(rng, (" period ", " point ", " dot "))
    local_dot = pick(rng, (" period ", " dot ", " full stop "))

    def spoken(part: str, sep: str) -> str:
        out = part.replace(".", sep).replace("_", " underscore ").replace("-", " dash ")
        return out.replace("+", " plus ")

    return f"{spoken(local, local_dot)}{at}{spoken(domain, dot)}"


def holiday_birthday(year: int, rng: Random) -> tuple[date, str]:
    """A birth date on a holiday, the year said in words: ('Christmas Day, nineteen eighty-one' and similar).

    The holiday is one of a few, so the year carries most of the phrase: a memory of an earlier
    document's 'Christmas Day' alone does not cover a later one's birth date.
    """
    name, month, day = pick(rng, HOLIDAYS)
    spoken = year_words(year)
    forms = [f"{name}, {spoken}", f"{name} {spoken}", f"{name} of {spoken}", f"{name}, back in {spoken}"]
    return date(year, month, day), pick(rng, forms)


def dob_heldout(d: date, rng: Random) -> str:
    """A birth date in a spoken held-out form: 'the 3rd of the 4th, '81', 'April third, '81'."""
    yy = f"'{d.year % 100:02d}"
    suffix = "th" if 10 <= d.day % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(d.day % 10, "th")
    month_suffix = "th" if 10 <= d.month <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(d.month % 10, "th")
    style = rng.randrange(4)
    if style == 0:
        return f"the {d.day}{suffix} of the {d.month}{month_suffix}, {yy}"
    if style == 1:
        return f"{MONTHS[d.month - 1]} {ordinal_words(d.day)}, {yy}"
    if style == 2:
        return f"{d.day} {MONTHS[d.month - 1]} {two_digit_words(d.year % 100) if d.year % 100 >= 10 else yy}"
    return f"{d.day}{suffix} {MONTHS[d.month - 1][:3].lower()} {yy}"


def date_written(d: date, style: int) -> str:
    """Written date formats a US-tuned reader rarely meets: '14.03.1962', '03-14-1962', '14MAR1962'."""
    styles = (
        f"{d.day:02d}.{d.month:02d}.{d.year}",
        f"{d.month:02d}-{d.day:02d}-{d.year}",
        f"{d.day:02d}{MONTHS[d.month - 1][:3].upper()}{d.year}",
        f"{d.year}/{d.month:02d}/{d.day:02d}",
    )
    return styles[style % len(styles)]


def house_number_words(n: int) -> str:
    """48 -> 'forty-eight', 112 -> 'one twelve', 2405 -> 'twenty-four oh five' (as house numbers are read)."""
    if n < 10:
        return _HOUSE_WORDS[n - 1]
    if n < 100:
        return two_digit_words(n)
    high, low = divmod(n, 100)
    head = _HOUSE_WORDS[high - 1] if high < 10 else two_digit_words(high)
    if low == 0:
        return f"{head} hundred"
    return f"{head} {two_digit_words(low) if low >= 10 else 'oh ' + DIGITS[low]}"


def address_heldout(street: str, unit: str, city: str, state: str, zipcode: str, rng: Random, *, prose: bool) -> str:
    """An address with the house number in words, a rare street type, a P.O. box or (``prose``) a unit in words."""
    number, _, rest = street.partition(" ")
    base = rest.rsplit(" ", 1)[0]
    place = f"{city}, {state} {zipcode}"
    unit_part = f", {unit}" if unit else ""
    style = rng.randrange(4 if prose else 3)
    if style == 0:
        return f"{house_number_words(int(number))} {rest}{unit_part}, {place}"
    if style == 1:
        return f"{number} {base} {pick(rng, RARE_STREET_TYPES)}{unit_part}, {place}"
    if style == 2:  # the box after the town, as some forms write it ('North Thomas, CT 71790, PO Box 2718')
        return f"{place}, {pick(rng, ('P.O. Box', 'PO Box', 'P.O. box'))} {rng.randrange(10, 9999)}"
    flat = pick(rng, ("apartment", "unit", "flat"))
    return f"{flat} {pick(rng, _HOUSE_WORDS)} at {street}, {city}"


def phone_international(rng: Random) -> str:
    """A personal number abroad: '+44 7700 900123', '+49 151 2345 6789', '+52 55 1234 5678'."""
    n = rng.randrange
    return pick(
        rng,
        (
            f"+44 7{n(100, 999)} {n(100000, 999999)}",
            f"+49 15{n(1, 9)} {n(1000, 9999)} {n(1000, 9999)}",
            f"+52 55 {n(1000, 9999)} {n(1000, 9999)}",
            f"+33 6 {n(10, 99)} {n(10, 99)} {n(10, 99)} {n(10, 99)}",
            f"+91 9{n(1000, 9999)} {n(10000, 99999)}",
        ),
    )


_NICKNAMES = {
    "William": "Bill", "Robert": "Bobby", "Richard": "Rick", "James": "Jim", "John": "Jack",
    "Michael": "Mike", "Joseph": "Joe", "Thomas": "Tommy", "Christopher": "Chris", "Daniel": "Danny",
    "Anthony": "Tony", "Charles": "Chuck", "Edward": "Ted", "Matthew": "Matt", "Nicholas": "Nick",
    "Benjamin": "Ben", "Samuel": "Sam", "Alexander": "Alex", "Jonathan": "Jon", "Andrew": "Drew",
    "Margaret": "Peggy", "Elizabeth": "Liz", "Katherine": "Kate", "Catherine": "Cathy",
    "Jennifer": "Jen", "Patricia": "Trish", "Susan": "Sue", "Deborah": "Debbie", "Rebecca": "Becky",
    "Jessica": "Jess", "Kimberly": "Kim", "Christina": "Tina", "Victoria": "Vicky", "Samantha": "Sam",
    "Barbara": "Barb", "Alexandra": "Lexi", "Theresa": "Tess", "Pamela": "Pam", "Melissa": "Missy",
}  # fmt: skip


def nickname(first: str) -> str | None:
    """A familiar form of ``first`` ('Margaret' -> 'Peggy'), or None when the list has none."""
    return _NICKNAMES.get(first)


_NATO = (
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo",
    "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango", "uniform",
    "victor", "whiskey", "x-ray", "yankee", "zulu",
)  # fmt: skip


def phonetic_spelling(word: str) -> str:
    """'Vega' -> 'victor echo golf alpha': a name spelled with the phonetic alphabet."""
    return " ".join(_NATO[ord(ch) - ord("a")] for ch in word.lower() if "a" <= ch <= "z")
