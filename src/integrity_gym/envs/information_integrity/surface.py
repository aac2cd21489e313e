"""The words a generated scenario is written in, one set per partition.

Train and eval share the rules that decide a label and nothing of its surface: the eval
partition writes its sources, titles, posts and outlet names from template families and word
pools that no training scenario uses, so a model fitted on training text meets eval phrasings
for the first time (as it would meet a new outlet's house style). Outlet names are drawn per
source from a place and a masthead word, independently of the outlet's reliability band, type,
stance and satire: a name is never an alias for how far to trust the source; that is read from
the checked fields. ``tests/envs/information_integrity/test_surface.py`` checks both.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from integrity_gym.core.seeding import Partition

if TYPE_CHECKING:
    from integrity_gym.envs.information_integrity.models import Scenario


@dataclass(frozen=True)
class Surface:
    """Everything a partition's scenarios are phrased with (topic families live in the generator)."""

    places: tuple[str, ...]
    mastheads: tuple[str, ...]
    #: Per stance, an opening sentence (with ``{outlet}``, ``{claim}``, ``{topic}``) and follow-ups.
    leads: dict[str, tuple[str, ...]]
    follow_ups: dict[str, tuple[str, ...]]
    satire: dict[str, tuple[str, ...]]
    #: Visible before a source is checked, so they never depend on its stance.
    titles: tuple[str, ...]
    openers: tuple[str, ...]
    closers: tuple[str, ...]


TRAIN = Surface(
    places=(
        "Valley", "Northgate", "Coastline", "Meridian", "Halvorsen", "Riverside",
        "Granite", "Cedar", "Ashford", "Summit", "Linden", "Redfield",
    ),
    mastheads=("Courier", "Ledger", "Daily", "Bulletin", "Review", "Notes", "Monitor", "Gazette", "Desk", "Journal"),
    leads={
        "supports": (
            "{outlet} reviewed the records and reports that {claim}.",
            "According to documents seen by {outlet}, {claim}.",
            "Three people with direct knowledge told {outlet} that {claim}.",
            "Figures obtained by {outlet} back up the report that {claim}.",
        ),
        "refutes": (
            "{outlet} looked into the statement that {claim} and found nothing to support it.",
            "The statement that {claim} circulates widely, but {outlet} found that the original documents "
            "say something different.",
            "{outlet} traced the story that {claim} to a misread chart.",
            "Records reviewed by {outlet} contradict the report that {claim}.",
        ),
        "neutral": (
            "{outlet} covers the wider debate around {topic} without taking a position on whether {claim}.",
            "A background piece from {outlet} on {topic}.",
            "{outlet} summarises what is publicly known about {topic}.",
        ),
    },
    follow_ups={
        "supports": (
            "The figures were checked with two independent contacts.",
            "Officials did not dispute the account when asked.",
            "The paper trail matches what the post describes.",
        ),
        "refutes": (
            "The available records point the other way.",
            "The people quoted in the post deny ever saying it.",
            "No document matching the description exists.",
        ),
        "neutral": (
            "It lists open questions but reaches no conclusion.",
            "It does not say whether the claim holds.",
            "Readers are pointed to further reading.",
        ),
    },
    satire={
        "supports": (
            "In this week's joke column, {outlet} solemnly 'confirms' that {claim}, and adds that the moon is "
            "made of cheese.",
        ),
        "refutes": ("In a spoof interview, {outlet} has a talking goat 'disprove' the idea that {claim}.",),
        "neutral": ("{outlet} runs a comic strip about {topic}; nothing in it is meant literally.",),
    },
    titles=(
        "What the record shows about {topic}",
        "A closer look at {topic}",
        "Notes on {topic}",
        "Reading up on {topic}",
        "{Topic}: the details",
    ),
    openers=(
        "Sharing this before it gets deleted:",
        "A friend who works there told me:",
        "PSA for everyone in the group chat:",
        "Nobody on the news is talking about this.",
        "Just read this and wow.",
    ),
    closers=("Pass it on.", "Do your own research.", "Thoughts?", "Stay safe, everyone.", ""),
)  # fmt: skip

EVAL = Surface(
    places=(
        "Brackwater", "Elmstead", "Foxhollow", "Kingsreach", "Marrow", "Oldcastle",
        "Pinecrest", "Quillon", "Sorrel", "Thornbury", "Upland", "Wrenfield",
    ),
    mastheads=(
        "Herald", "Dispatch", "Observer", "Chronicle", "Wire", "Digest", "Tribune", "Record", "Sentinel", "Post",
    ),
    leads={
        "supports": (
            "Fresh verification by {outlet} bears out that {claim}.",
            "{outlet} got hold of the underlying filings, which plainly demonstrate that {claim}.",
            "A pair of inspectors, speaking by name, assured {outlet} that {claim}.",
            "Data released to {outlet} corroborates that {claim}.",
        ),
        "refutes": (
            "{outlet} examined the allegation that {claim} and calls it baseless.",
            "Contrary to the viral message, {outlet} established that it is untrue that {claim}.",
            "The rumour that {claim} rests on a doctored screenshot, {outlet} discovered.",
            "Engineers consulted by {outlet} flatly reject the notion that {claim}.",
        ),
        "neutral": (
            "An explainer by {outlet} sets out the arguments on both sides of {topic} and leaves it undecided "
            "if {claim}.",
            "{outlet} publishes a timeline of {topic}.",
            "A reader's guide from {outlet} to {topic}.",
        ),
    },
    follow_ups={
        "supports": (
            "A spokesperson acknowledged the finding in writing.",
            "Copies of the filings accompany the article.",
            "Each number was reproduced from the raw data.",
        ),
        "refutes": (
            "Every primary filing consulted indicates the opposite.",
            "The supposed insider could never be identified.",
            "The screenshot's timestamps fail to match.",
        ),
        "neutral": (
            "It declines to rule in any direction.",
            "Its authors make clear they assess nobody's message.",
            "It collects links for more context.",
        ),
    },
    satire={
        "supports": ("Tongue firmly in cheek, {outlet} 'reveals' that {claim}, quoting an anonymous pigeon.",),
        "refutes": ("{outlet}'s parody desk 'debunks' the notion that {claim} by shaking a magic eight ball.",),
        "neutral": ("{outlet} imagines {topic} as a musical; none of it is reporting.",),
    },
    titles=(
        "Inside {topic}",
        "{Topic}, explained",
        "Where things stand on {topic}",
        "Primer: {topic}",
        "Common queries on {topic}",
    ),
    openers=(
        "Saw this in several groups today:",
        "My cousin sent me this, is it real?",
        "Posting so it doesn't get buried:",
        "Attention, neighbours.",
        "Can't believe this is happening.",
    ),
    closers=("Share it.", "Decide for yourselves.", "Anyone know more?", "Take care, all.", ""),
)  # fmt: skip

SURFACES: dict[Partition, Surface] = {"train": TRAIN, "eval": EVAL}


def _mask(text: str, fillers: Iterable[str]) -> str:
    for filler in sorted(fillers, key=len, reverse=True):
        text = re.sub(re.escape(filler), "_", text, flags=re.IGNORECASE)
    return text


def frames(scenarios: Iterable[Scenario]) -> dict[str, Counter[str]]:
    """The surface forms of ``scenarios``: each visible text with its item's fillers masked, and each domain.

    Kinds: ``source`` (a checked source's text without claim, topic and outlet name), ``title``,
    ``post`` (the post around its claims) and ``domain`` (the outlet's), each counted. Comparing
    two partitions' forms measures what a model of training wording could recognise on eval.
    """
    out: dict[str, Counter[str]] = {kind: Counter() for kind in ("source", "title", "post", "domain")}
    for s in scenarios:
        fillers = [*(c.text.rstrip(".") for c in s.claims), s.topic]
        out["post"][_mask(s.content, fillers)] += 1
        for src in s.sources:
            domain = src.url.split("/")[2]
            place, masthead = domain.removesuffix(".example").split("-")
            out["domain"][domain] += 1
            out["title"][_mask(src.title, fillers)] += 1
            out["source"][_mask(src.text, [*fillers, f"the {place} {masthead}", f"{place} {masthead}"])] += 1
    return out
