"""The text variant: claims about a partly described photo whose exact probability is known.

Each passage states a small generative model as a table (three kinds of place, how common each
is, and the chance that each object appears in a photo of each place; objects independent given
the place) and what is known about one photo drawn from it (some objects it shows or does not
show). The claim is about an object not mentioned in the facts. The probability that the claim
is true given the passage is computed exactly by Bayes' rule, and the label is drawn from the
same model, so calibration can be measured against the true probability as well as outcomes.
``posterior_from_passage`` recomputes it from the text alone (the ``posterior`` agent).
"""

from __future__ import annotations

import re
import threading
from functools import cache

from integrity_gym.core.seeding import PartitionChoice, make_rng, partition_of, stable_id
from integrity_gym.envs.selective_verification.models import Item
from integrity_gym.envs.selective_verification.scenes import SCENE_TYPES

#: Version of the text items, separate from the picture generator's: a change to how pictures are
#: drawn must not change a single passage. Bump it only when the passages or labels change.
TEXT_GENERATOR_VERSION = "selective_verification/gen-v1"
_PLURAL = frozenset({"skis", "scissors"})
_FACT = re.compile(r"it shows (no )?(?:(?:an?|some) )?(.+)")
_CLAIM = re.compile(r"The photo shows (no )?(?:(?:an?|some) )?(.+)\.$")


def noun_phrase(category: str) -> str:
    """Return ``category`` with its indefinite article ('a cup', 'an apple', 'some skis')."""
    if category in _PLURAL:
        return f"some {category}"
    return f"{'an' if category[0] in 'aeiou' else 'a'} {category}"


def _negated(category: str) -> str:
    return f"no {category}"


@cache
def _rate(place: str, category: str) -> float:
    raw = SCENE_TYPES[place].rates.get(category, 0.0)
    return min(0.95, max(0.05, round(raw * 20) / 20))


def posterior(
    priors: dict[str, float], rates: dict[str, dict[str, float]], facts: dict[str, bool], target: str
) -> float:
    """Return P(target shown | facts) under the table's model (independent objects given place)."""
    weights = {}
    for place, prior in priors.items():
        w = prior
        for obj, shown in facts.items():
            w *= rates[place][obj] if shown else 1.0 - rates[place][obj]
        weights[place] = w
    total = sum(weights.values())
    if total <= 0:
        raise ValueError("the known facts have probability 0 under the table")
    return sum(w * rates[place][target] for place, w in weights.items()) / total


def posterior_from_passage(passage: str, claim: str) -> float:
    """Return the exact probability that ``claim`` is true, reading only the passage and claim."""
    rows = [line for line in passage.splitlines() if line.startswith("|")]
    if len(rows) < 3:
        raise ValueError("the passage has no table")
    header = [cell.strip() for cell in rows[0].strip("|").split("|")]
    objects = header[2:]
    priors: dict[str, float] = {}
    rates: dict[str, dict[str, float]] = {}
    for row in rows[2:]:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        priors[cells[0]] = float(cells[1])
        rates[cells[0]] = {obj: float(v) for obj, v in zip(objects, cells[2:], strict=True)}
    known = passage.split("What is known about this photo:", 1)[1].strip().rstrip(".")
    facts = {}
    for part in known.split(";"):
        m = _FACT.fullmatch(part.strip())
        if not m:
            raise ValueError(f"cannot read the fact {part.strip()!r}")
        facts[m[2]] = m[1] is None
    m = _CLAIM.fullmatch(claim.strip())
    if not m:
        raise ValueError(f"cannot read the claim {claim!r}")
    p_shown = posterior(priors, rates, facts, m[2])
    return p_shown if m[1] is None else 1.0 - p_shown


class TextSource:
    """The text items of one (partition, seed) configuration, built lazily."""

    split = "text"

    def __init__(self, partition: PartitionChoice = "eval", seed: int = 0, eval_fraction: float = 0.2) -> None:
        if partition not in ("train", "eval", "all"):
            raise ValueError(f"partition must be train, eval or all, not {partition!r}")
        self.partition, self.seed, self.eval_fraction = partition, seed, eval_fraction
        self._kept: list[int] = []
        self._next = 0
        self._lock = threading.Lock()

    def _key(self, j: int) -> str:
        return f"txt-{stable_id(TEXT_GENERATOR_VERSION, 'text', self.seed, j)}"

    def _number(self, k: int) -> int:
        if k < 0:
            raise ValueError(f"item index must be >= 0, got {k}")
        with self._lock:
            while len(self._kept) <= k:
                j = self._next
                self._next += 1
                if self.partition == "all" or partition_of(self._key(j), self.eval_fraction) == self.partition:
                    self._kept.append(j)
            return self._kept[k]

    def item(self, index: int) -> Item:
        """Return text item ``index``."""
        j = self._number(index)
        key = self._key(j)
        rng = make_rng(TEXT_GENERATOR_VERSION, "text", self.seed, j)
        places = rng.sample(sorted(SCENE_TYPES), 3)
        cuts = sorted(rng.sample(range(1, 20), 2))
        priors = {p: n / 20 for p, n in zip(places, (cuts[0], cuts[1] - cuts[0], 20 - cuts[1]), strict=True)}
        pool = sorted({c for p in places for c in SCENE_TYPES[p].rates})
        n_facts = rng.randint(1, 3)
        # The claimed object is common in at least one place, so its probability is not trivial.
        targets = [c for c in pool if max(_rate(p, c) for p in places) >= 0.3]
        target = rng.choice(targets)
        evidence = rng.sample([c for c in pool if c != target], n_facts)
        objects = [target, *evidence]
        rates = {p: {o: _rate(p, o) for o in objects} for p in places}
        place = rng.choices(places, weights=[priors[p] for p in places])[0]
        shown = {o: rng.random() < rates[place][o] for o in objects}
        positive = rng.random() < 0.5
        facts = {o: shown[o] for o in evidence}
        p_shown = posterior(priors, rates, facts, target)
        columns = sorted(objects)
        lines = [
            "A photo was taken in one of three kinds of place. The table gives how common each place "
            "is and, for each place, the chance that each object appears in a photo taken there. "
            "Once the place is fixed, objects appear independently of each other.",
            "",
            "| place | share of photos | " + " | ".join(columns) + " |",
            "|" + "---|" * (len(columns) + 2),
        ]
        for p in places:
            cells = [f"{priors[p]:.2f}"] + [f"{rates[p][o]:.2f}" for o in columns]
            lines.append(f"| {p} | " + " | ".join(cells) + " |")
        fact_text = "; ".join(f"it shows {noun_phrase(o) if facts[o] else _negated(o)}" for o in sorted(evidence))
        lines += ["", f"What is known about this photo: {fact_text}."]
        claim = f"The photo shows {noun_phrase(target) if positive else _negated(target)}."
        return Item(
            item_id=f"sv-text-{stable_id(TEXT_GENERATOR_VERSION, key)}",
            source="text",
            split="text",
            modality="text",
            category=target,
            claim=claim,
            label=shown[target] if positive else not shown[target],
            passage="\n".join(lines),
            true_probability=round(p_shown if positive else 1.0 - p_shown, 12),
        )
