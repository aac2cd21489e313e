"""Every task's committed floor and ceiling are what the published sample measures, and its threshold follows."""

from __future__ import annotations

import pytest

import integrity_gym
from integrity_gym.agents.redteam.bounds import measure_bounds
from integrity_gym.core.registry import THRESHOLD_SHARE, TaskSpec, threshold_between

TASKS = integrity_gym.list_tasks()


@pytest.mark.parametrize("spec", TASKS, ids=[s.id for s in TASKS])
def test_committed_bounds_are_measured_and_the_threshold_follows(spec: TaskSpec) -> None:
    bounds = measure_bounds(spec)
    assert (spec.floor, spec.ceiling) == (bounds.floor, bounds.ceiling), bounds
    assert spec.success_threshold == threshold_between(bounds.floor, bounds.ceiling)
    assert bounds.floor < spec.success_threshold <= bounds.ceiling  # reachable, and above doing nothing


def test_the_rule_is_two_thirds_of_the_gap_to_two_decimals() -> None:
    assert pytest.approx(2 / 3) == THRESHOLD_SHARE
    assert threshold_between(0.25, 1.0) == 0.75
    assert threshold_between(0.835, 0.858) == 0.85
    assert threshold_between(0.0, 0.5) == 0.33


def test_a_threshold_off_the_rule_is_refused() -> None:
    spec = TASKS[0]
    with pytest.raises(ValueError, match="threshold_between"):
        TaskSpec.model_validate({**spec.model_dump(exclude={"id", "budget_text"}), "success_threshold": 0.9})
    with pytest.raises(ValueError, match="threshold_between"):
        TaskSpec.model_validate({**spec.model_dump(exclude={"id", "budget_text"}), "floor": 0.9, "ceiling": 0.5})
    # A third-party task that states no bounds keeps its own threshold.
    free = {**spec.model_dump(exclude={"id", "budget_text"}), "floor": None, "ceiling": None, "success_threshold": 0.9}
    assert TaskSpec.model_validate(free).success_threshold == 0.9


@pytest.mark.parametrize("env", ["pii_redaction", "information_integrity"])
def test_per_episode_success_where_episodes_are_judged(env: str) -> None:
    assert all(s.per_episode_success for s in integrity_gym.list_tasks(f"{env}/*"))
    assert not any(s.per_episode_success for s in integrity_gym.list_tasks("selective_verification/*"))


def test_attacks_held_to_a_share_of_the_gap_are_judged_on_the_floors_own_seeds() -> None:
    # The text tasks' floor and ceiling are means over 1,000 seeds; an attack compared with that floor
    # is played on at least those seeds. A fixed margin under the threshold keeps the bar's own count.
    from integrity_gym.agents.redteam import bar_for

    text = integrity_gym.get_spec("selective_verification/threshold_text")
    assert text.bounds_episodes == 1000
    assert bar_for(text.env).episodes_for(text) == 1000
    assert bar_for(text.env).episodes_for(integrity_gym.get_spec("selective_verification/balanced")) == 100
    pii = integrity_gym.list_tasks("pii_redaction/*")[0]
    assert bar_for(pii.env).episodes_for(pii) == bar_for(pii.env).episodes == 20
