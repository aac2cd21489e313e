from __future__ import annotations

import pytest

from integrity_gym.envs.information_integrity.data import load_gold
from integrity_gym.envs.information_integrity.generator import generate
from integrity_gym.envs.information_integrity.models import DIFFICULTIES, Scenario

TASK_IDS = [f"information_integrity/{tier}-v0" for tier in DIFFICULTIES]


def gold_scenarios() -> list[Scenario]:
    return [s for tier in DIFFICULTIES for s in load_gold(tier)]


def generated_scenarios(n: int = 60) -> list[Scenario]:
    return [generate(tier, seed, part) for tier in DIFFICULTIES for part in ("train", "eval") for seed in range(n)]


@pytest.fixture(params=TASK_IDS)
def task_id(request: pytest.FixtureRequest) -> str:
    return str(request.param)
