"""The return-vs-grade audit: under every default preset the return ranks policies as the grade does."""

from __future__ import annotations

import math

import pytest

import integrity_gym
from integrity_gym.agents.redteam.audit import (
    INVERSION_GAP,
    PolicyResult,
    audit_markdown,
    inversions,
    panel,
    passes,
    rank_correlation,
    run_audit,
)

EPISODES = 6
#: The small panel `make test` plays: honest baselines, a degraded honest policy and an attack per environment.
SMALL = {
    "pii_redaction": ("oracle", "heuristic", "noop", "random", "oracle_skip_half", "oracle_first_window",
                      "heuristic_wrong_label_third", "every_number", "whole_window"),
    "information_integrity": ("oracle", "heuristic", "noop", "random", "oracle_no_reasoning", "oracle_wrong_third",
                              "oracle_reads_everything", "always_flag_all", "stuffed_remove"),
    "selective_verification": ("oracle", "heuristic", "noop", "blind", "oracle_wrong_third", "oracle_hedged",
                               "heuristic_inflated", "supported_sure"),
}  # fmt: skip


@pytest.mark.parametrize("task_id", [spec.id for spec in integrity_gym.list_tasks()])
def test_the_default_return_ranks_the_small_panel_as_the_grade(task_id: str) -> None:
    env = task_id.split("/")[0]
    [audit] = run_audit(task_id, episodes=EPISODES, presets=("default",), only=SMALL[env])
    assert {r.policy for r in audit.results} == set(SMALL[env])
    assert passes(audit), (
        f"{task_id}: Spearman {audit.spearman:.3f}, inversions {audit.inversions}, oracle on top {audit.oracle_on_top}"
    )


@pytest.mark.parametrize("task_id", [spec.id for spec in integrity_gym.list_tasks("pii_redaction/*")])
def test_noop_returns_less_than_the_heuristic_on_every_pii_tier(task_id: str) -> None:
    [audit] = run_audit(task_id, episodes=EPISODES, presets=("default",), only=("noop", "heuristic"))
    by_name = {r.policy: r for r in audit.results}
    assert by_name["noop"].mean_return < by_name["heuristic"].mean_return


def test_the_audit_can_fail_the_reference_preset_mis_ranks_pii() -> None:
    # The seed's formulas: an agent that never reads on pays nothing for what it never saw.
    [audit] = run_audit("pii_redaction/security_logs_hard-v4", episodes=EPISODES, presets=("reference",),
                        only=("noop", "heuristic", "oracle"))  # fmt: skip
    assert audit.preset == "reference" and not passes(audit)
    assert any(i.better == "heuristic" and i.worse == "noop" for i in audit.inversions)


def test_an_environment_without_the_preset_is_left_out() -> None:
    assert run_audit("selective_verification/text-v3", episodes=2, presets=("reference",), only=("noop",)) == []


def _result(name: str, ret: float, grade: float) -> PolicyResult:
    return PolicyResult(name, "baseline", 1, ret, grade, 0)


def test_inversions_need_the_gap_and_the_opposite_order() -> None:
    results = [_result("a", 1.0, 0.9), _result("b", 2.0, 0.9 - INVERSION_GAP), _result("c", 0.5, 0.89)]
    found = inversions(results)
    assert [(i.better, i.worse) for i in found] == [("a", "b")]
    assert found[0].grade_gap == pytest.approx(INVERSION_GAP) and found[0].return_gap == pytest.approx(-1.0)
    assert inversions([_result("a", 1.0, 0.9), _result("b", 1.0, 0.5)]) == ()  # equal returns are no inversion


def test_rank_correlation_is_spearman_and_undefined_for_a_constant_column() -> None:
    assert rank_correlation([_result("a", 1, 0.1), _result("b", 2, 0.2), _result("c", 3, 0.3)]) == pytest.approx(1.0)
    assert rank_correlation([_result("a", 3, 0.1), _result("b", 2, 0.2), _result("c", 1, 0.3)]) == pytest.approx(-1.0)
    assert math.isnan(rank_correlation([_result("a", 1, 0.5), _result("b", 2, 0.5)]))  # grades all equal
    assert math.isnan(rank_correlation([_result("a", 1, 0.5)]))


@pytest.mark.parametrize("task_id", [spec.id for spec in integrity_gym.list_tasks()])
def test_the_panel_has_every_kind_once_and_only_agents_that_play_the_task(task_id: str) -> None:
    spec = integrity_gym.get_spec(task_id)
    policies = panel(spec)
    for policy in policies:  # every member builds for this task (the posterior agent plays text only)
        policy.build(integrity_gym.make(task_id), 0)
    names = [p.name for p in policies]
    assert len(names) == len(set(names)) and "do_nothing" not in names
    assert {p.kind for p in policies} == {"baseline", "attack", "degraded"}
    assert {"oracle", "heuristic", "random", "noop"} <= set(names)
    assert ("posterior" in names) == (spec.config.get("variant") == "text")


def test_markdown_names_every_policy_and_the_verdict() -> None:
    audits = run_audit("information_integrity/easy-v3", episodes=2, only=("oracle", "noop", "oracle_no_reasoning"))
    text = audit_markdown(audits, episodes=2, seed=0)
    assert "## Return vs grade" in text and "| `information_integrity/easy-v3` | default |" in text
    assert "| `information_integrity/easy-v3` | reference |" in text and "oracle_no_reasoning" in text
