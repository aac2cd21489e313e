"""The grade's numbers, pinned to the reference document, and what the default preset changes.

Every test plays the environment (reset/step/grade) on a constructed document, so the expected
values below are worked out by hand from the document, not by calling the scoring code.
"""

from __future__ import annotations

import pytest

import integrity_gym
from integrity_gym.agents.oracle import OracleAgent
from integrity_gym.envs.pii_redaction.env import PiiRedactionEnv
from integrity_gym.envs.pii_redaction.grader import grade_redactions
from integrity_gym.envs.pii_redaction.models import Document, Entity, Label, Redaction
from integrity_gym.envs.pii_redaction.reward import PRESETS

FILLER = "The parties agree to the terms set out below. "


def build(pieces: list[str | tuple[Label, str]], doc_id: str = "constructed") -> Document:
    """A document from plain strings and ``(label, text)`` entities, offsets recorded as it grows."""
    text, entities = "", []
    for piece in pieces:
        if isinstance(piece, tuple):
            label, value = piece
            entities.append(Entity(start=len(text), end=len(text) + len(value), label=label, text=value))
            text += value
        else:
            text += piece
    return Document(id=doc_id, kind="contract", text=text, entities=tuple(entities))


def play(document: Document, actions: list[str], preset: str = "default", window: int = 1000) -> PiiRedactionEnv:
    env = integrity_gym.make("pii_redaction/gdpr_contract_easy-v4", window_size=window, reward_preset=preset)
    assert isinstance(env, PiiRedactionEnv)
    env.reset(seed=0, options={"document": document})
    for action in actions:
        result = env.step(action)
        assert result.info["error"] is None, result.info["error"]
    return env


def span(document: Document, k: int) -> tuple[int, int]:
    return document.entities[k].start, document.entities[k].end


# ---------------------------------------------------------------------------- IoU > 0.6
# A 100-character address: a redaction of its first n characters has IoU n / 100.
ADDRESS = "12 Long Meadow Road, Flat 4, Harbour View Estate, Springfield, Illinois 62704, United States of Amer"
DOC_IOU = build([FILLER * 3, ("ADDRESS", ADDRESS), " " + FILLER * 3])


@pytest.mark.parametrize("preset", ["default", "reference"])
@pytest.mark.parametrize(("covered", "matches"), [(55, False), (60, False), (61, True), (100, True)])
def test_the_grade_matches_only_above_iou_0_6(preset: str, covered: int, matches: bool) -> None:
    assert len(ADDRESS) == 100
    start, _ = span(DOC_IOU, 0)
    env = play(DOC_IOU, [f"REDACT {start} {start + covered} ADDRESS"], preset)
    grade = env.grade()
    assert grade.breakdown["true_positives"] == (1.0 if matches else 0.0)
    assert grade.breakdown["false_positives"] == (0.0 if matches else 1.0)


# ---------------------------------------------------------------------------- weights 0.5 / 0.25 / 0.25
DOC_MIX = build(
    [
        FILLER,
        ("EMAIL", "mara.quist@example.org"),
        " " + FILLER,
        ("PHONE", "415-555-0187"),
        " " + FILLER,
        ("NAME", "Mara Quist"),
        " " + FILLER,
        ("NAME", "Mara Quist"),
        " " + FILLER,
        ("NAME", "Olek Brandt"),
        " " + FILLER,
    ]
)


def mix_actions() -> list[str]:
    """Email right, phone labelled SSN, one mention of Mara, Olek right, and 10 filler characters."""
    email, phone, mara, _, olek = (span(DOC_MIX, k) for k in range(5))
    return [
        f"REDACT {email[0]} {email[1]} EMAIL",
        f"REDACT {phone[0]} {phone[1]} SSN",
        f"REDACT {mara[0]} {mara[1]} NAME",
        f"REDACT {olek[0]} {olek[1]} NAME",
        "REDACT 0 10 NAME",
    ]


def test_reference_grade_is_half_f1_quarter_labels_quarter_utility() -> None:
    env = play(DOC_MIX, mix_actions(), "reference")
    grade = env.grade()
    # 5 redactions, 5 gold, 4 matched: F1 = 2·4 / (5 + 5) = 0.8; labels right on 3 of 4 matched.
    f1, labels = 0.8, 0.75
    redacted = 22 + 12 + 10 + 11 + 10
    utility = 1 - redacted / len(DOC_MIX.text)  # the reference charges every redacted character
    assert grade.breakdown["f1"] == pytest.approx(f1)
    assert grade.breakdown["label_accuracy"] == pytest.approx(labels)
    assert grade.breakdown["utility"] == pytest.approx(utility)
    assert grade.score == pytest.approx(0.5 * f1 + 0.25 * labels + 0.25 * utility, abs=1e-12)
    assert grade.score == pytest.approx(0.5 * 0.8 + 0.25 * 0.75 + 0.25 * (1 - 65 / len(DOC_MIX.text)), abs=1e-12)


def test_default_grade_weighs_labels_then_values_then_mentions() -> None:
    env = play(DOC_MIX, mix_actions(), "default")
    grade = env.grade()
    # Labels present: EMAIL, PHONE, NAME (1/3 each). NAME has two values (1/6 each); Mara's
    # two mentions share hers (1/12 each). Found with the right label: email 1/3, one Mara
    # mention 1/12, Olek 1/6; the phone matched under the wrong label (1/3).
    recall = 1 / 3 + 1 / 12 + 1 / 6
    # Precision: Mara's value is half hit (one of her two mentions), the others whole; one false
    # positive counts one.
    precision = 3.5 / 4.5
    f1 = 2 * precision * recall / (precision + recall)
    labels = recall  # the gold's weight redacted with the right label (a miss is a wrong label)
    utility = 1 - 10 / (len(DOC_MIX.text) - (22 + 12 + 10 + 10 + 11))  # only non-PII characters count
    assert grade.breakdown["recall"] == pytest.approx(recall)
    assert grade.breakdown["mention_recall"] == pytest.approx(4 / 5)
    assert grade.breakdown["f1"] == pytest.approx(f1)
    assert grade.breakdown["label_accuracy"] == pytest.approx(labels)
    assert grade.breakdown["utility"] == pytest.approx(utility)
    assert grade.score == pytest.approx(0.5 * f1 + 0.25 * labels + 0.25 * utility, abs=1e-12)


# ---------------------------------------------------------------------------- distinct values
AGENT = "Keisha"
DOC_CHAT = build(
    [
        "[10:00:01] ",
        ("NAME", AGENT),
        " (agent): Hello, how can I help?\n[10:00:09] Customer: I am ",
        ("NAME", "Tomas Reyes"),
        ", my mail is ",
        ("EMAIL", "t.reyes@example.net"),
        "\n",
        *[piece for k in range(12) for piece in (f"[10:0{k // 6 + 1}:{k % 6}0] ", ("NAME", AGENT), " (agent): ok\n")],
        "[10:05:00] Customer: call ",
        ("PHONE", "312-555-0144"),
        " please\n",
    ]
)


def redact_all(document: Document, keep: list[int], label: Label | None = None) -> list[str]:
    return [f"REDACT {e.start} {e.end} {label or e.label}" for k, e in enumerate(document.entities) if k in keep]


def test_repeating_one_name_is_worth_one_value_of_one_label() -> None:
    agent_mentions = [k for k, e in enumerate(DOC_CHAT.entities) if e.text == AGENT]
    assert len(agent_mentions) == 13 and len(DOC_CHAT.entities) == 16
    speaker_only = play(DOC_CHAT, redact_all(DOC_CHAT, agent_mentions)).grade()
    # 13 of 16 mentions, but one of two NAME values of three labels: 1/6 of the PII.
    assert speaker_only.breakdown["mention_recall"] == pytest.approx(13 / 16)
    assert speaker_only.breakdown["recall"] == pytest.approx(1 / 6)
    one_each = play(DOC_CHAT, redact_all(DOC_CHAT, [0, 1, 2, 15])).grade()  # every value once
    assert one_each.breakdown["recall"] == pytest.approx(1 - 12 / 13 * 1 / 6)
    # Precision 1, recall 1/6: F1 = 2/7; labels 1/6 (the rest of the gold has no right label); utility full.
    assert speaker_only.breakdown["label_accuracy"] == pytest.approx(1 / 6)
    assert speaker_only.score == pytest.approx(0.5 * 2 / 7 + 0.25 / 6 + 0.25)
    assert one_each.score > 0.9
    # Under the reference formulas the repeated name alone would pass the hard threshold.
    reference = play(DOC_CHAT, redact_all(DOC_CHAT, agent_mentions), "reference").grade()
    assert reference.score > 0.75


def test_repeating_one_name_cannot_pad_precision() -> None:
    agent_mentions = [k for k, e in enumerate(DOC_CHAT.entities) if e.text == AGENT]
    # Three false positives in the first line's filler ("Hello", "how", "can").
    spray = ["REDACT 27 32 NAME", "REDACT 34 37 NAME", "REDACT 38 41 NAME"]
    assert [DOC_CHAT.text[27:32], DOC_CHAT.text[34:37], DOC_CHAT.text[38:41]] == ["Hello", "how", "can"]
    padded = play(DOC_CHAT, redact_all(DOC_CHAT, agent_mentions) + spray)
    # The 13 mentions of one value count as one hit against three false positives.
    assert padded.grade().breakdown["precision"] == pytest.approx(1 / 4)
    reference = play(DOC_CHAT, redact_all(DOC_CHAT, agent_mentions) + spray, "reference")
    assert reference.grade().breakdown["precision"] == pytest.approx(13 / 16)


def test_a_span_under_the_wrong_label_adds_no_recall() -> None:
    everything = list(range(len(DOC_CHAT.entities)))
    right = play(DOC_CHAT, redact_all(DOC_CHAT, everything)).grade()
    all_name = play(DOC_CHAT, redact_all(DOC_CHAT, everything, "NAME")).grade()
    assert right.score == pytest.approx(1.0)
    # EMAIL and PHONE found but called NAME: only the NAME third is recalled.
    assert all_name.breakdown["recall"] == pytest.approx(1 / 3)
    assert all_name.breakdown["label_accuracy"] == pytest.approx(1 / 3)
    assert all_name.score == pytest.approx(0.5 * 2 * (1 / 3) / (1 + 1 / 3) + 0.25 / 3 + 0.25)


def test_no_gold_and_no_redaction_is_a_perfect_grade() -> None:
    empty = build([FILLER * 30])
    assert play(empty, ["FINISH"]).grade().score == 1.0
    assert play(empty, ["REDACT 0 10 NAME"]).grade().breakdown["f1"] == 0.0


# ---------------------------------------------------------------------------- reference miss scope
def test_reference_preset_charges_misses_for_entities_the_window_only_touches() -> None:
    # A 120-character window whose right edge cuts the e-mail in two.
    doc = build([FILLER * 2, ("EMAIL", "edge.case@example.com"), " " + FILLER * 4])
    start = doc.entities[0].start
    window = start + 10
    # Default: the e-mail is not wholly inside the window, so the move leaves nothing behind and pays
    # exploration for the half window it newly shows.
    shown = (window // 2) / len(doc.text)
    for preset, expected in (
        ("default", {"exploration_reward": 0.01 * shown}),
        ("reference", {"miss_penalty": -0.3}),
    ):
        env = integrity_gym.make("pii_redaction/gdpr_contract_easy-v4", window_size=window, reward_preset=preset)
        env.reset(seed=0, options={"document": doc})
        breakdown = env.step("NEXT_CHUNK").info["reward_breakdown"]
        assert {k: v for k, v in breakdown.items() if v and k != "shaping"} == pytest.approx(expected), preset


# ---------------------------------------------------------------------------- oracle at every window
TASK_IDS = [spec.id for spec in integrity_gym.list_tasks("pii_redaction/*")]


@pytest.mark.parametrize("window", [200, 500, 1000])
@pytest.mark.parametrize("task_id", TASK_IDS)
def test_the_oracle_reaches_one_at_every_window_size(task_id: str, window: int) -> None:
    for seed in range(3):
        env = integrity_gym.make(task_id, window_size=window)
        oracle = OracleAgent(env)
        obs = env.reset(seed=seed)
        while not obs.done:
            obs = env.step(oracle.act(obs)).observation
        assert env.state().finished, (task_id, window, seed, "ran out of steps")
        assert env.grade().score == 1.0, (task_id, window, seed)


@pytest.mark.parametrize("window", [200, 1000])
def test_the_budget_adds_the_moves_across_the_document(window: int) -> None:
    env = integrity_gym.make("pii_redaction/security_logs_hard-v4", window_size=window)
    obs = env.reset(seed=0)
    moves = -(-(obs.document_length - window) // (window // 2))
    assert obs.steps_left == 80 + moves
    longer = integrity_gym.make("pii_redaction/security_logs_hard-v4", window_size=window, min_chars=12_000)
    obs = longer.reset(seed=0)
    assert obs.steps_left == 160 + -(-(obs.document_length - window) // (window // 2))


def test_a_value_is_its_letters_and_digits_whatever_the_case() -> None:
    doc = build(
        [
            "[09:00:00] ",
            ("NAME", "Amy"),
            " (agent): hi\n[09:00:05] Customer: hey ",
            ("NAME", "amy"),
            ", call ",
            ("PHONE", "312-555-0144"),
            "\n",
        ]
    )
    # "Amy" and "amy" are one NAME value: redacting one of them recalls half of it.
    grade = play(doc, [f"REDACT {doc.entities[0].start} {doc.entities[0].end} NAME"]).grade()
    assert grade.breakdown["recall"] == pytest.approx(0.5 * 0.5)


def test_a_document_without_pii_reports_perfect_figures_and_nothing_leaked() -> None:
    breakdown = play(build([FILLER * 30]), ["FINISH"]).grade().breakdown
    assert breakdown["precision"] == breakdown["recall"] == breakdown["label_accuracy"] == 1.0
    assert breakdown["mention_recall"] == 1.0
    assert breakdown["leaked_pii_chars"] == breakdown["leaked_pii_fraction"] == 0.0


def test_leakage_counts_the_gold_characters_left_visible() -> None:
    start, _ = span(DOC_IOU, 0)
    breakdown = play(DOC_IOU, [f"REDACT {start} {start + 70} ADDRESS"]).grade().breakdown
    assert breakdown["leaked_pii_chars"] == 30.0
    assert breakdown["leaked_pii_fraction"] == pytest.approx(0.3)
    assert breakdown["mention_recall"] == 1.0  # IoU 0.7 matches


def test_a_grade_exactly_at_the_threshold_is_a_success() -> None:
    start, _ = span(DOC_IOU, 0)
    redactions = [Redaction(start=start, end=start + 80, label="ADDRESS"), Redaction(start=0, end=10, label="NAME")]
    config = PRESETS["default"]
    score = grade_redactions(DOC_IOU, redactions, config, success_threshold=0.9).score
    assert 0.5 < score < 1.0
    assert grade_redactions(DOC_IOU, redactions, config, success_threshold=score).success
    assert not grade_redactions(DOC_IOU, redactions, config, success_threshold=score + 1e-9).success


def test_label_accuracy_counts_misses_by_default_and_only_matches_under_the_reference() -> None:
    """A precise agent that finds one value of three labels: the seed's term stays at 1, ours does not."""
    actions = redact_all(DOC_CHAT, [15])  # the phone only, right label
    default = play(DOC_CHAT, actions).grade().breakdown
    reference = play(DOC_CHAT, actions, "reference").grade().breakdown
    assert default["label_accuracy"] == pytest.approx(1 / 3) == default["recall"]
    assert reference["label_accuracy"] == 1.0


def test_the_counts_in_the_breakdown() -> None:
    """One entity matched, one missed, and a false positive over 10 characters of plain text."""
    doc = build([FILLER, ("NAME", "Amy Rowe"), " and ", ("EMAIL", "amy@rowe.example"), " ", FILLER])
    start, end = span(doc, 0)
    breakdown = play(doc, [f"REDACT {start} {end} NAME", "REDACT 0 10 PHONE"]).grade().breakdown
    assert breakdown["true_positives"] == 1.0 and breakdown["false_positives"] == 1.0
    assert breakdown["false_negatives"] == 1.0
    assert breakdown["over_redacted_chars"] == 10.0
