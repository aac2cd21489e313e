"""DataCollector: SQLite FTS5 local corpus, deterministic ranking, domain table, igym collect."""

from __future__ import annotations

import datetime as dt
import itertools
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import integrity_gym
from integrity_gym.cli import app
from integrity_gym.envs.information_integrity.collector import (
    DataCollector,
    DomainReliability,
    LocalCorpusBackend,
    SearchBackend,
    SearchHit,
    guess_stance,
    write_synthetic_corpus,
)

from .conftest import TASK

DOCS = [
    {"id": "d1", "url": "https://health.meridian.example/a", "title": "Kelpwort tea and flu",
     "text": "We found no evidence that kelpwort tea cures seasonal flu.", "date": "2026-01-02"},
    {"id": "d2", "url": "https://research.halvorsen.example/b", "title": "Trial of kelpwort tea",
     "text": "The trial found nothing to support claims that kelpwort tea cures flu; the claim is false.",
     "date": "2025-11-02"},
    {"id": "d3", "url": "https://wakeup-forum.example/c", "title": "Kelpwort cured me",
     "text": "My cousin confirms kelpwort tea cures flu in a week.", "date": "2026-01-10"},
    {"id": "d4", "url": "https://news.town.gov/d", "title": "Bridge works",
     "text": "Roadworks on the Oakhaven Bridge continue.", "date": "2026-01-03"},
    {"id": "d5", "url": "https://dailyspoof.example/e", "title": "Tea now legally a doctor",
     "text": "Kelpwort tea has been awarded a medical degree, we can confirm.", "date": "2026-01-04"},
]  # fmt: skip


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "a.jsonl").write_text("\n".join(json.dumps(d) for d in DOCS[:3]) + "\n")
    (folder / "b.jsonl").write_text("\n".join(json.dumps(d) for d in DOCS[3:]) + "\n\n")
    return folder


def test_search_ranks_relevant_documents_first_and_is_deterministic(corpus: Path) -> None:
    backend = LocalCorpusBackend(corpus)
    assert backend.count == 5
    hits = backend.search("Does kelpwort tea cure the flu?", 10)
    assert [h.doc_id for h in hits][:1] in (["d1"], ["d2"], ["d3"])
    assert "d4" not in [h.doc_id for h in hits]
    assert hits == LocalCorpusBackend(corpus).search("Does kelpwort tea cure the flu?", 10)
    assert all(a.score >= b.score for a, b in itertools.pairwise(hits))
    assert backend.search("the of and", 5) == []


def test_file_order_does_not_change_results(corpus: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "z.jsonl").write_text("\n".join(json.dumps(d) for d in DOCS[:3]))
    (other / "a.jsonl").write_text("\n".join(json.dumps(d) for d in reversed(DOCS[3:])))
    query = "kelpwort tea flu"
    assert LocalCorpusBackend(corpus).search(query) == LocalCorpusBackend(other).search(query)


@pytest.mark.parametrize(
    ("line", "message"),
    [("{not json", "not valid JSON"), ('{"url": "u", "title": "t"}', "lacks text"), ("[1]", "JSON object"),
     ('{"url": "u", "title": "t", "text": "x", "date": "yesterday"}', "ISO 8601")],
)  # fmt: skip
def test_bad_corpus_lines_name_the_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    (tmp_path / "bad.jsonl").write_text(json.dumps(DOCS[0]) + "\n" + line + "\n")
    with pytest.raises(ValueError, match=rf"bad\.jsonl:2 .*{message}|bad\.jsonl:2"):
        LocalCorpusBackend(tmp_path)


def test_domain_table_longest_match_suffix_and_default() -> None:
    table = DomainReliability()
    assert table.lookup("https://health.meridian.example/x") == (0.95, "official")
    assert table.lookup("https://sub.research.halvorsen.example/y") == (0.9, "academic")
    assert table.lookup("https://news.town.gov/d") == (0.9, "official")
    assert table.lookup("https://unknown.example/") == (0.4, "blog")
    with pytest.raises(ValueError, match="reliability"):
        DomainReliability({"domains": {"x.example": {"reliability": 3}}})


def test_stance_cues() -> None:
    assert guess_stance("We found no evidence for it.") == "refutes"
    assert guess_stance("Officials confirmed the closure.") == "supports"
    assert guess_stance("A guide to the bridge.") == "neutral"


def test_collector_builds_a_scenario_the_env_accepts(corpus: Path, tmp_path: Path) -> None:
    collector = DataCollector(LocalCorpusBackend(corpus))
    scenario = collector.build_scenario("Kelpwort tea cures the flu", harm="high", as_of=dt.date(2026, 2, 1))
    stances = {s.url.split("/")[2]: (s.stance, s.reliability, s.satire) for s in scenario.sources}
    assert stances["health.meridian.example"] == ("refutes", 0.95, False)
    assert stances["dailyspoof.example"][2] is True
    assert scenario.label == "remove"
    path = tmp_path / "s.json"
    path.write_text(scenario.model_dump_json())
    env = integrity_gym.make(TASK["medium"])
    assert env.reset(options={"scenario_file": str(path)}).claims[0].text == "Kelpwort tea cures the flu"
    with pytest.raises(ValueError, match="at least 2"):
        collector.build_scenario("Oakhaven roadworks bridge")


def test_a_new_backend_is_one_class() -> None:
    class Canned(SearchBackend):
        def search(self, query: str, limit: int = 10) -> list[SearchHit]:
            return [
                SearchHit(
                    doc_id=str(i), url=f"https://factdesk.example/{i}", title="t", text="This is false.", score=1.0
                )
                for i in range(limit)
            ]

    scenario = DataCollector(Canned()).build_scenario("Anything at all", limit=3, as_of=dt.date(2026, 1, 1))
    assert len(scenario.sources) == 3 and scenario.label == "remove"


def test_igym_collect_writes_a_reviewable_scenario(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "draft.json"
    result = CliRunner().invoke(
        app, ["collect", "Kelpwort tea cures the flu", "--corpus", str(corpus), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["claims"][0]["text"] == "Kelpwort tea cures the flu" and "review" in data["notes"]
    bad = CliRunner().invoke(app, ["collect", "x", "--corpus", str(tmp_path / "missing")])
    assert bad.exit_code == 2 and "is not a folder" in " ".join(bad.output.split())  # wrapped at any width


def test_synthetic_corpus_has_the_requested_size(tmp_path: Path) -> None:
    assert write_synthetic_corpus(tmp_path, 1500, per_file=400) == 1500
    assert len(list(tmp_path.glob("*.jsonl"))) == 4
    assert LocalCorpusBackend(tmp_path).count == 1500


def test_igym_collect_takes_a_custom_domain_table(corpus: Path, tmp_path: Path) -> None:
    table = tmp_path / "domains.yaml"
    table.write_text(
        "default: {reliability: 0.3, source_type: blog}\n"
        "domains:\n  wakeup-forum.example: {reliability: 0.99, source_type: academic}\n"
    )
    out = tmp_path / "draft.json"
    args = [
        "collect",
        "Kelpwort tea cures the flu",
        "--corpus",
        str(corpus),
        "--out",
        str(out),
        "--domains",
        str(table),
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    sources = {s["url"].split("/")[2]: s for s in json.loads(out.read_text())["sources"]}
    assert sources["wakeup-forum.example"]["reliability"] == 0.99
    assert sources["health.meridian.example"]["reliability"] == 0.3
    missing = CliRunner().invoke(app, [*args[:-1], str(tmp_path / "nope.yaml")])
    assert missing.exit_code == 2 and "domains" in missing.output


def test_well_known_outlets_and_plain_stance_words_get_a_sensible_first_guess() -> None:
    """Reuters and the WHO were "blog 0.4", and "baseless" or "corroborates" read as neutral."""
    from integrity_gym.envs.information_integrity.collector import DomainReliability
    from integrity_gym.envs.information_integrity.collector.collector import guess_stance

    table = DomainReliability()
    assert table.lookup("https://www.reuters.com/world/x") == (0.88, "news")
    assert table.lookup("https://www.who.int/news/item/1") == (0.93, "official")
    assert table.lookup("https://ec.europa.eu/x")[1] == "official"
    assert table.lookup("https://reddit.com/r/x")[1] == "social"
    assert table.lookup("https://unknown-site.example/x") == (0.4, "blog")
    assert guess_stance("Health officials call the claim baseless: there is no link.") == "refutes"
    assert guess_stance("A second study corroborates the finding.") == "supports"
    assert guess_stance("The minister has not commented.") == "neutral"
