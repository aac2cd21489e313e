"""Each reward component in a constructed situation, and the shaping identity."""

from __future__ import annotations

import math

import pytest

import integrity_gym
from integrity_gym.core.seeding import make_rng
from integrity_gym.core.spans import iou
from integrity_gym.envs.pii_redaction import reward as rw
from integrity_gym.envs.pii_redaction.env import PiiRedactionEnv
from integrity_gym.envs.pii_redaction.matching import MatchCounts
from integrity_gym.envs.pii_redaction.models import Document, Entity, RedactionAction

from .conftest import synthetic_document

TEXT = "Write to ana.silva@example.org today. " + "Nothing else matters here. " * 40 + "Call 555-010-2030 now."
EMAIL = (9, 30)
PHONE = (TEXT.index("555"), TEXT.index("555") + 12)


def doc() -> Document:
    return Document(
        id="constructed",
        kind="contract",
        text=TEXT,
        entities=(
            Entity(start=EMAIL[0], end=EMAIL[1], label="EMAIL", text=TEXT[EMAIL[0] : EMAIL[1]]),
            Entity(start=PHONE[0], end=PHONE[1], label="PHONE", text=TEXT[PHONE[0] : PHONE[1]]),
        ),
    )


def fresh(preset: str = "default") -> PiiRedactionEnv:
    env = integrity_gym.make("pii_redaction/gdpr_contract_easy-v2", window_size=500, reward_preset=preset)
    assert isinstance(env, PiiRedactionEnv)
    env.reset(seed=0, options={"document": doc()})
    return env


def parts(result: object) -> dict[str, float]:
    return {k: v for k, v in result.info["reward_breakdown"].items() if v and k != "shaping"}  # type: ignore[attr-defined]


def test_tp_bonus_pays_half_the_iou_once_per_entity() -> None:
    env = fresh()
    assert parts(env.step(f"REDACT {EMAIL[0]} {EMAIL[1]} EMAIL")) == {"tp_bonus": pytest.approx(0.5)}
    # A different sub-span of the same entity matches nothing new: no second bonus.
    assert parts(env.step(f"REDACT {EMAIL[0] + 5} {EMAIL[1]} EMAIL")) == {}


def test_tp_bonus_scales_with_iou() -> None:
    env = fresh()
    result = env.step(f"REDACT {EMAIL[0]} {EMAIL[1] - 3} EMAIL")  # IoU 18/21
    assert parts(result) == {"tp_bonus": pytest.approx(0.5 * 18 / 21)}


def test_fp_penalty_is_scaled_by_one_minus_best_iou() -> None:
    env = fresh()
    assert parts(env.step("REDACT 40 50 NAME")) == {"fp_penalty": pytest.approx(-0.2)}
    result = env.step(f"REDACT {EMAIL[0]} {EMAIL[0] + 7} EMAIL")  # IoU 7/21 = 1/3, below 0.6
    assert parts(result) == {"fp_penalty": pytest.approx(-0.2 * (1 - 1 / 3))}


def test_duplicate_is_rejected_and_penalised_per_repeated_span() -> None:
    env = fresh()
    env.step("REDACT 40 60 NAME")
    env.step("REDACT 41 60 NAME")  # IoU 0.95 with the first: rejected
    result = env.step("REDACT 40 59 NAME")
    assert parts(result) == {"duplicate_penalty": pytest.approx(-0.2)}
    assert result.info["error"] and env.observation().redacted_spans == [(40, 60)]


def test_invalid_actions_cost_one() -> None:
    env = fresh()
    for bad in ("REDACT 30 20 EMAIL", "REDACT 0 900 EMAIL", "DANCE", {"action_type": "REDACT", "start": 1}):
        result = env.step(bad)
        assert parts(result) == {"invalid_penalty": -1.0} and result.info["error"]


def test_miss_penalty_counts_unredacted_entities_wholly_inside_the_window() -> None:
    env = fresh()
    assert parts(env.step("NEXT_CHUNK")) == {"miss_penalty": pytest.approx(-0.3)}  # the email


def test_exploration_reward_needs_a_clean_window_that_moves() -> None:
    env = fresh()
    env.step(f"REDACT {EMAIL[0]} {EMAIL[1]} EMAIL")
    assert parts(env.step("NEXT_CHUNK")) == {"exploration_reward": pytest.approx(0.02)}
    while env.observation().progress_pct < 1.0:
        env.step(f"REDACT {PHONE[0]} {PHONE[1]} PHONE") if env.observation().cursor_position + 500 >= PHONE[
            1
        ] else env.step("NEXT_CHUNK")
    env.step(f"REDACT {PHONE[0]} {PHONE[1]} PHONE")
    assert parts(env.step("NEXT_CHUNK")) == {}  # at the end: the window cannot move


def test_skip_penalties() -> None:
    env = fresh()
    assert parts(env.step("SKIP")) == {"skip_miss_penalty": pytest.approx(-0.3)}
    assert parts(env.step("SKIP")) == {
        "skip_miss_penalty": pytest.approx(-0.3),
        "skip_stagnation_penalty": pytest.approx(-0.05),
    }
    for _ in range(8):
        result = env.step("SKIP")
    assert parts(result)["skip_stagnation_penalty"] == pytest.approx(-0.25)  # capped at 5


def test_finish_bonus_only_when_everything_is_matched() -> None:
    env = fresh()
    assert parts(env.step("FINISH")) == {}
    env = fresh("reference")
    env.step(f"REDACT {EMAIL[0]} {EMAIL[1]} EMAIL")
    env.step(f"REDACT {PHONE[0]} {PHONE[1]} PHONE")  # the reference lets REDACT reach the whole document
    assert parts(env.step("FINISH")) == {"finish_bonus": 1.0}


def test_reference_preset_keeps_the_seed_formulas() -> None:
    env = fresh("reference")
    first = env.step(f"REDACT {EMAIL[0]} {EMAIL[1]} EMAIL")
    second = env.step(f"REDACT {EMAIL[0] + 5} {EMAIL[1]} EMAIL")  # pays again under the reference
    assert parts(first) == {"tp_bonus": pytest.approx(0.5)}
    assert parts(second)["tp_bonus"] == pytest.approx(0.5 * 16 / 21)
    assert parts(env.step("REDACT 40 50 NAME")) == {"fp_penalty": pytest.approx(-0.2)}
    grade = env.grade()
    assert grade.breakdown["utility"] == pytest.approx(1 - 31 / len(TEXT))  # every redacted character counts


def test_utility_charges_only_non_pii_characters() -> None:
    env = fresh()
    env.step(f"REDACT {EMAIL[0]} {EMAIL[1]} EMAIL")
    assert env.grade().breakdown["utility"] == 1.0
    env.step("REDACT 40 50 NAME")
    non_pii = len(TEXT) - 21 - 12
    assert env.grade().breakdown["utility"] == pytest.approx(1 - 10 / non_pii)


def _half(start: int, end: int) -> tuple[int, int] | None:
    """A left part of ``[start, end)`` with IoU in (0.4, 0.6]: a match at 0.4, not at the grade's 0.6."""
    keep = math.floor(0.6 * (end - start))
    return (start, start + keep) if 0.4 < keep / (end - start) <= 0.6 else None


def test_shaping_telescopes_to_the_grade_when_redactions_cover_half_an_entity() -> None:
    """Σ shaping = grade − Φ(empty) on random episodes where half the redactions cover ~half an entity.

    Half-entity redactions match at IoU 0.4 but not at the grade's 0.6, so a potential computed
    with any other matcher than the grade's breaks the identity on these episodes.
    """
    half_only = 0
    for seed in range(16):
        if seed % 4 == 3:
            env = integrity_gym.make("pii_redaction/security_logs_hard-v2", window_size=300)
            obs = env.reset(seed=seed)
        else:
            env = integrity_gym.make("pii_redaction/gdpr_contract_easy-v2", window_size=300)
            obs = env.reset(seed=0, options={"document": synthetic_document(seed)})
        rng = make_rng("shaping-test", seed)
        halved: set[tuple[int, int]] = set()
        shaping = 0.0
        while not env.done:
            roll = rng.random()
            action = PiiRedactionEnv.oracle_action(env.state())
            if action.action_type == "REDACT" and (action.start, action.end) in halved:
                action = RedactionAction(action_type="NEXT_CHUNK")  # leave the half redaction alone
            elif action.action_type == "REDACT" and rng.random() < 0.5:
                assert action.start is not None and action.end is not None
                part = _half(action.start, action.end)
                if part is not None:
                    halved.add((action.start, action.end))
                    action = action.model_copy(update={"start": part[0], "end": part[1]})
            if roll < 0.25:
                action = PiiRedactionEnv.sample_action(obs, rng)
            result = env.step(action)
            obs = result.observation
            shaping += result.info["reward_breakdown"]["shaping"]
        assert shaping == pytest.approx(env.grade().score - 0.25, abs=1e-9), seed
        spans = [(r.start, r.end) for r in env.state().redactions]
        for e in env.state().document.entities:
            best = max((iou(s, t, e.start, e.end) for s, t in spans), default=0.0)
            half_only += 0.4 < best <= 0.6
    assert half_only >= 10  # the episodes did exercise the gap between the two thresholds


def test_potential_formula() -> None:
    assert rw.potential(1.0, 1.0, 1.0) == 1.0
    assert rw.potential(0.0, 0.0, 1.0) == 0.25  # Φ of a document nothing has been redacted in


def test_the_reference_bonus_needs_iou_strictly_above_its_threshold() -> None:
    reference = rw.PRESETS["reference"]
    assert reference.match_iou == 0.4
    at = rw.redact_reward(reference, new_matches=[], best_iou=0.4)
    assert at == {"fp_penalty": pytest.approx(-reference.fp_penalty * 0.6)}
    assert rw.redact_reward(reference, new_matches=[], best_iou=0.41) == {"tp_bonus": pytest.approx(0.5 * 0.41)}


def test_the_miss_penalty_is_per_missed_entity() -> None:
    env = integrity_gym.make("pii_redaction/gdpr_contract_easy-v2", window_size=len(TEXT), reward_preset="default")
    env.reset(seed=0, options={"document": doc()})
    assert parts(env.step("NEXT_CHUNK")) == {"miss_penalty": pytest.approx(-0.3 * 2)}  # the email and the phone


def test_the_skip_miss_penalty_is_per_missed_entity() -> None:
    env = integrity_gym.make("pii_redaction/gdpr_contract_easy-v2", window_size=len(TEXT), reward_preset="default")
    env.reset(seed=0, options={"document": doc()})
    missed = parts(env.step("SKIP"))["skip_miss_penalty"]
    assert missed == pytest.approx(-2 * rw.PRESETS["default"].skip_miss_penalty) and missed < 0


def test_a_value_is_its_letters_and_digits_casefolded() -> None:
    assert rw.value_key("Jo-Ann O'Neil") == "joannoneil"
    assert rw.value_key("ＡＭＹ") == "amy"  # NFKC: full-width letters are the plain ones
    assert rw.value_key("—·—") == "—·—"  # nothing alphanumeric: the folded text itself


def test_recall_weights_share_one_unit_between_labels_values_and_mentions() -> None:
    entities = [("NAME", "Amy"), ("NAME", "amy"), ("NAME", "Bo"), ("EMAIL", "a@b.c")]
    weights = rw.gold_weights(rw.PRESETS["default"], entities)
    assert weights.recall == pytest.approx((0.125, 0.125, 0.25, 0.5)) and sum(weights.recall) == pytest.approx(1)
    assert weights.hit == pytest.approx((0.5, 0.5, 1.0, 1.0))


def counts(*, gold: int = 0, predictions: int = 0) -> MatchCounts:
    """Totals of a matching in which nothing matched."""
    return MatchCounts(
        matched=0,
        label_correct=0,
        predictions=predictions,
        gold=gold,
        weight_matched=0.0,
        weight_correct=0.0,
        weight_total=float(gold),
        hits=0.0,
    )


def test_scores_with_nothing_to_find_or_nothing_found() -> None:
    matched = rw.PRESETS["reference"]
    assert rw.precision_of(counts()) == 1.0 and rw.precision_of(counts(gold=2)) == 0.0
    assert rw.precision_of(counts(gold=2, predictions=3)) == 0.0
    assert rw.label_accuracy(matched, counts()) == 1.0
    assert rw.label_accuracy(matched, counts(gold=2, predictions=3)) == 0.0
    assert rw.utility(rw.PRESETS["default"], over_redacted=0, non_pii=0, redacted=4, length=4) == 1.0


def test_penalties_scale_with_their_counts() -> None:
    config = rw.PRESETS["default"]
    assert rw.duplicate_reward(config, 3) == {"duplicate_penalty": pytest.approx(-3 * config.duplicate_penalty)}
    assert rw.skip_reward(config, missed=0, trailing_skips=1) == {}  # the first SKIP does not stagnate
