"""Degenerate agents for pii_redaction: each tries to score without doing the task."""

from __future__ import annotations

from integrity_gym.agents.base import NoopAgent
from integrity_gym.agents.redteam.base import Attack, Bar
from integrity_gym.core.registry import make

BAR = Bar(margin=0.05, why="TODO: justify the margin for this environment.")

ATTACKS: tuple[Attack, ...] = (
    Attack(
        "do_nothing", "The environment's do-nothing action every step.", lambda spec, seed: NoopAgent(make(spec.id))
    ),
)
