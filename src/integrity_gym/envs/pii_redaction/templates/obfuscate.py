"""Obfuscated renderings of personal data for the hard tier.

Each function returns the whole obfuscated phrase; the generator labels the entire phrase as one
entity (for example ``area code four one five, then 555 0187`` is a single PHONE span).
"""

from __future__ import annotations

from datetime import date
from random import Random

from integrity_gym.envs.pii_redaction.templates.common import MONTHS, pick

DIGITS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
_TEENS = (
    "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
    "eighteen", "nineteen",
)  # fmt: skip
_TENS = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_ORDINALS = (
    "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth",
    "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth", "seventeenth",
    "eighteenth", "nineteenth", "twentieth",
)  # fmt: skip
# Latin letter -> visually identical Cyrillic letter (one code point each, so offsets hold).
HOMOGLYPHS = {"a": "а", "e": "е", "o": "о", "c": "с", "p": "р", "x": "х", "y": "у", "i": "і"}


def two_digit_words(n: int) -> str:
    """0..99 in words ('oh-five' style is left to callers)."""
    if n < 10:
        return DIGITS[n]
    if n < 20:
        return _TEENS[n - 10]
    tens, unit = divmod(n, 10)
    return _TENS[tens] if unit == 0 else f"{_TENS[tens]}-{DIGITS[unit]}"


def year_words(year: int) -> str:
    """1981 -> 'nineteen eighty-one'; 2004 -> 'two thousand four'."""
    if 2000 <= year < 2010:
        return "two thousand" if year == 2000 else f"two thousand {DIGITS[year - 2000]}"
    high, low = divmod(year, 100)
    if low == 0:
        return f"{two_digit_words(high)} hundred"
    if low < 10:
        return f"{two_digit_words(high)} oh {DIGITS[low]}"
    return f"{two_digit_words(high)} {two_digit_words(low)}"


def ordinal_words(day: int) -> str:
    """3 -> 'third', 21 -> 'twenty-first'."""
    if day <= 20:
        return _ORDINALS[day - 1]
    tens, unit = divmod(day, 10)
    if unit == 0:
        return "thirtieth" if tens == 3 else "twentieth"
    return f"{_TENS[tens]}-{_ORDINALS[unit - 1]}"


def _digit_word(d: str, rng: Random) -> str:
    if d == "0":
        return "oh" if rng.random() < 0.65 else "zero"
    return DIGITS[int(d)]


def _groups(digits: str, sizes: tuple[int, ...]) -> list[str]:
    out, pos = [], 0
    for size in sizes:
        out.append(digits[pos : pos + size])
        pos += size
    return out


def spoken_digits(digits: str, rng: Random, sizes: tuple[int, ...]) -> str:
    """Digits as words, grouped: 'four one five, five five five, oh one eight seven'."""
    sep = pick(rng, (", ", " - ", " ", "... "))
    inner = pick(rng, (" ", " ", "-"))
    return sep.join(inner.join(_digit_word(d, rng) for d in g) for g in _groups(digits, sizes))


def mixed_digits(digits: str, rng: Random, sizes: tuple[int, ...]) -> str:
    """Digits and words mixed: '4-one-5 5-5-five oh-1-8-7' (at least one of each)."""
    while True:
        tokens = [[_digit_word(d, rng) if rng.random() < 0.5 else d for d in g] for g in _groups(digits, sizes)]
        flat = [t for g in tokens for t in g]
        if any(t.isdigit() for t in flat) and any(not t.isdigit() for t in flat):
            return pick(rng, (" ", ", ")).join("-".join(g) for g in tokens)


def area_code_phrase(digits: str, rng: Random) -> str:
    """'area code four one five, then 555 0187' and variants (the whole phrase is the entity)."""
    area = " ".join(_digit_word(d, rng) for d in digits[:3]) if rng.random() < 0.7 else digits[:3]
    if rng.random() < 0.5:
        rest = f"{digits[3:6]} {digits[6:]}"
    else:
        rest = ", ".join(" ".join(_digit_word(d, rng) for d in part) for part in (digits[3:6], digits[6:]))
    joiner = pick(rng, (", then ", " then ", ", and then ", ", number is "))
    return f"area code {area}{joiner}{rest}"


def phone_obfuscated(digits: str, rng: Random) -> str:
    """One of the obfuscated phone styles."""
    style = rng.randrange(5)
    if style == 4:
        a, b, c = digits[:3], digits[3:6], digits[6:]
        return pick(rng, (f"{a}/{b}/{c}", f"({a}){b}{c}", f"{a} {b}{c}", f"{a}{b}{c}", f"{a}_{b}_{c}"))
    if style == 0:
        return spoken_digits(digits, rng, (3, 3, 4))
    if style == 1:
        return mixed_digits(digits, rng, (3, 3, 4))
    if style == 2:
        return area_code_phrase(digits, rng)
    return f"{digits[:3]} {digits[3:6]} {' '.join(_digit_word(d, rng) for d in digits[6:])}"


def ssn_obfuscated(ssn: str, rng: Random) -> str:
    """One of the obfuscated SSN styles."""
    style = rng.randrange(3)
    if style == 0:
        return spoken_digits(ssn, rng, (3, 2, 4))
    if style == 1:
        return mixed_digits(ssn, rng, (3, 2, 4))
    return f"{ssn[:3]} {ssn[3:5]} {ssn[5:]}"


def email_obfuscated(local: str, domain: str, rng: Random) -> str:
    """'jane dot doe at gmail dot com', 'jane.doe [at] gmail [dot] com', '(at)(dot)', homoglyphs..."""
    style = rng.randrange(6)
    name, _, tld = domain.rpartition(".")
    if style == 0:
        return f"{local.replace('.', ' dot ')} at {name.replace('.', ' dot ')} dot {tld}"
    if style == 1:
        return f"{local} [at] {name} [dot] {tld}"
    if style == 2:
        return f"{local}(at){name}(dot){tld}"
    if style == 3:
        return f"{local} AT {name} DOT {tld}"
    if style == 4:
        return f"{local} {{at}} {name} {{dot}} {tld}"
    return homoglyph(f"{local}@{domain}", rng)


def casual(text: str) -> str:
    """How people type in chat: lower case, no commas or full stops."""
    return text.lower().replace(",", "").replace(".", "")


def homoglyph(text: str, rng: Random) -> str:
    """Swap one or two Latin letters for look-alike Cyrillic ones (length unchanged)."""
    spots = [i for i, ch in enumerate(text) if ch in HOMOGLYPHS]
    if not spots:
        return text
    chosen = set(rng.sample(spots, min(len(spots), rng.randrange(1, 3))))
    return "".join(HOMOGLYPHS[ch] if i in chosen else ch for i, ch in enumerate(text))


def dob_obfuscated(d: date, rng: Random) -> str:
    """Ordinal and spoken birth dates: 'the third of March, nineteen eighty-one', 'March 3rd, 1981'..."""
    month = MONTHS[d.month - 1]
    day_suffix = "th" if 10 <= d.day % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(d.day % 10, "th")
    style = rng.randrange(5)
    if style == 0:
        return f"the {ordinal_words(d.day)} of {month}, {year_words(d.year)}"
    if style == 1:
        return f"{month} {d.day}{day_suffix}, {d.year}"
    if style == 2:
        return f"{d.day}{day_suffix} of {month} {d.year}"
    if style == 3:
        return f"{month} the {ordinal_words(d.day)}, {year_words(d.year)}"
    month_words = f"oh-{DIGITS[d.month]}" if d.month < 10 else two_digit_words(d.month)
    day_words = f"oh-{DIGITS[d.day]}" if d.day < 10 else two_digit_words(d.day)
    yy = d.year % 100
    year_part = f"oh-{DIGITS[yy]}" if yy < 10 else two_digit_words(yy)
    return f"{month_words} slash {day_words} slash {year_part}"


def break_line(text: str, rng: Random) -> str:
    """Replace one inner space with a line break (the entity then spans two lines)."""
    spaces = [i for i, ch in enumerate(text) if ch == " " and 0 < i < len(text) - 1]
    if not spaces:
        return text
    i = pick(rng, spaces)
    return f"{text[:i]}\n{text[i + 1 :]}"
