"""Dataset creation: search backends, the local SQLite FTS5 corpus backend, and the DataCollector."""

from integrity_gym.envs.information_integrity.collector.backend import SearchBackend, SearchHit
from integrity_gym.envs.information_integrity.collector.collector import (
    DataCollector,
    DomainReliability,
    guess_stance,
    write_scenario,
)
from integrity_gym.envs.information_integrity.collector.corpus import write_synthetic_corpus
from integrity_gym.envs.information_integrity.collector.local import LocalCorpusBackend

__all__ = [
    "DataCollector",
    "DomainReliability",
    "LocalCorpusBackend",
    "SearchBackend",
    "SearchHit",
    "guess_stance",
    "write_scenario",
    "write_synthetic_corpus",
]
