"""The heuristic pii_redaction agent: its detector on crafted text, and whole episodes in the env."""

from __future__ import annotations

import inspect
import itertools
import math
import re
import statistics

import pytest

import integrity_gym
from integrity_gym.agents.base import make_agent
from integrity_gym.agents.heuristic import pii_redaction as heuristic
from integrity_gym.agents.heuristic.pii_redaction import HeuristicAgent, ScanningAgent, detect, normalise
from integrity_gym.core.seeding import partition_of
from integrity_gym.envs.pii_redaction.data import load_gold
from integrity_gym.envs.pii_redaction.generator import generate_document
from integrity_gym.envs.pii_redaction.models import Document, Entity, Kind, Label, RedactionAction

TASKS = {
    "contract": "pii_redaction/gdpr_contract_easy-v4",
    "clinical": "pii_redaction/hipaa_medical_medium-v4",
    "security": "pii_redaction/security_logs_hard-v4",
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
        # A person's number after "tel." and a person's own work address stay PII.
        ("PHONE", "Next of kin: Ann Lee, sister, tel. ", "404-307-4582", ". Pharmacy fax 303.663.3951"),
        ("EMAIL", "write to ", "support.lead.jane@acme.com", ""),
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
        # Role mailboxes, organisation lines and ids in phone or SSN shape (the labelling rules).
        "reminders come from no-reply@clearhealth.com, or write to records@ironlabs.net",
        "mail relay accepted from=security@graniterobotics.net; you can also write to dpo [at] acme [dot] com",
        "Silverly Pharmacy (tel. (855) 258-2313, fax (877) 671-0980); nurse advice line 212.353.7640",
        "if we get cut off, call us on 267.811.3221, overflow to 215.907.2312",
        "refund batch 226-10-6637, voucher 691-36-8258, dispute number 716-555-8466, RMA 842.280.6338",
        "the transaction id on my statement is 301-82-2295",
    ],
)
def test_ignores_look_alikes(text: str) -> None:
    assert found(text) == []


def test_known_surname_in_an_eponym_or_a_street_is_not_a_name() -> None:
    text = "Patient: Anna Baker\nBaker cyst of the right knee. Referral faxed to Baker Street Clinic. Baker agrees."
    names = [t for label, t in found(text) if label == "NAME"]
    assert names == ["Anna Baker", "Baker"]
    assert text.rindex("Baker agrees") == [s for s, _, label in detect(text) if label == "NAME"][-1]


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
    # Measured on seed 5, 40 documents of each partition (whole documents, no window), generator v3:
    # contract train P 0.99 R 0.99, eval P 0.95 R 0.72; clinical train P 0.93 R 0.93, eval P 0.91
    # R 0.59; security train P 0.98 R 0.95, eval P 0.69 R 0.14 (recall counts mentions: the eval
    # agents' names, a third of the mentions, are never introduced by a cue the detector knows). Before
    # role mailboxes, organisation lines, id cues and eponyms were left alone, precision was 0.79
    # (clinical) and 0.71 (security); the held-out line templates and renderings of the eval
    # partition cost recall in every tier (before the held-out line templates, v2: contract eval
    # R 0.98, clinical 0.69, security 0.70).
    [("contract", (0.9, 1.0), 0.9), ("clinical", (0.88, 0.97), 0.85), ("security", (0.9, 1.0), 0.88)],
)
def test_detector_on_whole_generated_documents(
    kind: Kind, precision_range: tuple[float, float], train_recall: float
) -> None:
    docs = _by_partition(kind, 5, 40)
    precision, recall = _precision_recall(docs["train"])
    low, high = precision_range
    assert low <= precision <= high and recall >= train_recall, (precision, recall)
    eval_recall = _precision_recall(docs["eval"])[1]
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
    # Eval partition (the default), grade over labelled distinct values with label accuracy over
    # the gold, reading ahead, generator v4 (eval lines composed per document, made-up names).
    # Measured means over seeds 0-5: 0.880, 0.646, 0.492 (seeds 0-19: 0.874, 0.677, 0.453; v3:
    # 0.905, 0.716, 0.501; before the held-out line templates 0.988, 0.750, 0.502). The ceilings
    # keep the medium and hard tiers apart.
    [("contract", 0.8, 1.0), ("clinical", 0.55, 0.75), ("security", 0.4, 0.55)],
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
    # documents loses recall there. Measured over seeds 0-7: clinical train 0.957 vs eval 0.672,
    # security train 0.959 vs eval 0.471 (generator v4).
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
    # Another window changes how the heuristic walks the document, not what it finds: no invalid
    # action and the default window's grade within 0.05 (clinical seed 1: 0.556 at 150, 500 and 1,000).
    default = _play(TASKS["clinical"], seed=1)[0]
    env = integrity_gym.make(TASKS["clinical"], window_size=window)
    agent = HeuristicAgent(env.spec)
    obs = env.reset(seed=1)
    while not obs.done:
        result = env.step(agent.act(obs))
        assert result.info.get("error") is None
        obs = result.observation
    assert env.grade().score > max(0.5, default - 0.05), (env.grade().score, default)


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


def _document(text: str, *values: tuple[str, str]) -> Document:
    """A document whose entities are the occurrences of each ``(label, value)``, longest value first."""
    entities: list[Entity] = []
    for label, value in sorted(values, key=lambda v: -len(v[1])):
        for m in re.finditer(re.escape(value), text):
            if all(m.end() <= e.start or m.start() >= e.end for e in entities):
                entities.append(Entity(start=m.start(), end=m.end(), label=label, text=value))  # type: ignore[arg-type]
    return Document(id="crafted", kind="security", text=text, entities=tuple(sorted(entities, key=lambda e: e.start)))


def _run(agent: ScanningAgent, doc: Document, **config: object) -> tuple[list[RedactionAction], float, int]:
    env = integrity_gym.make(TASKS["security"], **config)
    obs = env.reset(options={"document": doc.model_dump()})
    actions = []
    while not obs.done:
        action = agent.act(obs)
        result = env.step(action)
        assert result.info.get("error") is None, result.info
        actions.append(action)
        obs = result.observation
    return actions, env.grade().score, env.max_steps


FILLER = "[10:{:02d}] Customer: the router keeps dropping the connection every few minutes.\n"


def test_a_name_learned_at_the_end_is_redacted_at_the_start() -> None:
    # "Keisha" is a name only once "Signed by: Keisha Brown" has been read, 4,000 characters later.
    text = (
        "Keisha opened the ticket.\n" + "".join(FILLER.format(i % 60) for i in range(50)) + "Signed by: Keisha Brown\n"
    )
    doc = _document(text, ("NAME", "Keisha Brown"), ("NAME", "Keisha"))
    actions, score, _ = _run(HeuristicAgent(), doc)
    redacted = {(a.start, a.end) for a in actions if a.action_type == "REDACT"}
    assert (0, 6) in redacted  # the first mention, behind the window when the name was learned
    assert actions[0].action_type == "NEXT_CHUNK" and "PREV_CHUNK" in [a.action_type for a in actions]
    assert actions[-1].action_type == "FINISH"
    assert score == 1.0
    single = HeuristicAgent()
    single.read_ahead = False
    actions, score, _ = _run(single, doc)
    assert (0, 6) not in {(a.start, a.end) for a in actions if a.action_type == "REDACT"}
    assert score < 1.0


def test_single_pass_when_the_budget_cannot_pay_for_the_return_trip() -> None:
    env = integrity_gym.make(TASKS["security"], window_size=150)
    agent = HeuristicAgent(env.spec)
    obs = env.reset(seed=0)
    kinds = []
    while not obs.done:
        action = agent.act(obs)
        kinds.append(action.action_type)
        obs = env.step(action).observation
    assert "PREV_CHUNK" not in kinds
    # Redactions come between the moves, not after a read to the end.
    assert kinds.index("REDACT") < len(kinds) - 1 - kinds[::-1].index("NEXT_CHUNK")


@pytest.mark.parametrize("max_steps", [60, 70, 80, 95, 130])
def test_the_plan_fits_the_budget_and_ends_with_finish(max_steps: int) -> None:
    doc = generate_document("security", 0, 0)
    actions, _, budget = _run(HeuristicAgent(), doc, max_steps=max_steps)
    assert budget == max_steps
    assert len(actions) <= max_steps and actions[-1].action_type == "FINISH"


class _Fixed(ScanningAgent):
    """Finds every ``AAA`` and ``B<digit>`` (a stub detector); always reads ahead."""

    read_ahead = True
    chars_per_redaction = 10_000

    def find(self, text: str) -> list[tuple[int, int, Label]]:
        return [(m.start(), m.end(), "NAME") for m in re.finditer(r"AAA|B\d", text)]


def test_a_short_budget_drops_mentions_of_the_most_repeated_value_first() -> None:
    # Twelve mentions of one value and four distinct values, spread over 3,000 characters.
    parts = [f"{'AAA' if i % 4 else f'B{i // 4}'} " + "x" * 180 + "\n" for i in range(16)]
    text = "".join(parts)
    doc = _document(text, ("NAME", "AAA"), *[("NAME", f"B{i}") for i in range(4)])
    full, _, _ = _run(_Fixed(), doc, window_size=500, max_steps=100)
    assert len([a for a in full if a.action_type == "REDACT"]) == 16
    moves = 2 * math.ceil((len(text) - 500) / 250)
    short, _, _ = _run(_Fixed(), doc, window_size=500, max_steps=moves + 1 + 10)
    redacted = [text[a.start : a.end] for a in short if a.action_type == "REDACT"]  # type: ignore[index]
    assert sorted(redacted) == ["AAA"] * 6 + ["B0", "B1", "B2", "B3"]
    assert short[-1].action_type == "FINISH"


@pytest.mark.parametrize("kind", ["clinical", "security"])
def test_actions_do_not_depend_on_the_hidden_entities(kind: Kind) -> None:
    doc = generate_document(kind, 0, 0)
    relabel = {"NAME": "EMAIL", "EMAIL": "PHONE", "PHONE": "SSN", "SSN": "ADDRESS", "ADDRESS": "DOB", "DOB": "NAME"}
    altered = Document(
        id=doc.id,
        kind=doc.kind,
        text=doc.text,
        entities=tuple(e.model_copy(update={"label": relabel[e.label]}) for e in doc.entities[1::2]),
    )
    first, score, _ = _run(HeuristicAgent(), doc)
    second, other, _ = _run(HeuristicAgent(), altered)
    assert first == second
    assert score != other  # the grade did see the change
