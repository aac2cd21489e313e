"""Each reward component in a constructed situation, and the shaping identity."""

from __future__ import annotations

import math
from collections import Counter

import pytest

import integrity_gym
from integrity_gym.agents import make_agent
from integrity_gym.core.env import WASTED_STEP
from integrity_gym.core.seeding import make_rng
from integrity_gym.core.spans import iou
from integrity_gym.envs.pii_redaction import reward as rw
from integrity_gym.envs.pii_redaction.env import PiiRedactionEnv
from integrity_gym.envs.pii_redaction.matching import MatchCounts
from integrity_gym.envs.pii_redaction.models import LABELS, Document, Entity, RedactionAction

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
    env = integrity_gym.make("pii_redaction/gdpr_contract_easy", window_size=500, reward_preset=preset)
    assert isinstance(env, PiiRedactionEnv)
    env.reset(seed=0, options={"document": doc()})
    return env


def parts(result: object) -> dict[str, float]:
    return {k: v for k, v in result.info["reward_breakdown"].items() if v and k != "shaping"}  # type: ignore[attr-defined]


#: Each entity's share of the PII under the default weights: two labels, one value each.
SHARE = 0.5


def to_last_window(env: PiiRedactionEnv) -> list[dict[str, float]]:
    """NEXT_CHUNK until the window reaches the end of ``TEXT``; the direct parts of each move."""
    moves = []
    while env.observation().progress_pct < 1.0:
        moves.append(parts(env.step("NEXT_CHUNK")))
    return moves


def test_tp_bonus_pays_the_share_of_the_pii_once_per_entity() -> None:
    env = fresh()
    assert parts(env.step(f"REDACT {EMAIL[0]} {EMAIL[1]} EMAIL")) == {"tp_bonus": pytest.approx(0.05 * SHARE)}
    # A different sub-span of the same entity matches nothing new: no second bonus.
    assert parts(env.step(f"REDACT {EMAIL[0] + 5} {EMAIL[1]} EMAIL")) == {}


def test_tp_bonus_pays_the_share_whatever_the_iou_under_default_and_half_the_iou_under_reference() -> None:
    # IoU 18/21: above 0.6, so the whole entity's share counts under default.
    assert parts(fresh().step(f"REDACT {EMAIL[0]} {EMAIL[1] - 3} EMAIL")) == {"tp_bonus": pytest.approx(0.05 * SHARE)}
    result = fresh("reference").step(f"REDACT {EMAIL[0]} {EMAIL[1] - 3} EMAIL")
    assert parts(result) == {"tp_bonus": pytest.approx(0.5 * 18 / 21)}


def test_a_match_under_the_wrong_label_pays_nothing_direct() -> None:
    env = fresh()
    assert parts(env.step(f"REDACT {EMAIL[0]} {EMAIL[1]} NAME")) == {}
    # The right label on a span that overlaps the first by IoU 16/21 (not a duplicate): now the share.
    assert parts(env.step(f"REDACT {EMAIL[0] + 5} {EMAIL[1]} EMAIL")) == {"tp_bonus": pytest.approx(0.05 * SHARE)}
    # Under the reference a match pays whatever its label.
    assert parts(fresh("reference").step(f"REDACT {EMAIL[0]} {EMAIL[1]} NAME")) == {"tp_bonus": pytest.approx(0.5)}


def test_fp_penalty_is_scaled_by_one_minus_best_iou_over_the_gold_for_the_first_gold_false_positives() -> None:
    env = fresh()
    # Two gold entities: each of the first two false positives costs 0.05 × (1 − IoU) / 2.
    assert parts(env.step("REDACT 40 50 NAME")) == {"fp_penalty": pytest.approx(-0.05 / 2)}
    result = env.step(f"REDACT {EMAIL[0]} {EMAIL[0] + 7} EMAIL")  # IoU 7/21 = 1/3, below 0.6
    assert parts(result) == {"fp_penalty": pytest.approx(-0.05 * (1 - 1 / 3) / 2)}
    # The third costs nothing direct; Φ's precision and utility still charge it.
    third = env.step("REDACT 60 70 NAME")
    assert parts(third) == {} and third.info["reward_breakdown"]["shaping"] < 0
    # The reference charges 0.2 × (1 − IoU) for every false positive.
    env = fresh("reference")
    assert parts(env.step("REDACT 40 50 NAME")) == {"fp_penalty": pytest.approx(-0.2)}
    result = env.step(f"REDACT {EMAIL[0]} {EMAIL[0] + 3} EMAIL")  # IoU 3/21, below 0.4
    assert parts(result) == {"fp_penalty": pytest.approx(-0.2 * (1 - 3 / 21))}
    assert parts(env.step("REDACT 60 70 NAME")) == {"fp_penalty": pytest.approx(-0.2)}


@pytest.mark.parametrize(("preset", "cost"), [("default", WASTED_STEP), ("reference", 0.2)])
def test_duplicate_is_rejected_and_penalised_per_repeated_span(preset: str, cost: float) -> None:
    env = fresh(preset)
    env.step("REDACT 40 60 NAME")
    env.step("REDACT 41 60 NAME")  # IoU 0.95 with the first: rejected
    result = env.step("REDACT 40 59 NAME")
    assert parts(result) == {"duplicate_penalty": pytest.approx(-cost)}
    assert result.info["error"] and env.observation().redacted_spans == [(40, 60)]
    # 44-64 overlaps 40-60 by IoU 16/24 and is kept; 42-62 repeats both (IoU 18/22 each).
    env.step("REDACT 44 64 NAME")
    result = env.step("REDACT 42 62 NAME")
    assert parts(result) == {"duplicate_penalty": pytest.approx(-2 * cost)}
    assert env.observation().redacted_spans == [(40, 60), (44, 64)]


@pytest.mark.parametrize(("preset", "cost"), [("default", WASTED_STEP), ("reference", 1.0)])
def test_invalid_actions_cost_a_wasted_step(preset: str, cost: float) -> None:
    env = fresh(preset)
    bad_actions = ["REDACT 30 20 EMAIL", "DANCE", {"action_type": "REDACT", "start": 1}]
    if preset == "default":  # past the window; the reference lets REDACT reach the whole document
        bad_actions.append("REDACT 0 900 EMAIL")
    for bad in bad_actions:
        result = env.step(bad)
        assert parts(result) == {"invalid_penalty": pytest.approx(-cost)} and result.info["error"]
    assert rw.PRESETS["default"].invalid_penalty == rw.PRESETS["default"].duplicate_penalty == WASTED_STEP


def test_next_chunk_charges_no_miss_under_default_and_the_window_s_misses_under_reference() -> None:
    env = fresh()
    # The e-mail is left behind: no miss charged, and no exploration reward either.
    assert parts(env.step("NEXT_CHUNK")) == {}
    env = fresh("reference")
    assert parts(env.step("NEXT_CHUNK")) == {"miss_penalty": pytest.approx(-0.3)}  # the email


def test_exploration_reward_pays_the_share_of_the_document_newly_shown() -> None:
    env = fresh()
    env.step(f"REDACT {EMAIL[0]} {EMAIL[1]} EMAIL")
    moves = to_last_window(env)
    # Windows 0-500, 250-750, 500-1000, 640-1140: 250, 250 and 140 new characters of 1,140.
    assert len(TEXT) == 1140 and moves == [
        {"exploration_reward": pytest.approx(0.01 * 250 / 1140)},
        {"exploration_reward": pytest.approx(0.01 * 250 / 1140)},
        {"exploration_reward": pytest.approx(0.01 * 140 / 1140)},
    ]
    env.step(f"REDACT {PHONE[0]} {PHONE[1]} PHONE")
    assert parts(env.step("NEXT_CHUNK")) == {}  # at the end: the window cannot move


def test_exploration_reward_is_withheld_while_an_entity_inside_the_window_is_left_behind() -> None:
    env = fresh()
    assert parts(env.step("NEXT_CHUNK")) == {}  # the e-mail, wholly inside 0-500, unredacted
    # The phone lies only in the last window, so these moves leave nothing behind.
    assert to_last_window(env) == [
        {"exploration_reward": pytest.approx(0.01 * 250 / 1140)},
        {"exploration_reward": pytest.approx(0.01 * 140 / 1140)},
    ]


def test_the_reference_pays_exploration_per_next_chunk_even_when_the_window_cannot_move() -> None:
    env = fresh("reference")
    env.step(f"REDACT {EMAIL[0]} {EMAIL[1]} EMAIL")
    env.step(f"REDACT {PHONE[0]} {PHONE[1]} PHONE")  # the reference lets REDACT reach the whole document
    assert to_last_window(env) == [{"exploration_reward": pytest.approx(0.02)}] * 3
    assert parts(env.step("NEXT_CHUNK")) == {"exploration_reward": pytest.approx(0.02)}


def test_skip_penalties() -> None:
    env = fresh()
    assert parts(env.step("SKIP")) == {}  # no miss on SKIP under default, and the first SKIP does not stagnate
    assert parts(env.step("SKIP")) == {"skip_stagnation_penalty": pytest.approx(-0.005)}
    assert parts(env.step("SKIP")) == {"skip_stagnation_penalty": pytest.approx(-0.01)}
    for _ in range(8):
        result = env.step("SKIP")
    assert parts(result) == {"skip_stagnation_penalty": pytest.approx(-0.025)}  # capped at 5


def test_reference_skip_penalties() -> None:
    env = fresh("reference")
    assert parts(env.step("SKIP")) == {"skip_miss_penalty": pytest.approx(-0.3)}
    assert parts(env.step("SKIP")) == {
        "skip_miss_penalty": pytest.approx(-0.3),
        "skip_stagnation_penalty": pytest.approx(-0.05),
    }
    for _ in range(8):
        result = env.step("SKIP")
    assert parts(result)["skip_stagnation_penalty"] == pytest.approx(-0.25)  # capped at 5


def test_finish_bonus_only_when_everything_is_matched() -> None:
    # Nothing matched: no bonus, and the end-of-episode miss charge for all the PII.
    assert parts(fresh().step("FINISH")) == {"miss_penalty": pytest.approx(-0.05)}
    env = fresh()
    env.step(f"REDACT {EMAIL[0]} {EMAIL[1]} EMAIL")
    assert parts(env.step("FINISH")) == {"miss_penalty": pytest.approx(-0.05 * SHARE)}
    env = fresh()
    env.step(f"REDACT {EMAIL[0]} {EMAIL[1]} EMAIL")
    to_last_window(env)
    env.step(f"REDACT {PHONE[0]} {PHONE[1]} PHONE")
    assert parts(env.step("FINISH")) == {"finish_bonus": pytest.approx(0.05)}  # and no miss left to charge
    env = fresh("reference")
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
            env = integrity_gym.make("pii_redaction/security_logs_hard", window_size=300)
            obs = env.reset(seed=seed)
        else:
            env = integrity_gym.make("pii_redaction/gdpr_contract_easy", window_size=300)
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


def whole_document_window(preset: str) -> PiiRedactionEnv:
    env = integrity_gym.make("pii_redaction/gdpr_contract_easy", window_size=len(TEXT), reward_preset=preset)
    assert isinstance(env, PiiRedactionEnv)
    env.reset(seed=0, options={"document": doc()})
    return env


def test_the_reference_miss_penalty_is_per_missed_entity() -> None:
    env = whole_document_window("reference")
    assert parts(env.step("NEXT_CHUNK")) == {"miss_penalty": pytest.approx(-0.3 * 2)}  # the email and the phone


def test_the_default_miss_penalty_is_the_share_still_unmatched_at_the_end() -> None:
    env = whole_document_window("default")
    assert parts(env.step("NEXT_CHUNK")) == {}  # both entities in view and unredacted: nothing until the end
    env.step(f"REDACT {PHONE[0]} {PHONE[1]} PHONE")
    assert parts(env.step("FINISH")) == {"miss_penalty": pytest.approx(-0.05 * SHARE)}  # the email's share


def test_the_skip_miss_penalty_is_per_missed_entity_under_reference_and_nothing_under_default() -> None:
    env = whole_document_window("reference")
    assert parts(env.step("SKIP")) == {"skip_miss_penalty": pytest.approx(-2 * 0.3)}
    assert rw.PRESETS["default"].skip_miss_penalty == 0.0
    assert parts(whole_document_window("default").step("SKIP")) == {}


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


# ---------------------------------------------------------------------------- return against grade
TIERS = {spec.id: spec.tier for spec in integrity_gym.list_tasks("pii_redaction/*")}
TASKS = list(TIERS)
EASY, MEDIUM = "pii_redaction/gdpr_contract_easy", "pii_redaction/hipaa_medical_medium"
#: Φ before anything is redacted in a document with PII: F1 0, label accuracy 0, utility 1.
PHI_EMPTY = 0.25
DIRECT = tuple(k for k in rw.COMPONENTS if k != "shaping")
#: The charges of steps that did nothing: each is a WASTED_STEP (a duplicate, per span it repeats) or a stall.
WASTED = ("duplicate_penalty", "invalid_penalty", "skip_stagnation_penalty")


def play_agent(
    task: str, name: str, seed: int, **config: object
) -> tuple[PiiRedactionEnv, list[dict[str, float]], float]:
    """One episode of agent ``name``: the environment, every step's breakdown, and the return."""
    env = integrity_gym.make(task, **config)
    assert isinstance(env, PiiRedactionEnv)
    agent = make_agent(name, env, seed=seed)
    obs = env.reset(seed=seed)
    steps: list[dict[str, float]] = []
    total = 0.0
    while not env.done:
        result = env.step(agent.act(obs))
        breakdown = result.info["reward_breakdown"]
        assert set(breakdown) == set(rw.COMPONENTS)
        assert result.reward == pytest.approx(sum(breakdown.values()), abs=1e-12)
        steps.append(breakdown)
        total += result.reward
        obs = result.observation
    return env, steps, total


def test_the_return_is_the_grade_gain_plus_direct_terms_each_bounded_by_its_magnitude() -> None:
    """return = (grade − Φ0) + Σ direct terms, and under default each term's total stays within its magnitude.

    Hence grade − 0.25 − 0.1 − wasted ≤ return ≤ grade − 0.25 + 0.11: the return ranks policies as
    the grade does, up to 0.11 and the steps they waste.
    """
    seen: Counter[str] = Counter()
    for task in TASKS:
        for name in ("oracle", "heuristic", "noop", "random"):
            for seed in range(5):
                env, steps, ret = play_agent(task, name, seed)
                where = (task, name, seed)
                grade = env.grade()
                gold = len(env.state().document.entities)
                recall = grade.breakdown["recall"]
                total = {k: math.fsum(step[k] for step in steps) for k in rw.COMPONENTS}
                assert gold > 0, where  # so Φ0 is 0.25
                assert total["shaping"] == pytest.approx(grade.score - PHI_EMPTY, abs=1e-9), where
                assert ret - (grade.score - PHI_EMPTY) == pytest.approx(math.fsum(total[k] for k in DIRECT), abs=1e-9)
                # tp pays the share of the PII matched with the right label: 0.05 × recall.
                assert 0.0 <= total["tp_bonus"] <= 0.05 + 1e-12, where
                assert total["tp_bonus"] == pytest.approx(0.05 * recall, abs=1e-9), where
                # fp: at most one charge per gold entity, each at most 0.05 / gold.
                assert -0.05 - 1e-12 <= total["fp_penalty"] <= 0.0, where
                assert sum(1 for step in steps if step["fp_penalty"]) <= gold, where
                # miss: once, on the last step, for the share not matched with the right label.
                assert all(step["miss_penalty"] == 0.0 for step in steps[:-1]), where
                assert total["miss_penalty"] == pytest.approx(-0.05 * (1.0 - recall), abs=1e-9), where
                assert -0.05 - 1e-12 <= total["miss_penalty"] <= 0.0, where
                assert total["skip_miss_penalty"] == 0.0, where
                assert 0.0 <= total["exploration_reward"] <= 0.01, where
                # finish: 0.05 on FINISH for a perfect redaction (every entity matched, every label right).
                perfect = env.state().finished and recall == pytest.approx(1.0, abs=1e-12)
                assert total["finish_bonus"] == (0.05 if perfect else 0.0), where
                assert steps[-1]["finish_bonus"] == total["finish_bonus"], where
                wasted = -math.fsum(total[k] for k in WASTED)
                assert wasted >= 0.0, where
                assert grade.score - PHI_EMPTY - 0.1 - wasted - 1e-9 <= ret <= grade.score - PHI_EMPTY + 0.11 + 1e-9
                seen["fp"] += total["fp_penalty"] < 0
                seen["partial miss"] += -0.05 < total["miss_penalty"] < 0
                seen["full miss"] += total["miss_penalty"] == pytest.approx(-0.05)
                seen["exploration"] += total["exploration_reward"] > 0
                seen["finish"] += total["finish_bonus"] > 0
                seen["wasted"] += wasted > 0
    # The panel exercised every term it bounds.
    assert set(seen) == {"fp", "partial miss", "full miss", "exploration", "finish", "wasted"}
    assert all(seen.values()), seen


def read_then_finish(env: PiiRedactionEnv, read: bool) -> list[dict[str, float]]:
    """FINISH at once, or after NEXT_CHUNK to the end of the document; every step's breakdown."""
    steps = []
    while read and env.observation().progress_pct < 1.0:
        steps.append(env.step("NEXT_CHUNK").info["reward_breakdown"])
    steps.append(env.step("FINISH").info["reward_breakdown"])
    assert env.state().finished
    return steps


@pytest.mark.parametrize("source", ["constructed", "medium"])
def test_missing_pii_costs_the_same_whether_or_not_the_agent_saw_it(source: str) -> None:
    def episode(preset: str, read: bool) -> list[dict[str, float]]:
        if source == "constructed":
            return read_then_finish(fresh(preset), read)
        env = integrity_gym.make(MEDIUM, reward_preset=preset)
        assert isinstance(env, PiiRedactionEnv)
        env.reset(seed=0)
        return read_then_finish(env, read)

    unseen, seen = episode("default", read=False), episode("default", read=True)
    assert len(seen) > 2  # the reading crossed several windows
    assert [step["miss_penalty"] for step in unseen] == [pytest.approx(-0.05)]  # × 1.0: nothing redacted
    assert [step["miss_penalty"] for step in seen] == [0.0] * (len(seen) - 1) + [pytest.approx(-0.05)]
    # The seed's formulas charged only what the agent read past: not reading was free.
    unseen, seen = episode("reference", read=False), episode("reference", read=True)
    assert sum(step["miss_penalty"] for step in unseen) == 0.0
    assert sum(step["miss_penalty"] for step in seen) <= -0.3


@pytest.mark.parametrize("actions", [("NEXT_CHUNK", "SKIP", "SKIP"), ("SKIP", "SKIP", "NEXT_CHUNK")])
def test_the_miss_charge_comes_when_the_step_budget_ends_the_episode(actions: tuple[str, ...]) -> None:
    env = integrity_gym.make(EASY, window_size=500, max_steps=3)
    env.reset(seed=0, options={"document": doc()})
    results = [env.step(action) for action in actions]
    assert [r.done for r in results] == [False, False, True] and not env.state().finished
    misses = [r.info["reward_breakdown"]["miss_penalty"] for r in results]
    assert misses == [0.0, 0.0, pytest.approx(-0.05)]


@pytest.mark.parametrize("task", TASKS)
def test_doing_nothing_returns_less_than_the_heuristic_on_every_tier(task: str) -> None:
    def mean_return(name: str, **config: object) -> float:
        return sum(play_agent(task, name, seed, **config)[2] for seed in range(5)) / 5

    noop, heuristic = mean_return("noop"), mean_return("heuristic")
    assert noop == pytest.approx(-0.05)  # the whole PII missed, charged at FINISH
    assert noop < heuristic
    if TIERS[task] != "easy":  # why the default changed: the seed's formulas ranked doing nothing above the heuristic
        assert mean_return("heuristic", reward_preset="reference") < mean_return("noop", reward_preset="reference")


@pytest.mark.parametrize(
    ("preset", "mislabel", "bonus"),
    [("default", False, 0.05), ("default", True, 0.0), ("reference", False, 1.0), ("reference", True, 1.0)],
)
def test_the_finish_bonus_needs_every_label_right(preset: str, mislabel: bool, bonus: float) -> None:
    env = integrity_gym.make(EASY, reward_preset=preset)
    assert isinstance(env, PiiRedactionEnv)
    oracle = make_agent("oracle", env)
    obs = env.reset(seed=0)
    wrong = 0
    while not env.done:
        action = oracle.act(obs)
        if mislabel and action.action_type == "REDACT" and not wrong:
            action = action.model_copy(update={"label": next(x for x in LABELS if x != action.label)})
            wrong += 1
        result = env.step(action)
        obs = result.observation
    assert env.state().finished and action.action_type == "FINISH"
    assert wrong == mislabel
    grade = env.grade()
    assert grade.breakdown["true_positives"] == len(env.state().document.entities)  # every entity matched
    assert result.info["reward_breakdown"]["finish_bonus"] == bonus
