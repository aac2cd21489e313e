"""Seeded generator of scenarios: unlimited, label-balanced, fictional, partitioned.

An item depends on ``(GENERATOR_VERSION, tier, partition, seed)`` only. The label is drawn
uniformly first; then a *plan* (the status each claim must end up with, under a harm level the
topic family allows) is chosen, facts are drawn to realise it, and the result is checked with
the published rule — so a generated label is always ``decide(aggregate(facts))``.

Hardness axes, by tier: reliability conflicts (low-reliability sources against trusted ones),
partial truth, unknown verdicts settled by weighing sources, outdated sources, satire, conflicts
between trusted sources, harm-dependent policy, several claims per post, shuffled and opaque ids.
Train and eval use disjoint topic families and are written in disjoint words (``surface``: source
phrasings, titles, posts, outlet names), so an eval item's topic and wording are never seen in
training; only the rules carry over.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass
from typing import Any

from integrity_gym.core.seeding import Partition, make_rng
from integrity_gym.envs.information_integrity import rules
from integrity_gym.envs.information_integrity.models import (
    DECISIONS,
    DIFFICULTIES,
    ClaimFact,
    Decision,
    Difficulty,
    Harm,
    Scenario,
    SourceFact,
    SourceType,
    Stance,
)
from integrity_gym.envs.information_integrity.rules import Status
from integrity_gym.envs.information_integrity.surface import SURFACES, Surface

GENERATOR_VERSION = 3


@dataclass(frozen=True)
class Family:
    """A topic family: how to fill claim templates, and which harm levels the topic can carry."""

    name: str
    topic: str
    harms: tuple[Harm, ...]
    slots: dict[str, tuple[str, ...]]
    claims: tuple[str, ...]


TRAIN_FAMILIES: tuple[Family, ...] = (
    Family(
        "remedy",
        "home remedy for {illness}",
        ("medium", "high"),
        {
            "product": ("kelpwort tea", "silver-fern tonic", "Brightroot capsules", "marsh-salt rinse", "Oxavel drops"),
            "illness": ("seasonal flu", "type 2 diabetes", "migraine", "asthma", "chronic back pain"),
            "clinic": ("Vantry General Hospital", "the Orlen Clinic", "Saint Idris Medical Centre"),
        },
        (
            "{product} cures {illness} within a week",
            "doctors at {clinic} now prescribe {product} instead of standard treatment for {illness}",
            "{product} has no side effects, even for small children",
            "{product} was tested on two thousand patients with {illness} last spring",
        ),
    ),
    Family(
        "town_statistics",
        "local statistics in {town}",
        ("low", "medium"),
        {
            "town": ("Harrowgate", "Lindqvist Bay", "Port Emberly", "Caldmoor", "Westhollow"),
            "metric": ("burglaries", "rents", "bus fares", "school closures", "hospital waiting times"),
            "number": ("40", "65", "120", "200"),
        },
        (
            "{metric} in {town} went up by {number} percent in a single year",
            "{town} now has the highest {metric} in the whole region",
            "the council of {town} stopped publishing figures on {metric}",
            "{town} recorded its lowest {metric} in a decade",
        ),
    ),
    Family(
        "space_science",
        "an astronomy announcement about {body}",
        ("low", "medium"),
        {
            "body": ("the dwarf planet Quessa", "comet Varga-7", "the moon Telmar", "asteroid 4471 Ostrin"),
            "observatory": ("the Hallbjorn Observatory", "the Kestrel Array", "the Mount Aubin telescope"),
        },
        (
            "{observatory} found liquid water beneath the surface of {body}",
            "{body} will pass close enough to Earth next month to be seen in daylight",
            "{observatory} lost contact with its probe orbiting {body}",
            "{body} has a thin atmosphere that contains oxygen",
        ),
    ),
    Family(
        "banking",
        "rumours about {bank}",
        ("medium", "high"),
        {
            "bank": ("Corran Mutual", "the Pellworth Savings Bank", "Stellan Credit Union", "Aldane Trust"),
            "day": ("Friday", "Monday", "the first of next month"),
        },
        (
            "{bank} will freeze every savings account on {day}",
            "{bank} has lost its banking licence",
            "{bank} is charging a fee on every cash withdrawal from {day}",
            "{bank} was fined for hiding losses from its customers",
        ),
    ),
    Family(
        "transport",
        "transport news about the {bridge}",
        ("low", "medium"),
        {
            "bridge": ("Oakhaven Bridge", "Saltmarsh Crossing", "Ferrow Viaduct", "Millbeck Tunnel"),
            "line": ("Amber line", "Riverside line", "Northern Loop"),
        },
        (
            "the {bridge} will close permanently next month",
            "trains on the {line} are free of charge every weekend",
            "the {bridge} failed its last safety inspection",
            "the {line} will be replaced by a bus service in the autumn",
        ),
    ),
    Family(
        "sport",
        "sports gossip about {club}",
        ("low", "medium"),
        {
            "club": ("Caldmoor Rovers", "the Lindqvist Herons", "FC Westhollow", "the Port Emberly Mariners"),
            "player": ("Tamsin Oyelaran", "Dario Vesk", "Ilse Marchetti", "Kofi Brandtner"),
        },
        (
            "{player} has been banned for life from professional play",
            "{club} was sold to an overseas investor for one pound",
            "{player} tested positive for a banned stimulant",
            "{club} will leave its home ground at the end of the season",
        ),
    ),
)

EVAL_FAMILIES: tuple[Family, ...] = (
    Family(
        "food_safety",
        "a food safety warning about {brand} {food}",
        ("medium", "high"),
        {
            "brand": ("Greymeadow", "Sunfold", "Halden Farms", "Little Orchard"),
            "food": ("oat bars", "baby puree", "frozen berries", "peanut spread"),
            "contaminant": ("lead", "glass fragments", "a banned pesticide", "listeria"),
        },
        (
            "{brand} {food} were recalled because they contain {contaminant}",
            "eating {brand} {food} caused dozens of hospital admissions",
            "{brand} knew about the problem with {contaminant} for months and said nothing",
            "{brand} {food} are safe to eat again after new testing",
        ),
    ),
    Family(
        "civic",
        "voting arrangements in {district}",
        ("medium", "high"),
        {
            "district": ("the Eastmere district", "Kellby ward", "the Ossory borough", "North Valen"),
            "method": ("text message", "a phone call", "an email reply"),
        },
        (
            "polling stations in {district} will open one day later than announced",
            "voters in {district} can cast their ballot by {method}",
            "the count in {district} will be done by hand this year",
            "postal ballots from {district} arrived too late to be counted last time",
        ),
    ),
    Family(
        "technology",
        "claims about the {app} app",
        ("low", "medium"),
        {
            "app": ("Chatterly", "Pocketmap", "Loopnote", "Brisk Wallet"),
            "company": ("Tessellate Labs", "Norrvik Software", "Quaystone Digital"),
        },
        (
            "the {app} app records your conversations even when it is closed",
            "{company} is shutting down the {app} app at the end of the year",
            "the {app} app sells location data to advertisers",
            "{company} fixed the security flaw in the {app} app last week",
        ),
    ),
)

_BANDS = {"trusted": (0.78, 0.97), "middling": (0.45, 0.7), "weak": (0.08, 0.35), "satire": (0.05, 0.2)}
# The kinds of outlet a band holds; shown only once a source is checked, like its reliability.
_TYPES: dict[str, tuple[SourceType, ...]] = {
    "trusted": ("official", "academic", "news"),
    "middling": ("news", "blog"),
    "weak": ("blog", "social"),
    "satire": ("satire",),
}


def _outlet(rng: random.Random, surface: Surface, used: set[str]) -> tuple[str, str]:
    """A fresh outlet name and its domain, drawn independently of everything the rules read."""
    while True:
        place, masthead = rng.choice(surface.places), rng.choice(surface.mastheads)
        name = f"{'The ' if rng.random() < 0.5 else ''}{place} {masthead}"
        if name not in used:
            used.add(name)
            return name, f"{place}-{masthead}".lower() + ".example"


def _source_text(rng: random.Random, surface: Surface, stance: Stance, satire: bool, slot: dict[str, str]) -> str:
    if satire:
        return _fill(rng.choice(surface.satire[stance]), slot)
    lead = _upper_first(_fill(rng.choice(surface.leads[stance]), slot))
    return f"{lead} {rng.choice(surface.follow_ups[stance])}"


@dataclass
class _SourcePlan:
    claim_index: int
    stance: Stance
    band: str
    stale: bool = False


def _fill(template: str, values: dict[str, str]) -> str:
    return template.format(**values)


def _plan_statuses(rng: random.Random, tier: Difficulty, label: Decision, family: Family) -> tuple[Harm, list[Status]]:
    """Pick a harm level and one status per claim so that the rule yields ``label``."""
    pools: dict[Difficulty, tuple[Status, ...]] = {
        "easy": ("false", "misleading", "true"),
        "medium": ("false", "misleading", "true", "unsupported"),
        "hard": ("false", "misleading", "true", "unsupported", "contested"),
    }
    counts = {"easy": (1, 1), "medium": (1, 2), "hard": (2, 3)}[tier]
    pool = pools[tier]
    target = rules.severity(label)
    options = [(harm, status) for harm in family.harms for status in pool if rules.decision_for(status, harm) == label]
    harm, primary = rng.choice(options)
    n = rng.randint(*counts)
    others = [s for s in pool if rules.severity(rules.decision_for(s, harm)) <= target]
    statuses = [primary] + [rng.choice(others) for _ in range(n - 1)]
    rng.shuffle(statuses)
    return harm, statuses


def _claim_sources(rng: random.Random, index: int, status: Status) -> list[_SourcePlan]:
    """Sources that make a claim's status come out right, before traps are added.

    Every status gets two or three of them, so the number of sources listed for a claim says
    nothing about its status.
    """
    n = rng.randint(2, 3)
    if status in ("false", "true"):
        stance: Stance = "refutes" if status == "false" else "supports"
        return [_SourcePlan(index, stance, "trusted") for _ in range(n)]
    band = "middling" if status == "unsupported" else "trusted"
    plans = [_SourcePlan(index, "supports", band), _SourcePlan(index, "refutes", band)]
    if n == 3:
        plans.append(_SourcePlan(index, rng.choice(("supports", "refutes")), band))
    return plans


def _traps(rng: random.Random, tier: Difficulty, statuses: list[Status]) -> list[_SourcePlan]:
    """Distractors: weak sources against the main evidence, outdated or satirical ones, neutral ones."""
    n_traps = {"easy": 1, "medium": rng.randint(1, 2), "hard": rng.randint(3, 4)}[tier]
    kinds = {"easy": ("weak",), "medium": ("weak", "stale", "neutral"), "hard": ("weak", "stale", "satire", "neutral")}[
        tier
    ]
    out: list[_SourcePlan] = []
    for _ in range(n_traps):
        index = rng.randrange(len(statuses))
        status = statuses[index]
        against: Stance = (
            "supports" if status == "false" else "refutes" if status == "true" else rng.choice(("supports", "refutes"))
        )
        kind = rng.choice(kinds)
        if kind == "weak":
            out.append(_SourcePlan(index, against, "weak"))
        elif kind == "stale":
            out.append(_SourcePlan(index, against, "trusted", stale=True))
        elif kind == "satire":
            out.append(_SourcePlan(index, against, "satire"))
        else:
            out.append(_SourcePlan(index, "neutral", rng.choice(("trusted", "middling"))))
    return out


def _ids(rng: random.Random, prefix: str, n: int, opaque: bool) -> list[str]:
    if not opaque:
        return [f"{prefix}_{i + 1}" for i in range(n)]
    ids: list[str] = []
    while len(ids) < n:
        candidate = f"{prefix}_{rng.getrandbits(16):04x}"
        if candidate not in ids:
            ids.append(candidate)
    return ids


def _upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def _attempt(rng: random.Random, tier: Difficulty, partition: Partition, seed: int, label: Decision) -> Scenario:
    families = TRAIN_FAMILIES if partition == "train" else EVAL_FAMILIES
    surface = SURFACES[partition]
    family = rng.choice(families)
    values = {slot: rng.choice(options) for slot, options in family.slots.items()}
    topic = _fill(family.topic, values)
    harm, statuses = _plan_statuses(rng, tier, label, family)
    templates = rng.sample(family.claims, len(statuses))
    claim_texts = [_fill(t, values) for t in templates]
    p_known = {"easy": 1.0, "medium": 0.6, "hard": 0.2}[tier]
    claim_ids = _ids(rng, "claim", len(statuses), opaque=False)
    claims: list[ClaimFact] = []
    plans: list[_SourcePlan] = []
    for i, status in enumerate(statuses):
        if status in ("misleading",):
            verdict, known = "partially_true", True
        elif status in ("contested", "unsupported"):
            verdict, known = "unknown", False
        else:
            known = rng.random() < p_known
            verdict = status if known else "unknown"
        confidence = round(rng.uniform(0.8, 0.98) if known else rng.uniform(0.2, 0.5), 2)
        text = _upper_first(claim_texts[i]) + "."
        claims.append(ClaimFact(id=claim_ids[i], text=text, verdict=verdict, confidence=confidence))
        plans.extend(_claim_sources(rng, i, status))
    plans.extend(_traps(rng, tier, statuses))
    rng.shuffle(plans)
    as_of = dt.date(2026, 1, 1) + dt.timedelta(days=rng.randrange(300))
    source_ids = _ids(rng, "src", len(plans), opaque=tier == "hard")
    used: set[str] = set()
    sources: list[SourceFact] = []
    for source_id, plan in zip(source_ids, plans, strict=True):
        outlet, domain = _outlet(rng, surface, used)
        satire = plan.band == "satire"
        lo, hi = _BANDS[plan.band]
        slot = {"outlet": outlet, "claim": claim_texts[plan.claim_index], "topic": topic, "Topic": _upper_first(topic)}
        age = rng.randrange(4 * 365, 9 * 365) if plan.stale else rng.randrange(5, 700)
        text = _upper_first(_source_text(rng, surface, plan.stance, satire, slot))
        sources.append(
            SourceFact(
                id=source_id,
                claim_id=claim_ids[plan.claim_index],
                title=_fill(rng.choice(surface.titles), slot),
                url=f"https://{domain}/{source_id.replace('_', '-')}-{rng.getrandbits(24):06x}",
                text=text,
                stance=plan.stance,
                reliability=round(rng.uniform(lo, hi), 2),
                source_type=rng.choice(_TYPES[plan.band]),
                date=as_of - dt.timedelta(days=age),
                satire=satire,
            )
        )
    body = " ".join(c.text for c in claims)
    content = " ".join(p for p in (rng.choice(surface.openers), body, rng.choice(surface.closers)) if p)
    scenario = Scenario(
        id=f"gen_{tier}_{partition}_{seed}",
        difficulty=tier,
        topic=topic,
        content=content,
        harm=harm,
        as_of=as_of,
        claims=tuple(claims),
        sources=tuple(sources),
        label=label,
        family=family.name,
        origin="generated",
    )
    return rules.check_scenario(scenario)


def _label(tier: Difficulty, partition: Partition, seed: int) -> Decision:
    """The item's label, drawn uniformly from a key of its own.

    Balanced in expectation and independent of every other item. (Version 1 balanced labels
    exactly within blocks of three seeds, so an agent that remembered two episodes' rewards knew
    the third label.)
    """
    draw = make_rng("information_integrity/label", GENERATOR_VERSION, tier, partition, seed)
    label: Decision = draw.choice(DECISIONS)
    return label


def generate(tier: Difficulty, seed: int, partition: Partition = "train") -> Scenario:
    """The generated scenario ``(GENERATOR_VERSION, tier, partition, seed)``."""
    if tier not in DIFFICULTIES:
        raise ValueError(f"difficulty: {tier!r} is not one of {', '.join(DIFFICULTIES)}")
    if partition not in ("train", "eval"):
        raise ValueError(f"partition: {partition!r} is not 'train' or 'eval'")
    label = _label(tier, partition, seed)
    rng = make_rng("information_integrity", GENERATOR_VERSION, tier, partition, seed)
    last_error: ValueError | None = None
    for _ in range(100):
        try:
            return _attempt(rng, tier, partition, seed, label)
        except ValueError as exc:  # a draw whose facts drift from the plan: draw again
            last_error = exc
    raise RuntimeError(f"could not realise a {label} {tier} scenario for seed {seed}: {last_error}")


def golden_samples() -> list[dict[str, Any]]:
    """The first two scenarios of each tier and partition at seed 0 and 1 (committed in tests)."""
    return [
        generate(tier, seed, partition).model_dump(mode="json")
        for tier in DIFFICULTIES
        for partition in ("train", "eval")
        for seed in (0, 1)
    ]
