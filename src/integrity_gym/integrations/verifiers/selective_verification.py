# mypy: disallow-subclassing-any=False, disallow-untyped-decorators=False
"""``selective-verification-v1``: the selective_verification environment as a verifiers v1 taskset.

Single-turn. Each task is one item of the environment: its system prompt (the answer format,
the scoring rule, the abstention payoff and the threshold q* it implies) and one user message
with the claim and the picture (or the passage, in the text variant). The reward is exactly the
environment's: the reply goes to ``reset(seed=index)`` then ``step(reply)`` of a fresh
environment built with the same configuration, and the step's reward is the trace's reward. The
step's per-trace indicators (``answered``, ``abstained``, ``malformed``, ``correct``,
``confidence_sum``, ``brier_sum``, ``needed_repair``) are the trace's metrics.

Options (``--env.taskset.<key>``): ``split``, ``partition``, ``num_tasks``, ``seed``,
``variant``, ``difficulty``, ``images``, ``risk_thresholds``; and ``task.scoring_rule``,
``task.abstain_reward`` (``--env.taskset.task.abstain-reward 0.85``), and on the threshold tasks
``task.brier_weight`` and ``task.reward_scale``. ``risk_thresholds`` (``'[0.5, 0.95]'``) makes every
item state its own risk threshold t (the ``threshold_*`` tasks: +1 right, -t/(1-t) wrong, 0 for
abstaining). A dominated or pointless payoff, or a key that does not apply, is refused when the
configuration is read, before any rollout.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from integrity_gym.core.env import validate_config
from integrity_gym.core.registry import latest_task_id
from integrity_gym.core.seeding import PartitionChoice
from integrity_gym.envs.selective_verification.env import VerificationConfig
from integrity_gym.envs.selective_verification.generator import DifficultyChoice
from integrity_gym.envs.selective_verification.models import ScoringRule, Split
from integrity_gym.envs.selective_verification.risk import Scale
from integrity_gym.integrations.verifiers import load_verifiers
from integrity_gym.integrations.verifiers.episodes import EnvEpisode

vf: Any = load_verifiers()

ENV_NAME = "selective_verification"


class SelectiveVerificationTaskConfig(vf.TaskConfig):
    """How answers are scored (``--env.taskset.task.*``)."""

    scoring_rule: ScoringRule = Field("brier", description="Proper scoring rule: brier or log.")
    abstain_reward: float | None = Field(
        None, description="Flat payoff of ABSTAIN; unset picks the rule's default (q* = 0.7236 either way)."
    )
    brier_weight: float = Field(
        0.0, description="Threshold tasks: weight of the Brier term on an answer's stated confidence (0 = none)."
    )
    reward_scale: Scale = Field("grade", description="Threshold tasks: the reward is the grade or the utility.")


class SelectiveVerificationConfig(vf.TasksetConfig):
    """Which items load (``--env.taskset.*``)."""

    split: Split = Field("balanced", description="Claim sampler: balanced, random, popular, adversarial or all.")
    partition: PartitionChoice = Field(
        "eval", description="train, eval or all (pictures split by SHA-256 of their id)."
    )
    num_tasks: int = Field(100, ge=1, le=1_000_000, description="Items to build (lazily).")
    seed: int = Field(0, ge=0, description="Dataset seed.")
    variant: Literal["image", "text"] = Field("image", description="Claims about pictures, or about passages.")
    difficulty: DifficultyChoice | None = Field(
        None, description="Rendering difficulty of the pictures; unset keeps the split's task default."
    )
    images: bool = Field(True, description="Send the picture; false tells a text-only model it cannot see it.")
    risk_thresholds: tuple[float, float] | None = Field(
        None,
        description="The range each item's stated risk threshold t is drawn from, e.g. [0.5, 0.95] (the "
        "threshold tasks'); unset keeps the flat abstention payoff.",
    )
    task: SelectiveVerificationTaskConfig = SelectiveVerificationTaskConfig()

    @property
    def task_id(self) -> str:
        """The integrity-gym task these items come from (its ``threshold_`` form where one is registered)."""
        name = "text" if self.variant == "text" else self.split
        if self.risk_thresholds is not None:
            with contextlib.suppress(KeyError):
                return latest_task_id(ENV_NAME, f"threshold_{name}")
        return latest_task_id(ENV_NAME, name)

    def env_config(self) -> dict[str, Any]:
        """The environment configuration every item is built and scored with."""
        config: dict[str, Any] = {
            "variant": self.variant,
            "split": self.split,
            "partition": self.partition,
            "num_tasks": self.num_tasks,
            "seed": self.seed,
            "scoring_rule": self.task.scoring_rule,
            "abstain_reward": self.task.abstain_reward,
            "risk_thresholds": self.risk_thresholds,
            "brier_weight": self.task.brier_weight,
            "reward_scale": self.task.reward_scale,
        }
        if self.difficulty is not None:
            config["difficulty"] = self.difficulty
        return config

    @field_validator("risk_thresholds", mode="before")
    @classmethod
    def _read_range(cls, value: Any) -> Any:
        # The command line hands the range over as one string: '[0.5, 0.95]' or '0.5,0.95'.
        if isinstance(value, str):
            return [float(bound) for bound in value.strip("[]() ").split(",")]
        return value

    @model_validator(mode="after")
    def _check(self) -> SelectiveVerificationConfig:
        # The environment's own validation (a dominated payoff explains q*), before any rollout.
        validate_config(VerificationConfig, self.env_config())
        return self


class SelectiveVerificationData(vf.TaskData):
    """One item: which task, which item, and the configuration that scores it."""

    task_id: str = Field(description="integrity-gym task id, e.g. selective_verification/balanced-v3.")
    index: int = Field(ge=0, description="Item index; the environment is reset with this seed.")
    env_config: dict[str, Any] = Field(description="Environment configuration (dataset and scoring).")


def play(data: Any, reply: str) -> Any:
    """Reset a fresh environment on the item of ``data`` and step it with ``reply``; the step result."""
    episode = EnvEpisode(data.task_id, seed=data.index, config=data.env_config)
    try:
        return episode.step(reply)
    finally:
        episode.close()


class SelectiveVerificationTask(vf.Task[SelectiveVerificationData, vf.State, SelectiveVerificationTaskConfig]):
    """Scores the last reply with the environment's proper score."""

    @vf.reward
    async def proper_score(self, trace: Any) -> float:
        """The environment's reward for the reply: the proper score, the abstention payoff, or 0."""
        return float(play(self.data, trace.last_reply).reward)

    @vf.metric
    async def answer(self, trace: Any) -> dict[str, float]:
        """The environment's per-trace indicators (sum them over traces for dataset rates)."""
        metrics = play(self.data, trace.last_reply).info["trace_metrics"]
        return {name: float(value) for name, value in metrics.items()}


class SelectiveVerificationTaskset(vf.Taskset[SelectiveVerificationTask, SelectiveVerificationConfig]):
    """``num_tasks`` items of the configured split and partition, in index order."""

    def load(self) -> Iterator[SelectiveVerificationTask]:
        """Yield one single-turn task per item."""
        config = self.config
        env_config = config.env_config()
        for index in range(config.num_tasks):
            episode = EnvEpisode(config.task_id, seed=index, config=env_config, images=config.images)
            try:
                data = SelectiveVerificationData(
                    id=episode.observation.item_id,
                    name=f"{config.task_id}#{index}",
                    system_prompt=episode.system_prompt(),
                    prompt=[{"role": "user", "content": episode.user_message()}],
                    task_id=config.task_id,
                    index=index,
                    env_config=env_config,
                )
            finally:
                episode.close()
            yield SelectiveVerificationTask(data, config.task)
