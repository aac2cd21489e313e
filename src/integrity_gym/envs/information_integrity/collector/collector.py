"""The DataCollector: turn a claim and a search backend into a draft scenario for human review.

Used to *make* datasets, never during evaluation. Reliability and outlet type come from
``domain_reliability.yaml``; the stance of each source is a first guess from cue phrases and is
marked for review in the scenario's notes. The label is derived by the published rule, so once a
reviewer fixes a stance or the verdict, the label follows.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import yaml

from integrity_gym.core.seeding import stable_id
from integrity_gym.envs.information_integrity import rules
from integrity_gym.envs.information_integrity.collector.backend import SearchBackend, SearchHit
from integrity_gym.envs.information_integrity.models import (
    SOURCE_TYPES,
    ClaimFact,
    Difficulty,
    Harm,
    Scenario,
    SourceFact,
    Stance,
)

_REFUTE = re.compile(
    r"\b(no evidence|found nothing|not true|untrue|false\w*|debunk\w*|misleading|does not hold|no basis|"
    r"says otherwise|point the other way|say something different|not supported|denies|denied|myths?|hoax|"
    r"baseless|fake|fabricated|contradict\w*|refut\w*|incorrect|wrong|rejects?|disproven|no link|"
    r"does not cause|do not cause|does not cure|no scientific)\b",
    re.IGNORECASE,
)
_SUPPORT = re.compile(
    r"\b(confirm\w*|reports that|shows that|showed that|found that|according to|documents seen|backs|"
    r"verified|corroborat\w*|evidence that|proves?|proven|demonstrat\w*|supports?|is true|bears out)\b",
    re.IGNORECASE,
)


@cache
def _default_table() -> dict[str, Any]:
    text = resources.files(__package__).joinpath("domain_reliability.yaml").read_text("utf-8")
    data: dict[str, Any] = yaml.safe_load(text)
    return data


class DomainReliability:
    """Looks up a URL's reliability and outlet type in a domain table (YAML)."""

    def __init__(self, table: dict[str, Any] | None = None) -> None:
        data = table if table is not None else _default_table()
        self.default = self._entry(data.get("default", {"reliability": 0.4, "source_type": "blog"}), "default")
        self.domains = {k.lower(): self._entry(v, k) for k, v in (data.get("domains") or {}).items()}
        self.suffixes = {k.lower(): self._entry(v, k) for k, v in (data.get("suffixes") or {}).items()}

    @classmethod
    def from_yaml(cls, path: str | Path) -> DomainReliability:
        """Load a table from a YAML file with ``default``, ``domains`` and ``suffixes``."""
        file = Path(path)
        if not file.is_file():
            raise ValueError(f"domains: {str(path)!r} does not exist or is not a file")
        try:
            data = yaml.safe_load(file.read_text("utf-8"))
        except yaml.YAMLError as exc:
            raise ValueError(f"domains: {path} is not valid YAML: {exc}") from exc
        if not isinstance(data, dict):
            raise ValueError(f"{path}: expected a mapping with default, domains and suffixes")
        return cls(data)

    @staticmethod
    def _entry(value: Any, where: str) -> tuple[float, str]:
        if not isinstance(value, dict):
            raise ValueError(f"domain table entry {where!r} must be a mapping with reliability and source_type")
        reliability = value.get("reliability")
        source_type = value.get("source_type", "blog")
        if not isinstance(reliability, int | float) or not 0 <= reliability <= 1:
            raise ValueError(f"domain table entry {where!r}: reliability must be a number in [0, 1]")
        if source_type not in SOURCE_TYPES:
            raise ValueError(f"domain table entry {where!r}: source_type must be one of {', '.join(SOURCE_TYPES)}")
        return float(reliability), str(source_type)

    def lookup(self, url: str) -> tuple[float, str]:
        """(reliability, source_type) for ``url``: longest matching domain, then suffix, then default."""
        host = (urlparse(url).hostname or url).lower()
        parts = host.split(".")
        for i in range(len(parts)):
            candidate = ".".join(parts[i:])
            if candidate in self.domains:
                return self.domains[candidate]
        for suffix, entry in sorted(self.suffixes.items(), key=lambda kv: -len(kv[0])):
            if host.endswith(suffix):
                return entry
        return self.default


def guess_stance(text: str) -> Stance:
    """A first guess at a source's stance from cue phrases (refuting cues win ties)."""
    refute, support = len(_REFUTE.findall(text)), len(_SUPPORT.findall(text))
    if refute and refute >= support:
        return "refutes"
    if support:
        return "supports"
    return "neutral"


class DataCollector:
    """Builds a draft ``Scenario`` for a claim from a ``SearchBackend``."""

    def __init__(self, backend: SearchBackend, reliability: DomainReliability | None = None) -> None:
        self.backend = backend
        self.reliability = reliability or DomainReliability()

    def build_scenario(
        self,
        claim: str,
        *,
        limit: int = 6,
        harm: Harm = "medium",
        difficulty: Difficulty = "medium",
        as_of: dt.date | None = None,
    ) -> Scenario:
        """Search for ``claim`` and return a scenario draft (label derived by the rule)."""
        claim = claim.strip()
        if not claim:
            raise ValueError("claim: the claim text is empty")
        hits = self.backend.search(claim, limit)
        if len(hits) < 2:
            raise ValueError(
                f"corpus: only {len(hits)} document(s) match {claim!r}; a scenario needs at least 2 sources"
            )
        review = as_of or dt.date.today()
        sources = tuple(self._source(i, hit, review) for i, hit in enumerate(hits, 1))
        draft = Scenario(
            id=f"collected_{stable_id('collect', claim, length=10)}",
            difficulty=difficulty,
            topic=claim[:80],
            content=claim,
            harm=harm,
            as_of=review,
            claims=(ClaimFact(id="claim_1", text=claim, verdict="unknown", confidence=0.0),),
            sources=sources,
            family="collected",
            origin="user",
            notes=(
                "Draft from the DataCollector: review every stance (guessed from cue phrases), set the "
                "claim's verdict if a fact-check exists, check the harm level; the label is re-derived on load."
            ),
        )
        return draft.model_copy(update={"label": rules.derive_label(draft)})

    def _source(self, index: int, hit: SearchHit, review: dt.date) -> SourceFact:
        reliability, source_type = self.reliability.lookup(hit.url)
        return SourceFact(
            id=f"src_{index}",
            claim_id="claim_1",
            title=hit.title,
            url=hit.url,
            text=hit.text[:1200],
            stance=guess_stance(f"{hit.title}. {hit.text}"),
            reliability=reliability,
            source_type=source_type,
            date=hit.date or review,
            satire=source_type == "satire",
        )


def write_scenario(scenario: Scenario, path: str | Path) -> None:
    """Write ``scenario`` as indented JSON (the format ``reset(options={"scenario_file": ...})`` reads)."""
    Path(path).write_text(json.dumps(scenario.model_dump(mode="json"), indent=2) + "\n", encoding="utf-8")
