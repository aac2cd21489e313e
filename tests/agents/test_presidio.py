"""The presidio agent: its label mapping and birth-date rule, and whole episodes with Presidio itself.

The mapping tests need nothing installed. The episode tests need the ``presidio`` extra: skipped
without it, a failure with IGYM_REQUIRE_SERVICES=1 (CI installs it).
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass

import pytest

import integrity_gym
from integrity_gym.agents import presidio
from integrity_gym.agents.base import make_agent
from integrity_gym.agents.presidio import ENTITY_LABELS, PresidioAgent, is_birth_date, to_labels
from integrity_gym.envs.pii_redaction.generator import generate_document
from integrity_gym.envs.pii_redaction.models import Document, Entity
from tests.conftest import require_service

TASKS = (
    "pii_redaction/gdpr_contract_easy-v4",
    "pii_redaction/hipaa_medical_medium-v4",
    "pii_redaction/security_logs_hard-v4",
)
HAVE_PRESIDIO = importlib.util.find_spec("presidio_analyzer") is not None


@dataclass(frozen=True)
class Found:
    """A stand-in for Presidio's RecognizerResult."""

    entity_type: str
    start: int
    end: int
    score: float = 0.85


def _labels(text: str, *findings: Found) -> list[tuple[str, str]]:
    return [(label, text[s:e]) for s, e, label in to_labels(text, list(findings))]


def test_mapping_covers_the_six_labels() -> None:
    assert ENTITY_LABELS == {
        "EMAIL_ADDRESS": "EMAIL",
        "PHONE_NUMBER": "PHONE",
        "US_SSN": "SSN",
        "PERSON": "NAME",
        "LOCATION": "ADDRESS",
        "DATE_TIME": "DOB",
    }
    text = "Jane Roe, jane@roe.org, 415 555 0187, 123-45-6789, Springfield, born 1 May 1980"
    findings = [
        Found("PERSON", 0, 8),
        Found("EMAIL_ADDRESS", 10, 22),
        Found("PHONE_NUMBER", 24, 36),
        Found("US_SSN", 38, 49),
        Found("LOCATION", 51, 62),
        Found("DATE_TIME", 69, 79),
    ]
    assert _labels(text, *findings) == [
        ("NAME", "Jane Roe"),
        ("EMAIL", "jane@roe.org"),
        ("PHONE", "415 555 0187"),
        ("SSN", "123-45-6789"),
        ("ADDRESS", "Springfield"),
        ("DOB", "1 May 1980"),
    ]


def test_other_entity_types_are_dropped() -> None:
    text = "Acme Corp at https://acme.example from 10.0.0.1"
    findings = [Found("ORGANIZATION", 0, 9), Found("URL", 13, 33), Found("IP_ADDRESS", 39, 47), Found("NRP", 0, 4)]
    assert _labels(text, *findings) == []


@pytest.mark.parametrize(
    ("before", "birth"),
    [
        ("DOB: ", True),
        ("D.O.B. ", True),
        ("date of birth ", True),
        ("She was born on ", True),
        ("birthday is ", True),
        ("Birthdate ", True),
        ("Seen on ", False),
        ("Admitted ", False),
        # The birth word must be on the same line, within BIRTH_CONTEXT characters.
        ("DOB:\nSeen on ", False),
        # Only the first number after the birth word: "DOB 1994-06-02 (our ref. 91335700)".
        ("DOB 1994-06-02 (our ref. ", False),
        ("born in Ohio, moved to Texas and was later seen on ", False),
        # A word that merely contains the letters is not a birth word.
        ("adobe release ", False),
        ("newborn ward visit ", False),
    ],
)
def test_a_date_is_a_birth_date_only_after_a_birth_word(before: str, birth: bool) -> None:
    text = before + "03/15/1978"
    assert is_birth_date(text, len(before)) is birth
    assert _labels(text, Found("DATE_TIME", len(before), len(text))) == ([("DOB", "03/15/1978")] if birth else [])


def test_birth_context_is_forty_characters() -> None:
    assert presidio.BIRTH_CONTEXT == 40
    date = "1 May 1980"
    near = "DOB" + " " * 37  # the word starts 40 characters before the date
    far = "DOB" + " " * 38
    assert is_birth_date(near + date, len(near))
    assert not is_birth_date(far + date, len(far))


def test_overlapping_results_keep_the_higher_score_then_the_longer_span() -> None:
    text = "call 415 555 0187 now"
    low_long = Found("PERSON", 5, 17, score=0.4)
    high_short = Found("PHONE_NUMBER", 5, 12, score=0.9)
    assert _labels(text, low_long, high_short) == [("PHONE", "415 555")]
    same_score = [Found("PHONE_NUMBER", 5, 12, 0.5), Found("US_SSN", 5, 17, 0.5)]
    assert _labels(text, *same_score) == [("SSN", "415 555 0187")]
    assert _labels(text, Found("PERSON", 9, 9)) == []  # empty spans are ignored


def test_missing_extra_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "presidio_analyzer", None)  # import now raises ImportError
    with pytest.raises(ImportError, match=r"pip install 'integrity-gym\[presidio\]'"):
        presidio.load_analyzer.__wrapped__(None)


def test_presidio_plays_pii_redaction_only() -> None:
    env = integrity_gym.make("information_integrity/easy-v3")
    with pytest.raises(ValueError, match="presidio agent plays pii_redaction tasks only"):
        make_agent("presidio", env)


@pytest.fixture
def with_presidio() -> None:
    require_service(HAVE_PRESIDIO, "the presidio extra (pip install 'integrity-gym[presidio]')")


def _play(agent: PresidioAgent, task_id: str, **reset: object) -> tuple[float, list[str]]:
    env = integrity_gym.make(task_id)
    obs = env.reset(**reset)  # type: ignore[arg-type]
    actions = []
    while not obs.done:
        action = agent.act(obs)
        result = env.step(action)
        assert result.info.get("error") is None, result.info
        actions.append(str(action))
        obs = result.observation
    return env.grade().score, actions


@pytest.mark.usefixtures("with_presidio")
@pytest.mark.parametrize(
    ("task_id", "floor"),
    # Measured with the extra's small model, eval partition, seeds 0-19 (v4 tasks, threshold 0.75; v4's
    # eval frames and names are held out): mean 0.706, 0.576 and 0.311 (6/20 successes on easy); seed 0
    # alone 0.749, 0.492. (On v3: 0.757, 0.670, 0.398.)
    # The band's top (0.9) is a plausibility bound on a pattern recogniser, not the task threshold.
    list(zip(TASKS, (0.7, 0.45, 0.25), strict=True)),
)
def test_plays_one_episode_per_task(task_id: str, floor: float) -> None:
    agent = make_agent("presidio", integrity_gym.make(task_id))
    assert isinstance(agent, PresidioAgent)
    assert agent.pipeline == presidio.installed_model()
    assert agent.pipeline in agent.description
    score, actions = _play(agent, task_id, seed=0)
    assert actions[-1] == "FINISH"
    assert any(a.startswith("REDACT") for a in actions)
    assert floor <= score < 0.9, score


@pytest.mark.usefixtures("with_presidio")
def test_blank_pipeline_finds_patterns_but_no_names() -> None:
    text = "Patient Jane Roe, born on March 3, 1981. Write jane.roe@gmail.com or call (415) 555-0187."
    blank = PresidioAgent(model="blank")
    assert blank.pipeline == "blank" and "no NER" in blank.description
    labels = {label for _, _, label in blank.find(text)}
    assert labels == {"EMAIL", "PHONE"}
    full = PresidioAgent()
    assert {label for _, _, label in full.find(text)} >= {"NAME", "DOB", "EMAIL", "PHONE"}


@pytest.mark.usefixtures("with_presidio")
def test_analyses_only_text_it_has_seen() -> None:
    doc = generate_document("clinical", 0, 0)
    agent = PresidioAgent()
    seen_to = 0
    asked: list[str] = []
    find = agent.find

    def spy(text: str) -> list[tuple[int, int, str]]:
        asked.append(text)
        assert text in doc.text[:seen_to], "analysed text the window never showed"
        return find(text)  # type: ignore[return-value]

    agent.find = spy  # type: ignore[method-assign]
    env = integrity_gym.make(TASKS[1])
    obs = env.reset(options={"document": doc.model_dump()})
    while not obs.done:
        seen_to = max(seen_to, obs.cursor_position + len(obs.visible_text))
        obs = env.step(agent.act(obs)).observation
    assert asked and max(len(t) for t in asked) <= 2 * obs.window_size


@pytest.mark.usefixtures("with_presidio")
def test_actions_do_not_depend_on_the_hidden_entities() -> None:
    doc = generate_document("security", 0, 0)
    others = ("NAME", "EMAIL", "PHONE", "SSN", "ADDRESS", "DOB")
    shuffled = [
        Entity(start=e.start, end=e.end, text=e.text, label=others[(others.index(e.label) + 1) % 6])
        for e in doc.entities[::2]
    ]
    altered = Document(id=doc.id, kind=doc.kind, text=doc.text, entities=tuple(shuffled))
    first = _play(PresidioAgent(), TASKS[2], options={"document": doc.model_dump()})[1]
    second = _play(PresidioAgent(), TASKS[2], options={"document": altered.model_dump()})[1]
    assert first == second
