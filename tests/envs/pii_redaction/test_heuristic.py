"""The heuristic pii_redaction agent: its detector on crafted text, and whole episodes in the env."""

from __future__ import annotations

import inspect
import itertools
import statistics

import pytest

import integrity_gym
from integrity_gym.agents.base import make_agent
from integrity_gym.agents.heuristic import pii_redaction as heuristic
from integrity_gym.agents.heuristic.pii_redaction import HeuristicAgent, detect, normalise
from integrity_gym.core.seeding import partition_of
from integrity_gym.envs.pii_redaction.data import load_gold
from integrity_gym.envs.pii_redaction.generator import generate_document
from integrity_gym.envs.pii_redaction.models import Document, Kind

TASKS = {
    "contract": "pii_redaction/gdpr_contract_easy-v1",
    "clinical": "pii_redaction/hipaa_medical_medium-v1",
    "security": "pii_redaction/security_logs_hard-v1",
}


def found(text: str) -> list[tuple[str, str]]:
    return [(label, text[s:e]) for s, e, label in detect(text)]


@pytest.mark.parametrize(
    ("label", "before", "entity", "after"),
    [
        ("PHONE", "Call me at ", "(415) 555-0187", " today."),
        ("PHONE", "mobile ", "+1 415 555 0187", ""),
        ("PHONE", "sms to=", "+14155550187", " uid=3"),
        ("PHONE", "it's ", "4-one-5 5-5-five 0-1-8-7", " ok"),
        ("PHONE", "try ", "area code four one five, then 555 0187", " please"),
        ("SSN", "SSN ", "123-45-6789", "."),
        ("EMAIL", "write to ", "jane.doe@example.org", " now"),
        ("EMAIL", "it's ", "jane dot doe at gmail dot com", " thanks"),
        ("EMAIL", "use ", "jane [at] mail [dot] com", ""),
        ("EMAIL", "use ", "jane(at)mail(dot)com", ""),
        ("EMAIL", "use ", "JANE AT MAIL DOT COM", ""),
        ("EMAIL", "send to ", "jаne.dое@gmail.com", ""),
        ("DOB", "DOB: ", "03/15/1978", ""),
        ("DOB", "I was born ", "March 3rd, 1981", "."),
        ("NAME", "Patient: ", "Maria Lopez", "\n"),
        ("NAME", "Seen by Dr. ", "Anil Kapoor", " today."),
        ("ADDRESS", "new address ", "12 Oak Street\nSpringfield, IL 62704", ""),
        ("PHONE", "reach me on ", "415 555\n0187", " after six"),
        ("PHONE", "my cell is ", "four one five, five five five, oh one eight seven", ""),
        ("SSN", "my social is ", "one two three, four five, six seven eight nine", ""),
        ("DOB", "date of birth is ", "the third of March, nineteen eighty-one", ""),
        ("ADDRESS", "lives at ", "12 Oak Street, Apt 4, Springfield, IL 62704", "."),
    ],
)
def test_detects_plain_and_obfuscated_pii(label: str, before: str, entity: str, after: str) -> None:
    assert (label, entity) in found(before + entity + after)


@pytest.mark.parametrize(
    "text",
    [
        "2024-03-15T10:22:31.118Z INFO auth src=10.24.3.17 host=web-03.prod.internal",
        "device mac=3c:22:fb:10:aa:07 fw=v4.12.3 build 2021.02.2611",
        "the order number is four two one, seven seven nine, six nine nine four",
        "Purchase order 4471-220-1185 for $12,500.00, ticket INC-004821",
        "Admitted: 03/02/2024. Discharged 03/09/2024. MRN 80100305, metformin 500 mg",
        "Riverside Medical Center, Maple Avenue Family Practice, ext. 4410",
        "ICD-10 E11.9 and I10; BP 132/84; Parkinson disease (G20)",
    ],
)
def test_ignores_look_alikes(text: str) -> None:
    assert found(text) == []


def test_normalise_keeps_offsets() -> None:
    text = "Оlivia Mаrchetti <оlivia@mail.com>"
    assert len(normalise(text)) == len(text)
    assert normalise(text) == "Olivia Marchetti <olivia@mail.com>"


def test_detections_never_overlap() -> None:
    doc = generate_document("security", 0, 0)
    spans = detect(doc.text)
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))


def _iou(a: tuple[int, int], b: tuple[int, int]) -> float:
    inter = max(0, min(a[1], b[1]) - max(a[0], b[0]))
    return inter / (max(a[1], b[1]) - min(a[0], b[0]))


def _precision_recall(docs: list[Document]) -> tuple[float, float]:
    tp = predicted = gold = 0
    for doc in docs:
        preds = detect(doc.text)
        predicted += len(preds)
        gold += len(doc.entities)
        used: set[int] = set()
        for e in doc.entities:
            for j, p in enumerate(preds):
                if j not in used and _iou((e.start, e.end), (p[0], p[1])) > 0.6:
                    used.add(j)
                    tp += 1
                    break
    return tp / predicted, tp / gold


def _by_partition(kind: Kind, seed: int, count: int) -> dict[str, list[Document]]:
    docs = [generate_document(kind, seed, i) for i in range(6 * count)]
    return {part: [d for d in docs if partition_of(d.id) == part][:count] for part in ("train", "eval")}


@pytest.mark.parametrize(
    ("kind", "precision_range", "train_recall"),
    # Measured on seed 5, 40 documents of each partition (whole documents, no window):
    # contract P 0.98 R 0.98 in both partitions; clinical train P 0.79 R 0.93, eval R 0.69;
    # security train P 0.71 R 0.95, eval R 0.70. The shared look-alikes (organisation numbers and
    # mailboxes, eponyms, phone- and SSN-shaped ids) cost precision in both partitions; the
    # held-out families of the eval partition cost recall.
    [("contract", (0.9, 1.0), 0.9), ("clinical", (0.7, 0.88), 0.85), ("security", (0.6, 0.8), 0.88)],
)
def test_detector_on_whole_generated_documents(
    kind: Kind, precision_range: tuple[float, float], train_recall: float
) -> None:
    docs = _by_partition(kind, 5, 40)
    precision, recall = _precision_recall(docs["train"])
    low, high = precision_range
    assert low <= precision <= high and recall >= train_recall, (precision, recall)
    eval_recall = _precision_recall(docs["eval"])[1]
    if kind == "contract":
        assert eval_recall >= 0.9, eval_recall  # the easy tier has no held-out forms
    else:
        assert eval_recall <= recall - 0.15, (eval_recall, recall)


def test_agent_reads_observations_only() -> None:
    source = inspect.getsource(heuristic)
    for forbidden in ("state(", ".entities", "oracle", "RedactionState", "generate_document", "load_gold"):
        assert forbidden not in source, forbidden
    assert list(inspect.signature(HeuristicAgent.act).parameters) == ["self", "observation"]


def _play(task_id: str, **reset: object) -> tuple[float, list[str], list[str | None]]:
    env = integrity_gym.make(task_id)
    agent = make_agent("heuristic", env)
    assert isinstance(agent, HeuristicAgent)
    obs = env.reset(**reset)  # type: ignore[arg-type]
    actions: list[str] = []
    errors: list[str | None] = []
    while not obs.done:
        action = agent.act(obs)
        result = env.step(action)
        actions.append(str(action))
        errors.append(result.info.get("error"))
        obs = result.observation
    return env.grade().score, actions, errors


@pytest.mark.parametrize(
    ("kind", "floor", "ceiling"),
    # Eval partition (the default), grade over labelled distinct values. Measured means over
    # seeds 0-19: contract 0.994, clinical 0.810, security 0.587 (the grade before gave 0.994,
    # 0.829, 0.666); over seeds 0-5: 0.994, 0.818, 0.551. The ceilings keep the medium and hard
    # tiers apart.
    [("contract", 0.9, 1.0), ("clinical", 0.76, 0.88), ("security", 0.5, 0.65)],
)
def test_heuristic_episodes_beat_a_floor(kind: str, floor: float, ceiling: float) -> None:
    scores = []
    for seed in range(6):
        score, actions, errors = _play(TASKS[kind], seed=seed)
        assert errors == [None] * len(errors), [e for e in errors if e]
        assert actions[-1] == "FINISH"
        scores.append(score)
    assert floor <= statistics.mean(scores) <= ceiling, scores


def test_training_documents_are_easier_for_the_heuristic_than_eval_documents() -> None:
    # The held-out families appear only in the eval partition, so a baseline built on training
    # documents loses recall there. Measured over seeds 0-7: clinical train 0.882 vs eval 0.824,
    # security train 0.850 vs eval 0.573.
    for kind, gap in (("clinical", 0.025), ("security", 0.15)):
        train = statistics.mean(_play(TASKS[kind], seed=s, options={"partition": "train"})[0] for s in range(8))
        held_out = statistics.mean(_play(TASKS[kind], seed=s)[0] for s in range(8))
        assert train >= held_out + gap, (kind, train, held_out)


@pytest.mark.parametrize(
    ("kind", "floor"),
    # Measured on the gold set (11, 10 and 10 documents), grade over labelled distinct values:
    # contract 0.975, clinical 0.967, security 0.908 (the grade before that gave 0.96, 0.96, 0.89).
    [("contract", 0.9), ("clinical", 0.9), ("security", 0.8)],
)
def test_heuristic_on_the_gold_set(kind: Kind, floor: float) -> None:
    scores = []
    for index in range(len(load_gold(kind))):
        env = integrity_gym.make(TASKS[kind], source="gold")
        agent = HeuristicAgent(env.spec)
        obs = env.reset(scenario_id=index)
        while not obs.done:
            obs = env.step(agent.act(obs)).observation
        scores.append(env.grade().score)
    assert statistics.mean(scores) >= floor, scores


def test_episode_is_deterministic() -> None:
    first = _play(TASKS["security"], seed=3)
    assert _play(TASKS["security"], seed=3) == first


@pytest.mark.parametrize("window", [150, 1000])
def test_other_window_sizes_stay_valid(window: int) -> None:
    env = integrity_gym.make(TASKS["clinical"], window_size=window)
    agent = HeuristicAgent(env.spec)
    obs = env.reset(seed=1)
    while not obs.done:
        result = env.step(agent.act(obs))
        assert result.info.get("error") is None
        obs = result.observation
    assert env.grade().score > 0.8


def test_finishes_when_done_or_out_of_steps() -> None:
    env = integrity_gym.make(TASKS["security"], max_steps=3)
    agent = HeuristicAgent(env.spec)
    obs = env.reset(seed=0)
    steps = 0
    while not obs.done:
        obs = env.step(agent.act(obs)).observation
        steps += 1
    assert steps <= 3
    assert agent.act(obs).action_type == "FINISH"


def test_reused_agent_forgets_the_previous_episode() -> None:
    env = integrity_gym.make(TASKS["clinical"])
    agent = HeuristicAgent(env.spec)
    scores = []
    for seed in (0, 1):
        obs = env.reset(seed=seed)
        while not obs.done:
            obs = env.step(agent.act(obs)).observation
        scores.append(env.grade().score)
    fresh = _play(TASKS["clinical"], seed=1)[0]
    assert scores[1] == fresh
