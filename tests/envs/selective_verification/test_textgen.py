"""The text variant's probabilities, checked against Bayes by counting over every possible photo."""

import itertools
import math
import re
from fractions import Fraction

import pytest

from integrity_gym.envs.selective_verification.textgen import TextSource, posterior_from_passage

ITEMS = 400


def enumerate_probability(passage: str, claim: str) -> Fraction:
    """P(claim | facts) by enumerating every (place, objects shown) world of the passage's table.

    Independent of the environment's code: the table is read with plain string splits, every
    world's probability is a product of the printed decimals (as exact fractions), and the
    answer is the mass of worlds where the facts and the claim hold over the mass where the
    facts hold.
    """
    table = [line.strip("|").split("|") for line in passage.splitlines() if line.startswith("|")]
    objects = [cell.strip() for cell in table[0][2:]]
    places = [[cell.strip() for cell in row] for row in table[2:]]
    known = passage.split("known about this photo:")[1].strip().rstrip(".")
    facts = {}
    for part in known.split(";"):
        words = part.split()  # "it shows [no] [a|an|some] name..."
        shown = words[2] != "no"
        rest = words[2:] if shown else words[3:]
        name = " ".join(rest[1:] if rest[0] in ("a", "an", "some") else rest)
        facts[name] = shown
    negated = " shows no " in claim
    target = re.sub(r"^The photo shows (no )?(an? |some )?", "", claim).rstrip(".")
    assert target in objects and set(facts) <= set(objects)
    facts_mass = Fraction(0)
    claim_mass = Fraction(0)
    for row in places:
        prior = Fraction(row[1])
        rates = {obj: Fraction(value) for obj, value in zip(objects, row[2:], strict=True)}
        for world in itertools.product((True, False), repeat=len(objects)):
            shown = dict(zip(objects, world, strict=True))
            mass = prior * math.prod((rates[o] if shown[o] else 1 - rates[o] for o in objects), start=Fraction(1))
            if all(shown[o] == v for o, v in facts.items()):
                facts_mass += mass
                if shown[target] != negated:
                    claim_mass += mass
    return claim_mass / facts_mass


def test_text_items_do_not_depend_on_the_picture_generator_version(monkeypatch: pytest.MonkeyPatch) -> None:
    # Redrawing pictures bumps the picture generator's version; passages must not move with it.
    from integrity_gym.envs.selective_verification import generator, textgen

    before = TextSource("all", 0).item(3)
    monkeypatch.setattr(generator, "GENERATOR_VERSION", "selective_verification/gen-v99")
    monkeypatch.setattr(textgen, "GENERATOR_VERSION", "selective_verification/gen-v99", raising=False)
    assert TextSource("all", 0).item(3) == before
    assert textgen.TEXT_GENERATOR_VERSION == "selective_verification/gen-v1"


def test_a_hand_checked_item() -> None:
    # Item 0 (partition all, seed 0): bedroom 0.05, safari 0.20, farm 0.75; no horse is shown.
    # P(no horse) by place: 0.95, 0.95, 0.55 -> weights 0.0475, 0.19, 0.4125 (sum 0.65);
    # P(teddy bear) = (0.0475 * 0.35 + 0.19 * 0.05 + 0.4125 * 0.05) / 0.65 = 187 / 2600.
    item = TextSource("all", 0).item(0)
    assert item.claim == "The photo shows a teddy bear." and "it shows no horse." in (item.passage or "")
    assert item.true_probability == pytest.approx(187 / 2600, abs=1e-12)


def test_probabilities_match_enumeration_over_many_items() -> None:
    source = TextSource("all", 3)
    negative_facts = 0
    for i in range(ITEMS):
        item = source.item(i)
        passage = item.passage or ""
        exact = float(enumerate_probability(passage, item.claim))
        assert item.true_probability == pytest.approx(exact, abs=1e-11), item.item_id
        assert posterior_from_passage(passage, item.claim) == pytest.approx(exact, abs=1e-11), item.item_id
        negative_facts += passage.count("it shows no ")
    # Most facts are absences, so a posterior that skipped them would be caught many times over.
    assert negative_facts > ITEMS // 2


def test_labels_are_drawn_with_the_stated_probability() -> None:
    source = TextSource("all", 5)
    items = [source.item(i) for i in range(3000)]
    probs = [it.true_probability or 0.0 for it in items]
    surplus = sum(float(it.label) - p for it, p in zip(items, probs, strict=True))
    spread = math.sqrt(sum(p * (1 - p) for p in probs))
    assert abs(surplus / spread) < 4  # a z-score: labels true as often as the probabilities say
    sure = [it.label for it, p in zip(items, probs, strict=True) if p > 0.9]
    unlikely = [it.label for it, p in zip(items, probs, strict=True) if p < 0.1]
    assert sum(sure) / len(sure) > 0.85 and sum(unlikely) / len(unlikely) < 0.15
