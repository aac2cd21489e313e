# mypy: disallow-subclassing-any=False, disallow-untyped-decorators=False
"""Multi-turn verifiers v1 tasksets in which the environment drives the turns.

Used by ``pii-redaction-v1`` and ``information-integrity-v1``. Each task is one episode: a task
of the environment, a reset seed and the reset options. The taskset's ``Env`` plays the user,
like verifiers' own TextArena and OpenEnv tasksets: it resets the integrity-gym environment, sends
the observation as a user turn (worded as the ``llm`` agent words it), steps the environment
with each reply, and sends the next observation, until the environment ends the episode, the
model stops, or ``max_turns`` replies have been played. The trace's reward is the environment's
own grade of the episode; its metrics are the step count, the summed step rewards, the replies
that could not be read, success and the grade's breakdown.

Why the environment drives the turns rather than exposing its actions as tools: the actions
are already one JSON object per reply, with the environment's own repairs and penalties for
unreadable ones, so a reply means the same here as in ``igym bench``; and tool calls are the
least reliable thing small models do.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, model_validator

from integrity_gym.core.registry import list_tasks
from integrity_gym.core.seeding import Partition, PartitionChoice
from integrity_gym.integrations.verifiers import load_verifiers
from integrity_gym.integrations.verifiers.episodes import EnvEpisode

vf: Any = load_verifiers()

if TYPE_CHECKING:
    AgentConfig = Any
else:
    AgentConfig = vf.AgentConfig


class EpisodeData(vf.TaskData):
    """One episode: the integrity-gym task, its reset seed and options, and the turn cap."""

    task_id: str = Field(description="integrity-gym task id, e.g. pii_redaction/gdpr_contract_easy-v4.")
    seed: int = Field(ge=0, description="Seed the environment is reset with.")
    options: dict[str, Any] = Field(description="Reset options of the environment.")
    max_turns: int | None = Field(description="Most replies played; unset: the task's own step budget.")


class EpisodeTask(vf.Task[EpisodeData, vf.State, vf.TaskConfig]):
    """An episode task; its reward is recorded by the env's ``run`` from the environment's grade."""


class EpisodeTasksetConfig(vf.TasksetConfig):
    """Which episodes load (``--env.taskset.*``); subclasses set the environment and its options."""

    #: The integrity-gym environment (set by each taskset; not an option).
    env_name: ClassVar[str] = ""
    task_name: str = Field("", description="Task of the environment, e.g. 'easy'; unset: its first task.")
    num_tasks: int = Field(20, ge=1, le=1_000_000, description="Episodes to build, seeds seed .. seed + num_tasks - 1.")
    seed: int = Field(0, ge=0, description="First reset seed.")
    max_turns: int | None = Field(None, ge=1, description="Most replies per episode; unset: the task's step budget.")

    @property
    def task_id(self) -> str:
        """The integrity-gym task the episodes are played on: ``task_name``'s newest version, else the first task."""
        if not self.task_name:
            return list_tasks(f"{self.env_name}/*")[0].id
        versioned = re.search(r"-v\d+$", self.task_name) is not None
        matches = list_tasks(f"{self.env_name}/{self.task_name}" + ("" if versioned else "-v*"))
        if not matches:
            names = ", ".join(spec.id for spec in list_tasks(f"{self.env_name}/*"))
            raise ValueError(f"task_name {self.task_name!r} is not a task of {self.env_name}; its tasks: {names}")
        return max(matches, key=lambda spec: spec.version).id

    def reset_options(self) -> dict[str, Any]:
        """The environment's reset options (none unless a subclass declares them)."""
        return {}

    @model_validator(mode="after")
    def _check_task(self) -> EpisodeTasksetConfig:
        if self.env_name:
            _ = self.task_id  # an unknown task_name is refused when the configuration is read
        return self


class EpisodeTaskset(vf.Taskset[EpisodeTask, EpisodeTasksetConfig]):
    """One prompt-less task per seed; the environment opens each conversation."""

    def load(self) -> Iterator[EpisodeTask]:
        """Yield the episodes, one per seed, with the ``llm`` agent's system prompt for each."""
        config = self.config
        task_id, options = config.task_id, config.reset_options()
        for offset in range(config.num_tasks):
            seed = config.seed + offset
            episode = EnvEpisode(task_id, seed=seed, options=options)
            try:
                system_prompt = episode.system_prompt()
            finally:
                episode.close()
            data = EpisodeData(
                id=f"{task_id}@{seed}",
                name=f"{task_id}#{seed}",
                prompt=None,
                system_prompt=system_prompt,
                task_id=task_id,
                seed=seed,
                options=options,
                max_turns=config.max_turns,
            )
            yield EpisodeTask(data, config.task)


class EpisodeEnvConfig(vf.EnvConfig):
    """The one seat, named ``agent`` as in verifiers' single-agent env (``--env.agent.*``)."""

    agent: AgentConfig = vf.AgentConfig()


class EpisodeEnv(vf.Env[EpisodeEnvConfig]):
    """Plays the user: observation in, reply out, until the environment ends the episode."""

    async def run(self, task: Any, agents: Any) -> None:
        """Play one episode of ``task`` with the seat ``agent`` and record the environment's grade."""
        data = task.data
        episode = EnvEpisode(data.task_id, seed=data.seed, options=data.options)
        budget = data.max_turns or episode.spec.max_steps
        try:
            async with agents.agent.interaction(task) as interaction:
                segment = await interaction.turn(episode.user_message())
                while not segment.terminated:
                    episode.step(segment.last_reply)
                    if episode.done or episode.steps >= budget:
                        break
                    segment = await interaction.turn(episode.user_message())
            trace = interaction.trace
            trace.record_reward("grade", episode.grade().score)
            trace.record_metrics(episode.metrics())
        finally:
            episode.close()


# ---------------------------------------------------------------------------- the two tasksets
class PiiRedactionConfig(EpisodeTasksetConfig):
    """``pii-redaction-v1`` (``--env.taskset.*``): task, episodes, and the reset options."""

    env_name: ClassVar[str] = "pii_redaction"
    source: Literal["generated", "gold"] = Field("generated", description="Generated documents or the gold set.")
    partition: PartitionChoice = Field("eval", description="Partition of generated documents.")

    def reset_options(self) -> dict[str, Any]:
        """``source`` and ``partition``, passed to every reset."""
        return {"source": self.source, "partition": self.partition}


class PiiRedactionTaskset(EpisodeTaskset, vf.Taskset[EpisodeTask, PiiRedactionConfig]):
    """Redact personal data from a long document seen through a window, one action per reply."""


class PiiRedactionEnv(EpisodeEnv):
    """The pii_redaction environment playing the user."""


class InformationIntegrityConfig(EpisodeTasksetConfig):
    """``information-integrity-v1`` (``--env.taskset.*``): task, episodes, and the reset options."""

    env_name: ClassVar[str] = "information_integrity"
    difficulty: Literal["easy", "medium", "hard"] | None = Field(
        None, description="Tier of the scenarios; unset keeps the task's own."
    )
    source: Literal["generated", "gold"] = Field("generated", description="Generated scenarios or the gold set.")
    partition: Partition = Field("eval", description="Partition of generated scenarios.")

    def reset_options(self) -> dict[str, Any]:
        """``difficulty`` (when set), ``source`` and ``partition``, passed to every reset."""
        options: dict[str, Any] = {"source": self.source, "partition": self.partition}
        if self.difficulty is not None:
            options["difficulty"] = self.difficulty
        return options


class InformationIntegrityTaskset(EpisodeTaskset, vf.Taskset[EpisodeTask, InformationIntegrityConfig]):
    """Investigate a post's claims and sources, then decide: allow, flag or remove."""


class InformationIntegrityEnv(EpisodeEnv):
    """The information_integrity environment playing the user."""
