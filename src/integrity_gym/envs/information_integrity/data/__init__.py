"""Packaged data: the hand-written gold set, reward presets and the published scenario schema.

The gold set is public (it ships in the package), so anyone can read its labels: it is a
development and validation set, never the default evaluation. Evaluation episodes come from the
generator's eval partition (see ``generator``).
"""

from __future__ import annotations

from functools import cache
from importlib import resources

import yaml
from pydantic import ValidationError

from integrity_gym.core.env import describe_validation_error
from integrity_gym.envs.information_integrity import rules
from integrity_gym.envs.information_integrity.models import DIFFICULTIES, Scenario

#: Version of the gold set's content; bump it whenever a gold scenario's facts, label or text change.
#: 2: labels balanced per tier (no decision above 4 in 10), titles rewritten to be neutral.
GOLD_VERSION = 2


@cache
def load_gold(difficulty: str) -> tuple[Scenario, ...]:
    """The gold scenarios of one tier, each checked against the labelling rule."""
    if difficulty not in DIFFICULTIES:
        raise ValueError(f"difficulty: {difficulty!r} is not one of {', '.join(DIFFICULTIES)}")
    text = resources.files(__package__).joinpath("gold", f"{difficulty}.yaml").read_text("utf-8")
    out = []
    for i, item in enumerate(yaml.safe_load(text)):
        try:
            scenario = Scenario.model_validate({**item, "difficulty": difficulty, "origin": "gold"})
        except ValidationError as exc:
            raise ValueError(f"gold/{difficulty}.yaml item {i}: {describe_validation_error(exc)}") from exc
        out.append(rules.check_scenario(scenario))
    return tuple(out)


def find_gold(scenario_id: str) -> Scenario:
    """The gold scenario with id ``scenario_id`` in any tier; ``ValueError`` if none."""
    for difficulty in DIFFICULTIES:
        for scenario in load_gold(difficulty):
            if scenario.id == scenario_id:
                return scenario
    raise ValueError(
        f"scenario_id: unknown id {scenario_id!r}; use a gold id such as 'easy_001', an index, "
        "or a generated id gen_<tier>_<train|eval>_<seed>"
    )
