"""The selective_verification tasks: one per claim sampler, plus the text variant."""

from integrity_gym.core.registry import TaskSpec

_ENTRY = "integrity_gym.envs.selective_verification.env:SelectiveVerificationEnv"
#: An episode succeeds when its verdict is correct with confidence at least q*: under the default
#: Brier payoff (a = 0.8, q* = 0.7236) a grade of at least 1 - (1 - q*)^2 = 0.9236. The grade
#: computes the exact value for the configured rule and payoff.
_THRESHOLD = 0.9236


def _task(name: str, tier: str, description: str, **config: object) -> TaskSpec:
    return TaskSpec(
        env="selective_verification",
        name=name,
        version=0,
        tier=tier,
        description=description,
        success_threshold=_THRESHOLD,
        max_steps=1,
        entry=_ENTRY,
        config=dict(config),
    )


TASKS: tuple[TaskSpec, ...] = (
    _task(
        "balanced", "medium",
        "Object-presence claims about generated scenes, each object true half the time (no name prior).",
        split="balanced",
    ),
    _task(
        "random", "easy",
        "POPE-style claims, absent objects drawn uniformly; large, upright objects on plain backgrounds.",
        split="random", difficulty="easy",
    ),
    _task(
        "popular", "medium",
        "POPE-style claims, absent objects among the most frequent; medium rendering difficulty.",
        split="popular", difficulty="medium",
    ),
    _task(
        "adversarial", "hard",
        "POPE-style claims, absent objects that co-occur with those present; small, rotated, occluded, cluttered.",
        split="adversarial", difficulty="hard",
    ),
    _task(
        "all", "medium",
        "The random, popular and adversarial samplers interleaved, mixed rendering difficulty.",
        split="all",
    ),
    _task(
        "text", "medium",
        "Claims about a partly described photo with a stated model; the exact probability is known.",
        variant="text",
    ),
)  # fmt: skip
