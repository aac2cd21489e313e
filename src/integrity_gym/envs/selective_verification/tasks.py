"""The selective_verification tasks: one per claim sampler, plus the text variant."""

from integrity_gym.core.registry import TaskSpec, threshold_between
from integrity_gym.envs.selective_verification.risk import DEFAULT_RANGE

_ENTRY = "integrity_gym.envs.selective_verification.env:SelectiveVerificationEnv"
#: Success is judged on a task's mean grade, never per episode (see the README). Each task's bar
#: follows by the published rule ``threshold_between`` from its floor (the best of always abstaining,
#: a constant or coin-flip verdict, and the claim text's prior alone) and its ceiling (the oracle on
#: pictures, which are unambiguous: every object is drawn at least half visible; the exact posterior
#: on text, scored by its expected grade under the known probability), both measured by
#: ``agents.redteam.bounds`` over eval seeds 0-99 under the default Brier payoff; on the text tasks over
#: seeds 0-999 (``TEXT_SAMPLE``). Another payoff or rule keeps the skill (grader.threshold_for).

#: The text tasks' published sample: their whole range (floor to ceiling) is about 0.02 of grade, and over
#: 100 items the exact posterior's own mean moved by half of it from one block of seeds to the next.
TEXT_SAMPLE = 1000


def _task(
    name: str,
    tier: str,
    description: str,
    floor: float,
    ceiling: float,
    version: int = 3,
    bounds_episodes: int = 100,
    **config: object,
) -> TaskSpec:
    return TaskSpec(
        env="selective_verification",
        name=name,
        version=version,
        tier=tier,
        description=description,
        success_threshold=threshold_between(floor, ceiling),
        floor=floor,
        ceiling=ceiling,
        bounds_episodes=bounds_episodes,
        per_episode_success=False,
        max_steps=1,
        entry=_ENTRY,
        config=dict(config),
    )


TASKS: tuple[TaskSpec, ...] = (
    _task(
        "balanced", "medium",
        "Object-presence claims about generated scenes, each object true half the time (no name prior).",
        0.8, 1.0,
        split="balanced",
    ),
    _task(
        "random", "easy",
        "POPE-style claims, absent objects drawn uniformly; large, upright objects on plain backgrounds.",
        0.81, 1.0,
        split="random", difficulty="easy",
    ),
    _task(
        "popular", "medium",
        "POPE-style claims, absent objects among the most frequent; medium rendering difficulty.",
        0.927, 1.0,
        split="popular", difficulty="medium",
    ),
    _task(
        "adversarial", "hard",
        "POPE-style claims, absent objects that co-occur with those present; small, rotated, occluded, cluttered.",
        0.827, 1.0,
        split="adversarial", difficulty="hard",
    ),
    _task(
        "all", "medium",
        "The random, popular and adversarial samplers interleaved, mixed rendering difficulty.",
        0.816, 1.0,
        split="all",
    ),
    _task(
        "text", "medium",
        "Claims about a partly described photo with a stated model; the exact probability is known.",
        0.839, 0.862, bounds_episodes=TEXT_SAMPLE,
        variant="text",
    ),
    # Threshold tasks (issue 28): every item states a risk threshold t drawn from DEFAULT_RANGE; a right
    # answer earns +1, a wrong one -t/(1-t), ABSTAIN 0 (risk.py). The grade normalises that utility per
    # item (right 1, wrong 0, abstaining t), so always abstaining averages the items' mean t (about 0.74).
    _task(
        "threshold_text", "medium",
        "Text claims with an exact probability, each stating a risk threshold t: answer only if P(correct) > t.",
        0.823, 0.844, version=1, bounds_episodes=TEXT_SAMPLE,
        variant="text", risk_thresholds=DEFAULT_RANGE,
    ),
    _task(
        "threshold_balanced", "medium",
        "Balanced picture claims, each stating a risk threshold t: +1 right, -t/(1-t) wrong, 0 for abstaining.",
        0.751, 1.0, version=1,
        split="balanced", risk_thresholds=DEFAULT_RANGE,
    ),
    _task(
        "threshold_adversarial", "hard",
        "Adversarial POPE-style picture claims, each stating a risk threshold t; hard rendering.",
        0.772, 1.0, version=1,
        split="adversarial", difficulty="hard", risk_thresholds=DEFAULT_RANGE,
    ),
)  # fmt: skip
