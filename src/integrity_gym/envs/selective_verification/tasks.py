"""The selective_verification tasks: one per claim sampler, plus the text variant."""

from integrity_gym.core.registry import TaskSpec

_ENTRY = "integrity_gym.envs.selective_verification.env:SelectiveVerificationEnv"
#: Success is judged on a task's mean grade, never per episode (see grader.py). The bar, under the
#: default Brier payoff (a = 0.8): a mean grade of 0.96, a skill of 0.8 over always abstaining —
#: four fifths of the way from abstaining on everything to being sure and right on everything,
#: what an honest agent earns when it is right about 96% of the time and knows it. It sits above
#: every shortcut; the strongest, the claim text alone on popular, earns 0.888 (95% interval
#: 0.857-0.918; 0.920, interval 0.898-0.942, with the earlier scenes: blind baseline, 200 eval
#: episodes). Another payoff or rule keeps the skill (grader.threshold_for).
_THRESHOLD = 0.96


def _task(name: str, tier: str, description: str, **config: object) -> TaskSpec:
    return TaskSpec(
        env="selective_verification",
        name=name,
        version=1,
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
