"""The information_integrity tasks (thresholds and budgets are justified in the README)."""

from integrity_gym.core.registry import TaskSpec

_ENTRY = "integrity_gym.envs.information_integrity.env:InformationIntegrityEnv"

TASKS: tuple[TaskSpec, ...] = (
    TaskSpec(
        env="information_integrity",
        name="easy",
        version=1,
        tier="easy",
        description="One clear-cut claim with a fact-check verdict; trusted sources agree, one weak source dissents.",
        success_threshold=0.75,
        max_steps=12,
        entry=_ENTRY,
        config={"difficulty": "easy"},
    ),
    TaskSpec(
        env="information_integrity",
        name="medium",
        version=1,
        tier="medium",
        description="Misleading statistics and mixed evidence: partial truths, unknown verdicts, outdated sources.",
        success_threshold=0.70,
        max_steps=18,
        entry=_ENTRY,
        config={"difficulty": "medium"},
    ),
    TaskSpec(
        env="information_integrity",
        name="hard",
        version=1,
        tier="hard",
        description="Several claims, trusted sources in conflict, satire and outdated traps, harm-dependent policy.",
        success_threshold=0.72,
        max_steps=24,
        entry=_ENTRY,
        config={"difficulty": "hard"},
    ),
)
