"""The information_integrity tasks (budgets are justified in the README).

Floors (the best of doing nothing, a constant decision without reading, and random play:
random play on easy, a constant decision on medium and hard) and ceilings (the oracle) are measured by
``agents.redteam.bounds`` over eval seeds 0-99; each threshold follows by the published rule
``threshold_between``.
"""

from integrity_gym.core.registry import TaskSpec, threshold_between

_ENTRY = "integrity_gym.envs.information_integrity.env:InformationIntegrityEnv"

#: A task's max_steps grows to what its item needs (README, *Tasks*).
_BUDGET = "steps, or every claim and source once + the decision where an item needs more"


TASKS: tuple[TaskSpec, ...] = (
    TaskSpec(
        env="information_integrity",
        name="easy",
        version=3,
        tier="easy",
        description="One clear-cut claim with a fact-check verdict; trusted sources agree, one weak source dissents.",
        success_threshold=threshold_between(0.195, 1.0),
        floor=0.195,
        ceiling=1.0,
        max_steps=12,
        budget=_BUDGET,
        entry=_ENTRY,
        config={"difficulty": "easy"},
    ),
    TaskSpec(
        env="information_integrity",
        name="medium",
        version=3,
        tier="medium",
        description="Misleading statistics and mixed evidence: partial truths, unknown verdicts, outdated sources.",
        success_threshold=threshold_between(0.126, 1.0),
        floor=0.126,
        ceiling=1.0,
        max_steps=18,
        budget=_BUDGET,
        entry=_ENTRY,
        config={"difficulty": "medium"},
    ),
    TaskSpec(
        env="information_integrity",
        name="hard",
        version=3,
        tier="hard",
        description="Several claims, trusted sources in conflict, satire and outdated traps, harm-dependent policy.",
        success_threshold=threshold_between(0.12, 1.0),
        floor=0.12,
        ceiling=1.0,
        max_steps=24,
        budget=_BUDGET,
        entry=_ENTRY,
        config={"difficulty": "hard"},
    ),
)
